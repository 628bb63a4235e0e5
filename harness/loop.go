package harness

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/acpclient"
	"buzzbox/harness/observer"
	"buzzbox/internal/workspace"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }

// chanState is one channel's queue and turn bookkeeping (loop-owned).
type chanState struct {
	id       string
	queue    []*Event
	turn     *turnHandle // nil when idle
	parked   []*Event
	reason   string // why parked: steer or interrupt
	attempts int
	retryAt  time.Time
	steering *Event // event withheld while a native steer is outstanding
	removed  bool
	// recheck, while set, holds the events of a failed turn as the relay
	// is asked which of them the agent answered before it failed
	// (recheckFailed); the channel starts no turn meanwhile.
	recheck *recheck
	// failedSince is when the first of the failed turns in a row at the
	// queue's head began: the check before a re-run looks from there.
	failedSince time.Time
}

// recheck is a failed turn's batch waiting for the relay's word on which
// of its events were answered.
type recheck struct {
	events []*Event
}

// turnHandle is a running channel turn.
type turnHandle struct {
	slot     *slot
	batch    []*Event
	parked   []*Event
	signal   chan struct{}
	reason   string // set before signal is closed
	session  string // set by the turn once known
	agent    *acpclient.Agent
	extra    []*Event // steered-in events whose reactions end with the turn
	deadline time.Time
	// Observer bookkeeping, fixed at start: the turn's id and start time,
	// the model an observer switch_model chose for the channel ("" none)
	// and the switch_model whose final result the new session gives.
	turnID    string
	startedAt time.Time
	model     string
	switchAck *observer.ControlRequest
	// resume is the session the turn loads when its slot holds none for
	// the channel ("" starts a new one); fixed at start by the loop.
	resume string
	// daySpent is the day's spend when the turn started; budget, set with
	// the cancel reason reasonBudget, names the cap the turn reached.
	daySpent spend
	budget   string
	// stopTyping ends the turn's typing indicator; set by the turn once it
	// types, called by the loop when the agent's reply is out.
	stopTyping context.CancelFunc
	// track publishes the turn's status (turnstatus.go); stoppedBy is the
	// pubkey whose stop or cancel ended it, set before signal is closed.
	track     *turnTrack
	stoppedBy string
}

func (t *turnHandle) cancel(reason string) {
	if t.reason != "" {
		t.reason = reason // a second cancel: latest reason wins
		return
	}
	t.reason = reason
	close(t.signal)
}

// slot is one agent position in the pool.
type slot struct {
	idx        int
	agent      *acpclient.Agent
	busy       bool
	sessions   map[string]*sessionState // channel → session; heartbeatKey for heartbeats
	breaker    acpclient.Breaker
	respawning bool
}

const heartbeatKey = ""

// sessionState is one ACP session on one agent.
type sessionState struct {
	id      string
	resumed bool // taken up with session/load, not made by this turn
	gen     int
	turns   int
	legacy  []string // system sections for agents without system-prompt support
	// usage is the cumulative usage at the end of the last turn that
	// reported any (nil: none yet); metricSeq counts the NIP-AM metrics
	// published for the session. The turn running on the session owns both.
	usage     *acpclient.UsageCounters
	metricSeq int
	// modelStatus says how setting the session's model went: switched,
	// unsupported_model or failure; "" when no model was asked for.
	modelStatus string
}

func (h *harness) do(f func()) {
	select {
	case h.loop <- f:
	default:
		// The loop is saturated; block rather than drop state changes.
		h.loop <- f
	}
}

func (h *harness) requestQuit(code int) {
	h.quitOnce.Do(func() { h.quit <- code })
}

