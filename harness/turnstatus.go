package harness

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/acpclient"
	"buzzbox/harness/observer"
	"buzzbox/internal/acp"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// Turn status: the coarse, public side of a turn, for every reader of its
// channel (the web client's turn card). Each change is one ephemeral
// event (workspace.KindTurnStatus) h-tagged with the channel, so the relay
// serves it to the channel's readers only, and e-tagged with each message
// the turn handles. The detail (tool input and output, the agent's text)
// stays in the owner's encrypted observer frames.
//
// A message goes queued (behind a running turn) or seen (taken, waiting
// for a free agent; statusSeenHold) → working (startedAt, and the title of
// the agent's current tool call as step; statusWorkingHold) → done,
// failed (cause) or cancelled (by). A steer or an
// interrupt puts it back to queued; a retry after a failure starts it
// working again.

// Turn states (KindTurnStatus content "state"; frozen: clients read them).
const (
	turnQueued    = "queued"
	turnSeen      = "seen"
	turnWorking   = "working"
	turnDone      = "done"
	turnFailed    = "failed"
	turnCancelled = "cancelled"
)

// statusStepEvery is the least time between two step updates of one turn:
// an agent firing tool calls in a burst costs the channel's readers one
// event per interval, not one per call. A step after a quiet interval goes
// at once (the card shows a new tool call without delay); one inside the
// interval waits for its end, and only the latest waiting step goes.
// States are never held back.
const statusStepEvery = 250 * time.Millisecond

// statusSeenHold is how long seen waits before it is sent: a message
// whose turn starts within it (an idle agent takes it at once) goes
// straight to working, and its readers' relay is spared one event per
// mention (BenchmarkTurnStatusRelayLoad); seen is shown when it lasts,
// while the message waits for a free agent. Well inside the 200 ms a
// mention may take to show a card.
const statusSeenHold = 50 * time.Millisecond

// statusWorkingHold is how long a turn's working waits before it is
// sent: a turn that ends within it (a quick answer) goes straight to its
// final state, one event instead of two, which keeps the status events'
// share of the relay's load at 200 mentions/s under 10 %
// (BenchmarkTurnStatusRelayLoad). A tool call or a steered message sends
// it at once, so the card's step shows without delay; like statusSeenHold
// it is well inside the 200 ms a mention may take to show a card.
const statusWorkingHold = 50 * time.Millisecond

// statusQueueLen bounds the status events waiting to be signed and sent.
// Past it an event is dropped, never waited for: the loop that makes
// states must not wait on the relay (a dropped step is logged at debug,
// a dropped state as a warning).
const statusQueueLen = 1024

// statusStepMax bounds a step's text (a tool call's title) in characters:
// a card line, not the call's input.
const statusStepMax = 200

// turnStatusContent is a KindTurnStatus event's content.
type turnStatusContent struct {
	State string `json:"state"`
	// At orders the events of one message (unix milliseconds): several
	// come within one second, and ephemeral events are not stored.
	At        int64  `json:"at"`
	Turn      string `json:"turn,omitempty"`
	StartedAt int64  `json:"startedAt,omitempty"` // unix milliseconds; working only
	Step      string `json:"step,omitempty"`
	Cause     string `json:"cause,omitempty"` // failed
	By        string `json:"by,omitempty"`    // cancelled: the pubkey that stopped it
	Owner     string `json:"owner,omitempty"` // the agent's owner, who may stop it
}

// statusPub signs and publishes status events in the order they are made,
// on one goroutine (run), so a card never goes back to an older state.
type statusPub struct {
	h     *harness
	queue chan *nostr.Event
	off   bool // publishes nothing (timing.noStatus)

	mu        sync.Mutex
	bySession map[string]*turnTrack  // session → the running turn
	held      map[string]*time.Timer // message id → its seen, held (statusSeenHold)
}

func newStatusPub(h *harness) *statusPub {
	return &statusPub{h: h, queue: make(chan *nostr.Event, statusQueueLen), bySession: map[string]*turnTrack{}, held: map[string]*time.Timer{}}
}

// run publishes queued events until ctx ends.
func (p *statusPub) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-p.queue:
			if p.h.cfg.Secret.SignEvent(ev) != nil {
				continue
			}
			wctx, cancel := context.WithTimeout(ctx, relayclient.DefaultWriteTimeout)
			if err := p.h.rc.Publish(wctx, ev, false); err != nil {
				p.h.log.Debug("turn status not published", "err", err)
			}
			cancel()
		}
	}
}

// send queues one status of ids in channel; must marks a state (not a step).
func (p *statusPub) send(channel string, ids []string, c turnStatusContent, must bool) {
	if p == nil || p.off || channel == "" || len(ids) == 0 {
		return
	}
	c.At = time.Now().UnixMilli()
	c.Owner = p.h.cfg.Owner
	raw, _ := json.Marshal(c)
	tags := nostr.Tags{{"h", channel}}
	for _, id := range ids {
		tags = append(tags, nostr.Tag{"e", id})
	}
	ev := &nostr.Event{Kind: workspace.KindTurnStatus, CreatedAt: nostr.Now(), Content: string(raw), Tags: tags}
	select {
	case p.queue <- ev:
	default:
		if must {
			p.h.log.Warn("turn status queue full; state dropped", "channel", channel, "state", c.State)
		} else {
			p.h.log.Debug("turn status queue full; step dropped", "channel", channel)
		}
	}
}

// state publishes state for evs (queued, or a final one); a state drops
// the seen held for each of them.
func (p *statusPub) state(channel string, evs []*Event, c turnStatusContent) {
	p.unhold(eventIDs(evs))
	p.send(channel, eventIDs(evs), c, true)
}

