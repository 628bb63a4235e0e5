package harness

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// Pause and resume: the agent's owner sends a workspace.KindAgentControl
// event (p = the agent, content "pause" or "resume") from the web
// client's agents panel or `buzz agents pause|resume`. While paused the
// harness starts no turn: what arrives waits in its queue (each message
// told once that the agent is paused) and runs, in order, on resume. The
// state is kept in the state file, so a paused agent stays paused across
// a restart, and it is said in the agent's presence ("paused"), which also
// carries the model and the day's usage for the agents panel.

// controlSub is the subscription of pause and resume requests.
const controlSub = "agent-control"

// Control words (KindAgentControl content).
const (
	controlPause  = "pause"
	controlResume = "resume"
)

// presencePaused is the presence of a paused agent.
const presencePaused = "paused"

func controlFilter(agent string) nostr.Filter {
	since := nostr.Now()
	return nostr.Filter{Kinds: []int{workspace.KindAgentControl}, Tags: nostr.TagMap{"p": {agent}}, Since: &since}
}

// agentControl vets one pause or resume request (on the intake goroutine;
// the relay client checked its signature) and hands an obeyed one to the
// loop.
func (h *harness) agentControl(ctx context.Context, ev *nostr.Event) {
	word := strings.TrimSpace(ev.Content)
	log := h.log.With("by", ev.PubKey, "control", word)
	switch {
	case h.cfg.Owner == "" || ev.PubKey != h.cfg.Owner:
		log.Warn("pause/resume from someone other than the agent's owner; ignored")
		return
	case time.Since(ev.CreatedAt.Time()) > stopMaxAge:
		log.Warn("pause/resume request too old; ignored")
		return
	case word != controlPause && word != controlResume:
		log.Warn("unknown agent control; ignored")
		return
	}
	h.do(func() { h.setPaused(ctx, word == controlPause) })
}

// setPaused applies a pause or resume on the loop goroutine.
func (h *harness) setPaused(ctx context.Context, paused bool) {
	if h.store.paused() == paused {
		h.presenceNow() // said again: a client asking for the state gets it
		return
	}
	h.store.setPaused(paused)
	h.live.set(func(l *liveState) { l.paused = paused })
	h.log.Info("agent paused by its owner", "paused", paused)
	h.presenceNow()
	if !paused {
		h.pauseTold = nil
		h.dispatch(ctx)
	}
}

// holdPaused is dispatch's check while paused: every waiting event not yet
// told gets one notice, and no turn starts. It reports whether the agent
// is paused.
func (h *harness) holdPaused(ctx context.Context) bool {
	if !h.store.paused() {
		return false
	}
	told := map[string]bool{} // only what still waits, so the set stays bounded by the queues
	for _, cs := range h.queues {
		var fresh []*Event
		for _, e := range cs.queue {
			if !h.pauseTold[e.ID] {
				fresh = append(fresh, e)
			}
			told[e.ID] = true
		}
		if len(fresh) > 0 {
			h.notice(ctx, cs, fresh, "⏸ I am paused by my owner; I will take this up when they resume me.")
		}
	}
	h.pauseTold = told
	return true
}

// liveState is what the presence loop says besides online: whether the
// agent is paused and what it has spent today. The loop goroutine writes
// it; the presence loop reads it.
type liveState struct {
	paused bool
	day    string
	spent  spend
	model  string // the model the agent last reported using
}

type liveBox struct {
	mu sync.Mutex
	s  liveState
	// now wakes the presence loop to publish at once (buffered, one).
	now chan struct{}
}

func newLiveBox() *liveBox { return &liveBox{now: make(chan struct{}, 1)} }

func (b *liveBox) set(f func(*liveState)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.s)
}

func (b *liveBox) get() liveState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}

// presenceNow asks the presence loop to publish now.
func (h *harness) presenceNow() {
	select {
	case h.live.now <- struct{}{}:
	default:
	}
}

// presenceTags are the agents panel's details on a presence event: the
// model (when one is set) and the day's usage.
func (h *harness) presenceTags(l liveState) nostr.Tags {
	tags := nostr.Tags{}
	if model := cmp.Or(h.cfg.Model, l.model); model != "" {
		tags = append(tags, nostr.Tag{workspace.TagPresenceModel, model})
	}
	if l.day == budgetDay(time.Now()) && l.spent.Tokens > 0 {
		t := nostr.Tag{workspace.TagPresenceUsage, strconv.FormatInt(l.spent.Tokens, 10)}
		if l.spent.CostKnown {
			t = append(t, strconv.FormatFloat(l.spent.Cost, 'f', 4, 64))
		}
		tags = append(tags, t)
	}
	return tags
}

// paused reports whether the owner paused the agent.
func (s *stateStore) paused() bool { return s.st.Paused }

func (s *stateStore) setPaused(p bool) {
	s.st.Paused = p
	s.dirty = true
}