// serve runs the loop until ctx ends or a shutdown is requested.
func (h *harness) serve(ctx context.Context) int {
	defer h.store.flush()
	tick := time.NewTicker(maintenanceTick)
	defer tick.Stop()
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	var hb <-chan time.Time
	if h.cfg.HeartbeatInterval > 0 {
		t := time.NewTicker(h.cfg.HeartbeatInterval)
		defer t.Stop()
		hb = t.C
	}
	for {
		h.releaseStuck()
		h.dispatch(ctx)
		// Wake for the earliest retry backoff expiry or backstop.
		next := time.Time{}
		for _, cs := range h.queues {
			if !cs.retryAt.IsZero() && (next.IsZero() || cs.retryAt.Before(next)) && len(cs.queue) > 0 {
				next = cs.retryAt
			}
			if cs.turn != nil {
				if at := cs.turn.deadline.Add(h.t.backstop); next.IsZero() || at.Before(next) {
					next = at
				}
			}
		}
		if !next.IsZero() {
			wake.Reset(max(time.Until(next), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return 0
		case code := <-h.quit:
			return code
		case f := <-h.loop:
			f()
			h.settleState()
		case err := <-h.store.wrote:
			h.store.written(err)
			h.settleState()
		case <-wake.C:
		case <-tick.C:
			h.maintain(ctx)
		case <-hb:
			h.heartbeatTick(ctx)
		}
	}
}

func (h *harness) chanState(id string) *chanState {
	cs := h.queues[id]
	if cs == nil {
		cs = &chanState{id: id}
		h.queues[id] = cs
	}
	return cs
}

// accept queues an event that passed the gate and the rules (§6 steps 6–8)
// and reports whether it was taken. One answered before, in this run or
// one before a restart, is not taken again.
func (h *harness) accept(ctx context.Context, ev *Event) bool {
	cs := h.chanState(ev.Channel)
	if cs.removed {
		return false
	}
	if h.store.answered(ev.Channel, ev.ID) {
		h.log.Debug("event answered before; skipped", "channel", ev.Channel, "event_id", ev.ID)
		return false
	}
	busy := cs.turn != nil
	if busy && h.cfg.Dedup == "drop" {
		h.log.Info("channel busy; dropped event", "channel", ev.Channel, "event_id", ev.ID)
		return false
	}
	h.store.take(ev.Channel, ev.ID, int64(ev.CreatedAt))
	h.lastWork = time.Now()
	// A pull request comment is not steered in: its prompt carries the
	// pull request, the hunk and the thread (prBlock), a steer only the event.
	if busy && h.cfg.Handling == "steer" && cs.steering == nil && cs.turn.agent != nil && cs.turn.session != "" &&
		(cs.turn.agent.Steering() || cs.turn.agent.HasRun()) && !isPRWake(ev.Woken) {
		h.reacts.add(ctx, ev, emojiSeen)
		h.status.state(cs.id, []*Event{ev}, turnStatusContent{State: turnQueued})
		cs.steering = ev
		t := cs.turn
		go func() { // one steer request; ends with its reply or timeout
			ok, fallback := t.agent.Steer(ctx, t.session, steerBlocks(ev, h.cfg.Owner, h.cfg.AgentHex))
			h.do(func() { h.steerDone(cs, t, ev, ok, fallback) })
		}()
		return true
	}
	h.push(cs, ev)
	h.reacts.add(ctx, ev, emojiSeen)
	if busy {
		h.status.state(cs.id, []*Event{ev}, turnStatusContent{State: turnQueued})
	} else {
		h.status.seen(cs.id, ev)
	}
	h.log.Debug("event queued", "channel", cs.id, "event_id", ev.ID, "busy", busy)
	if !busy {
		return true
	}
	switch h.cfg.Handling {
	case "steer":
		cs.turn.cancel("steer")
	case "interrupt":
		cs.turn.cancel("interrupt")
	case "owner-interrupt":
		if h.cfg.Owner != "" && ev.PubKey == h.cfg.Owner {
			cs.turn.cancel("interrupt")
		}
	}
	return true
}

func (h *harness) push(cs *chanState, ev *Event) {
	if len(cs.queue) >= maxQueuePerChannel {
		h.log.Warn("channel queue full; dropping oldest event", "channel", cs.id, "event_id", cs.queue[0].ID)
		cs.queue = cs.queue[1:]
	}
	cs.queue = append(cs.queue, ev)
}

func (h *harness) steerDone(cs *chanState, t *turnHandle, ev *Event, ok, fallback bool) {
	if cs.steering != ev {
		return
	}
	cs.steering = nil
	if cs.turn != t {
		h.push(cs, ev) // the prompt finished first
		return
	}
	switch {
	case ok:
		h.log.Info("steered event into running turn", "channel", cs.id, "event_id", ev.ID)
		t.extra = append(t.extra, ev)
		t.track.add(ev)
		t.deadline = time.Now().Add(h.cfg.MaxTurn)
	case fallback:
		h.push(cs, ev)
		t.cancel("steer")
	default:
		h.push(cs, ev)
	}
}

// dispatch starts turns while idle agents and eligible channels exist (§7.1).
func (h *harness) dispatch(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	h.recheckCarried(ctx)
	if h.holdPaused(ctx) {
		return
	}
	now := time.Now()
	for {
		var best *chanState
		for _, cs := range h.queues {
			if cs.turn != nil || cs.steering != nil || cs.recheck != nil || (len(cs.queue) == 0 && len(cs.parked) == 0) || now.Before(cs.retryAt) {
				continue
			}
			if best == nil || headTime(cs).Before(headTime(best)) {
				best = cs
			}
		}
		if best == nil {
			return
		}
		if h.cfg.Budget.On() && h.overBudget(ctx, best) {
			continue
		}
		s := h.claim(best.id)
		if s == nil {
			h.ensureAgents(ctx)
			h.startFailed(ctx)
			return
		}
		h.startTurn(ctx, s, best)
	}
}

func headTime(cs *chanState) time.Time {
	if len(cs.queue) > 0 {
		return cs.queue[0].Received
	}
	if len(cs.parked) > 0 {
		return cs.parked[0].Received
	}
	return time.Time{}
}

// claim prefers an idle agent already holding a session for the channel.
func (h *harness) claim(channel string) *slot {
	var any *slot
	for _, s := range h.slots {
		if s.agent == nil || s.busy || !s.agent.Alive() {
			continue
		}
		if ss := s.sessions[channel]; ss != nil && ss.gen == h.gens[channel] {
			return s
		}
		if any == nil {
			any = s
		}
	}
	return any
}

func (h *harness) startTurn(ctx context.Context, s *slot, cs *chanState) {
	var batch, parked []*Event
	reason := cs.reason
	if len(cs.queue) > 0 {
		n := min(len(cs.queue), maxBatch)
		batch = append(batch, cs.queue[:n]...)
		cs.queue = cs.queue[n:]
		parked = cs.parked
	} else {
		batch = cs.parked
		reason = ""
	}
	cs.parked, cs.reason = nil, ""
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].CreatedAt < batch[j].CreatedAt })
	t := &turnHandle{slot: s, batch: batch, parked: parked, signal: make(chan struct{}),
		agent: s.agent, deadline: time.Now().Add(h.cfg.MaxTurn),
		turnID: newTurnID(), startedAt: time.Now(), model: h.models[cs.id], daySpent: h.store.daySpend(budgetDay(time.Now()))}
	if req, ok := h.switchAcks[cs.id]; ok {
		t.switchAck = &req
		delete(h.switchAcks, cs.id)
	}
	if s.agent.LoadSession() && t.model == "" {
		t.resume = h.store.resumable(cs.id, s.idx, s.agent.Name())
	}
	cs.turn = t
	t.track = h.status.start(cs.id, t)
	s.busy = true
	h.lastWork = time.Now()
	gen := h.gens[cs.id]
	go func() { // the turn; ends when the prompt ends and reports back
		out := h.runTurn(ctx, t, cs.id, gen, reason)
		if h.t.ended != nil {
			h.t.ended(h, cs.id)
		}
		h.do(func() { h.turnDone(ctx, cs, t, out) })
	}()
}

