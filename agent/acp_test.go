package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

func TestTextOnlyEndTurn(t *testing.T) {
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Text: "hello from the model"}))
	c.init()
	sid := c.newSession()
	if !regexp.MustCompile(`^ses_[0-9a-f]{16}$`).MatchString(sid) {
		t.Errorf("sessionId = %q", sid)
	}
	if got := c.prompt(sid, "hi"); got != "end_turn" {
		t.Fatalf("stop = %s; want end_turn", got)
	}
	info := c.updates("session_info_update")
	if len(info) == 0 || !regexp.MustCompile(`^run_[0-9a-f]{16}$`).MatchString(info[0]["_meta"].(map[string]any)["goose"].(map[string]any)["activeRunId"].(string)) {
		t.Errorf("first update = %v; want activeRunId", info)
	}
	var text strings.Builder
	chunks := c.updates("agent_message_chunk")
	for _, u := range chunks {
		text.WriteString(u["content"].(map[string]any)["text"].(string))
	}
	if text.String() != "hello from the model" || len(chunks) < 2 {
		t.Errorf("chunks = %v; want streamed text in several chunks", chunks)
	}
	run := info[0]["_meta"].(map[string]any)["goose"].(map[string]any)["activeRunId"].(string)
	for _, u := range chunks {
		if u["messageId"] != run+"-message-1" {
			t.Errorf("chunk messageId = %v; want %s-message-1", u["messageId"], run)
		}
	}
}

func TestInitializeVersionCheck(t *testing.T) {
	c := startAgent(t, nil)
	for _, tc := range []struct{ in, want int }{{99, protocolVersion}, {1, 1}} {
		var res struct {
			ProtocolVersion   int            `json:"protocolVersion"`
			AgentCapabilities map[string]any `json:"agentCapabilities"`
			Capabilities      struct {
				Session struct {
					MCP struct {
						HTTP map[string]any `json:"http"`
					} `json:"mcp"`
				} `json:"session"`
			} `json:"capabilities"`
		}
		c.call("initialize", map[string]any{"protocolVersion": tc.in}, &res)
		if res.ProtocolVersion != tc.want {
			t.Errorf("initialize(%d) = %d; want %d", tc.in, res.ProtocolVersion, tc.want)
		}
		if tc.want >= 2 {
			// v2 names them capabilities; MCP transports are object markers.
			if res.Capabilities.Session.MCP.HTTP == nil || res.AgentCapabilities != nil {
				t.Errorf("v2 capabilities = %+v, agentCapabilities %v", res.Capabilities, res.AgentCapabilities)
			}
			continue
		}
		mcp := res.AgentCapabilities["mcpCapabilities"].(map[string]any)
		if mcp["http"] != true || mcp["sse"] != false || res.AgentCapabilities["loadSession"] != true {
			t.Errorf("capabilities = %v", res.AgentCapabilities)
		}
	}
}

func TestMalformedJSONRPC(t *testing.T) {
	c := startAgent(t, nil)
	for _, tc := range []struct {
		line string
		code int
	}{
		{`{not json`, -32700},
		{`{"jsonrpc":"1.0","id":5,"method":"initialize"}`, -32600},
		{`{"jsonrpc":"2.0"}`, -32600},
		{`{"jsonrpc":"2.0","id":6,"method":"no/such"}`, -32601},
	} {
		c.sendRaw(tc.line)
		f := c.next()
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("%s -> %s; want code %d", tc.line, f.raw, tc.code)
		}
		if tc.code == -32700 && string(f.ID) != "null" {
			t.Errorf("parse error id = %s; want null", f.ID)
		}
	}
	// A response-shaped frame answers no request of ours: -32600 with its
	// id. An unknown notification is ignored.
	c.sendRaw(`{"jsonrpc":"2.0","id":77,"result":{}}`)
	if f := c.next(); f.Error == nil || f.Error.Code != -32600 || string(f.ID) != "77" {
		t.Errorf("response-shaped frame -> %s; want -32600 with id 77", f.raw)
	}
	c.notify("no/such/notification", nil)
	c.init() // still serving
}

