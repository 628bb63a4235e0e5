package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
)

// TerminalError is a relay failure that retrying cannot fix.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Seen is the dedup set a Subscriber asks before delivering an event:
// Add records id and reports whether it was new; Remove forgets it (an
// event dropped for backpressure is asked for again).
type Seen interface {
	Add(id string) bool
	Remove(id string)
}

// Event is one event delivered on a subscription, or (Ev nil, EOSE set)
// the end of the stored events a REQ replayed.
type Event struct {
	Sub    string
	Ev     *nostr.Event
	Stored bool // sent before the REQ's EOSE: missed while away, not live
	EOSE   bool
}

// SubOptions are a subscription's replay rules.
type SubOptions struct {
	// Floor is the replay floor (unix seconds): a REQ never asks from
	// before it.
	Floor int64
	// Member marks membership notifications: a resubscribe after drops
	// asks from no earlier than Floor.
	Member bool
	// MarkEOSE delivers an Event with EOSE set after the stored events
	// of each REQ.
	MarkEOSE bool
}

// SubscriberOptions configures a Subscriber.
type SubscriberOptions struct {
	Key     *nostrkey.Secret // logs in (NIP-42); required
	AuthTag nostr.Tag        // NIP-OA tag on AUTH events; nil none
	Buffer  int              // capacity of Events(); 0 unbuffered
	Log     *slog.Logger     // nil discards
	Seen    Seen             // nil delivers every event each time it comes
}

// subState is one live subscription and its replay bookkeeping.
type subState struct {
	id       string
	filter   nostr.Filter // without since
	opt      SubOptions
	lastSeen int64 // newest created_at delivered; 0 none
	dropped  int64 // oldest created_at dropped for backpressure; 0 none
	stored   bool  // a REQ was sent and its EOSE has not come: events are stored ones
}

func (s *subState) since() int64 {
	v := s.opt.Floor
	if s.lastSeen > 0 || s.dropped > 0 {
		v = s.lastSeen
		if s.dropped > 0 && (v == 0 || s.dropped < v) {
			v = s.dropped
		}
		if s.opt.Member && v < s.opt.Floor {
			v = s.opt.Floor
		}
	}
	return max(v-sinceSkew, 0)
}

type okReply struct {
	ok  bool
	msg string
}

// Subscriber keeps one authenticated websocket to a relay alive and the
// subscriptions on it current: after a reconnect every subscription is
// asked for again from the last event it delivered. Events go to
// Events(); when it is full an event is dropped, forgotten, and its
// subscription re-requested so the relay replays it. A relay's
// "rate-limited:" NOTICE or CLOSED closes a gate for the hinted time,
// during which REQs are parked (and Gated reports true).
type Subscriber struct {
	url string
	opt SubscriberOptions
	log *slog.Logger
	out chan Event

	mu      sync.Mutex
	ws      *Conn
	subs    map[string]*subState
	queries map[string]chan *nostr.Event // one-shot queries
	counts  map[string]chan *int64       // NIP-45 counts; nil sent on CLOSED
	oks     map[string]chan okReply
	qn      atomic.Int64

	// The rate-limit gate (harness.md §4.5–4.6): until gateUntil, REQs are
	// parked. Zero when it has never been armed.
	gateUntil time.Time
	parked    map[string]bool // subscriptions whose REQ waits for the gate
	gateWake  chan struct{}   // capacity 1: the gate or the parked set changed

	connected chan struct{} // closed after the first successful login
	once      sync.Once
}

// NewSubscriber returns a subscriber for the websocket URL; Run connects it.
func NewSubscriber(url string, opt SubscriberOptions) *Subscriber {
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Subscriber{
		url: url, opt: opt, log: log,
		out:       make(chan Event, opt.Buffer),
		subs:      map[string]*subState{},
		queries:   map[string]chan *nostr.Event{},
		counts:    map[string]chan *int64{},
		oks:       map[string]chan okReply{},
		parked:    map[string]bool{},
		gateWake:  make(chan struct{}, 1),
		connected: make(chan struct{}),
	}
}

// URL is the websocket URL.
func (s *Subscriber) URL() string { return s.url }

// Events delivers the subscriptions' events.
func (s *Subscriber) Events() <-chan Event { return s.out }

// Connected is closed after the first successful login.
func (s *Subscriber) Connected() <-chan struct{} { return s.connected }

