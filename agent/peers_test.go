package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// nodePeer prepares a temp dir holding script with a node_modules link to
// the project's npm peers, and returns the script path and node.
func nodePeer(t *testing.T, script string) (string, string) {
	t.Helper()
	modules, node := testexe.NodeModules(t)
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, script)
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, node
}

type peerTurn struct {
	StopReason string           `json:"stopReason"`
	Updates    []map[string]any `json:"updates"`
}

type peerResult struct {
	Init struct {
		ProtocolVersion int `json:"protocolVersion"`
	} `json:"init"`
	SessionID    string     `json:"sessionId"`
	Turns        []peerTurn `json:"turns"`
	SchemaErrors []any      `json:"schemaErrors"`
}

// runACPPeer runs the npm ACP client against the built buzz-agent.
func runACPPeer(t *testing.T, srv *llmtest.Server, config map[string]any, extraEnv ...string) peerResult {
	t.Helper()
	script, node := nodePeer(t, "acp_client.mjs")
	agent := testexe.Link(t, "buzz-agent")
	cfg, _ := json.Marshal(config)
	cmd := exec.Command(node, script, agent, string(cfg))
	cmd.Env = append(baseEnv(t, srv.URL), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Log(stderr.String())
	if err != nil {
		t.Fatalf("node ACP client: %v\n%s", err, stdout.String())
	}
	var res peerResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("peer output %q: %v", stdout.String(), err)
	}
	return res
}

func kinds(ups []map[string]any) []string {
	var out []string
	for _, u := range ups {
		k := u["sessionUpdate"].(string)
		if st, ok := u["status"].(string); ok {
			k += ":" + st
		}
		if len(out) > 0 && out[len(out)-1] == k {
			continue // collapse streamed chunks
		}
		out = append(out, k)
	}
	return out
}

// TestExternalACPClientWithServerEverything: the official TypeScript ACP
// SDK drives the built buzz-agent, which attaches the reference MCP server
// @modelcontextprotocol/server-everything and calls its echo tool.
func TestExternalACPClientWithServerEverything(t *testing.T) {
	modules, node := testexe.NodeModules(t)
	everything := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everything); err != nil {
		t.Skipf("SKIP(loud): %s missing; run npm install in scripts/node", everything)
	}
	srv := llmtest.New(t,
		llmtest.Reply{Text: "calling echo", Calls: []llmtest.Call{{ID: "call_echo", Name: "everything__echo", Args: `{"message":"hi from the loop"}`}}},
		llmtest.Reply{Text: "all done"})
	res := runACPPeer(t, srv, map[string]any{
		"cwd":        t.TempDir(),
		"mcpServers": []any{map[string]any{"name": "everything", "command": node, "args": []string{everything, "stdio"}, "env": []any{}}},
		"prompts":    []string{"echo something"},
		"schema":     filepath.Join(modules, "@agentclientprotocol", "sdk", "schema", "v1", "schema.json"),
	}, "BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS=30")
	// Every response and update validates against the ACP v1 JSON Schema.
	for _, e := range res.SchemaErrors {
		b, _ := json.Marshal(e)
		t.Errorf("schema: %s", b)
	}
	if res.Init.ProtocolVersion != 1 || !strings.HasPrefix(res.SessionID, "ses_") || len(res.Turns) != 1 {
		t.Fatalf("peer result = %+v", res)
	}
	turn := res.Turns[0]
	if turn.StopReason != "end_turn" {
		t.Errorf("stopReason = %s", turn.StopReason)
	}
	got := strings.Join(kinds(turn.Updates), " ")
	want := "session_info_update agent_message_chunk tool_call:pending tool_call_update:in_progress tool_call_update:completed agent_message_chunk"
	if got != want {
		t.Errorf("updates = %s\nwant      %s", got, want)
	}
	for _, u := range turn.Updates {
		if u["status"] == "completed" {
			text := u["content"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"].(string)
			if !strings.Contains(text, "hi from the loop") {
				t.Errorf("echo result = %q", text)
			}
		}
	}
	// The tool result reached the model paired with its call.
	msgs := messages(t, srv, 1)
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_echo" || !strings.Contains(last["content"].(string), "hi from the loop") {
		t.Errorf("tool message = %v", last)
	}
}

