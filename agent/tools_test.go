package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPToolResultsPairedInCallOrder(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{
		{ID: "c1", Name: "fake__echo", Args: `{"text":"one"}`},
		{ID: "c2", Name: "fake__fail"},
		{ID: "c3", Name: "fake__reject"},
		{ID: "c4", Name: "missing__tool"},
		{ID: "c5", Name: "fake__image"},
	}}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv)
	sid := c.newSession(fakeServer(t, "fake"))
	if got := c.prompt(sid, "go"); got != "end_turn" {
		t.Fatalf("stop = %s", got)
	}
	msgs := messages(t, srv, 1)
	var tools []map[string]any
	for _, m := range msgs {
		if m["role"] == "tool" {
			tools = append(tools, m)
		}
	}
	if len(tools) != 5 {
		t.Fatalf("tool messages = %d; want 5", len(tools))
	}
	for i, m := range tools {
		if want := fmt.Sprintf("c%d", i+1); m["tool_call_id"] != want {
			t.Errorf("tool message %d answers %v; want %s", i, m["tool_call_id"], want)
		}
	}
	if tools[0]["content"] != "one" {
		t.Errorf("echo result = %v", tools[0]["content"])
	}
	for i, want := range map[int]string{1: "it failed", 2: "Tool call rejected:", 3: "unknown tool: missing__tool"} {
		got := tools[i]["content"].(string)
		if !strings.Contains(got, want) || !strings.Contains(got, "[Reflect]") {
			t.Errorf("result %d = %q; want %q with [Reflect]", i, got, want)
		}
	}
	// The image result is followed by one user message carrying it.
	last := msgs[len(msgs)-1]
	if last["role"] != "user" {
		t.Errorf("last message = %v; want the image user message", last)
	}
	status := map[string]string{}
	for _, u := range c.updates("tool_call_update") {
		if s := u["status"].(string); s != "in_progress" {
			status[u["toolCallId"].(string)] = s
		}
	}
	want := map[string]string{"c1": "completed", "c2": "completed", "c3": "completed", "c4": "failed", "c5": "completed"}
	for id, s := range want {
		if status[id] != s {
			t.Errorf("%s final status = %s; want %s", id, status[id], s)
		}
	}
	// Tools reach the model under server__tool names.
	req := srv.Requests()[0]
	var names []string
	for _, tl := range req["tools"].([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, ","), "fake__echo") {
		t.Errorf("tools = %v", names)
	}
}

func TestPerTurnToolCallCapEnforced(t *testing.T) {
	var calls []llmtest.Call
	for i := 0; i < 100; i++ {
		calls = append(calls, llmtest.Call{ID: fmt.Sprintf("c%d", i), Name: "fake__echo", Args: `{"text":"x"}`})
	}
	srv := llmtest.New(t, llmtest.Reply{Calls: calls}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv)
	c.prompt(c.newSession(fakeServer(t, "fake")), "go")
	if n := len(c.updates("tool_call")); n != maxToolCallsPerTurn {
		t.Errorf("tool_call updates = %d; want %d", n, maxToolCallsPerTurn)
	}
}

func TestMaxParallelToolsOneIsSequential(t *testing.T) {
	var calls []llmtest.Call
	for i := 0; i < 4; i++ {
		calls = append(calls, llmtest.Call{ID: fmt.Sprintf("c%d", i), Name: "fake__echo"})
	}
	srv := llmtest.New(t, llmtest.Reply{Calls: calls}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_PARALLEL_TOOLS=1")
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_TOOL_DELAY_MS=20")), "go")
	running := 0
	for _, u := range c.updates("tool_call_update") {
		switch u["status"] {
		case "in_progress":
			running++
			if running > 1 {
				t.Fatal("two tool calls in progress at once")
			}
		case "completed", "failed":
			running--
		}
	}
}

func TestToolTimeoutFailsAndKillsServer(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "s", Name: "fake__slow"}}}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv, "BUZZ_AGENT_TOOL_TIMEOUT_SECS=1")
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_PID_FILE="+pid)), "go")
	ups := c.updates("tool_call_update")
	last := ups[len(ups)-1]
	if last["status"] != "failed" || !strings.HasPrefix(last["rawOutput"].(map[string]any)["error"].(string), "tool: timeout after 1s") {
		t.Errorf("update = %v", last)
	}
	b, _ := os.ReadFile(pid)
	var p int
	fmt.Sscan(string(b), &p)
	waitFor(t, func() bool { return !processAlive(p) })
}