// Run connects and reconnects until ctx ends. The first connection gets
// initialConnectRetries retries; a terminal error or their exhaustion
// returns an error. Later drops reconnect forever, on the backoff ladder.
func (s *Subscriber) Run(ctx context.Context) error {
	rung := 0
	everUp := false
	attempts := 0
	for {
		start := time.Now()
		err := s.session(ctx, func() { everUp = true })
		if ctx.Err() != nil {
			return nil
		}
		var term *TerminalError
		if !everUp {
			attempts++
			if errors.As(err, &term) || attempts > initialConnectRetries {
				return fmt.Errorf("connect %s: %w", s.url, err)
			}
		}
		if time.Since(start) > stableConnection {
			rung = 0
		}
		var dnsErr *net.DNSError
		delay := time.Duration(backoffLadder[min(rung, len(backoffLadder)-1)]) * time.Second
		if errors.As(err, &dnsErr) {
			delay = dnsRetryDelay
		} else {
			rung++
		}
		s.log.Warn("relay connection lost; reconnecting", "err", err, "in", delay.Round(time.Millisecond))
		t := time.NewTimer(jitter(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// login dials and logs in, classifying refusals as terminal.
func (s *Subscriber) login(ctx context.Context) (*Conn, []nostr.Envelope, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, err := Dial(dctx, s.url, ConnOptions{Key: s.opt.Key, AuthTag: s.opt.AuthTag})
	cancel()
	if err != nil {
		var de *DialError
		if errors.As(err, &de) && de.Permanent() {
			return nil, nil, &TerminalError{fmt.Errorf("websocket upgrade: %w", err)}
		}
		return nil, nil, err
	}
	pending, err := ws.Login(ctx, authWait)
	if err != nil {
		ws.CloseNow()
		var refused *AuthRefusedError
		if errors.As(err, &refused) {
			if refused.Temporary() {
				return nil, nil, fmt.Errorf("auth: %s", refused.Reason)
			}
			return nil, nil, &TerminalError{err}
		}
		return nil, nil, err
	}
	return ws, pending, nil
}

// session runs one connection: dial, NIP-42 login, resubscribe, read.
func (s *Subscriber) session(ctx context.Context, up func()) error {
	ws, pending, err := s.login(ctx)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	defer ws.CloseNow()

	s.mu.Lock()
	s.ws = ws
	subs := make([]*subState, 0, len(s.subs))
	for _, sub := range s.subs {
		subs = append(subs, sub)
	}
	clear(s.parked) // the resubscribe below covers (or parks again) every one
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.ws == ws {
			s.ws = nil
		}
		s.mu.Unlock()
	}()
	up()
	s.once.Do(func() { close(s.connected) })
	s.log.Info("logged in to relay", "url", s.url)

	for _, env := range pending {
		s.handle(sctx, ws, env)
	}
	go s.sendSpaced(sctx, ws, subs) // the resubscribe; ends with sctx
	// Sends the REQs parked behind the rate-limit gate; ends with sctx.
	go s.gateLoop(sctx, ws)
	// Liveness: a ping without its pong closes ws, which ends the read
	// loop below; ends with sctx.
	go func() {
		if err := ws.KeepAlive(sctx, pingInterval, pongTimeout); err != nil {
			s.log.Warn("relay ping failed", "err", err)
		}
	}()
	// The read below is not bound to ctx (coder/websocket would drop the
	// socket without a close frame); this says goodbye when ctx ends,
	// which ends the read. It ends with sctx.
	go func() {
		<-sctx.Done()
		if ctx.Err() != nil {
			ws.Close()
		}
	}()
	for {
		env, err := ws.Read(context.WithoutCancel(sctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if env == nil {
			continue
		}
		if err := s.handle(sctx, ws, env); err != nil {
			return err
		}
	}
}

// sendReq sends sub's REQ, or parks it while the rate-limit gate is closed.
func (s *Subscriber) sendReq(ctx context.Context, ws *Conn, sub *subState) {
	s.mu.Lock()
	if time.Now().Before(s.gateUntil) {
		s.parked[sub.id] = true
		s.mu.Unlock()
		s.log.Debug("rate-limit gate closed; REQ deferred", "sub", sub.id)
		s.wakeGate()
		return
	}
	f := sub.filter
	since := nostr.Timestamp(sub.since())
	sub.stored = true
	s.mu.Unlock()
	f.Since = &since
	if f.Limit == 0 {
		f.Limit = replayLimit
	}
	if err := ws.WriteFrame(ctx, "REQ", sub.id, f); err != nil {
		s.log.Warn("REQ failed", "sub", sub.id, "err", err)
	}
}

// sendSpaced sends the REQs of subs reqSpacing apart, so a burst of them
// does not trip the relay's rate limit, until ctx ends; a subscription
// dropped meanwhile is skipped.
func (s *Subscriber) sendSpaced(ctx context.Context, ws *Conn, subs []*subState) {
	for i, sub := range subs {
		if i > 0 {
			select {
			case <-time.After(reqSpacing):
			case <-ctx.Done():
				return
			}
		}
		s.mu.Lock()
		_, still := s.subs[sub.id]
		s.mu.Unlock()
		if still {
			s.sendReq(ctx, ws, sub)
		}
	}
}

// handle processes one relay envelope. A returned error ends the session.
func (s *Subscriber) handle(ctx context.Context, ws *Conn, env nostr.Envelope) error {
	switch env := env.(type) {
	case *nostr.EventEnvelope:
		if env.SubscriptionID != nil {
			s.event(ctx, ws, *env.SubscriptionID, &env.Event)
		}
	case *nostr.EOSEEnvelope:
		s.eose(ctx, string(*env))
	case *nostr.CountEnvelope:
		s.counted(env.SubscriptionID, env.Count)
	case *nostr.ClosedEnvelope:
		if s.counted(env.SubscriptionID, nil) {
			return nil
		}
		return s.closed(ctx, ws, env.SubscriptionID, env.Reason)
	case *nostr.NoticeEnvelope:
		if notice := string(*env); strings.HasPrefix(notice, "rate-limited:") {
			until := s.armGate(notice)
			s.log.Warn("relay rate-limits us; holding REQs and typing", "notice", notice, "until", until.Format(time.RFC3339Nano))
		} else {
			s.log.Info("relay notice", "notice", notice)
		}
	case *nostr.OKEnvelope:
		s.mu.Lock()
		ch, ok := s.oks[env.EventID]
		delete(s.oks, env.EventID)
		s.mu.Unlock()
		if ok {
			ch <- okReply{env.OK, env.Reason}
		}
	}
	return nil
}

// event delivers one event of subscription sid, when its id hashes its
// content and its signature is its author's (nostrkey.CheckEvent).
func (s *Subscriber) event(ctx context.Context, ws *Conn, sid string, ev *nostr.Event) {
	if !nostrkey.CheckEvent(ev) {
		s.log.Warn("dropped event with a bad id or signature", "event_id", ev.ID)
		return
	}
	s.mu.Lock()
	if q, ok := s.queries[sid]; ok {
		s.mu.Unlock()
		select {
		case q <- ev:
		default:
		}
		return
	}
	sub, ok := s.subs[sid]
	if !ok || s.opt.Seen != nil && !s.opt.Seen.Add(ev.ID) {
		s.mu.Unlock()
		return
	}
	select {
	case s.out <- Event{Sub: sid, Ev: ev, Stored: sub.stored}:
		if int64(ev.CreatedAt) > sub.lastSeen {
			sub.lastSeen = int64(ev.CreatedAt)
		}
		s.mu.Unlock()
	default:
		// Backpressure: forget it and ask the relay again from its time.
		if s.opt.Seen != nil {
			s.opt.Seen.Remove(ev.ID)
		}
		if sub.dropped == 0 || int64(ev.CreatedAt) < sub.dropped {
			sub.dropped = int64(ev.CreatedAt)
		}
		s.mu.Unlock()
		s.log.Warn("event buffer full; resubscribing", "sub", sid, "event_id", ev.ID)
		go s.sendReq(ctx, ws, sub) // one write; ends with it
	}
}

// eose ends a query, or a REQ's replay of stored events.
func (s *Subscriber) eose(ctx context.Context, sid string) {
	s.mu.Lock()
	if q, ok := s.queries[sid]; ok {
		delete(s.queries, sid)
		close(q)
	}
	sub := s.subs[sid]
	if sub != nil && sub.dropped > 0 {
		sub.dropped = 0
	}
	replayed := sub != nil && sub.stored
	if replayed {
		sub.stored = false
	}
	mark := replayed && sub.opt.MarkEOSE
	s.mu.Unlock()
	if mark {
		// Sent in order after the events, waiting for room: a lost
		// marker would hold a catch-up batch back until the next EOSE.
		select {
		case s.out <- Event{Sub: sid, EOSE: true}:
		case <-ctx.Done():
		}
	}
}

// closed applies the CLOSED rules of harness.md §4.6.
func (s *Subscriber) closed(ctx context.Context, ws *Conn, sid, reason string) error {
	s.mu.Lock()
	if q, ok := s.queries[sid]; ok {
		delete(s.queries, sid)
		close(q)
		s.mu.Unlock()
		return nil
	}
	sub, active := s.subs[sid]
	s.mu.Unlock()
	switch {
	case reason == "restricted: not a channel member" || reason == "restricted: channel access revoked":
		s.log.Warn("relay closed channel subscription", "sub", sid, "reason", reason)
		s.mu.Lock()
		delete(s.subs, sid)
		s.mu.Unlock()
		return nil
	case strings.HasPrefix(reason, "rate-limited:"):
		until := s.armGate(reason)
		s.log.Warn("relay rate-limits us; subscription parked", "sub", sid, "reason", reason, "until", until.Format(time.RFC3339Nano))
		if active {
			s.sendReq(ctx, ws, sub) // parks it: the gate is closed
		}
		return nil
	case strings.HasPrefix(reason, "auth-required") || strings.HasPrefix(reason, "restricted") || strings.Contains(reason, "auth"):
		return fmt.Errorf("subscription %s closed: %s", sid, reason)
	}
	if active {
		go s.sendReq(ctx, ws, sub) // one write; ends with it
	}
	return nil
}

// rateHint reads a rate-limit reason's "retry in N s" hint (retryIn);
// hints under rateGateMinHint, or none, become rateGateDefault, and none
// exceeds rateGateMax.
func rateHint(reason string) time.Duration {
	d, ok := retryIn(reason)
	if !ok || d < rateGateMinHint {
		return rateGateDefault
	}
	return min(d, rateGateMax)
}

// armGate closes the rate-limit gate for reason's hint ±20 % (harness.md §4.6).
// The gate only ever extends: a shorter hint leaves a later end in place.
// It returns when the gate opens.
func (s *Subscriber) armGate(reason string) time.Time {
	until := time.Now().Add(jitter(rateHint(reason)))
	s.mu.Lock()
	if until.After(s.gateUntil) {
		s.gateUntil = until
	}
	until = s.gateUntil
	s.mu.Unlock()
	s.wakeGate()
	return until
}

// Gated reports whether the rate-limit gate is closed.
func (s *Subscriber) Gated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.gateUntil)
}

func (s *Subscriber) wakeGate() {
	select {
	case s.gateWake <- struct{}{}:
	default:
	}
}

// WaitGate blocks while the rate-limit gate is closed.
func (s *Subscriber) WaitGate(ctx context.Context) error {
	for {
		s.mu.Lock()
		wait := time.Until(s.gateUntil)
		s.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C: // the gate may have been extended meanwhile: look again
		}
	}
}

// gateLoop sends the parked REQs once the rate-limit gate opens, spaced
// like a resubscribe, on ws until ctx (the session) ends. REQs still parked
// then are covered by the next session's resubscribe.
func (s *Subscriber) gateLoop(ctx context.Context, ws *Conn) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		wait := time.Until(s.gateUntil)
		var ready []*subState
		if wait <= 0 {
			for id := range s.parked {
				if sub := s.subs[id]; sub != nil {
					ready = append(ready, sub)
				}
			}
			clear(s.parked)
		}
		s.mu.Unlock()
		if len(ready) > 0 {
			s.log.Info("rate-limit gate open; sending parked REQs", "subs", len(ready))
		}
		s.sendSpaced(ctx, ws, ready) // parks them again if the gate closed meanwhile
		if ctx.Err() != nil {
			return
		}
		var timer <-chan time.Time
		if wait > 0 {
			t.Reset(wait)
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-s.gateWake:
		case <-timer:
		}
	}
}