// releaseStuck is the in-flight backstop (spec §7.1): a channel still in
// flight h.t.backstop (inflightBackstop) past its turn's deadline is
// released, so that its new events can run on another agent. The hard cap
// and the cancel drain normally end a turn well before that; this catches a
// turn stuck anywhere else. The released batch is lost; an event withheld
// for a native steer goes back to the queue. The turn keeps its slot until
// it returns, and turnDone then only settles the slot.
func (h *harness) releaseStuck() {
	now := time.Now()
	for _, cs := range h.queues {
		t := cs.turn
		if t == nil || now.Before(t.deadline.Add(h.t.backstop)) {
			continue
		}
		h.log.Error("channel still in flight past the backstop; releasing it and dropping its batch",
			"channel", cs.id, "slot", t.slot.idx, "events", len(t.batch)+len(t.parked)+len(t.extra),
			"deadline", t.deadline.Format(time.RFC3339), "backstop", h.t.backstop)
		cs.turn = nil
		if ev := cs.steering; ev != nil {
			cs.steering = nil
			cs.queue = append([]*Event{ev}, cs.queue...)
		}
	}
}

// turnOutcome is what a finished turn reports to the loop.
type turnOutcome struct {
	acpclient.Outcome
	newSession bool
	stage      string // where it failed: session, initial, prompt
	// guard asks the reply guard to check the thread: the turn ended well
	// and was started by a mention or a DM. finalText is what the agent
	// wrote last ("" none); textCut says it was cut at maxFinalText.
	guard     bool
	finalText string
	textCut   bool
	spent     spend // what the turn cost, by the agent's usage reports
}