func TestCancelSendsNotificationsCancelledToAnyMCPServer(t *testing.T) {
	dir := t.TempDir()
	cancelLog, calls := filepath.Join(dir, "cancel"), filepath.Join(dir, "calls")
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "s", Name: "fake__slow"}}}, llmtest.Reply{Text: "after"})
	c := startAgent(t, srv)
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_CANCEL_LOG="+cancelLog, "FAKE_MCP_CALL_RECEIVED="+calls))
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
	waitFor(t, func() bool { b, _ := os.ReadFile(calls); return len(b) > 0 })
	start := time.Now()
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	f := c.reply(id)
	if !strings.Contains(string(f.Result), `"cancelled"`) {
		t.Fatalf("prompt = %s; want cancelled", f.raw)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	waitFor(t, func() bool { b, _ := os.ReadFile(cancelLog); return len(b) > 0 })
	got, _ := os.ReadFile(cancelLog)
	recv, _ := os.ReadFile(calls)
	if want := strings.Fields(string(recv))[1]; strings.TrimSpace(string(got)) != want {
		t.Errorf("cancelled requestId = %s; tools/call id %s", got, want)
	}
	// CancelLeavesHistoryValidForNextPrompt: the next prompt works and its
	// request pairs the cancelled call with a result.
	if got := c.prompt(sid, "again"); got != "end_turn" {
		t.Fatalf("next prompt stop = %s", got)
	}
	msgs := messages(t, srv, 1)
	found := false
	for _, m := range msgs {
		if m["role"] == "tool" && m["tool_call_id"] == "s" {
			found = true
		}
	}
	if !found {
		t.Errorf("cancelled call has no result in the next request: %v", msgs)
	}
}

func TestHookToolsHiddenFromLLM(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "h", Name: "fake___Stop"}}}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv)
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_HOOK=1", "FAKE_MCP_CALL_RECEIVED="+calls)), "go")
	if strings.Contains(string(srv.Bodies()[0]), "_Stop") {
		t.Error("hook tool advertised to the model")
	}
	ups := c.updates("tool_call_update")
	if len(ups) != 1 || ups[0]["rawOutput"].(map[string]any)["error"] != "unknown tool: fake___Stop" {
		t.Errorf("updates = %v", ups)
	}
	if b, _ := os.ReadFile(calls); len(b) > 0 {
		t.Errorf("server was invoked: %s", b)
	}
}

func TestHookStopBlocksPrematureEnd(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: "first"}, llmtest.Reply{Text: "second"})
	c := startAgent(t, srv, "MCP_HOOK_SERVERS=*", "BUZZ_AGENT_STOP_MAX_REJECTIONS=1")
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_HOOK=1", "FAKE_MCP_STOP_TEXT=keep going")), "go")
	if srv.Count() != 2 {
		t.Fatalf("LLM calls = %d; want 2", srv.Count())
	}
	msgs := messages(t, srv, 1)
	last := msgs[len(msgs)-1]
	var payload map[string]string
	if last["role"] != "tool" || json.Unmarshal([]byte(last["content"].(string)), &payload) != nil ||
		payload["hook"] != "_Stop" || payload["server"] != "fake" || payload["text"] != "keep going" {
		t.Errorf("objection message = %v", last)
	}
}

func TestHookStopBudgetExhausted(t *testing.T) {
	for _, tc := range []struct{ budget, calls int }{{1, 2}, {2, 3}} {
		srv := llmtest.New(t)
		c := startAgent(t, srv, "MCP_HOOK_SERVERS=fake", fmt.Sprintf("BUZZ_AGENT_STOP_MAX_REJECTIONS=%d", tc.budget))
		sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_HOOK=1"))
		if got := c.prompt(sid, "go"); got != "end_turn" {
			t.Errorf("stop = %s", got)
		}
		if srv.Count() != tc.calls {
			t.Errorf("budget %d: LLM calls = %d; want %d", tc.budget, srv.Count(), tc.calls)
		}
		// HookStopBudgetResetsPerPrompt.
		c.prompt(sid, "again")
		if srv.Count() != 2*tc.calls {
			t.Errorf("budget %d after second prompt: LLM calls = %d; want %d", tc.budget, srv.Count(), 2*tc.calls)
		}
	}
}

func TestHooksOffWithoutMCPHookServers(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	srv := llmtest.New(t)
	c := startAgent(t, srv)
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_HOOK=1", "FAKE_MCP_CALL_RECEIVED="+calls)), "go")
	if srv.Count() != 1 {
		t.Errorf("LLM calls = %d", srv.Count())
	}
	if b, _ := os.ReadFile(calls); len(b) > 0 {
		t.Errorf("hook called with MCP_HOOK_SERVERS unset: %s", b)
	}
}