func TestSessionNewRejectsRelativeCwd(t *testing.T) {
	c := startAgent(t, nil)
	for _, cwd := range []string{"relative/dir", ""} {
		code, msg := c.callErr("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
		if code != -32602 || !strings.Contains(msg, "cwd must be an absolute path") {
			t.Errorf("cwd %q -> %d %s", cwd, code, msg)
		}
	}
}

func TestUnsupportedContentBlock(t *testing.T) {
	c := startAgent(t, nil)
	sid := c.newSession()
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "audio", "data": "AA", "mimeType": "audio/wav"}}})
	if code != -32602 || !strings.Contains(msg, "unsupported content block") {
		t.Errorf("audio block -> %d %s", code, msg)
	}
	for _, bad := range []map[string]any{{"type": "image", "data": "AA", "mimeType": "image/svg+xml"}, {"type": "image", "data": "not base64!", "mimeType": "image/png"}} {
		if code, msg := c.callErr("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{bad}}); code != -32602 || !strings.Contains(msg, "image block") {
			t.Errorf("%v -> %d %s", bad, code, msg)
		}
	}
}

// TestPromptImagesReachTheModel: buzz-agent advertises image prompts (v1
// promptCapabilities.image, v2 prompt.image) and sends a prompt's image
// blocks with its text in the user message, in each provider's shape.
func TestPromptImagesReachTheModel(t *testing.T) {
	const data = "iVBORw0KGgo="
	for _, tc := range []struct{ name, api, want string }{
		{"chat", "chat", `"image_url":{"url":"data:image/png;base64,` + data + `"}`},
		{"responses", "responses", `"type":"input_image"`},
		{"anthropic", "", `"source":{"data":"` + data + `","media_type":"image/png","type":"base64"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply{Text: "a cat"})
			env := []string{"OPENAI_COMPAT_API=" + tc.api}
			if tc.api == "" {
				env = []string{"BUZZ_AGENT_PROVIDER=anthropic", "ANTHROPIC_API_KEY=k", "ANTHROPIC_MODEL=claude-x", "ANTHROPIC_BASE_URL=" + srv.URL}
			}
			c := startAgent(t, srv, env...)
			var init struct {
				AgentCapabilities struct {
					PromptCapabilities struct{ Image bool } `json:"promptCapabilities"`
				} `json:"agentCapabilities"`
			}
			c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init)
			if !init.AgentCapabilities.PromptCapabilities.Image {
				t.Errorf("initialize does not advertise promptCapabilities.image")
			}
			sid := c.newSession()
			c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{
				{"type": "text", "text": "what is this?"}, {"type": "image", "data": data, "mimeType": "image/png"}}}, nil)
			bodies := srv.Bodies()
			if len(bodies) == 0 || !strings.Contains(string(bodies[0]), tc.want) || !strings.Contains(string(bodies[0]), "what is this?") {
				t.Errorf("request to the model lacks the image %s:\n%.2000s", tc.want, bodies)
			}
		})
	}
}

func TestPromptOverMaxPromptBytesRejected(t *testing.T) {
	c := startAgent(t, nil)
	sid := c.newSession()
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": strings.Repeat("x", maxPromptBytes+1)}}})
	if code != -32602 || !strings.Contains(msg, "exceeds") {
		t.Errorf("big prompt -> %d %s", code, msg)
	}
	if c.LLM.Count() != 0 {
		t.Error("the model was called for a rejected prompt")
	}
}

// TestAttackBadFrameEndsEverySession: one line over
// BUZZ_AGENT_MAX_LINE_BYTES, one that is not UTF-8, or one with an id and no
// method used to end buzz-agent (exit 1) and every session with it. Each is
// answered and the session goes on.
func TestAttackBadFrameEndsEverySession(t *testing.T) {
	c := startAgentExe(t, llmtest.New(t, llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"}), "BUZZ_AGENT_MAX_LINE_BYTES=1024")
	c.init()
	sid := c.newSession()
	if got := c.prompt(sid, "before"); got != "end_turn" {
		t.Fatalf("stop = %s; want end_turn", got)
	}
	for _, tc := range []struct {
		name, line string
		code       int
		id, msg    string
	}{
		{"oversize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 64<<10) + `"}}`, -32600, "null", "BUZZ_AGENT_MAX_LINE_BYTES"},
		{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"x\":\"\xff\xfe\"}}", -32700, "null", "UTF-8"},
		{"id without method", `{"jsonrpc":"2.0","id":3}`, -32600, "3", "no method"},
		{"result to nothing", `{"jsonrpc":"2.0","id":4,"result":{}}`, -32600, "4", "no method"},
	} {
		c.sendRaw(tc.line)
		f := c.next()
		if f.Error == nil || f.Error.Code != tc.code || string(f.ID) != tc.id || !strings.Contains(f.Error.Message, tc.msg) {
			t.Errorf("%s -> %s; want code %d, id %s, message naming %q", tc.name, f.raw, tc.code, tc.id, tc.msg)
		}
	}
	if got := c.prompt(sid, "after"); got != "end_turn" {
		t.Fatalf("stop after bad frames = %s; want end_turn on the same session", got)
	}
	if code := c.close(); code != 0 {
		t.Errorf("exit code = %d; want 0 at stdin EOF", code)
	}
}

func TestSessionNewRejectsOversizedSystemPrompt(t *testing.T) {
	c := startAgent(t, nil)
	code, msg := c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}, "systemPrompt": strings.Repeat("s", maxSystemPromptBytes+1)})
	if code != -32602 || !strings.Contains(msg, "512KB") {
		t.Errorf("-> %d %s", code, msg)
	}
}

