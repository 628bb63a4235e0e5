package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"buzzbox/agent/llm"
	"buzzbox/agent/llm/llmtest"
	"buzzbox/agent/mcpclient"
)

func TestTruncateMiddleBoundsAndUTF8(t *testing.T) {
	s := strings.Repeat("héllo wörld ", 10000)
	for _, max := range []int{0, 1, 50, 128, 129, 200, 1024, 51200} {
		got := truncateMiddle(s, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Errorf("truncateMiddle(%d) = %d bytes, valid %v", max, len(got), utf8.ValidString(got))
		}
		if max > 200 && (!strings.HasPrefix(got, "héllo") || !strings.Contains(got, "bytes elided from tool result") || !strings.HasSuffix(got, "wörld ")) {
			t.Errorf("truncateMiddle(%d) lost head, tail or marker: %q…", max, got[:40])
		}
	}
	if got := truncateMiddle("short", 10); got != "short" {
		t.Errorf("short = %q", got)
	}
}

func TestShapeResultImages(t *testing.T) {
	img := mcpclient.Content{Type: "image", Data: strings.Repeat("A", 100), MimeType: "image/png"}
	parts := shapeResult([]mcpclient.Content{{Type: "text", Text: "a"}, img}, 1024, 8<<20)
	if len(parts) != 2 || parts[1].Image == nil {
		t.Errorf("image under budget not kept: %+v", parts)
	}
	parts = shapeResult([]mcpclient.Content{img}, 1024, 50)
	if len(parts) != 1 || !strings.Contains(parts[0].Text, "[image elided: image/png, 100 base64 bytes") {
		t.Errorf("image over budget = %+v", parts)
	}
}

func TestEvictionKeepsPairsAndNewestPrompt(t *testing.T) {
	call := llm.ToolCall{ID: "a", Name: "s__t"}
	big := strings.Repeat("x", 1000)
	h := []llm.Message{
		llm.User("old " + big), {Role: llm.RoleAssistant, Calls: []llm.ToolCall{call}}, call.Result([]llm.Part{{Text: big}}, false),
		llm.User("mid " + big), {Role: llm.RoleAssistant, Text: big},
		llm.User("new " + big),
	}
	got, changed := evict(h, 3100)
	if !changed || got[0].Role != llm.RoleUser || !strings.HasPrefix(got[0].Text, "mid") {
		t.Fatalf("evict = %d items starting %q", len(got), got[0].Text[:3])
	}
	got, _ = evict(h, 10)
	if len(got) != 1 || !strings.HasPrefix(got[0].Text, "new") {
		t.Errorf("tiny budget kept %d items; want only the newest prompt", len(got))
	}
}

func TestHistoryBudgetEvictsOldTurns(t *testing.T) {
	srv := llmtest.New(t)
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_HISTORY_BYTES=1048576", "BUZZ_AGENT_MAX_HANDOFFS=0")
	sid := c.newSession()
	for i := 0; i < 12; i++ {
		c.prompt(sid, fmt.Sprintf("prompt-%02d %s", i, strings.Repeat("p", 200<<10)))
	}
	last := srv.Bodies()[11]
	if len(last) >= 3<<20 {
		t.Errorf("last request %d bytes; want < 3 MiB", len(last))
	}
	if !strings.Contains(string(last), "prompt-11") {
		t.Error("newest prompt missing from the last request")
	}
	if strings.Contains(string(last), "prompt-00") {
		t.Error("oldest prompt survived eviction")
	}
	logs := c.logs.String()
	if !strings.Contains(logs, "handoff cap reached (0); using truncation") || !strings.Contains(logs, "history truncated") {
		t.Errorf("logs lack the handoff-cap fallback:\n%.2000s", logs)
	}
}

func TestTokenUsageOverBudgetTriggersHandoff(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: "a", InputTokens: 95000}, llmtest.Reply{Text: "SUMMARY TEXT"}, llmtest.Reply{Text: "b"})
	var logs strings.Builder
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_CONTEXT_TOKENS=100000", "BUZZ_AGENT_MAX_OUTPUT_TOKENS=1000", "MCP_HOOK_SERVERS=*")
	_ = logs
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_POSTCOMPACT_HOOK=1", "FAKE_MCP_POSTCOMPACT_TEXT=remember X"))
	c.prompt(sid, "first task")
	c.prompt(sid, "second")
	if srv.Count() != 3 {
		t.Fatalf("LLM calls = %d; want 3 (turn, summary, turn)", srv.Count())
	}
	summary := messages(t, srv, 1)
	user := summary[len(summary)-1]["content"].(string)
	if !strings.Contains(user, "# Session History (oldest first)") || !strings.Contains(user, "[user] first task") || strings.Contains(user, "older items omitted") {
		t.Errorf("summary prompt = %q", user)
	}
	after := messages(t, srv, 2)
	if len(after) != 3 {
		t.Fatalf("after handoff: %d messages; want system, handoff, live prompt", len(after))
	}
	h := after[1]["content"].(string)
	if !strings.HasPrefix(h, "[Context Handoff]\nSUMMARY TEXT") || !strings.Contains(h, "[Post-compact hook output — untrusted]\n[fake]\nremember X") {
		t.Errorf("handoff message = %q", h)
	}
	if after[2]["content"] != "second" {
		t.Errorf("live prompt = %v", after[2])
	}
	for _, m := range after {
		if m["role"] == "tool" {
			t.Error("a tool message survived the handoff")
		}
	}
}