func TestHookStopTimeoutFailopen(t *testing.T) {
	srv := llmtest.New(t)
	c := startAgent(t, srv, "MCP_HOOK_SERVERS=*", "BUZZ_AGENT_HOOK_TIMEOUT_MS=200")
	start := time.Now()
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_HOOK=1", "FAKE_MCP_STOP_DELAY_MS=20000")), "go")
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("turn took %v", d)
	}
	if srv.Count() != 1 {
		t.Errorf("LLM calls = %d; want 1", srv.Count())
	}
}

func TestReplyGuard(t *testing.T) {
	send := llmtest.Call{ID: "s1", Name: "fake__shell", Args: `{"command":"buzz messages send hello"}`}
	for _, tc := range []struct {
		name  string
		env   []string
		first []llmtest.Reply
		calls int
	}{
		{"off_by_default", nil, nil, 1},
		{"explicit_zero_is_off", []string{"BUZZ_AGENT_REQUIRE_REPLY=0"}, nil, 1},
		{"nags_twice_then_lets_the_turn_end", []string{"BUZZ_AGENT_REQUIRE_REPLY=1"}, nil, 3},
		{"bounded_by_stop_rejection_budget", []string{"BUZZ_AGENT_REQUIRE_REPLY=1", "BUZZ_AGENT_STOP_MAX_REJECTIONS=1"}, nil, 2},
		{"off_when_stop_budget_is_zero", []string{"BUZZ_AGENT_REQUIRE_REPLY=1", "BUZZ_AGENT_STOP_MAX_REJECTIONS=0"}, nil, 1},
		{"satisfied_by_registered_shell_send", []string{"BUZZ_AGENT_REQUIRE_REPLY=1"}, []llmtest.Reply{{Calls: []llmtest.Call{send}}}, 2},
		{"ignores_unregistered_shell_tool", []string{"BUZZ_AGENT_REQUIRE_REPLY=1"}, []llmtest.Reply{{Calls: []llmtest.Call{{ID: "x", Name: "other__shell", Args: `{"command":"buzz messages send hi"}`}}}}, 4},
		{"ignores_non_command_fields", []string{"BUZZ_AGENT_REQUIRE_REPLY=1"}, []llmtest.Reply{{Calls: []llmtest.Call{{ID: "x", Name: "fake__shell", Args: `{"command":"ls","description":"buzz messages send"}`}}}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.first...)
			c := startAgent(t, srv, tc.env...)
			c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_SHELL_TOOL=1")), "go")
			if srv.Count() != tc.calls {
				t.Errorf("LLM calls = %d; want %d", srv.Count(), tc.calls)
			}
			if tc.calls == 3 && tc.first == nil {
				body := string(srv.Bodies()[1])
				if !strings.Contains(body, "buzz messages send") || !strings.Contains(body, "silence is genuinely correct") {
					t.Errorf("reminder missing its phrases: %s", body)
				}
			}
		})
	}
}

func TestReplyGuardIgnoresCallsLostToTheTurnCap(t *testing.T) {
	var calls []llmtest.Call
	for i := 0; i < 64; i++ {
		calls = append(calls, llmtest.Call{ID: fmt.Sprintf("c%d", i), Name: "fake__echo"})
	}
	calls = append(calls, llmtest.Call{ID: "late", Name: "fake__shell", Args: `{"command":"buzz messages send hi"}`})
	srv := llmtest.New(t, llmtest.Reply{Calls: calls})
	c := startAgent(t, srv, "BUZZ_AGENT_REQUIRE_REPLY=1")
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_SHELL_TOOL=1")), "go")
	if srv.Count() != 4 {
		t.Errorf("LLM calls = %d; want 4 (1 tool round + 1 end + 2 reminders)", srv.Count())
	}
}

func TestDescriptionClampingEnforced(t *testing.T) {
	srv := llmtest.New(t)
	c := startAgent(t, srv)
	c.prompt(c.newSession(fakeServer(t, "fake", "FAKE_MCP_DESC_SIZE=5000")), "go")
	for _, tl := range srv.Requests()[0]["tools"].([]any) {
		if d := tl.(map[string]any)["function"].(map[string]any)["description"].(string); len(d) > 1024 {
			t.Errorf("description %d bytes", len(d))
		}
	}
}