// Subscribe adds (or replaces) a subscription and sends its REQ when
// connected.
func (s *Subscriber) Subscribe(ctx context.Context, id string, f nostr.Filter, opt SubOptions) {
	s.mu.Lock()
	sub := &subState{id: id, filter: f, opt: opt}
	s.subs[id] = sub
	ws := s.ws
	s.mu.Unlock()
	if ws != nil {
		s.sendReq(ctx, ws, sub)
	}
}

// Unsubscribe sends CLOSE and forgets the replay state.
func (s *Subscriber) Unsubscribe(ctx context.Context, id string) {
	s.mu.Lock()
	_, ok := s.subs[id]
	delete(s.subs, id)
	delete(s.parked, id)
	ws := s.ws
	s.mu.Unlock()
	if ok && ws != nil {
		ws.WriteFrame(ctx, "CLOSE", id)
	}
}

// Conn is the live socket; nil between sessions.
func (s *Subscriber) Conn() *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws
}

// Publish sends an event over the socket; wait waits for the relay's OK
// and reports a refusal as an *Error.
func (s *Subscriber) Publish(ctx context.Context, ev *nostr.Event, wait bool) error {
	s.mu.Lock()
	ws := s.ws
	var ch chan okReply
	if wait && ws != nil {
		ch = make(chan okReply, 1)
		s.oks[ev.ID] = ch
		defer func() { s.mu.Lock(); delete(s.oks, ev.ID); s.mu.Unlock() }()
	}
	s.mu.Unlock()
	if ws == nil {
		return networkErr("%s", errNotConnected)
	}
	if err := ws.WriteFrame(ctx, "EVENT", ev); err != nil {
		return networkErr("write: %s", err)
	}
	if !wait {
		return nil
	}
	select {
	case r := <-ch:
		if !r.ok {
			return relayErr(400, r.msg, false)
		}
		return nil
	case <-ctx.Done():
		return networkErr("%s", ctx.Err())
	}
}

