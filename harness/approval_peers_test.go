package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// peerApprovalTimeout is --approval-timeout in the peers' tests: the
// answered requests are answered at once; the third waits it out.
const peerApprovalTimeout = 10 * time.Second

// touchScript picks, for the newest prompt anchor not handled yet, the
// command `touch approved-<first 12 of the event id>`, once per anchor.
type touchScript struct {
	anchor *regexp.Regexp
	mu     sync.Mutex
	done   map[string]bool
}

func newTouchScript() *touchScript {
	return &touchScript{anchor: regexp.MustCompile(`--reply-to ([0-9a-f]{64})`), done: map[string]bool{}}
}

func (s *touchScript) next(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.anchor.FindAllStringSubmatch(strings.ReplaceAll(text, `\u0060`, "`"), -1)
	for i := len(all) - 1; i >= 0; i-- {
		if id := all[i][1]; !s.done[id] {
			s.done[id] = true
			return "touch approved-" + id[:12]
		}
	}
	return ""
}

// askBeforeActing drives three mentions through a harness whose agent
// asks permission before running `touch` in dir: the owner allows the
// first (the file appears), rejects the second (it does not), and leaves
// the third unanswered (rejected after peerApprovalTimeout with a notice;
// no file). A plain member's allow of the second changes nothing.
func askBeforeActing(t *testing.T, w *world, dir string) {
	t.Helper()
	ran := func(ev *nostr.Event) bool {
		_, err := os.Stat(filepath.Join(dir, "approved-"+ev.ID[:12]))
		return err == nil
	}
	option := func(req *nostr.Event, kind string) string {
		for _, tg := range req.Tags {
			if len(tg) >= 3 && tg[0] == workspace.TagApprovalOption && tg[2] == kind {
				return tg[1]
			}
		}
		t.Fatalf("the request offers no %s option: %v", kind, req.Tags)
		return ""
	}
	closed := func(req *nostr.Event, kind int) {
		t.Helper()
		w.awaitEvent(t, "the agent's closing answer", 60*time.Second, nostr.Filter{Kinds: []int{kind},
			Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {req.ID}}}, nil)
	}
	a := w.mention("touch one")
	req := waitApproval(t, w, a)
	if cmd := req.Tags.Find(workspace.TagApprovalCommand); len(cmd) < 2 || !strings.Contains(cmd[1], "approved-"+a.ID[:12]) {
		t.Errorf("the request's command tag = %v; want the touch command; request %v", cmd, req)
	}
	if ran(a) {
		t.Fatal("the command ran before anyone allowed it")
	}
	answerAs(w, w.owner, req, workspace.KindApprovalGrant, option(req, "allow_once"))
	closed(req, workspace.KindApprovalGrant)
	waitFor(t, "the allowed command to run", 60*time.Second, func() bool { return ran(a) })
	waitFor(t, "the first turn to end", 120*time.Second, func() bool { return w.seenReactions(a) == 0 })

	b := w.mention("touch two")
	req = waitApproval(t, w, b)
	answerAs(w, w.stranger, req, workspace.KindApprovalGrant, option(req, "allow_once"))
	answerAs(w, w.owner, req, workspace.KindApprovalDeny, option(req, "reject_once"))
	closed(req, workspace.KindApprovalDeny)
	waitFor(t, "the second turn to end", 120*time.Second, func() bool { return w.seenReactions(b) == 0 })
	if ran(b) {
		t.Fatal("the rejected command ran")
	}

	c := w.mention("touch three")
	req = waitApproval(t, w, c)
	w.awaitAgentReply(t, "the timeout notice", peerApprovalTimeout+60*time.Second, c.ID, func(ev *nostr.Event) bool {
		return strings.Contains(ev.Content, "nobody answered")
	})
	closed(req, workspace.KindApprovalDeny)
	waitFor(t, "the third turn to end", 120*time.Second, func() bool { return w.seenReactions(c) == 0 })
	if ran(c) {
		t.Fatal("the unanswered command ran")
	}
}