func TestMCPServerCountCap(t *testing.T) {
	c := startAgent(t, nil)
	var servers []map[string]any
	for i := 0; i < 17; i++ {
		servers = append(servers, fakeServer(t, fmt.Sprintf("s%d", i)))
	}
	code, msg := c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": servers})
	if code != -32000 || !strings.Contains(msg, "too many") {
		t.Errorf("-> %d %s", code, msg)
	}
}

func TestMCPInitTimeoutKillsChild(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	c := startAgent(t, nil)
	start := time.Now()
	code, msg := c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{fakeServer(t, "fake", "FAKE_MCP_HANG_INIT=1", "FAKE_MCP_PID_FILE="+pid)}})
	if code != -32000 || !strings.Contains(msg, "timeout") {
		t.Errorf("-> %d %s", code, msg)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	b, _ := os.ReadFile(pid)
	var p int
	fmt.Sscan(string(b), &p)
	waitFor(t, func() bool { return !processAlive(p) })
}

func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestCancelKillsInflightToolViaMCPNotification runs the real buzz-dev-mcp:
// a cancel during `sleep 60` ends the prompt within 5 s and the sleep dies.
func TestCancelKillsInflightToolViaMCPNotification(t *testing.T) {
	devmcp := testexe.Link(t, "buzz-dev-mcp")
	marker := filepath.Join(t.TempDir(), "sleep.pid")
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "sh", Name: "dev__shell", Args: fmt.Sprintf(`{"command":"echo $$ > %s; exec sleep 60"}`, marker)}}}, llmtest.Reply{Text: "after"})
	c := startAgent(t, srv)
	var res struct{ SessionID string }
	// The shell sandbox is off: the marker is outside the working tree, and
	// its pid must be the host's, not the sandbox's own PID namespace's.
	c.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{"name": "dev", "command": devmcp, "args": []string{},
		"env": []any{map[string]any{"name": "BUZZ_SHELL_SANDBOX", "value": "off"}}}}}, &res)
	id := c.request("session/prompt", map[string]any{"sessionId": res.SessionID, "prompt": []map[string]any{{"type": "text", "text": "sleep"}}})
	waitFor(t, func() bool { b, _ := os.ReadFile(marker); return len(strings.TrimSpace(string(b))) > 0 })
	start := time.Now()
	c.notify("session/cancel", map[string]any{"sessionId": res.SessionID})
	f := c.reply(id)
	if !strings.Contains(string(f.Result), "cancelled") {
		t.Fatalf("prompt = %s", f.raw)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	b, _ := os.ReadFile(marker)
	var pid int
	fmt.Sscan(string(b), &pid)
	waitFor(t, func() bool { return !processAlive(pid) })
}

// TestRemoteMCPOverStreamableHTTP attaches a session/new entry of type http
// served by the official Go SDK and runs its tool from the loop.
func TestRemoteMCPOverStreamableHTTP(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "appends !"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text + "!"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	defer hs.CloseClientConnections()
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "r", Name: "remote__shout", Args: `{"text":"hey"}`}}}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv)
	sid := c.newSession(map[string]any{"type": "http", "name": "remote", "url": hs.URL, "headers": []any{}})
	if got := c.prompt(sid, "go"); got != "end_turn" {
		t.Fatalf("stop = %s", got)
	}
	msgs := messages(t, srv, 1)
	if last := msgs[len(msgs)-1]; last["content"] != "hey!" {
		t.Errorf("tool result = %v", last)
	}
}

func TestEOFCancelsInflightPromptAndStillReplies(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Hang: true})
	c := startAgent(t, srv)
	sid := c.newSession()
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	waitFor(t, func() bool { return srv.Count() == 1 })
	c.in.Close()
	f := c.reply(id)
	if !strings.Contains(string(f.Result), "cancelled") {
		t.Errorf("reply after EOF = %s", f.raw)
	}
}

func TestLLMRetriesThenExhausted(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Status: 503, Body: "overloaded"})
	c := startAgent(t, srv)
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "exhausted retries") || srv.Count() != 3 {
		t.Errorf("-> %d %s after %d requests", code, msg, srv.Count())
	}
}

func TestLLMMalformedBody(t *testing.T) {
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Body: `{"choices": "nope"`}))
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "json") {
		t.Errorf("-> %d %s", code, msg)
	}
}