// seen publishes seen for ev after statusSeenHold, unless another state
// of ev comes first.
func (p *statusPub) seen(channel string, ev *Event) {
	if p == nil || p.off {
		return
	}
	id := ev.ID
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[id] != nil {
		return
	}
	p.held[id] = time.AfterFunc(statusSeenHold, func() { // one held seen; stopped by unhold
		p.mu.Lock()
		_, still := p.held[id]
		delete(p.held, id)
		p.mu.Unlock()
		if still {
			p.send(channel, []string{id}, turnStatusContent{State: turnSeen}, true)
		}
	})
}

// unhold drops the seen held for ids.
func (p *statusPub) unhold(ids []string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if t := p.held[id]; t != nil {
			t.Stop()
			delete(p.held, id)
		}
	}
}

// turnTrack is one running turn's status: its messages and the rate
// limit of its step updates. Its methods may run on any goroutine.
type turnTrack struct {
	p       *statusPub
	channel string
	turn    string
	started time.Time

	mu       sync.Mutex
	ids      []string
	step     string
	lastStep time.Time
	timer    *time.Timer // a held-back step's send; nil none
	hold     *time.Timer // working, held back (statusWorkingHold); nil once sent
	ended    bool
	session  string
}

// start begins tracking t and publishes working for its messages.
func (p *statusPub) start(channel string, t *turnHandle) *turnTrack {
	if p == nil {
		return nil
	}
	tr := &turnTrack{p: p, channel: channel, turn: t.turnID, started: t.startedAt,
		ids: eventIDs(append(append([]*Event{}, t.parked...), t.batch...))}
	p.unhold(tr.ids)
	tr.mu.Lock()
	tr.hold = time.AfterFunc(statusWorkingHold, func() { // stopped by publish or end
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.hold != nil && !tr.ended {
			tr.publish(tr.step, true)
		}
	})
	tr.mu.Unlock()
	return tr
}

// publish sends working with step, and so ends the hold on the first
// working; tr.mu held.
func (tr *turnTrack) publish(step string, must bool) {
	stopTimer(&tr.hold)
	tr.p.send(tr.channel, tr.ids, turnStatusContent{State: turnWorking, Turn: tr.turn, StartedAt: tr.started.UnixMilli(), Step: step}, must)
}

// bind names the turn's ACP session, whose tool calls become its steps.
func (tr *turnTrack) bind(session string) {
	if tr == nil {
		return
	}
	tr.p.mu.Lock()
	tr.p.bySession[session] = tr
	tr.p.mu.Unlock()
	tr.mu.Lock()
	tr.session = session
	tr.mu.Unlock()
}

// add makes ev (steered into the running turn) one of its messages.
func (tr *turnTrack) add(ev *Event) {
	if tr == nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.ended {
		return
	}
	tr.ids = append(tr.ids, ev.ID)
	tr.p.unhold([]string{ev.ID})
	tr.publish(tr.step, true)
}

// setStep records the title of the agent's current tool call, sent now or
// at the end of the rate limit's interval.
func (tr *turnTrack) setStep(title string) {
	title = truncRunes(title, statusStepMax)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.ended || title == "" || title == tr.step {
		return
	}
	tr.step = title
	if tr.timer != nil {
		return // the held-back send takes the newest step
	}
	wait := statusStepEvery - time.Since(tr.lastStep)
	if wait <= 0 {
		tr.lastStep = time.Now()
		tr.publish(title, false)
		return
	}
	tr.timer = time.AfterFunc(wait, func() { // one held-back step; stopped by end
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.timer = nil
		if !tr.ended {
			tr.lastStep = time.Now()
			tr.publish(tr.step, false)
		}
	})
}

// end stops tracking; a held-back step is not sent.
func (tr *turnTrack) end() {
	if tr == nil {
		return
	}
	tr.mu.Lock()
	tr.ended = true
	stopTimer(&tr.timer)
	stopTimer(&tr.hold)
	session := tr.session
	tr.mu.Unlock()
	if session != "" {
		tr.p.mu.Lock()
		if tr.p.bySession[session] == tr {
			delete(tr.p.bySession, session)
		}
		tr.p.mu.Unlock()
	}
}

// stopTimer stops *t, if any, and forgets it.
func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// toolCall is acpclient.Spec.OnToolCall: the title of a tool call that
// starts (or is retitled) becomes its turn's step.
func (p *statusPub) toolCall(session string, u acp.Update) {
	if u.Title == "" {
		return
	}
	p.mu.Lock()
	tr := p.bySession[session]
	p.mu.Unlock()
	if tr != nil {
		tr.setStep(u.Title)
	}
}

// turnEndStatus gives the messages of finished turn t their next state
// (on the loop goroutine, from turnDone): done, cancelled (by whom),
// failed (the cause), or queued again after a steer or an interrupt.
func (h *harness) turnEndStatus(channel string, t *turnHandle, out turnOutcome) {
	t.track.end()
	evs := append(append(append([]*Event{}, t.parked...), t.batch...), t.extra...)
	c := turnStatusContent{Turn: t.turnID}
	switch out.Result {
	case acpclient.TurnOK:
		c.State = turnDone
	case acpclient.TurnSignalled:
		switch t.reason {
		case "steer", "interrupt", observer.ReasonSwitchModel:
			c.State = turnQueued
		default:
			c.State, c.By = turnCancelled, t.stoppedBy
		}
	case acpclient.TurnAgentError:
		c.State, c.Cause = turnFailed, classify(out.Err).cause
	case acpclient.TurnHard:
		c.State, c.Cause = turnFailed, "the turn ran past --max-turn-duration ("+h.cfg.MaxTurn.String()+")"
	default:
		c.State, c.Cause = turnFailed, h.stoppedCause(out)
	}
	h.status.state(channel, evs, c)
}
