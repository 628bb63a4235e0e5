package devmcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"buzzbox/internal/testexe"
)

// TestNodeSDKClient drives the binary with the official TypeScript SDK's
// client (legacy era, initialize handshake), a peer nobody here wrote.
func TestNodeSDKClient(t *testing.T) {
	nm, node := testexe.NodeModules(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hello.txt"), "hello world\n")
	script, err := filepath.Abs(filepath.Join("testdata", "sdk-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, nm, testexe.Link(t, "buzz-dev-mcp"), dir)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Server       map[string]any            `json:"server"`
		Capabilities map[string]any            `json:"capabilities"`
		Instructions string                    `json:"instructions"`
		Tools        []string                  `json:"tools"`
		Annotations  map[string]map[string]any `json:"annotations"`
		Read, Edit   map[string]any
		Reread       map[string]any
		Shell        map[string]any
		Missing      map[string]any
		Unknown      string
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node client output %q: %v", stdout, err)
	}
	if got.Server["name"] != "buzz-dev-mcp" || got.Capabilities["tools"] == nil || !strings.HasPrefix(got.Instructions, "Working directory: ") {
		t.Errorf("handshake: server %v caps %v instructions %q", got.Server, got.Capabilities, got.Instructions)
	}
	if !slices.Equal(got.Tools, wantTools) {
		t.Errorf("tools = %v; want %v", got.Tools, wantTools)
	}
	if got.Annotations["read_file"]["readOnlyHint"] != true {
		t.Errorf("read_file annotations = %v", got.Annotations["read_file"])
	}
	if s := okText(t, got.Read); s != "hello.txt (lines 1-1 of 1)\n1:hello world\n" {
		t.Errorf("read_file = %q", s)
	}
	if s := okText(t, got.Edit); !strings.Contains(s, "-hello world\n+hello there\n") {
		t.Errorf("str_replace = %q", s)
	}
	if s := okText(t, got.Reread); !strings.Contains(s, "1:hello there") {
		t.Errorf("read after edit = %q", s)
	}
	sc, _ := got.Shell["structuredContent"].(map[string]any)
	if sc["exit_code"] != float64(4) || sc["stdout"] != "from-shell\n" {
		t.Errorf("shell structuredContent = %v", got.Shell["structuredContent"])
	}
	if s := errText(t, got.Missing); !strings.Contains(s, "path not accessible") {
		t.Errorf("missing file = %q", s)
	}
	if got.Unknown != "-32602" {
		t.Errorf("unknown tool: %q; want a -32602 error", got.Unknown)
	}
}

// TestGoSDKClientModernEra connects the go-sdk client, which probes
// server/discover first and so speaks the 2026-07-28 era when the server
// answers it.
func TestGoSDKClientModernEra(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "alpha\nbeta\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(testexe.Link(t, "buzz-dev-mcp"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	if init.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q; want 2026-07-28 through server/discover", init.ProtocolVersion)
	}
	if init.ServerInfo == nil || init.ServerInfo.Name != "buzz-dev-mcp" || !strings.HasPrefix(init.Instructions, "Working directory: "+dir) {
		t.Errorf("discover: serverInfo %+v instructions %q", init.ServerInfo, init.Instructions)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, wantTools) {
		t.Errorf("tools = %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "offset": 1}})
	if err != nil {
		t.Fatalf("read_file: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "a.txt (lines 2-2 of 2)\n2:beta\n" || res.IsError {
		t.Errorf("read_file = %+v", res.Content[0])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "echo modern"}})
	if err != nil {
		t.Fatalf("shell: %v", err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["stdout"] != "modern\n" {
		t.Errorf("shell structuredContent = %v", res.StructuredContent)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "str_replace", Arguments: map[string]any{"path": "a.txt", "old_str": "gamma", "new_str": "x"}})
	if err != nil || !res.IsError {
		t.Errorf("str_replace not found: %v %+v; want an isError result", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil {
		t.Errorf("unknown tool: no error")
	}
}