// TestAttackMCPServerStopsReading: an MCP server that stops reading its
// stdin used to hold the agent's tool call in a blocked write past
// BUZZ_AGENT_TOOL_TIMEOUT_SECS, and the turn with it, forever.
func TestAttackMCPServerStopsReading(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 4<<20)}) // far beyond a pipe's buffer
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "s", Name: "fake__echo", Args: string(args)}}}, llmtest.Reply{Text: "done"})
	c := startAgentExe(t, srv, "BUZZ_AGENT_TOOL_TIMEOUT_SECS=1")
	c.init()
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_STOP_READING=1"))
	if got := c.prompt(sid, "go"); got != "end_turn" {
		t.Fatalf("stop = %s; want end_turn", got)
	}
	ups := c.updates("tool_call_update")
	last := ups[len(ups)-1]
	if last["status"] != "failed" || !strings.HasPrefix(last["rawOutput"].(map[string]any)["error"].(string), "tool: timeout after 1s") {
		t.Errorf("update = %v; want failed with the tool timeout", last)
	}
}

// TestRealDevMCPHooksStillRun: buzz-dev-mcp lists _Stop and _PostCompact
// only to hosts that say they run hooks. The agent says so, so with the
// real server an open todo item still objects to ending the turn, and the
// hooks still never reach the model as tools.
func TestRealDevMCPHooksStillRun(t *testing.T) {
	devmcp := testexe.Link(t, "buzz-dev-mcp")
	srv := llmtest.New(t,
		llmtest.Reply{Calls: []llmtest.Call{{ID: "td", Name: "dev__todo", Args: `{"todos":[{"text":"write the answer"}]}`}}},
		llmtest.Reply{Text: "first"}, llmtest.Reply{Text: "second"})
	c := startAgent(t, srv, "MCP_HOOK_SERVERS=dev", "BUZZ_AGENT_STOP_MAX_REJECTIONS=1")
	var res struct{ SessionID string }
	c.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{"name": "dev", "command": devmcp, "args": []string{},
		"env": []any{map[string]any{"name": "BUZZ_SHELL_SANDBOX", "value": "off"}}}}}, &res)
	c.prompt(res.SessionID, "go")
	if srv.Count() != 3 {
		t.Fatalf("LLM calls = %d; want 3 (the todo call, an end objected to, the end)", srv.Count())
	}
	if body := string(srv.Bodies()[0]); strings.Contains(body, "_Stop") || !strings.Contains(body, "dev__todo") {
		t.Errorf("tools offered to the model: want dev__todo and no hook in %s", body)
	}
	msgs := messages(t, srv, 2)
	last := msgs[len(msgs)-1]
	var payload map[string]string
	if last["role"] != "tool" || json.Unmarshal([]byte(last["content"].(string)), &payload) != nil ||
		payload["hook"] != "_Stop" || payload["server"] != "dev" || !strings.Contains(payload["text"], "write the answer") {
		t.Errorf("objection message = %v; want the _Stop hook of dev naming the open item", last)
	}
}

// TestReplyGuardCountsWorkspaceTools: a reply sent through buzz-dev-mcp's
// send_message tool (the way to answer without the shell) counted as no
// reply, so BUZZ_AGENT_REQUIRE_REPLY nagged the model twice after it had
// answered, inviting a duplicate. The relay here refuses connections: the
// attempt counts whatever its outcome, as a shell send's exit status does.
func TestReplyGuardCountsWorkspaceTools(t *testing.T) {
	devmcp := testexe.Link(t, "buzz-dev-mcp")
	key := strings.Repeat("0", 63) + "1"
	for _, call := range []llmtest.Call{
		{ID: "s", Name: "dev__send_message", Args: `{"channel":"6f1c2d4e-1111-4000-8000-0000000000ab","content":"hello"}`},
		{ID: "r", Name: "dev__add_reaction", Args: `{"event":"` + strings.Repeat("a", 64) + `","emoji":"👀"}`},
	} {
		t.Run(call.Name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{call}})
			c := startAgent(t, srv, "BUZZ_AGENT_REQUIRE_REPLY=1")
			var res struct{ SessionID string }
			c.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{"name": "dev", "command": devmcp, "args": []string{},
				"env": []any{map[string]any{"name": "BUZZ_SHELL_SANDBOX", "value": "off"}, map[string]any{"name": "BUZZ_RELAY_URL", "value": "ws://127.0.0.1:9"},
					map[string]any{"name": "BUZZ_PRIVATE_KEY", "value": key}, map[string]any{"name": "BUZZ_TIMEOUT_SECS", "value": "2"}}}}}, &res)
			c.prompt(res.SessionID, "go")
			if srv.Count() != 2 {
				t.Errorf("LLM calls = %d; want 2 (the tool round, then the end with no reminder)", srv.Count())
			}
		})
	}
}