func TestHandoffSummaryPromptKeepsLatestItemWhenOneItemExceedsBudget(t *testing.T) {
	tr := &turn{a: &Agent{opts: Options{MaxContextTokens: 12000, MaxOutputTokens: 100}}, s: &Session{reg: &mcpclient.Registry{}}}
	tr.history = []llm.Message{llm.User("old"), llm.User(strings.Repeat("z", 20000))}
	p := tr.summaryPrompt(0)
	if !strings.Contains(p, "older items omitted") || !strings.Contains(p, "[user] zzz") {
		t.Errorf("prompt lacks omission marker or clamped newest item")
	}
	if len(p) > 12000 {
		t.Errorf("prompt %d bytes exceeds the context", len(p))
	}
}

func TestHintsAndSkills(t *testing.T) {
	home := t.TempDir()
	root := t.TempDir()
	cwd := filepath.Join(root, "sub")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	write(filepath.Join(home, "AGENTS.md"), "HOME HINT")
	write(filepath.Join(root, "AGENTS.md"), "ROOT HINT")
	write(filepath.Join(cwd, "AGENTS.md"), "CWD HINT")
	write(filepath.Join(cwd, ".agents/skills/alpha/SKILL.md"), "---\nname: alpha\ndescription: does alpha\n---\nALPHA BODY\n")
	write(filepath.Join(cwd, ".agents/skills/alpha/ref/notes.txt"), "NOTES")
	write(filepath.Join(home, ".agents/skills/alpha2/SKILL.md"), "---\nname: alpha\ndescription: global loses\n---\nGLOBAL\n")
	write(filepath.Join(home, ".agents/skills/beta/SKILL.md"), "---\nname: beta\n---\nBETA\n")
	write(filepath.Join(cwd, ".claude/skills/bad/SKILL.md"), "no frontmatter")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	write(outside, "SECRET")
	os.Symlink(outside, filepath.Join(cwd, ".agents/skills/alpha/leak.txt"))
	linked := t.TempDir()
	write(filepath.Join(linked, "SKILL.md"), "---\nname: gamma\n---\nGAMMA\n")
	os.MkdirAll(filepath.Join(cwd, ".goose/skills"), 0o755)
	os.Symlink(linked, filepath.Join(cwd, ".goose/skills/gamma"))

	hints := loadHints(cwd, home)
	if hints != "HOME HINT\n\nROOT HINT\n\nCWD HINT" {
		t.Errorf("hints = %q", hints)
	}
	skills := discoverSkills(cwd, home)
	var names []string
	for _, s := range skills {
		names = append(names, s.name+":"+s.description)
	}
	if strings.Join(names, ",") != "alpha:does alpha,gamma:,beta:" {
		t.Errorf("skills = %v", names)
	}
	body, isErr := runLoadSkill(skills, []byte(`{"name":"alpha"}`))
	if isErr || !strings.HasPrefix(body, "ALPHA BODY") || !strings.Contains(body, `- ref/notes.txt (load_skill(name: "alpha/ref/notes.txt"))`) || strings.Contains(body, "name: alpha") {
		t.Errorf("load_skill alpha = %q", body)
	}
	file, isErr := runLoadSkill(skills, []byte(`{"name":"alpha/ref/notes.txt"}`))
	if isErr || !strings.HasPrefix(file, "# Loaded: alpha/ref/notes.txt\n\nNOTES") {
		t.Errorf("load_skill file = %q", file)
	}
	if out, isErr := runLoadSkill(skills, []byte(`{"name":"alpha/leak.txt"}`)); !isErr || !strings.Contains(out, "outside the skill directory") {
		t.Errorf("symlink escape = %q", out)
	}
	if out, isErr := runLoadSkill(skills, []byte(`{"name":"alpha/../../etc/passwd"}`)); !isErr || strings.Contains(out, "root:") {
		t.Errorf("traversal = %q", out)
	}
	if out, isErr := runLoadSkill(skills, []byte(`{}`)); !isErr || !strings.Contains(out, `missing required argument "name"`) {
		t.Errorf("missing name = %q", out)
	}
	if out, isErr := runLoadSkill(skills, []byte(`{"name":"nope"}`)); !isErr || !strings.Contains(out, `skill "nope" not found`) {
		t.Errorf("unknown skill = %q", out)
	}
}

