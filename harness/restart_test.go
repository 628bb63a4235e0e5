package harness

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// restartRig runs the real buzz-acp (with the real buzz-agent under it)
// against the world's relay and a fake LLM, and restarts it on the same
// state.
type restartRig struct {
	t       testing.TB
	w       *world
	acp     string
	env     []string
	llm     *llmtest.Server
	cmd     *exec.Cmd
	args    []string // more buzz-acp flags
	dir     string   // working directory of every start
	mu      sync.Mutex
	lasts   []string    // the newest message of every model request, in order
	askedAt []time.Time // when each came
}

func newRestartRig(t testing.TB, w *world) *restartRig {
	r := &restartRig{t: t, w: w, acp: testexe.Link(t, "buzz-acp"), llm: llmtest.New(t), dir: t.TempDir()}
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		b, _ := json.Marshal(msgs[len(msgs)-1])
		r.mu.Lock()
		r.lasts = append(r.lasts, string(b))
		r.askedAt = append(r.askedAt, time.Now())
		n := len(r.lasts)
		r.mu.Unlock()
		return llmtest.Reply{Text: "answer " + strconv.Itoa(n)}
	})
	skHex, _ := w.agent.AppendHex(nil)
	r.env = []string{"BUZZ_PRIVATE_KEY=" + string(skHex), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + w.stateHome,
		"PATH=" + os.Getenv("PATH"), "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL=" + r.llm.URL}
	return r
}

// start runs buzz-acp; it is killed at test end if still running.
func (r *restartRig) start() {
	cmd := exec.Command(r.acp, append([]string{"--relay-url", r.w.relay.URL(), "--agent-owner", r.w.owner.Public().Hex(),
		"--no-presence", "--no-typing"}, r.args...)...)
	cmd.Env = r.env
	cmd.Dir = r.dir
	cmd.Stderr = r.t.Output()
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	r.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// killAll sends SIGKILL to the harness and to every agent under it.
func (r *restartRig) killAll() {
	kids := childPIDs(r.cmd.Process.Pid)
	if len(kids) == 0 {
		r.t.Fatal("buzz-acp has no agent process to kill")
	}
	r.cmd.Process.Kill()
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.cmd.Wait()
}

// requestsFor returns how many model requests had a newest message
// naming event id: how many times the event was answered.
func (r *restartRig) requestsFor(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lasts {
		if strings.Contains(l, id) {
			n++
		}
	}
	return n
}

// lastRequest is the full body of the newest model request.
func (r *restartRig) lastRequest() string {
	b := r.llm.Bodies()
	if len(b) == 0 {
		return ""
	}
	return string(b[len(b)-1])
}

// waitReply waits until the agent has replied in ev's thread.
func (r *restartRig) waitReply(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the agent's reply to "+ev.Content, 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := r.w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{r.w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
		return len(evs) > 0
	})
}

// waitAsked waits until the model has been asked about ev.
func (r *restartRig) waitAsked(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the model to be asked about "+ev.Content, 60*time.Second, func() bool { return r.requestsFor(ev.ID) > 0 })
}

// waitAnswered waits until the harness state on disk records ev as
// answered: what a kill after that point must not lose.
func (r *restartRig) waitAnswered(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the harness state to record "+ev.Content, 30*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(r.w.stateHome, "buzzbox", "acp", "*", "state.json"))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), ev.ID) && strings.Contains(string(b), `"session":"ses_`) {
				return true
			}
		}
		return false
	})
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == want {
			n, _ := strconv.Atoi(e.Name())
			out = append(out, n)
		}
	}
	return out
}

// TestBugRestartForgetsConversation: buzz-acp and buzz-agent killed with
// SIGKILL mid-conversation and started again. Before, the restarted
// harness began a new session (the model never saw the earlier turn) and
// mentions posted while both were down were never answered. Now the
// session is loaded, the missed mentions are answered once, in one batch,
// and nothing answered before is answered again.
func TestBugRestartForgetsConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	// Queued: a mention that comes while the catch-up turn runs gets a
	// turn of its own, and each turn is one model request.
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	first := w.mention("remember the word pelican")
	r.waitReply(first)
	r.waitAnswered(first)

	r.killAll()
	down1 := w.mention("posted while down, one")
	down2 := w.mention("posted while down, two")

	r.start()
	r.waitAsked(down2)
	if !strings.Contains(r.lastRequest(), "remember the word pelican") {
		t.Errorf("the catch-up turn did not continue the conversation; model saw:\n%s", r.lastRequest())
	}
	third := w.mention("which word was it?")
	r.waitAsked(third)
	if body := r.lastRequest(); !strings.Contains(body, "remember the word pelican") || !strings.Contains(body, "posted while down, one") {
		t.Errorf("the turn after the restart lost earlier turns; model saw:\n%s", body)
	}
	for _, ev := range []*nostr.Event{first, down1, down2, third} {
		if n := r.requestsFor(ev.ID); n != 1 {
			t.Errorf("%q answered %d times; want once", ev.Content, n)
		}
	}
}

// BenchmarkRestartCatchup measures a restart with 50 mentions waiting:
// from starting buzz-acp (which starts buzz-agent against a fake LLM on
// loopback) to the first reply on the relay. Goal: at most 2 s.
func BenchmarkRestartCatchup(b *testing.B) {
	const waiting = 50
	for range b.N {
		b.StopTimer()
		w := newWorld(b)
		r := newRestartRig(b, w)
		w.seedState(time.Now().Add(-time.Minute)) // the last run answered nothing
		for i := range waiting {
			w.mention("missed " + strconv.Itoa(i))
		}
		b.StartTimer()
		r.start()
		waitFor(b, "the first catch-up reply", 60*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"h": {w.channel}}})
			return len(evs) > 0
		})
		b.StopTimer()
		if n := r.requestsFor("missed 0"); n != 1 {
			b.Errorf("the oldest missed mention was answered %d times; want once", n)
		}
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// TestBugAgentCrashForgetsConversation: an agent killed under a running
// harness was replaced by a new one that started every channel afresh.
// The harness now loads the channel's session into the new agent.
func TestBugAgentCrashForgetsConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	first := w.mention("remember the word heron")
	r.waitAsked(first)
	r.waitReply(first)
	// The reply is posted during the turn; buzz-agent keeps the session
	// when the turn ends. Kill it only once the session is on disk.
	waitFor(t, "buzz-agent to keep the session", 30*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(w.stateHome, "buzzbox", "agent", "*.json"))
		for _, p := range paths {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "remember the word heron") {
				return true
			}
		}
		return false
	})
	kids := childPIDs(r.cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("buzz-acp has no agent process")
	}
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range kids {
		waitFor(t, "the agent gone", 10*time.Second, func() bool { return !processLive(pid) })
	}
	// The next mention finds the agent dead and gets a new one.
	second := w.mention("which word?")
	r.waitAsked(second)
	if body := r.lastRequest(); !strings.Contains(body, "remember the word heron") {
		t.Errorf("the new agent did not continue the conversation; model saw:\n%s", body)
	}
}