// turnDone applies §9.9.
func (h *harness) turnDone(ctx context.Context, cs *chanState, t *turnHandle, out turnOutcome) {
	s := t.slot
	s.busy = false
	h.lastWork = time.Now()
	h.addSpend(out.spent)
	finished := append(append([]*Event{}, t.batch...), t.extra...)
	log := h.log.With("channel", cs.id, "result", out.Result.String(), "stop", string(out.Stop))
	h.turnEndStatus(cs.id, t, out)
	if cs.turn != t {
		h.turnEnded(cs.id, t, out)
		log.Warn("turn ended after the in-flight backstop released its channel", "err", out.Err)
		h.reacts.clear(ctx, append(finished, t.parked...))
		h.settleReleased(ctx, s, cs.id, out)
		return
	}
	cs.turn = nil
	h.turnEnded(cs.id, t, out)
	// Only the channel's current session is kept for the next run: not
	// one the turn dropped (a failed initial message), nor one renewed
	// (!rotate, switch_model, leaving the channel) while the turn ran.
	switch ss := s.sessions[cs.id]; {
	case ss != nil && ss.gen != h.gens[cs.id]:
		h.dropSession(s, cs.id)
	case ss != nil && ss.id == t.session && t.agent != nil:
		h.store.holdSession(cs.id, t.session, t.agent.Name(), s.idx)
	}
	// retry puts the batch back for another turn. When the batch reached
	// the agent, the relay is asked first which events the agent answered
	// before the turn failed (recheckFailed); cause, when set, is told in
	// the thread on the batch's first failure.
	retry := func(cause string) {
		if cs.removed || h.cfg.Dedup == "drop" {
			h.reacts.clear(ctx, finished)
			return
		}
		h.reacts.remove(ctx, finished, emojiWorking)
		all := append(append([]*Event{}, t.parked...), t.batch...)
		first := cs.attempts == 0
		if first {
			cs.failedSince = t.startedAt
		}
		if out.stage == "prompt" {
			h.recheckFailed(ctx, cs, all, cause, first, out.Result.String())
			return
		}
		if first && cause != "" {
			h.notice(ctx, cs, all, failureNotice(cause))
		}
		h.requeue(ctx, cs, all, out.Result.String())
	}
	switch out.Result {
	case acpclient.TurnOK:
		log.Info("turn finished")
		cs.attempts = 0
		cs.retryAt = time.Time{}
		if ss := s.sessions[cs.id]; ss != nil {
			ss.turns++
			if out.Stop == "max_tokens" || out.Stop == "max_turn_requests" ||
				h.cfg.MaxTurnsPerSession > 0 && ss.turns >= h.cfg.MaxTurnsPerSession {
				h.dropSession(s, cs.id)
			}
		}
		h.reacts.clear(ctx, finished)
		if out.guard {
			h.guardReply(ctx, cs.id, t, out)
		}
	case acpclient.TurnSignalled:
		log.Info("turn cancelled", "reason", t.reason)
		// A steer or interrupt re-runs the batch in the same session,
		// which keeps the channel's earlier turns; a model switch or a
		// cancel needs a new one.
		if t.reason != "steer" && t.reason != "interrupt" {
			h.dropSession(s, cs.id)
		}
		switch t.reason {
		case "steer", "interrupt", observer.ReasonSwitchModel:
			h.reacts.remove(ctx, finished, emojiWorking)
			cs.parked = append(append(cs.parked, t.parked...), t.batch...)
			cs.reason = t.reason
			if t.reason == observer.ReasonSwitchModel {
				cs.reason = "interrupt" // spec §7.5: re-run like an interrupted batch
			}
		case reasonBudget:
			h.reacts.clear(ctx, append(finished, t.parked...))
			h.notice(ctx, cs, append(append([]*Event{}, t.parked...), t.batch...), "⛔ I stopped here: "+t.budget+".")
		default:
			h.reacts.clear(ctx, append(finished, t.parked...))
		}
	case acpclient.TurnAgentError:
		log.Warn("agent returned an error", "err", out.Err)
		if msg := errText(out.Err); strings.Contains(msg, "Re-authenticate") || strings.Contains(msg, "API Error: 401") {
			h.reacts.clear(ctx, finished)
			h.deadLetter(ctx, cs, append(t.parked, t.batch...), "the agent's login has expired; the owner needs to log the agent's CLI in again (for example `claude /login` or `codex login`)")
			return
		}
		if out.stage == "session" || sessionGone(out.Err) {
			h.dropSession(s, cs.id) // the retry opens a new one
		}
		f := classify(out.Err)
		if !f.retryable {
			// Another attempt cannot cure it: say so now, not after the
			// retry ladder (up to ~25 minutes).
			h.reacts.clear(ctx, finished)
			cs.attempts, cs.retryAt = 0, time.Time{}
			h.deadLetter(ctx, cs, append(t.parked, t.batch...), f.cause)
			return
		}
		retry(f.cause)
	case acpclient.TurnHard:
		log.Warn("turn hit the hard cap", "err", out.Err)
		h.retire(ctx, s)
		if t.agent != nil && time.Since(t.agent.LastOutput()) < recentOutput {
			retry("")
		} else {
			h.reacts.clear(ctx, finished)
			h.deadLetter(ctx, cs, append(t.parked, t.batch...), "the turn ran past --max-turn-duration ("+h.cfg.MaxTurn.String()+") without recent output")
		}
	case acpclient.TurnExited, acpclient.TurnIdle, acpclient.TurnDrainTimeout, acpclient.TurnWriteTimeout:
		log.Warn("agent retired", "err", out.Err)
		h.retire(ctx, s)
		retry(h.stoppedCause(out))
	case acpclient.TurnProtocolError:
		log.Warn("protocol error", "err", out.Err)
		h.dropSession(s, cs.id)
		if acpclient.TransportClass(out.Err) {
			h.retire(ctx, s)
		}
		retry(h.stoppedCause(out))
	}
}

