package devmcp_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// claudeCode returns the Claude Code executable scripts/node installs
// (the platform package's native binary, present whether or not npm ran
// the wrapper's postinstall), or skips loudly.
func claudeCode(t *testing.T) string {
	nm, _ := testexe.NodeModules(t)
	p := filepath.Join(nm, "@anthropic-ai", "claude-code-linux-x64", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIP(loud): Claude Code is not installed (%v); run scripts/test.sh or `npm install` in scripts/node to test against it", err)
	}
	return p
}

// toolNames lists the names of the tools an Anthropic Messages request offers.
func toolNames(req map[string]any) []string {
	var out []string
	tools, _ := req["tools"].([]any)
	for _, x := range tools {
		if m, ok := x.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// lastIsToolResult reports whether the last message of an Anthropic
// request carries a tool_result block.
func lastIsToolResult(req map[string]any) bool {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return false
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	blocks, _ := last["content"].([]any)
	for _, b := range blocks {
		if m, _ := b.(map[string]any); m["type"] == "tool_result" {
			return true
		}
	}
	return false
}

// TestClaudeCodeRepliesThroughWorkspaceTool runs Claude Code itself (its
// model a scripted fake behind ANTHROPIC_BASE_URL) with buzz-dev-mcp as an
// MCP server. Claude Code offers the model send_message and not the host
// hooks, whose names it would otherwise show as ordinary tools; the
// model's send_message reaches the relay signed with the agent's key; and
// buzz-dev-mcp leaves nothing in Claude Code's MCP logs at the default
// level.
func TestClaudeCodeRepliesThroughWorkspaceTool(t *testing.T) {
	claude := claudeCode(t)
	ws := newTestWorkspace(t)
	home := t.TempDir()
	var mu sync.Mutex
	var offered [][]string
	llm := llmtest.New(t)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		names := toolNames(req)
		mu.Lock()
		offered = append(offered, names)
		mu.Unlock()
		if !slices.Contains(names, "mcp__dev__send_message") {
			return llmtest.Reply{Text: "ok"}
		}
		if lastIsToolResult(req) {
			return llmtest.Reply{Text: "Posted."}
		}
		args, _ := json.Marshal(map[string]string{"channel": ws.channel, "reply_to": ws.root, "content": "42, from Claude Code"})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "toolu_1", Name: "mcp__dev__send_message", Args: string(args)}}}
	})
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"dev": map[string]any{
		"type": "stdio", "command": testexe.Link(t, "buzz-dev-mcp"), "args": []string{},
		"env": map[string]string{"BUZZ_RELAY_URL": ws.relay, "NOSTR_PRIVATE_KEY_FILE": ws.keyFile, "TMPDIR": t.TempDir(), "BUZZ_SHELL_SANDBOX": "off"},
	}}})
	cfgFile := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Answer the question in the Buzz thread.", "--output-format", "json",
		"--mcp-config", cfgFile, "--strict-mcp-config", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + llm.URL, "ANTHROPIC_API_KEY=sk-ant-test", "IS_SANDBOX=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"MCP_TIMEOUT=60000"}
	stdout, stderr, code := testexe.Run(t, cmd)
	if code != 0 {
		t.Fatalf("claude exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Logf("claude: %s", stdout)
	mu.Lock()
	var all []string
	for _, names := range offered {
		all = append(all, names...)
	}
	mu.Unlock()
	if !slices.Contains(all, "mcp__dev__send_message") {
		t.Fatalf("Claude Code never offered mcp__dev__send_message; tools offered: %v", all)
	}
	for _, n := range all {
		if strings.HasPrefix(n, "mcp__dev___") {
			t.Errorf("Claude Code offered the model the host hook %s", n)
		}
	}
	thread := ws.thread(t, ws.root)
	if len(thread) != 2 || thread[1].PubKey != ws.agentPub || thread[1].Content != "42, from Claude Code" {
		t.Errorf("thread = %+v; want the owner's question and the agent's reply", thread)
	}
	filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), "identity=buzz-dev-mcp") {
			t.Errorf("%s holds buzz-dev-mcp's log lines:\n%s", path, b)
		}
		return nil
	})
}

// TestMCPInspectorCLI drives buzz-dev-mcp with the MCP Inspector's CLI:
// its tools/list shows the workspace tools, no host hook and no type
// union in any schema, and its tools/call of send_message posts to the
// relay. (The Inspector drops a server's stderr; Claude Code's test checks
// the log level.)
func TestMCPInspectorCLI(t *testing.T) {
	nm, node := testexe.NodeModules(t)
	cli := filepath.Join(nm, "@modelcontextprotocol", "inspector-cli", "build", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("SKIP(loud): the MCP Inspector is not installed (%v); run scripts/test.sh or `npm install` in scripts/node", err)
	}
	ws := newTestWorkspace(t)
	server := testexe.Link(t, "buzz-dev-mcp")
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		full := []string{cli, "-e", "BUZZ_RELAY_URL=" + ws.relay, "-e", "NOSTR_PRIVATE_KEY_FILE=" + ws.keyFile,
			"-e", "TMPDIR=" + t.TempDir(), "-e", "BUZZ_SHELL_SANDBOX=off", "--cli", server}
		cmd := exec.CommandContext(ctx, node, append(full, args...)...)
		cmd.Dir = t.TempDir()
		stdout, stderr, code := testexe.Run(t, cmd)
		if code != 0 {
			t.Fatalf("inspector %v: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
		return stdout
	}
	var list struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal([]byte(inspect("--method", "tools/list")), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl["name"].(string))
		for _, key := range []string{"inputSchema", "outputSchema"} {
			for _, at := range typeArrays(tl[key], "") {
				t.Errorf("%s %s has a type union at %s", tl["name"], key, at)
			}
		}
	}
	want := []string{"add_reaction", "read_file", "read_thread", "send_message", "shell", "str_replace", "todo", "view_image"}
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v; want %v (no hooks)", names, want)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	out := inspect("--method", "tools/call", "--tool-name", "send_message",
		"--tool-arg", "channel="+ws.channel, "content=42, from the Inspector", "reply_to="+ws.root)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, `"accepted":true`) {
		t.Fatalf("send_message = %s (%v)", out, err)
	}
	if thread := ws.thread(t, ws.root); len(thread) != 2 || thread[1].PubKey != ws.agentPub || thread[1].Content != "42, from the Inspector" {
		t.Errorf("thread = %+v; want the agent's reply", thread)
	}
}
