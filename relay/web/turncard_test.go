package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// upWorkspace is a running `buzzbox up`: its address, the owner's sign-in
// link and the general channel.
type upWorkspace struct {
	addr, link, channel string
	home                string // HOME, with the state dir under home/state
	dir, modelURL       string // up's working directory and model
	env                 []string
	run                 *upRun // the running process, shared by copies
}

// upRun is one run of `buzzbox up`.
type upRun struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// startUp runs the built `buzzbox up` in a new directory against model,
// stopped by Ctrl-C at the test's end; env entries add to or override its
// environment (presence is off unless env turns it on).
func startUp(t testing.TB, model *llmtest.Server, env ...string) upWorkspace {
	t.Helper()
	return startUpAt(t, t.TempDir(), model.URL, env...)
}

// startUpAt is startUp in working directory dir, against the scripted
// model at modelURL.
func startUpAt(t testing.TB, dir, modelURL string, env ...string) upWorkspace {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := upWorkspace{addr: ln.Addr().String(), home: t.TempDir(), dir: dir, modelURL: modelURL, env: env, run: &upRun{}}
	ln.Close()
	t.Cleanup(w.stop)
	w.start(t)
	return w
}

// start runs `buzzbox up` (again, after stop: same address and state,
// as a person restarts it) and returns once it has printed the owner's
// sign-in link and the general channel, which it records in w.
func (w *upWorkspace) start(t testing.TB) {
	t.Helper()
	up := exec.Command(testexe.Path(t), "up", "--listen", w.addr)
	up.Dir = w.dir
	up.Env = []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m",
		"OPENAI_COMPAT_BASE_URL=" + w.modelURL, "HOME=" + w.home, "XDG_STATE_HOME=" + filepath.Join(w.home, "state"),
		"PATH=" + os.Getenv("PATH"), "BUZZ_ACP_NO_PRESENCE=true"}
	up.Env = append(up.Env, w.env...)
	up.Stderr = t.Output()
	out, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { up.Wait(); close(done) }() // ends when up exits
	w.run.cmd, w.run.done = up, done
	type printed struct{ link, channel string }
	found := make(chan printed, 1)
	go func() { // reads up's stdout until it exits
		var p printed
		told := false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			if m := channelRE.FindStringSubmatch(l); m != nil && p.channel == "" {
				p.channel = m[1]
			}
			if m := loginLinkRE.FindString(l); m != "" && p.link == "" {
				p.link = m
			}
			if p.link != "" && p.channel != "" && !told {
				found <- p
				told = true
			}
		}
	}()
	select {
	case p := <-found:
		w.link, w.channel = p.link, p.channel
	case <-done:
		t.Fatal("buzzbox up exited before printing its sign-in link and channel")
	case <-time.After(waitLimit):
		t.Fatal("buzzbox up printed no sign-in link and channel")
	}
}

// stop ends `buzzbox up` with Ctrl-C, as a person stops it, and waits
// for it (killing it after a minute).
func (w upWorkspace) stop() {
	r := w.run
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

// lastMessage is the newest message of a chat-completions request, as
// JSON: what a scripted model answers.
func lastMessage(req map[string]any) []byte {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return nil
	}
	b, _ := json.Marshal(msgs[len(msgs)-1])
	return b
}

// shellCall is a scripted model's answer that runs command in the agent's
// shell (buzz-dev-mcp's shell tool).
func shellCall(command string) llmtest.Reply {
	args, _ := json.Marshal(map[string]string{"command": command})
	return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
}

// afterTool reports whether a model request's newest message (last, as
// lastMessage gives it) is a tool's result.
func afterTool(last []byte) bool { return bytes.Contains(last, []byte(`"role":"tool"`)) }

// sleepyModel is a scripted model whose first answer to a prompt holding
// "sleep" is a shell call that sleeps; everything else ends the turn.
func sleepyModel(t *testing.T) *llmtest.Server {
	model := llmtest.New(t)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		last := lastMessage(req)
		if !strings.Contains(string(last), `"tool"`) && strings.Contains(string(last), "sleep") {
			return shellCall("sleep 60")
		}
		return llmtest.Reply{Text: "done sleeping"}
	})
	return model
}