// dropSession ends s's session for key on purpose (rotation, a cancel,
// a broken session): the next turn starts a new one, after a restart too,
// and the agent is told with session/close (acpclient.Agent.CloseSession).
func (h *harness) dropSession(s *slot, key string) {
	ss := s.sessions[key]
	delete(s.sessions, key)
	h.store.forgetSession(key)
	if ss != nil && s.agent != nil {
		s.agent.CloseSession(ss.id)
	}
}

// renewSessions makes channel's next turn start a new session (!rotate,
// switch_model, leaving the channel): a new generation, nothing kept for
// the next run, and the sessions of idle slots closed. A busy slot's
// session goes when its turn ends (turnDone), however the turn ends.
func (h *harness) renewSessions(channel string) {
	h.gens[channel]++
	h.store.forgetSession(channel)
	for _, s := range h.slots {
		if !s.busy {
			h.dropSession(s, channel)
		}
	}
}

// failureNotice words a batch's first failure in a row for its thread;
// the retries that follow stay quiet until they succeed or give up
// (deadLetter).
func failureNotice(cause string) string {
	return "⚠️ I could not answer yet: " + cause + ". I will keep trying."
}

// requeue puts a failed turn's events back at the head of cs's queue to
// run after a backoff that doubles with each failure in a row; past
// maxRetries they are dead-lettered instead.
func (h *harness) requeue(ctx context.Context, cs *chanState, evs []*Event, result string) {
	cs.attempts++
	if cs.attempts > maxRetries {
		cs.attempts = 0
		cs.retryAt = time.Time{}
		h.deadLetter(ctx, cs, evs, "the agent failed "+itoa(maxRetries)+" times in a row ("+result+")")
		return
	}
	d := time.Duration(float64(h.t.retryBase) * math.Pow(2, float64(cs.attempts-1)))
	cs.retryAt = time.Now().Add(jitter(min(d, retryCap)))
	cs.queue = append(evs, cs.queue...)
}

