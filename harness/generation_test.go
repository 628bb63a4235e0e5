package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/harness/observer"
)

// generationRig runs the harness in this process over the real buzz-agent
// and a scripted model, and restarts it on the same state directory.
type generationRig struct {
	w     *world
	llm   *llmtest.Server
	mu    sync.Mutex
	texts []string // the user text of every model request, in order
}

const failWord = "INTRO-7"

func newGenerationRig(t *testing.T) *generationRig {
	g := &generationRig{w: newWorld(t), llm: llmtest.New(t)}
	g.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		b, _ := json.Marshal(req)
		text := userTexts(t, b)
		g.mu.Lock()
		g.texts = append(g.texts, text)
		g.mu.Unlock()
		return llmtest.Reply{Text: "noted"}
	})
	return g
}

func (g *generationRig) run(t *testing.T, tm timing, flags ...string) (stop func()) {
	env := g.w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+g.llm.URL, "HOME="+g.w.stateHome)
	tm.retryBase, tm.respawn = 20*time.Millisecond, 10*time.Millisecond
	return g.w.runHarness(t, env, tm, append([]string{"--no-typing", "--multiple-event-handling", "queue"}, flags...)...)
}

// asked returns the first model request naming id, waiting for it.
func (g *generationRig) asked(t *testing.T, id string) string {
	t.Helper()
	var got string
	waitFor(t, "the model asked about "+id, 60*time.Second, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, s := range g.texts {
			if strings.Contains(s, id) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// heldSession is the session the state file keeps for the world's channel.
func heldSession(t *testing.T, w *world) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.stateDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st harnessState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if m := st.Channels[w.channel]; m != nil {
		return m.Session
	}
	return ""
}

// TestAttackRestartLoadsDroppedSession: the session whose initial message
// failed is dropped, and the built buzz-acp, stopped and started again on
// the same state, does not load it: the next turn opens a new session and
// sends the initial message (the owner's standing instructions) again.
// Before, the turn's end recorded the dropped session, the restarted
// harness loaded it, and the agent went on without its instructions.
func TestAttackRestartLoadsDroppedSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built buzz-acp and buzz-agent")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	var fail atomic.Bool
	fail.Store(true)
	var mu sync.Mutex
	var texts []string
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		b, _ := json.Marshal(req)
		text := userTexts(t, b)
		mu.Lock()
		texts = append(texts, text)
		mu.Unlock()
		if fail.Load() && strings.Contains(text, failWord) {
			return llmtest.Reply{Status: 401, Body: `{"error":{"message":"invalid api key"}}`}
		}
		return llmtest.Reply{Text: "noted"}
	})
	r.args = []string{"--multiple-event-handling", "queue", "--initial-message", failWord + " introduce yourself"}
	r.start()
	first := w.mention("hello")
	// The 401 is not retried: the thread gets the notice at once.
	w.awaitAgentReply(t, "the failure notice", 60*time.Second, first.ID, nil)
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.cmd.Wait()
	if s := heldSession(t, w); s != "" {
		t.Errorf("the state keeps session %s, dropped when its initial message failed", s)
	}

	fail.Store(false)
	r.start()
	second := w.mention("hello again")
	intros := func() (asked bool, intro int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range texts {
			asked = asked || strings.Contains(s, second.ID)
			if strings.Contains(s, failWord) {
				intro++
			}
		}
		return asked, intro
	}
	waitFor(t, "the model asked about "+second.ID, 60*time.Second, func() bool { asked, _ := intros(); return asked })
	if _, intro := intros(); intro < 2 {
		t.Errorf("the initial message reached the model %d times; want it again after the restart (a new session)", intro)
	}
}

// TestRestartAfterRenewalAsTurnEnds: a !rotate or a switch_model that
// lands after a turn's prompt has ended but before the loop hears of it
// renews the channel's session, and a restart does not load the old one.
// Before, the turn's end recorded the old session whatever its
// generation, and the restarted harness went on with the conversation the
// owner had asked to leave.
func TestRestartAfterRenewalAsTurnEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real agent")
	}
	for _, how := range []string{"rotate", "switch_model"} {
		t.Run(how, func(t *testing.T) {
			g := newGenerationRig(t)
			w := g.w
			var once sync.Once
			renewed := make(chan struct{})
			ended := func(h *harness, channel string) {
				once.Do(func() {
					defer close(renewed)
					gen := make(chan int, 1)
					h.do(func() { gen <- h.gens[channel] })
					before := <-gen
					if how == "rotate" {
						w.mention("!rotate")
					} else {
						h.do(func() {
							h.applyControl(context.Background(), observer.ControlRequest{Type: observer.ControlSwitchModel,
								ChannelID: channel, ModelID: "m", RequestID: "r1"})
						})
					}
					waitFor(t, "the session renewed", 15*time.Second, func() bool {
						h.do(func() { gen <- h.gens[channel] })
						return <-gen != before
					})
				})
			}
			stop := g.run(t, timing{ended: ended})
			first := w.mention("remember the word pelican")
			<-renewed
			waitFor(t, "the turn's reactions cleaned up", 20*time.Second, func() bool { return w.seenReactions(first) == 0 })
			stop()
			if s := heldSession(t, g.w); s != "" {
				t.Errorf("the state keeps session %s, renewed by %s before its turn ended", s, how)
			}

			g.run(t, timing{})
			next := w.mention("which word was it?")
			if text := g.asked(t, next.ID); strings.Contains(text, "pelican") {
				t.Errorf("the turn after the restart went on in the session renewed by %s; the model saw:\n%s", how, text)
			}
		})
	}
}