func TestSystemPromptReachesLLMSystemRole(t *testing.T) {
	c := startAgent(t, nil)
	var res struct{ SessionID string }
	c.call("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}, "systemPrompt": "CANARY prompt"}, &res)
	c.prompt(res.SessionID, "hi")
	sid := c.newSession()
	c.prompt(sid, "hi")
	if m := messages(t, c.LLM, 0)[0]; m["role"] != "system" || m["content"] != "CANARY prompt" {
		t.Errorf("client prompt: messages[0] = %v", m)
	}
	if m := messages(t, c.LLM, 1)[0]; !strings.HasPrefix(m["content"].(string), "You are buzz-agent.") {
		t.Errorf("default prompt: messages[0] = %v", m)
	}
}

func TestToolCallThenEndTurnUnknownTool(t *testing.T) {
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "fake__do_thing"}}}, llmtest.Reply{Text: "ok"}))
	sid := c.newSession()
	if got := c.prompt(sid, "go"); got != "end_turn" {
		t.Fatalf("stop = %s", got)
	}
	calls := c.updates("tool_call")
	ups := c.updates("tool_call_update")
	if len(calls) != 1 || calls[0]["status"] != "pending" || calls[0]["title"] != "fake__do_thing" || calls[0]["kind"] != "other" {
		t.Fatalf("tool_call = %v", calls)
	}
	if len(ups) != 1 || ups[0]["status"] != "failed" || ups[0]["rawOutput"].(map[string]any)["error"] != "unknown tool: fake__do_thing" {
		t.Fatalf("tool_call_update = %v", ups)
	}
	// The next request carries the call and its result, paired, with [Reflect].
	msgs := messages(t, c.LLM, 1)
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_1" || !strings.Contains(last["content"].(string), "[Reflect]") {
		t.Errorf("tool message = %v", last)
	}
}

func TestConcurrentPromptRejected(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Hang: true})
	c := startAgent(t, srv)
	sid := c.newSession()
	first := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "a"}}})
	waitFor(t, func() bool { return srv.Count() == 1 })
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "b"}}})
	if code != -32602 || !strings.Contains(msg, "prompt already in flight") {
		t.Errorf("second prompt -> %d %s", code, msg)
	}
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	f := c.reply(first)
	if f.Error != nil || !strings.Contains(string(f.Result), "cancelled") {
		t.Errorf("first prompt = %s", f.raw)
	}
}