// TestClaudeAgentACPAsksBeforeActing: claude-agent-acp in its default
// mode (--permission-mode default: the harness sets none) asks before its
// Bash tool runs a command; the request reaches the thread and the owner's
// answer, or its absence, decides.
func TestClaudeAgentACPAsksBeforeActing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	modules, node := node22(t)
	script := npmScript(t, modules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")
	w := newWorld(t)
	ts := newTouchScript()
	llm := llmtest.New(t)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		r := claudeTouch(ts, req)
		r.InputTokens, r.OutputTokens = 10, 5
		return r
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpModel(t, llm)
		}
	})
	env := w.agentEnv(t, claudeEnv(t, llm.URL)...)
	w.runHarness(t, env, timing{}, "--agent-command", node, "--agent-args", script, "--mcp-command", "",
		"--idle-timeout", "120", "--max-turn-duration", "300", "--permission-mode", "default",
		"--approval-timeout", fmt.Sprint(int(peerApprovalTimeout/time.Second)))
	askBeforeActing(t, w, env.Dir)
}

// claudeTouch answers an Anthropic request: a Bash call touching the
// newest prompt's file, plain text after a tool's result or for requests
// without the Bash tool (titles, summaries).
func claudeTouch(ts *touchScript, req map[string]any) llmtest.Reply {
	body, _ := json.Marshal(req)
	if !strings.Contains(string(body), `"name":"Bash"`) {
		return llmtest.Reply{Text: "ok"}
	}
	msgs, _ := req["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		last, _ := json.Marshal(m)
		if strings.Contains(string(last), `"tool_result"`) {
			return llmtest.Reply{Text: "done"}
		}
		cmd := ts.next(string(last))
		if cmd == "" {
			return llmtest.Reply{Text: "nothing to do"}
		}
		args, _ := json.Marshal(map[string]string{"command": cmd, "description": "Touch the file"})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", time.Now().UnixNano()), Name: "Bash", Args: string(args)}}}
	}
	return llmtest.Reply{Text: "ok"}
}

// escalatingResponses is a loopback OpenAI Responses API whose model runs
// the newest prompt's touch command through codex's exec_command asking
// to leave the sandbox (sandbox_permissions require_escalated), which
// codex under approval_policy on-request must ask the client about.
type escalatingResponses struct {
	responsesLog
	script *touchScript
}

func (f *escalatingResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, id, ok := f.record(w, r)
	if !ok {
		return
	}
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal([]byte(body), &req)
	cmd := ""
	for i := len(req.Input) - 1; i >= 0; i-- {
		item := string(req.Input[i])
		if strings.Contains(item, `"function_call_output"`) {
			break
		}
		if strings.Contains(item, `"role":"user"`) {
			cmd = f.script.next(item)
			break
		}
	}
	if cmd == "" {
		streamResponse(w, id, "", "", "")
		return
	}
	args, _ := json.Marshal(map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated",
		"justification": "The person asked for this file."})
	streamResponse(w, id, "", "exec_command", string(args))
}

// TestCodexACPAsksBeforeActing: codex-acp under approval_policy
// on-request asks before a command that leaves its sandbox; the request
// reaches the thread and the owner's answer, or its absence, decides.
func TestCodexACPAsksBeforeActing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex-acp")
	}
	codex := codexAgent(t)
	w := newWorld(t)
	fr := &escalatingResponses{script: newTouchScript()}
	srv := httptest.NewServer(fr)
	t.Cleanup(srv.Close)
	home := codexHome(t, srv.URL)
	for _, kv := range home {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			f := filepath.Join(h, ".codex", "config.toml")
			b, _ := os.ReadFile(f)
			os.WriteFile(f, []byte(`approval_policy = "on-request"`+"\n"+string(b)), 0o600)
		}
	}
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	env := w.agentEnv(t, append(home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	t.Cleanup(func() {
		if t.Failed() {
			fr.mu.Lock()
			defer fr.mu.Unlock()
			for i, b := range fr.bodies {
				if j := strings.LastIndex(b, `"function_call_output"`); j >= 0 {
					t.Logf("request %d tool output: %.800s", i, b[j:])
				}
			}
		}
	})
	w.runHarness(t, env, timing{}, "--agent-command", codex, "--mcp-command", "", "--idle-timeout", "120",
		"--max-turn-duration", "300", "--permission-mode", "default", "--approval-timeout", fmt.Sprint(int(peerApprovalTimeout/time.Second)))
	askBeforeActing(t, w, env.Dir)
}