// recheckFailed holds the events of a failed turn while the relay is
// asked (recheck) which of them the agent answered since the first failed
// turn in a row began: an agent killed after its answer went out but
// before its turn ended has answered, and running the event again would
// answer it twice. The rest are requeued, and cause is told in the thread
// on the batch's first failure.
func (h *harness) recheckFailed(ctx context.Context, cs *chanState, evs []*Event, cause string, first bool, result string) {
	h.recheck(ctx, cs, evs, nostr.Timestamp(cs.failedSince.Unix()), func(rest []*Event) {
		if len(rest) == 0 {
			cs.attempts, cs.retryAt = 0, time.Time{}
			return
		}
		if first && cause != "" {
			h.notice(ctx, cs, rest, failureNotice(cause))
		}
		h.requeue(ctx, cs, rest, result)
	})
}

// recheckCarried takes out of their queues the events the last run had
// taken and not answered (a harness killed after the agent's answer went
// out, before the turn ended, left its batch so) and asks the relay
// (recheck) which of them the agent answered since they were posted; the
// rest go back to the head of the queue. The last run's notices in the
// channel are not answers.
func (h *harness) recheckCarried(ctx context.Context) {
	if len(h.store.carried) == 0 {
		return
	}
	for id, cs := range h.queues {
		if cs.turn != nil || cs.recheck != nil || len(cs.queue) == 0 {
			continue
		}
		carried := h.store.takeCarried(id, cs.queue)
		if len(carried) == 0 {
			continue
		}
		keep := cs.queue[:0]
		since := carried[0].CreatedAt
		for _, ev := range cs.queue {
			if !slices.Contains(carried, ev) {
				keep = append(keep, ev)
			}
		}
		for _, ev := range carried {
			since = min(since, ev.CreatedAt)
		}
		cs.queue = keep
		for _, n := range h.store.notices(id) {
			h.ownNotices.add(n)
		}
		h.recheck(ctx, cs, carried, since, func(rest []*Event) { cs.queue = append(rest, cs.queue...) })
	}
}