func TestCancelNotificationNoReplyAndRequestForm(t *testing.T) {
	c := startAgent(t, nil)
	sid := c.newSession()
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	f := c.reply(c.request("session/cancel", map[string]any{"sessionId": "ses_unknown"}))
	if f.Error != nil || string(f.Result) != "null" {
		t.Errorf("cancel request = %s; want result null", f.raw)
	}
	// The idle cancel does not affect the next prompt.
	if got := c.prompt(sid, "hi"); got != "end_turn" {
		t.Errorf("stop after idle cancel = %s", got)
	}
}

func TestThoughtChunkBeforeMessageChunk(t *testing.T) {
	for _, tc := range []struct{ name, api string }{{"chat_completions_reasoning_content", "chat"}, {"responses_api", "responses"}, {"anthropic", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []string{"1", "0"} {
				srv := llmtest.New(t, llmtest.Reply{Text: "answer", Reasoning: "pondering"})
				env := []string{"OPENAI_COMPAT_API=" + tc.api, "BUZZ_AGENT_STREAM=" + stream}
				if tc.api == "" {
					env = []string{"BUZZ_AGENT_PROVIDER=anthropic", "ANTHROPIC_API_KEY=k", "ANTHROPIC_MODEL=claude-x", "ANTHROPIC_BASE_URL=" + srv.URL, "BUZZ_AGENT_STREAM=" + stream}
				}
				c := startAgent(t, srv, env...)
				c.prompt(c.newSession(), "q")
				var kinds []string
				for _, u := range c.updates("") {
					k := u["sessionUpdate"].(string)
					if k == "agent_thought_chunk" || k == "agent_message_chunk" {
						if len(kinds) == 0 || kinds[len(kinds)-1] != k {
							kinds = append(kinds, k)
						}
					}
				}
				if strings.Join(kinds, ",") != "agent_thought_chunk,agent_message_chunk" {
					t.Errorf("stream=%s: chunk order = %v", stream, kinds)
				}
			}
		})
	}
}

func TestNoReasoningNoThoughtChunk(t *testing.T) {
	c := startAgent(t, nil)
	c.prompt(c.newSession(), "q")
	if n := len(c.updates("agent_thought_chunk")); n != 0 {
		t.Errorf("thought chunks = %d", n)
	}
}

func TestAssistantTextPreservedAcrossPrompts(t *testing.T) {
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Text: "first answer"}, llmtest.Reply{Text: ""}))
	sid := c.newSession()
	c.prompt(sid, "one")
	c.prompt(sid, "two")
	msgs := messages(t, c.LLM, 1)
	if msgs[2]["role"] != "assistant" || msgs[2]["content"] != "first answer" {
		t.Errorf("second request = %v", msgs)
	}
	c.prompt(sid, "three")
	for _, m := range messages(t, c.LLM, 2) {
		if m["role"] == "assistant" {
			if _, ok := m["content"].(string); !ok {
				t.Errorf("assistant content = %#v; want a string", m["content"])
			}
		}
	}
	// Chat requests always state stream and send "" for empty assistants.
	if !strings.Contains(string(c.LLM.Bodies()[2]), `"content":""`) {
		t.Errorf("empty assistant not serialised as \"\": %s", c.LLM.Bodies()[2])
	}
}

func TestMaxRoundsStopsToolLoop(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Calls: []llmtest.Call{{ID: "x", Name: "nope__t"}}})
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_ROUNDS=3")
	if got := c.prompt(c.newSession(), "loop"); got != "max_turn_requests" {
		t.Errorf("stop = %s", got)
	}
	if srv.Count() != 3 {
		t.Errorf("LLM calls = %d; want 3", srv.Count())
	}
}