// TestBinaryConfigErrorExits2 runs the built binary under its identity
// name: a missing provider exits 2 before reading stdin, naming the key.
func TestBinaryConfigErrorExits2(t *testing.T) {
	cmd := exec.Command(testexe.Link(t, "buzz-agent"))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(stderr.String(), "BUZZ_AGENT_PROVIDER") || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestExternalACPClientCancelsDuringTool: the npm ACP client cancels while
// a slow tool of our fake MCP server runs; the prompt ends "cancelled" and
// the next prompt on the session succeeds.
func TestExternalACPClientCancelsDuringTool(t *testing.T) {
	modules, _ := testexe.NodeModules(t)
	srv := llmtest.New(t, llmtest.Reply{Reasoning: "thinking first", Calls: []llmtest.Call{{ID: "slow1", Name: "fake__slow"}}}, llmtest.Reply{Text: "second turn", InputTokens: 3, OutputTokens: 1})
	res := runACPPeer(t, srv, map[string]any{
		"cwd":              t.TempDir(),
		"mcpServers":       []any{fakeServer(t, "fake")},
		"prompts":          []string{"start slow work", "again"},
		"cancelOnToolCall": true,
		"schema":           filepath.Join(modules, "@agentclientprotocol", "sdk", "schema", "v1", "schema.json"),
	})
	for _, e := range res.SchemaErrors {
		b, _ := json.Marshal(e)
		t.Errorf("schema: %s", b)
	}
	if len(res.Turns) != 2 || res.Turns[0].StopReason != "cancelled" || res.Turns[1].StopReason != "end_turn" {
		t.Fatalf("turns = %+v", res.Turns)
	}
	last := res.Turns[0].Updates[len(res.Turns[0].Updates)-1]
	if last["status"] != "failed" {
		t.Errorf("last update of the cancelled turn = %v; want the failed tool call", last)
	}
}

// TestAttackV2ClientGetsV1 : buzz-agent answered protocolVersion 1 to a
// client offering 2, with v1 field names. A v2 client (raw JSON-RPC,
// every frame checked against the SDK's v2 schema) now gets v2: info and
// capabilities, a messageId for each prompt, the end as an idle
// state_update, tool calls as tool_call_update, and session/close.
func TestAttackV2ClientGetsV1(t *testing.T) {
	modules, _ := testexe.NodeModules(t)
	srv := llmtest.New(t,
		llmtest.Reply{Text: "calling", Calls: []llmtest.Call{{ID: "call_1", Name: "no__tool"}}},
		llmtest.Reply{Text: "first done"},
		llmtest.Reply{Text: "second done"})
	script, node := nodePeer(t, "acp_v2_client.mjs")
	agent := testexe.Link(t, "buzz-agent")
	cfg, _ := json.Marshal(map[string]any{"cwd": t.TempDir(), "prompts": []string{"one", "two"},
		"schema": filepath.Join(modules, "@agentclientprotocol", "sdk", "schema", "v2", "schema.json")})
	cmd := exec.Command(node, script, agent, string(cfg))
	cmd.Env = baseEnv(t, srv.URL)
	stdout, stderr, code := testexe.Run(t, cmd)
	if code != 0 {
		t.Fatalf("v2 client exit %d: %s\n%s", code, stdout, stderr)
	}
	var res struct {
		Init struct {
			ProtocolVersion int `json:"protocolVersion"`
			Info            struct {
				Name string `json:"name"`
			} `json:"info"`
		} `json:"init"`
		Turns []struct {
			Response struct {
				MessageID string `json:"messageId"`
			} `json:"response"`
			Stop struct {
				StopReason string `json:"stopReason"`
			} `json:"stop"`
			Updates []map[string]any `json:"updates"`
		} `json:"turns"`
		Close        map[string]any `json:"close"`
		SchemaErrors []any          `json:"schemaErrors"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("client output %q: %v", stdout, err)
	}
	for _, e := range res.SchemaErrors {
		b, _ := json.Marshal(e)
		t.Errorf("v2 schema: %.600s", b)
	}
	if res.Init.ProtocolVersion != 2 || res.Init.Info.Name != "buzz-agent" || len(res.Turns) != 2 {
		t.Fatalf("client saw %+v", res)
	}
	for i, turn := range res.Turns {
		if turn.Response.MessageID == "" || turn.Stop.StopReason != "end_turn" {
			t.Errorf("turn %d: response %+v, idle %+v", i, turn.Response, turn.Stop)
		}
	}
	for _, u := range res.Turns[0].Updates {
		if u["sessionUpdate"] == "tool_call" {
			t.Errorf("a v2 client got a v1 tool_call update: %v", u)
		}
	}
	if _, ok := res.Close["code"]; ok {
		t.Errorf("session/close = %v", res.Close)
	}
}