// query runs filters as a one-shot subscription until EOSE.
func (s *Subscriber) query(ctx context.Context, filters []Filter) ([]*nostr.Event, error) {
	// A query is a REQ too: it waits for the rate-limit gate.
	if err := s.WaitGate(ctx); err != nil {
		return nil, networkErr("query waiting for the relay's rate limit: %s", err)
	}
	s.mu.Lock()
	ws := s.ws
	id := "q-" + strconv.FormatInt(s.qn.Add(1), 10)
	ch := make(chan *nostr.Event, maxQueryEvents)
	s.queries[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if _, open := s.queries[id]; open {
			delete(s.queries, id)
			if s.ws != nil {
				go s.ws.WriteFrame(context.WithoutCancel(ctx), "CLOSE", id) // one write; ends with it
			}
		}
		s.mu.Unlock()
	}()
	if ws == nil {
		return nil, networkErr("%s", errNotConnected)
	}
	frame := []any{id}
	for _, f := range filters {
		frame = append(frame, f)
	}
	if err := ws.WriteFrame(ctx, "REQ", frame...); err != nil {
		return nil, networkErr("write: %s", err)
	}
	var out []*nostr.Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out, nil
			}
			out = append(out, ev)
		case <-ctx.Done():
			return out, networkErr("%s", ctx.Err())
		}
	}
}