func TestStopToolUseWithoutCallsFails(t *testing.T) {
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Text: "hm", Stop: "tool_calls"}))
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "stop=tool_use but zero tool_calls") {
		t.Errorf("-> %d %s", code, msg)
	}
}

func TestLLMErrorsMapToCodes(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   int
		want   string
	}{{401, -32001, "llm auth"}, {403, -32001, "llm auth"}, {404, -32002, "llm model not found"}, {400, -32000, "llm: (test-model) 400"}} {
		srv := llmtest.New(t)
		srv.SetFallback(llmtest.Reply{Status: tc.status, Body: "nope"})
		c := startAgent(t, srv)
		code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
		if code != tc.code || !strings.Contains(msg, tc.want) {
			t.Errorf("status %d -> %d %s; want %d %q", tc.status, code, msg, tc.code, tc.want)
		}
	}
}

func TestLLMHangingPastInactivityTimeout(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Hang: true})
	c := startAgent(t, srv, "BUZZ_AGENT_LLM_TIMEOUT_SECS=1", "BUZZ_AGENT_PROVIDER=anthropic", "ANTHROPIC_API_KEY=k", "ANTHROPIC_MODEL=m", "ANTHROPIC_BASE_URL="+srv.URL)
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "inactivity") {
		t.Errorf("-> %d %s", code, msg)
	}
}

func TestUsageNotificationsCumulative(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "a", Name: "no__tool"}}, InputTokens: 10, OutputTokens: 2},
		llmtest.Reply{Text: "done", InputTokens: 20, OutputTokens: 3}, llmtest.Reply{Text: "again", InputTokens: 5, OutputTokens: 1})
	c := startAgent(t, srv)
	optInGoose(c)
	sid := c.newSession()
	c.prompt(sid, "one")
	c.prompt(sid, "two")
	var ins []float64
	for _, f := range c.notes {
		if f.Method == "_goose/unstable/session/update" {
			ins = append(ins, f.Params.Update["accumulatedInputTokens"].(float64))
		}
	}
	// After round 1, round 2, the end of turn 1, round 1 of turn 2, its end.
	want := []float64{10, 30, 30, 35, 35}
	if len(ins) != len(want) {
		t.Fatalf("usage updates = %v; want %v", ins, want)
	}
	for i := range want {
		if ins[i] != want[i] {
			t.Errorf("usage updates = %v; want %v", ins, want)
			break
		}
	}
}

func TestNoUsageTurnEmitsNoUsageNotification(t *testing.T) {
	c := startAgent(t, nil)
	c.prompt(c.newSession(), "x")
	for _, f := range c.notes {
		if f.Method == "_goose/unstable/session/update" {
			t.Errorf("usage update without usage: %s", f.raw)
		}
	}
}

func TestSetModel(t *testing.T) {
	c := startAgent(t, nil)
	sid := c.newSession()
	c.call("session/set_model", map[string]any{"sessionId": sid, "modelId": "other-model"}, nil)
	c.prompt(sid, "x")
	if m := c.LLM.Requests()[0]["model"]; m != "other-model" {
		t.Errorf("model = %v", m)
	}
	if code, _ := c.callErr("session/set_model", map[string]any{"sessionId": sid, "modelId": " "}); code != -32602 {
		t.Errorf("blank model code = %d", code)
	}
	if code, _ := c.callErr("session/set_model", map[string]any{"sessionId": "ses_x", "modelId": "m"}); code != -32602 {
		t.Errorf("unknown session code = %d", code)
	}
}

var _ = json.Marshal