func TestHintsLoadedFromCwdAgentsMDAndSuppressed(t *testing.T) {
	for _, noHints := range []string{"0", "1"} {
		srv := llmtest.New(t)
		c := startAgent(t, srv, "BUZZ_AGENT_NO_HINTS="+noHints)
		cwd := t.TempDir()
		os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte("PROJECT HINT"), 0o644)
		os.MkdirAll(filepath.Join(cwd, ".agents/skills/s1"), 0o755)
		os.WriteFile(filepath.Join(cwd, ".agents/skills/s1/SKILL.md"), []byte("---\nname: s1\ndescription: d\n---\nbody"), 0o644)
		var res struct{ SessionID string }
		c.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &res)
		c.prompt(res.SessionID, "x")
		body := string(srv.Bodies()[0])
		has := strings.Contains(body, "PROJECT HINT") && strings.Contains(body, "- s1: d") && strings.Contains(body, `"load_skill"`)
		if has != (noHints == "0") {
			t.Errorf("NO_HINTS=%s: hints/skills present = %v", noHints, has)
		}
	}
}

func TestSteerFoldsIntoActiveTurn(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "s", Name: "fake__echo"}}}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv)
	calls := filepath.Join(t.TempDir(), "calls")
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_TOOL_DELAY_MS=300", "FAKE_MCP_CALL_RECEIVED="+calls))
	pid := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
	waitFor(t, func() bool { b, _ := os.ReadFile(calls); return len(b) > 0 })
	var run string
	for _, f := range c.notes {
		if m, ok := f.Params.Update["_meta"].(map[string]any); ok {
			run, _ = m["goose"].(map[string]any)["activeRunId"].(string)
		}
	}
	for run == "" {
		f := c.next()
		c.notes = append(c.notes, f)
		if m, ok := f.Params.Update["_meta"].(map[string]any); ok {
			run, _ = m["goose"].(map[string]any)["activeRunId"].(string)
		}
	}
	code, _ := c.callErr("_goose/unstable/session/steer", map[string]any{"sessionId": sid, "expectedRunId": "run_wrong", "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32602 {
		t.Errorf("mismatched steer code = %d", code)
	}
	var res map[string]string
	c.call("_goose/unstable/session/steer", map[string]any{"sessionId": sid, "expectedRunId": run, "prompt": []map[string]any{{"type": "text", "text": "STEERED"}}}, &res)
	if res["runId"] != run || !strings.HasPrefix(res["messageId"], "steer_") {
		t.Errorf("steer = %v", res)
	}
	f := c.reply(pid)
	if !strings.Contains(string(f.Result), "end_turn") {
		t.Errorf("prompt = %s", f.raw)
	}
	if !strings.Contains(string(srv.Bodies()[1]), "STEERED") {
		t.Error("steer did not reach the next request")
	}
	if code, _ := c.callErr("_goose/unstable/session/steer", map[string]any{"sessionId": sid, "expectedRunId": run, "prompt": []map[string]any{{"type": "text", "text": "x"}}}); code != -32602 {
		t.Errorf("steer without active run code = %d", code)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "BUZZ_AGENT_PROVIDER is required"},
		{[]string{"BUZZ_AGENT_PROVIDER=nope"}, "BUZZ_AGENT_PROVIDER=nope not supported"},
		{[]string{"BUZZ_AGENT_PROVIDER=anthropic", "ANTHROPIC_API_KEY= "}, "ANTHROPIC_API_KEY required"},
		{[]string{"BUZZ_AGENT_PROVIDER=openai"}, "OPENAI_COMPAT_API_KEY required"},
		{[]string{"BUZZ_AGENT_PROVIDER=openrouter"}, "OPENROUTER_API_KEY required"},
		{[]string{"BUZZ_AGENT_PROVIDER=databricks", "DATABRICKS_HOST=h", "DATABRICKS_MODEL=m"}, "DATABRICKS_TOKEN required"},
		{[]string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m", "BUZZ_AGENT_REQUIRE_REPLY=true"}, "BUZZ_AGENT_REQUIRE_REPLY"},
		{[]string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m", "BUZZ_AGENT_MAX_LINE_BYTES=10"}, "BUZZ_AGENT_MAX_LINE_BYTES=10 out of range"},
		{[]string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m", "BUZZ_AGENT_SYSTEM_PROMPT=a", "BUZZ_AGENT_SYSTEM_PROMPT_FILE=b"}, "mutually exclusive"},
		{[]string{"BUZZ_AGENT_PROVIDER=anthropic", "ANTHROPIC_API_KEY=k", "ANTHROPIC_MODEL=m", "BUZZ_AGENT_THINKING_EFFORT=none"}, "BUZZ_AGENT_THINKING_EFFORT"},
		{[]string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m", "BUZZ_AGENT_MAX_CONTEXT_TOKENS=100", "BUZZ_AGENT_MAX_OUTPUT_TOKENS=100"}, "must be greater"},
	} {
		var stderr strings.Builder
		code := Main(t.Context(), nil, procEnv(tc.env, &stderr))
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("env %v: exit %d, stderr %q; want 2 and %q", tc.env, code, stderr.String(), tc.want)
		}
	}
}

func TestParseHookServers(t *testing.T) {
	for in, want := range map[string]string{"*": "*", "a, b,,": "a,b", "*,foo": "\x00*,foo", "": ""} {
		if got := strings.Join(parseHookServers(in), ","); got != want {
			t.Errorf("parseHookServers(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestLongSessionStaysWithinHistoryBudget runs a 200-round session (20
// prompts of 10 tool rounds, each result 20 KB) with a 1 MiB history
// budget and handoffs off: no request may carry more than the budget plus
// the request frame.
func TestLongSessionStaysWithinHistoryBudget(t *testing.T) {
	const budget = 1 << 20
	srv := llmtest.New(t)
	srv.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs := req["messages"].([]any)
		sinceUser := 0
		for i := len(msgs) - 1; i >= 0 && msgs[i].(map[string]any)["role"] != "user"; i-- {
			if msgs[i].(map[string]any)["role"] == "tool" {
				sinceUser++
			}
		}
		if sinceUser >= 10 {
			return llmtest.Reply{Text: "done"}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{ID: fmt.Sprintf("c%d", len(msgs)), Name: "fake__echo"}}}
	})
	c := startAgent(t, srv, fmt.Sprintf("BUZZ_AGENT_MAX_HISTORY_BYTES=%d", budget), "BUZZ_AGENT_MAX_HANDOFFS=0", "BUZZ_AGENT_MAX_ROUNDS=0")
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_RESULT_SIZE=20000"))
	for i := 0; i < 20; i++ {
		if got := c.prompt(sid, fmt.Sprintf("prompt %d", i)); got != "end_turn" {
			t.Fatalf("prompt %d stop = %s", i, got)
		}
	}
	maxBody := 0
	for _, b := range srv.Bodies() {
		maxBody = max(maxBody, len(b))
	}
	const frame = 64 << 10 // system prompt, tool list, JSON framing
	if maxBody > budget+frame {
		t.Errorf("largest request %d bytes; budget %d", maxBody, budget)
	}
	t.Logf("220 LLM requests over 200 tool rounds; largest request %d bytes (budget %d)", maxBody, budget)
}

func TestStaleUsagePlusHistoryGrowthTriggersHandoff(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply{Calls: []llmtest.Call{{ID: "big", Name: "fake__echo"}}, InputTokens: 85000},
		llmtest.Reply{Text: "SUMMARY"}, llmtest.Reply{Text: "done"})
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_CONTEXT_TOKENS=100000", "BUZZ_AGENT_MAX_OUTPUT_TOKENS=1000")
	sid := c.newSession(fakeServer(t, "fake", "FAKE_MCP_RESULT_SIZE=6000"))
	if got := c.prompt(sid, "work"); got != "end_turn" {
		t.Fatalf("stop = %s", got)
	}
	if !strings.Contains(string(srv.Bodies()[1]), "[Internal handoff #1") {
		t.Errorf("second request is not a summary: %.200s", srv.Bodies()[1])
	}
	if logs := c.logs.String(); !strings.Contains(logs, "handoff #1 (history") || !strings.Contains(logs, " tokens)") {
		t.Errorf("handoff log line missing:\n%s", logs)
	}
}

// TestToolMetadataCapsEnforced: 200 tools with 100 KB descriptions make a
// 20 MB tools/list reply, over the 16 MiB MCP frame cap; either cap may
// refuse it, but the session must fail cleanly.
func TestToolMetadataCapsEnforced(t *testing.T) {
	c := startAgent(t, nil, "BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS=60")
	code, msg := c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{fakeServer(t, "fake", "FAKE_MCP_TOOL_COUNT=200", "FAKE_MCP_HUGE_DESC=1")}})
	if code != -32000 || !(strings.Contains(msg, "too many") || strings.Contains(msg, "line exceeds max")) {
		t.Errorf("-> %d %s", code, msg)
	}
	code, msg = c.callErr("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{fakeServer(t, "fake", "FAKE_MCP_TOOL_COUNT=200")}})
	if code != -32000 || !strings.Contains(msg, "too many") {
		t.Errorf("200 small tools -> %d %s", code, msg)
	}
}

func TestEmptyAssistantSerializesAsEmptyString(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "a", Name: "no__tool"}}}, llmtest.Reply{Text: "ok"})
	c := startAgent(t, srv, "BUZZ_AGENT_STREAM=0")
	c.prompt(c.newSession(), "x")
	body := srv.Requests()[1]
	if body["stream"] != false {
		t.Errorf("stream = %v; want false", body["stream"])
	}
	for _, m := range body["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] == "assistant" && mm["content"] != "" {
			t.Errorf("assistant content = %#v; want \"\"", mm["content"])
		}
	}
}