// recheck holds evs, kept out of cs's queue, while the relay is asked
// which of them the agent has answered since since (the reply guard's
// agentMessages); the channel starts no turn meanwhile. Answered events
// are done (settleState records them so); then gets the rest, on the
// loop. A relay that cannot be asked gets them all back: a duplicate
// answer beats a lost one.
func (h *harness) recheck(ctx context.Context, cs *chanState, evs []*Event, since nostr.Timestamp, then func(rest []*Event)) {
	rc := &recheck{events: evs}
	cs.recheck = rc
	go func() { // one relay query, bounded by replyCheckTO; reports back
		msgs, err := h.agentMessages(ctx, cs.id, since)
		var answered map[string]bool
		if err == nil {
			answered = answeredIDs(msgs, evs)
		}
		h.do(func() {
			if cs.recheck != rc {
				return // the channel was left meanwhile
			}
			cs.recheck = nil
			if err != nil {
				h.log.Warn("could not ask the relay whether the agent answered; running the events (again)",
					"channel", cs.id, "events", len(evs), "err", err)
			}
			var rest, done []*Event
			for _, ev := range evs {
				if answered[ev.ID] {
					done = append(done, ev)
				} else {
					rest = append(rest, ev)
				}
			}
			if len(done) > 0 {
				h.log.Info("the agent answered these already; not running them again", "channel", cs.id,
					"answered", eventIDs(done), "rerun", len(rest))
				h.reacts.clear(ctx, done)
			}
			then(rest)
		})
	}()
}

// stoppedCause words a turn that ended with the agent process retired or
// out of step with the protocol.
func (h *harness) stoppedCause(out turnOutcome) string {
	switch out.Result {
	case acpclient.TurnExited:
		return "the agent process stopped in the middle of the turn"
	case acpclient.TurnIdle:
		return "the agent produced no output for " + h.cfg.IdleTimeout.String() + " (--idle-timeout)"
	case acpclient.TurnDrainTimeout:
		return "the agent did not stop when asked to"
	case acpclient.TurnWriteTimeout:
		return "the agent stopped reading its input"
	}
	return "the agent answered out of protocol (" + clip(errText(out.Err)) + ")"
}

// settleReleased applies §9.9 to the slot of a turn whose channel the
// backstop released: the agent is kept, its session dropped, or the agent
// retired, as for any turn; the batch is not touched (it was given up).
func (h *harness) settleReleased(ctx context.Context, s *slot, channel string, out turnOutcome) {
	switch out.Result {
	case acpclient.TurnOK:
	case acpclient.TurnAgentError:
		if out.stage == "session" {
			h.dropSession(s, channel)
		}
	case acpclient.TurnSignalled:
		h.dropSession(s, channel)
	case acpclient.TurnProtocolError:
		h.dropSession(s, channel)
		if acpclient.TransportClass(out.Err) {
			h.retire(ctx, s)
		}
	default:
		h.retire(ctx, s)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }

// deadLetter posts a failure notice in the thread of the last event.
func (h *harness) deadLetter(ctx context.Context, cs *chanState, batch []*Event, why string) {
	if cs.removed || len(batch) == 0 {
		return
	}
	h.log.Error("batch dead-lettered", "channel", cs.id, "events", len(batch), "why", why)
	h.status.state(cs.id, batch, turnStatusContent{State: turnFailed, Cause: why})
	h.notice(ctx, cs, batch, "⚠️ I could not process this message: "+why+". Please send it again.")
}

// notice posts text, signed by the agent, as a reply in the thread of the
// batch's last event. Values of secret variables are cut out of it first.
func (h *harness) notice(ctx context.Context, cs *chanState, batch []*Event, text string) {
	if cs.removed || len(batch) == 0 {
		return
	}
	ev := h.threadEvent(cs.id, batch[len(batch)-1], text)
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return
	}
	h.ownNotices.add(ev.ID)
	// Its id is on disk before it can be on the relay: a restart must not
	// take it for the agent's answer (recheckCarried).
	h.store.noteNotice(cs.id, ev.ID)
	h.store.onSaved(func() {
		go func() { // best effort, bounded
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpTimeout)
			defer cancel()
			if _, err := h.io.Publish(pctx, ev); err != nil {
				h.log.Warn("notice not published", "err", err)
			}
		}()
	})
}