// recordCards makes the page keep every turn card state it shows, in
// order, in window.turnStates (a state once per change), and each step a
// working card named, once, in window.turnSteps.
const recordCards = `(() => {
  window.turnStates = [];
  window.turnSteps = [];
  const note = () => {
    for (const c of document.querySelectorAll('#feed .turn-card')) {
      const s = c.dataset.state;
      if (window.turnStates[window.turnStates.length - 1] !== s) window.turnStates.push(s);
      const step = c.querySelector('.turn-step')?.textContent;
      if (step && !window.turnSteps.includes(step)) window.turnSteps.push(step);
    }
  };
  new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true });
})()`

// TestBrowserTurnCard runs the built `buzzbox up` with two people in
// #general: the owner (sign-in link) and a member the owner invited. The
// owner mentions the agent, whose model runs a long shell command; in the
// member's browser the message's card goes working, then working with the
// tool call as its step and the time ticking, with no Stop button for a plain
// member; the owner presses Stop and the member's card says the owner
// stopped it.
func TestBrowserTurnCard(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and two browsers")
	}
	model := sleepyModel(t)
	w := startUp(t, model)
	owner, ownerErrors := browser(t)
	openURL(t, owner, "open the sign-in link", w.link)
	waitJS(t, owner, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, owner, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, owner, "the channel view", textIn("#channel-name", "general"))
	member, memberErrors := inviteMember(t, owner, "Hedy", "general")
	do(t, member, "record the cards", chromedp.Evaluate[chromedp.Void](recordCards))
	received := watchStatusFrames(member)

	do(t, owner, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
	waitJS(t, owner, "the agent in the mention list", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('agent'))`)
	do(t, owner, "pick it and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "please sleep on it"), chromedp.KeyEvent(kb.Enter))

	card := `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('please sleep on it'))?.querySelector('.turn-card')`
	waitJS(t, member, "the card working on the tool call", fmt.Sprintf(`(() => { const c = %s; return c && c.dataset.state === 'working' && c.querySelector('.turn-step')?.textContent === 'buzz-dev-mcp__shell'; })()`, card))
	first, err := chromedp.Run(member, chromedp.Evaluate[string](card+`.querySelector('.turn-elapsed').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, member, "the time ticking", fmt.Sprintf(`%s.querySelector('.turn-elapsed').textContent !== %q`, card, first))
	shot(t, member, t.TempDir(), "turncard-working-member")
	shot(t, owner, t.TempDir(), "turncard-working-owner")
	if has, _ := chromedp.Run(member, chromedp.Evaluate[bool](card+`.querySelector('.turn-stop') !== null`)); has {
		t.Errorf("a plain member is offered Stop")
	}
	// The owner reads the turn's transcript, decrypted from the agent's
	// observer frames: the tool call with its input, running.
	steps := card + `?.querySelector('.turn-transcript')`
	waitJS(t, owner, "the owner's transcript of the shell call", fmt.Sprintf(`(() => { const d = %s; const c = d && d.querySelector('.turn-call'); return !!c && c.querySelector('.turn-call-input')?.textContent.includes('sleep 60'); })()`, steps))
	do(t, owner, "open the steps", chromedp.Evaluate[chromedp.Void](steps+`.querySelector('summary').click()`))
	waitJS(t, owner, "the steps open", steps+`.open`)
	shot(t, owner, t.TempDir(), "turncard-transcript-owner")
	if has, _ := chromedp.Run(member, chromedp.Evaluate[bool](steps+` != null`)); has {
		t.Errorf("a plain member sees the owner's transcript")
	}
	stop := fmt.Sprintf(`(() => { const b = %s?.querySelector('.turn-stop'); if (b) b.click(); return !!b; })()`, card)
	waitJS(t, owner, "the owner's Stop pressed", stop)
	waitJS(t, member, "the card stopped by the owner", fmt.Sprintf(`(() => { const c = %s; return c && c.dataset.state === 'cancelled' && c.textContent.includes('stopped by owner'); })()`, card))
	// The page drew working and cancelled, and got nothing else: an idle
	// agent takes the message at once, so the harness holds back seen.
	states, err := chromedp.Run(member, chromedp.Evaluate[[]string](`window.turnStates`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(states, " "); !strings.HasPrefix(got, "working") || !strings.HasSuffix(got, "working cancelled") {
		t.Errorf("the member's card showed %q; want working → cancelled", got)
	}
	id, err := chromedp.Run(member, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('please sleep on it')).dataset.id`))
	if err != nil {
		t.Fatal(err)
	}
	var wire []string
	for _, f := range received.of(id) {
		if len(wire) == 0 || wire[len(wire)-1] != f.State {
			wire = append(wire, f.State)
		}
	}
	if got := strings.Join(wire, " "); got != "working cancelled" {
		t.Errorf("the member's browser received %q; want working cancelled", got)
	}
	for _, e := range append(ownerErrors(), memberErrors()...) {
		t.Errorf("browser console: %s", e)
	}
}

// statusFrame is one turn status event a page received.
type statusFrame struct {
	State, Step string
	ids         []string
	at          time.Time
}

// statusFrames collects the turn status events a page's websocket gets.
type statusFrames struct {
	mu  sync.Mutex
	all []statusFrame
}

// of lists the frames naming message id, in arrival order.
func (s *statusFrames) of(id string) []statusFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []statusFrame
	for _, f := range s.all {
		for _, e := range f.ids {
			if e == id {
				out = append(out, f)
			}
		}
	}
	return out
}

func watchStatusFrames(ctx context.Context) *statusFrames {
	s := &statusFrames{}
	frames := chromedp.Events(ctx, network.WebSocketFrameReceived)
	go func() { // ends when ctx ends
		for ev, err := range frames {
			if err != nil {
				return
			}
			if ev.Response == nil {
				continue
			}
			var msg []json.RawMessage
			var e struct {
				Kind    int        `json:"kind"`
				Content string     `json:"content"`
				Tags    [][]string `json:"tags"`
			}
			if json.Unmarshal([]byte(ev.Response.PayloadData), &msg) != nil || len(msg) != 3 || string(msg[0]) != `"EVENT"` ||
				json.Unmarshal(msg[2], &e) != nil || e.Kind != 20100 {
				continue
			}
			f := statusFrame{at: time.Now()}
			json.Unmarshal([]byte(e.Content), &f)
			for _, tg := range e.Tags {
				if len(tg) >= 2 && tg[0] == "e" {
					f.ids = append(f.ids, tg[1])
				}
			}
			s.mu.Lock()
			s.all = append(s.all, f)
			s.mu.Unlock()
		}
	}()
	return s
}

// TestBrowserTurnCardWaitsForApproval: with a rule that puts sleep on a
// leash, the agent's shell call becomes an approval request in the
// thread, and the owner's card says the agent is waiting for approval
// (derived in the page from the unanswered request naming the message).
func TestBrowserTurnCardWaitsForApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	rules := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(rules, []byte("sleep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startUp(t, sleepyModel(t), "BUZZ_AGENT_APPROVAL_RULES="+rules)
	owner, consoleErrors := browser(t)
	openURL(t, owner, "open the sign-in link", w.link)
	waitJS(t, owner, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, owner, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, owner, "the channel view", textIn("#channel-name", "general"))
	do(t, owner, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
	waitJS(t, owner, "the agent in the mention list", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('agent'))`)
	do(t, owner, "pick it and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "please sleep on it"), chromedp.KeyEvent(kb.Enter))
	card := `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('please sleep on it'))?.querySelector('.turn-card')`
	waitJS(t, owner, "the card waiting for approval", fmt.Sprintf(`(() => { const c = %s; return c && c.dataset.state === 'approval' && c.textContent.includes('waiting for approval'); })()`, card))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