// counted hands n to the count waiting on sid and reports whether one was.
func (s *Subscriber) counted(sid string, n *int64) bool {
	s.mu.Lock()
	ch, ok := s.counts[sid]
	delete(s.counts, sid)
	s.mu.Unlock()
	if ok {
		ch <- n // capacity 1, one send: delete above made it the only one
	}
	return ok
}

// count asks for a NIP-45 COUNT of the filters and waits for the answer.
func (s *Subscriber) count(ctx context.Context, filters []Filter) (int64, error) {
	if err := s.WaitGate(ctx); err != nil {
		return 0, networkErr("count waiting for the relay's rate limit: %s", err)
	}
	s.mu.Lock()
	ws := s.ws
	id := "n-" + strconv.FormatInt(s.qn.Add(1), 10)
	ch := make(chan *int64, 1)
	s.counts[id] = ch
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.counts, id); s.mu.Unlock() }()
	if ws == nil {
		return 0, networkErr("%s", errNotConnected)
	}
	b, err := json.Marshal(countFrame(id, filters))
	if err != nil {
		return 0, otherErr("encode COUNT: %v", err)
	}
	if err := ws.Write(ctx, b); err != nil {
		return 0, networkErr("write: %s", err)
	}
	select {
	case n := <-ch:
		if n == nil {
			return 0, relayErr(400, "relay refused the count", false)
		}
		return *n, nil
	case <-ctx.Done():
		return 0, networkErr("%s", ctx.Err())
	}
}