// maintain re-dispatches expired backoffs and refills dead slots.
func (h *harness) maintain(ctx context.Context) {
	now := time.Now()
	for id, cs := range h.queues {
		if cs.turn == nil && len(cs.queue) == 0 && len(cs.parked) == 0 && cs.steering == nil && cs.recheck == nil && now.After(cs.retryAt) {
			delete(h.queues, id)
		}
	}
	h.ensureAgents(ctx)
	if h.cfg.ExitAfterInactivity > 0 && time.Since(h.lastWork) > h.cfg.ExitAfterInactivity && h.idle() {
		h.log.Info("no work for --exit-after-inactivity; stopping")
		h.requestQuit(0)
	}
}

func (h *harness) idle() bool {
	for _, cs := range h.queues {
		if cs.turn != nil || len(cs.queue) > 0 || cs.recheck != nil {
			return false
		}
	}
	return !h.heartbeat
}

// control runs an owner command (§6.3).
func (h *harness) control(ctx context.Context, cmd string, ev *Event) {
	cs := h.chanState(ev.Channel)
	switch cmd {
	case "!shutdown":
		h.log.Info("owner asked for shutdown")
		h.requestQuit(0)
	case "!cancel":
		if cs.turn == nil {
			h.log.Warn("!cancel with no turn running", "channel", ev.Channel)
			return
		}
		cs.turn.stoppedBy = ev.PubKey
		cs.turn.cancel("cancel")
	case "!rotate":
		h.renewSessions(ev.Channel)
		if cs.turn != nil {
			cs.turn.cancel("rotate")
		}
	}
}

// membership handles 44100/44101 (§5.1).
func (h *harness) membership(ctx context.Context, ev *Event) {
	ch := channelOf(&ev.Event)
	if !workspace.IsUUID(ch) || !h.memberSeen.Add(ev.ID) {
		return
	}
	if int64(ev.CreatedAt) < h.memberTime[ch] {
		return
	}
	h.memberTime[ch] = int64(ev.CreatedAt)
	switch ev.Kind {
	case workspace.KindMemberAdded:
		if h.subscribed[ch] {
			return
		}
		if h.cfg.Subscribe != "config" && len(h.cfg.Channels) > 0 && !containsStr(h.cfg.Channels, ch) {
			return
		}
		if cs := h.queues[ch]; cs != nil {
			cs.removed = false
		}
		// From the join on, but never from a time still to come: a relay
		// that dates its own events after the last state it signed (so
		// that replaceable state moves forward within a second) can date
		// a 44100 seconds ahead, and a floor there would hide the
		// mentions posted meanwhile.
		if h.subscribeChannel(ctx, ch, min(int64(ev.CreatedAt), time.Now().Unix())) {
			h.subscribed[ch] = true
			h.log.Info("joined channel", "channel", ch)
		}
	case workspace.KindMemberRemoved:
		h.rc.Unsubscribe(ctx, "ch-"+ch)
		delete(h.subscribed, ch)
		cs := h.chanState(ch)
		cs.removed = true
		h.reacts.clear(ctx, cs.queue)
		if cs.recheck != nil {
			h.reacts.clear(ctx, cs.recheck.events)
		}
		cs.queue, cs.parked, cs.recheck = nil, nil, nil
		cs.attempts, cs.retryAt = 0, time.Time{}
		h.renewSessions(ch)
		if cs.turn != nil {
			cs.turn.cancel("cancel")
		}
		h.log.Info("left channel", "channel", ch)
	}
}

func containsStr(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