func TestAPIKeyRedacted(t *testing.T) {
	opts, err := parseOptions(procEnv([]string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=sk-very-secret", "OPENAI_COMPAT_MODEL=m"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("options", "opts", opts, "key", opts.APIKey)
	fmt.Fprintf(&b, "%v %+v %#v %s", opts, opts, opts, opts.APIKey)
	if strings.Contains(b.String(), "sk-very-secret") {
		t.Errorf("key leaked: %s", b.String())
	}
}

// TestContextWindowErrorForcesHandoff: a 400 saying the prompt is over the
// context window makes the agent summarise and retry instead of failing;
// an ordinary 400 stays terminal.
func TestContextWindowErrorForcesHandoff(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply{Status: 400, Body: `{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}`},
		llmtest.Reply{Text: "SUMMARY"}, llmtest.Reply{Text: "fits now"})
	c := startAgent(t, srv, "BUZZ_AGENT_MAX_HANDOFFS=0", "BUZZ_AGENT_MAX_ROUNDS=1")
	if got := c.prompt(c.newSession(), "big task"); got != "end_turn" {
		t.Fatalf("stop = %s", got)
	}
	if srv.Count() != 3 || !strings.Contains(string(srv.Bodies()[1]), "[Internal handoff #1") {
		t.Fatalf("requests = %d; second = %.120s", srv.Count(), srv.Bodies()[1])
	}
	if last := string(srv.Bodies()[2]); !strings.Contains(last, `[Context Handoff]\nSUMMARY`) || !strings.Contains(last, "big task") {
		t.Errorf("retry request = %.300s", last)
	}
	// Recovery is bounded: a provider that always refuses ends the turn.
	srv2 := llmtest.New(t)
	srv2.SetHandler(func(req map[string]any) llmtest.Reply {
		if strings.Contains(fmt.Sprint(req["messages"]), "[Internal handoff") {
			return llmtest.Reply{Text: "S"}
		}
		return llmtest.Reply{Status: 400, Body: "prompt is too long"}
	})
	c2 := startAgent(t, srv2)
	code, msg := c2.callErr("session/prompt", map[string]any{"sessionId": c2.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}})
	if code != -32000 || !strings.Contains(msg, "prompt is too long") || srv2.Count() != 7 {
		t.Errorf("-> %d %s after %d requests; want the error after 4 calls and 3 summaries", code, msg, srv2.Count())
	}
}

// TestStateKeepsPromptImages: a prompt's images survive the session file.
func TestStateKeepsPromptImages(t *testing.T) {
	h := []llm.Message{{Role: llm.RoleUser, Text: "what is this?", Images: []llm.Image{{Data: "iVBORw0KGgo=", MIME: "image/png"}}}}
	got, err := fromState(toState(h))
	if err != nil || len(got) != 1 || len(got[0].Images) != 1 || got[0].Images[0] != h[0].Images[0] || got[0].Text != h[0].Text {
		t.Fatalf("fromState(toState(%+v)) = %+v, %v", h, got, err)
	}
	if wireBytes(&got[0]) != len("what is this?")+len("iVBORw0KGgo=")+len("image/png") || pressureBytes(&got[0]) != len("what is this?")+imageContextBytes+len("image/png") {
		t.Errorf("sizes %d, %d do not count the image", wireBytes(&got[0]), pressureBytes(&got[0]))
	}
}