// optInGoose initializes c the way buzz-acp does, asking for goose's
// custom notifications (the usage reports).
func optInGoose(c *client) {
	c.call("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"_meta": map[string]any{"goose": map[string]any{"customNotifications": true}}}}, nil)
}

// TestAttackGooseNotificationsUnasked: buzz-agent sent
// _goose/unstable/session/update to every client, twice at the end of
// each turn, though only goose's clients know the method; a client that
// did not opt in (v1 or v2 field names) gets none.
func TestAttackGooseNotificationsUnasked(t *testing.T) {
	for _, init := range []map[string]any{
		{"protocolVersion": 1, "clientCapabilities": map[string]any{}},
		{"protocolVersion": 2, "info": map[string]any{"name": "x", "version": "1"}, "capabilities": map[string]any{}},
	} {
		srv := llmtest.New(t, llmtest.Reply{Text: "done", InputTokens: 10, OutputTokens: 2})
		c := startAgent(t, srv)
		c.call("initialize", init, nil)
		c.prompt(c.newSession(), "one")
		for _, f := range c.notes {
			if strings.HasPrefix(f.Method, "_goose/") {
				t.Errorf("initialize %v: got %s", init, f.raw)
			}
		}
	}
	srv := llmtest.New(t, llmtest.Reply{Text: "done", InputTokens: 10, OutputTokens: 2})
	c := startAgent(t, srv)
	c.call("initialize", map[string]any{"protocolVersion": 2, "info": map[string]any{"name": "x", "version": "1"},
		"capabilities": map[string]any{"_meta": map[string]any{"goose": map[string]any{"customNotifications": true}}}}, nil)
	c.prompt(c.newSession(), "one") // v2: answered once the message is in
	for idle := false; !idle; {     // the turn's end
		f := c.next()
		c.notes = append(c.notes, f)
		idle = strings.Contains(string(f.raw), `"state":"idle"`)
	}
	if len(usageUpdates(c)) == 0 {
		t.Errorf("a client opting in under the v2 name got no usage report")
	}
}

func usageUpdates(c *client) []map[string]any {
	var out []map[string]any
	for _, f := range c.notes {
		if f.Method == "_goose/unstable/session/update" {
			out = append(out, f.Params.Update)
		}
	}
	return out
}

func TestSessionTotalPoisonedByMissingTotalAndStaysPoisoned(t *testing.T) {
	noTotal := `{"choices":[{"finish_reason":"stop","message":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	srv := llmtest.New(t, llmtest.Reply{Text: "a", InputTokens: 5, OutputTokens: 1}, llmtest.Reply{Body: noTotal}, llmtest.Reply{Text: "c", InputTokens: 5, OutputTokens: 1}, llmtest.Reply{Text: "d", InputTokens: 1, OutputTokens: 1})
	c := startAgent(t, srv)
	optInGoose(c)
	sid := c.newSession()
	for _, p := range []string{"1", "2", "3"} {
		c.prompt(sid, p)
	}
	ups := usageUpdates(c)
	if _, ok := ups[0]["accumulatedTotalTokens"]; !ok {
		t.Errorf("first update lacks the total: %v", ups[0])
	}
	for _, u := range ups[2:] {
		if _, ok := u["accumulatedTotalTokens"]; ok {
			t.Errorf("total reappeared after a response without one: %v", u)
		}
	}
	// NewSessionResetsTotalAccumulation.
	c.notes = nil
	c.prompt(c.newSession(), "fresh")
	if ups := usageUpdates(c); len(ups) == 0 || ups[0]["accumulatedTotalTokens"] == nil || ups[0]["accumulatedInputTokens"].(float64) != 1 {
		t.Errorf("new session usage = %v", ups)
	}
}

func TestCancelledTurnWithUsageEmitsNotificationBeforeResponse(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "s", Name: "fake__slow"}}, InputTokens: 7, OutputTokens: 1})
	calls := filepath.Join(t.TempDir(), "calls")
	c := startAgent(t, srv)
	optInGoose(c)
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_CALL_RECEIVED="+calls))
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
	waitFor(t, func() bool { b, _ := os.ReadFile(calls); return len(b) > 0 })
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	f := c.reply(id)
	if !strings.Contains(string(f.Result), "cancelled") {
		t.Fatalf("prompt = %s", f.raw)
	}
	if n := len(usageUpdates(c)); n != 2 {
		t.Errorf("usage updates before the reply = %d; want 2 (after the round, at turn end)", n)
	}
}

func TestSteerRejections(t *testing.T) {
	c := startAgent(t, nil)
	sid := c.newSession()
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"sessionId": sid, "expectedRunId": "run_x", "prompt": []any{}}, "prompt must not be empty"},
		{map[string]any{"sessionId": sid, "expectedRunId": "", "prompt": []map[string]any{{"type": "text", "text": "x"}}}, "expectedRunId must not be empty"},
		{map[string]any{"sessionId": sid, "expectedRunId": "run_x", "prompt": []map[string]any{{"type": "text", "text": "x"}}}, "no active run to steer"},
	} {
		code, msg := c.callErr("_goose/unstable/session/steer", tc.params)
		if code != -32602 || !strings.Contains(msg, tc.want) {
			t.Errorf("steer %v -> %d %s; want %q", tc.params, code, msg, tc.want)
		}
	}
}

// TestCancelRightBehindPromptIsNotLost sends a prompt and its cancel in one
// write: the cancel must reach the prompt even before its turn started.
func TestCancelRightBehindPromptIsNotLost(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Hang: true})
	c := startAgent(t, srv)
	sid := c.newSession()
	c.nextID++
	prompt, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": "session/prompt", "params": map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "x"}}}})
	cancel, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	c.sendRaw(string(prompt) + "\n" + string(cancel))
	f := c.reply(c.nextID)
	if !strings.Contains(string(f.Result), "cancelled") {
		t.Errorf("prompt = %s; want cancelled", f.raw)
	}
}

func TestMaxSessionsAndBadServerEntries(t *testing.T) {
	c := startAgent(t, nil, "BUZZ_AGENT_MAX_SESSIONS=1")
	c.newSession()
	code, msg := c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	if code != -32602 || !strings.Contains(msg, "max sessions reached") {
		t.Errorf("second session -> %d %s", code, msg)
	}
	c2 := startAgent(t, nil)
	for _, entry := range []map[string]any{
		{"name": "x", "args": []any{}, "env": []any{}},
		{"type": "sse", "name": "x", "url": "http://127.0.0.1:1/sse", "headers": []any{}},
	} {
		code, msg := c2.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{entry}})
		if code != -32602 {
			t.Errorf("entry %v -> %d %s", entry, code, msg)
		}
	}
}

func TestOpenRouterProviderEndToEnd(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: "routed", ReasoningDetails: `[{"type":"reasoning.text","text":"r","index":0}]`}, llmtest.Reply{Text: "again"})
	c := startAgent(t, srv, "BUZZ_AGENT_PROVIDER=openrouter", "OPENROUTER_API_KEY=k", "OPENROUTER_MODEL=anthropic/claude-sonnet-4.5", "OPENROUTER_BASE_URL="+srv.URL)
	sid := c.newSession()
	c.prompt(sid, "one")
	c.prompt(sid, "two")
	if h := srv.Headers()[0]; h.Get("X-OpenRouter-Title") != "Buzz" || h.Get("Authorization") != "Bearer k" {
		t.Errorf("headers = %v", h)
	}
	if !strings.Contains(string(srv.Bodies()[1]), `"reasoning_details":[{"type":"reasoning.text","text":"r","index":0}]`) {
		t.Errorf("reasoning_details not replayed: %s", srv.Bodies()[1])
	}
}

func TestStaticKeyRejectedOpenRouter402(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Status: 402, Body: `{"error":{"message":"no credits"}}`})
	c := startAgent(t, srv, "BUZZ_AGENT_PROVIDER=openrouter", "OPENROUTER_API_KEY=k", "OPENROUTER_MODEL=m", "OPENROUTER_BASE_URL="+srv.URL)
	code, msg := c.callErr("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "credits exhausted") || srv.Count() != 1 {
		t.Errorf("-> %d %s after %d requests", code, msg, srv.Count())
	}
}

// keepaliveLLM is an OpenAI-compatible endpoint whose stream never ends:
// every tick it sends a keep-alive (an SSE comment and an empty chunk), and,
// when drip is set, a one-word content delta too.
func keepaliveLLM(t *testing.T, drip bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
			}
			io.WriteString(w, ": keepalive\n\n")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{}}]}`+"\n\n")
			if drip {
				io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"more "}}]}`+"\n\n")
			}
			fl.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAttackKeepaliveStreamHoldsTurn: an endpoint that sends only
// keep-alives used to hold the turn forever, since every byte reset
// BUZZ_AGENT_LLM_TIMEOUT_SECS. Only progress counts now.
func TestAttackKeepaliveStreamHoldsTurn(t *testing.T) {
	srv := keepaliveLLM(t, false)
	c := startAgentExe(t, nil, "OPENAI_COMPAT_BASE_URL="+srv.URL, "BUZZ_AGENT_LLM_TIMEOUT_SECS=1", "BUZZ_AGENT_LLM_MAX_CALL_SECS=86400")
	c.init()
	code, msg := promptErrWithin(c, c.newSession(), time.Minute)
	if code != -32000 || !strings.Contains(msg, "no progress") || !strings.Contains(msg, "BUZZ_AGENT_LLM_TIMEOUT_SECS") {
		t.Errorf("prompt -> %d %s; want the inactivity timeout and its setting", code, msg)
	}
}

// TestAttackDripStreamHoldsTurn: an endpoint that keeps sending a little
// progress and never finishes used to hold the turn forever; the call's
// wall-clock cap ends it and names BUZZ_AGENT_LLM_MAX_CALL_SECS.
func TestAttackDripStreamHoldsTurn(t *testing.T) {
	srv := keepaliveLLM(t, true)
	c := startAgentExe(t, nil, "OPENAI_COMPAT_BASE_URL="+srv.URL, "BUZZ_AGENT_LLM_TIMEOUT_SECS=1", "BUZZ_AGENT_LLM_MAX_CALL_SECS=2")
	c.init()
	code, msg := promptErrWithin(c, c.newSession(), time.Minute)
	if code != -32000 || !strings.Contains(msg, "wall-clock cap of 2s") || !strings.Contains(msg, "BUZZ_AGENT_LLM_MAX_CALL_SECS") {
		t.Errorf("prompt -> %d %s; want the wall-clock cap and its setting", code, msg)
	}
}

// promptErrWithin sends a prompt that must fail and returns its error; it
// fails the test when the turn is still running after d, however many
// notifications it sends meanwhile.
func promptErrWithin(c *client, sid string, d time.Duration) (int, string) {
	c.t.Helper()
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatal("agent closed stdout")
			}
			if f.Method != "" || string(f.ID) != fmt.Sprint(id) {
				continue
			}
			if f.Error == nil {
				c.t.Fatalf("prompt succeeded (%s); want an error", f.raw)
			}
			return f.Error.Code, f.Error.Message
		case <-deadline:
			c.t.Fatalf("turn still running after %v", d)
		}
	}
}

func TestLLMMaxCallSecsRangeChecked(t *testing.T) {
	for _, v := range []string{"0", "86401", "x"} {
		cmd := exec.Command(testexe.Link(t, "buzz-agent"))
		cmd.Env = append(baseEnv(t, "http://127.0.0.1:1"), "BUZZ_AGENT_LLM_MAX_CALL_SECS="+v)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "BUZZ_AGENT_LLM_MAX_CALL_SECS") {
			t.Errorf("BUZZ_AGENT_LLM_MAX_CALL_SECS=%s: exit %d (%v), %q; want 2 naming the variable", v, cmd.ProcessState.ExitCode(), err, out)
		}
	}
	out, _ := exec.Command(testexe.Link(t, "buzz-agent"), "--help").Output()
	if !strings.Contains(string(out), "BUZZ_AGENT_LLM_MAX_CALL_SECS") {
		t.Errorf("--help does not list BUZZ_AGENT_LLM_MAX_CALL_SECS:\n%s", out)
	}
}
