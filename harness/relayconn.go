package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// maxRelayFrame bounds one websocket message from the relay.
const maxRelayFrame = 32 << 20

// initialConnectRetries is how many times the first connection is retried
// (after 1, 2, 4, 8, 16 s) before the harness gives up.
const initialConnectRetries = 5

// backoffLadder is the reconnect ladder in seconds (spec §4.6).
var backoffLadder = [...]int{1, 2, 4, 8, 16, 32, 60}

// jitter returns d ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// TerminalError is a relay failure that retrying cannot fix.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// subState is one live subscription and its replay bookkeeping.
type subState struct {
	id       string
	filter   nostr.Filter // without since
	floor    int64        // replay floor (unix seconds)
	lastSeen int64        // newest created_at delivered; 0 none
	dropped  int64        // oldest created_at dropped for backpressure; 0 none
	member   bool         // membership notifications: do not move lastSeen
	stored   bool         // a REQ was sent and its EOSE has not come: events are stored ones
}

func (s *subState) since() int64 {
	v := s.floor
	if s.lastSeen > 0 || s.dropped > 0 {
		v = s.lastSeen
		if s.dropped > 0 && (v == 0 || s.dropped < v) {
			v = s.dropped
		}
		if s.member && v < s.floor {
			v = s.floor
		}
	}
	return max(v-sinceSkew, 0)
}

// idSet is the two-generation dedup set of spec §4.5.
type idSet struct {
	gen  int
	cur  map[string]bool
	prev map[string]bool
}

func newIDSet(gen int) *idSet {
	return &idSet{gen: gen, cur: map[string]bool{}, prev: map[string]bool{}}
}

// add records id and reports whether it was new.
func (s *idSet) add(id string) bool {
	if s.cur[id] || s.prev[id] {
		return false
	}
	if len(s.cur) >= s.gen {
		s.prev, s.cur = s.cur, map[string]bool{}
	}
	s.cur[id] = true
	return true
}

func (s *idSet) remove(id string) { delete(s.cur, id); delete(s.prev, id) }

// relayEvent is an event delivered on a subscription, or (ev nil, eose
// set) the end of the stored events a REQ replayed.
type relayEvent struct {
	sub    string
	ev     *nostr.Event
	stored bool // sent before the REQ's EOSE: missed while away, not live
	eose   bool
}

// relayConn keeps one authenticated websocket to the relay alive and the
// subscriptions on it current. Events go to out; when out is full the
// event is dropped, forgotten, and the subscription re-requested so the
// relay replays it.
type relayConn struct {
	url     string
	key     *nostrkey.Secret
	authTag nostr.Tag
	log     *slog.Logger
	out     chan relayEvent

	mu      sync.Mutex
	ws      *websocket.Conn
	subs    map[string]*subState
	seen    *idSet
	queries map[string]chan *nostr.Event // one-shot websocket queries
	oks     map[string]chan okReply
	qn      atomic.Int64

	// The rate-limit gate (spec §4.5–4.6): until gateUntil, REQs are
	// parked and typing is dropped. Zero when it has never been armed.
	gateUntil time.Time
	parked    map[string]bool // subscriptions whose REQ waits for the gate
	gateWake  chan struct{}   // capacity 1: the gate or the parked set changed

	connected chan struct{} // closed after the first successful login
	once      sync.Once
}

type okReply struct {
	ok  bool
	msg string
}

func newRelayConn(url string, key *nostrkey.Secret, authTag nostr.Tag, buffer int, log *slog.Logger) *relayConn {
	return &relayConn{
		url: url, key: key, authTag: authTag, log: log,
		out:       make(chan relayEvent, buffer),
		subs:      map[string]*subState{},
		seen:      newIDSet(dedupGeneration),
		queries:   map[string]chan *nostr.Event{},
		oks:       map[string]chan okReply{},
		parked:    map[string]bool{},
		gateWake:  make(chan struct{}, 1),
		connected: make(chan struct{}),
	}
}

// run connects and reconnects until ctx ends. The first connection gets
// initialConnectRetries retries; a terminal error or their exhaustion
// returns an error. Later drops reconnect forever.
func (rc *relayConn) run(ctx context.Context) error {
	rung := 0
	everUp := false
	attempts := 0
	for {
		start := time.Now()
		err := rc.session(ctx, func() { everUp = true })
		if ctx.Err() != nil {
			return nil
		}
		var term *TerminalError
		if !everUp {
			attempts++
			if errors.As(err, &term) || attempts > initialConnectRetries {
				return fmt.Errorf("buzz-acp: connect %s: %w", rc.url, err)
			}
		}
		if time.Since(start) > stableConnection {
			rung = 0
		}
		var dnsErr *net.DNSError
		delay := time.Duration(backoffLadder[min(rung, len(backoffLadder)-1)]) * time.Second
		if errors.As(err, &dnsErr) {
			delay = 2 * time.Second
		} else {
			rung++
		}
		rc.log.Warn("relay connection lost; reconnecting", "err", err, "in", delay.Round(time.Millisecond))
		t := time.NewTimer(jitter(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// session runs one connection: dial, NIP-42 login, resubscribe, read.
func (rc *relayConn) session(ctx context.Context, up func()) error {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, resp, err := websocket.Dial(dctx, rc.url, nil)
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode != 408 && resp.StatusCode != 429 && resp.StatusCode < 500 {
			return &TerminalError{fmt.Errorf("websocket upgrade: %w", err)}
		}
		return err
	}
	ws.SetReadLimit(maxRelayFrame)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	defer ws.CloseNow()

	frames := make(chan []byte, 64)
	readErr := make(chan error, 1)
	// The reader ends when the socket fails or sctx ends (CloseNow unblocks it).
	go func() {
		for {
			_, b, err := ws.Read(sctx)
			if err != nil {
				readErr <- err
				close(frames)
				return
			}
			select {
			case frames <- b:
			case <-sctx.Done():
			}
		}
	}()

	// Login: wait for the challenge, buffering anything else.
	var pending [][]byte
	challenge := ""
	deadline := time.NewTimer(authWait)
	defer deadline.Stop()
	for challenge == "" {
		select {
		case b, ok := <-frames:
			if !ok {
				return <-readErr
			}
			if env, _ := parseEnvelope(b).(*nostr.AuthEnvelope); env != nil && env.Challenge != nil {
				challenge = *env.Challenge
				continue
			}
			pending = append(pending, b)
		case <-deadline.C:
			return errors.New("no AUTH challenge from relay within 20s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	authID, err := rc.sendAuth(sctx, ws, challenge)
	if err != nil {
		return err
	}
	deadline.Reset(authWait)
	for authed := false; !authed; {
		select {
		case b, ok := <-frames:
			if !ok {
				return <-readErr
			}
			if env, _ := parseEnvelope(b).(*nostr.OKEnvelope); env != nil && env.EventID == authID {
				if !env.OK {
					if strings.HasPrefix(env.Reason, "error:") {
						return fmt.Errorf("auth: %s", env.Reason)
					}
					return &TerminalError{fmt.Errorf("auth refused: %s", env.Reason)}
				}
				authed = true
				continue
			}
			pending = append(pending, b)
		case <-deadline.C:
			return errors.New("no OK for AUTH within 20s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rc.mu.Lock()
	rc.ws = ws
	subs := make([]*subState, 0, len(rc.subs))
	for _, s := range rc.subs {
		subs = append(subs, s)
	}
	clear(rc.parked) // the resubscribe below covers (or parks again) every one
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		if rc.ws == ws {
			rc.ws = nil
		}
		rc.mu.Unlock()
	}()
	up()
	rc.once.Do(func() { close(rc.connected) })
	rc.log.Info("logged in to relay", "url", rc.url)

	for _, b := range pending {
		rc.handle(sctx, ws, b)
	}
	// Resubscribe in the background, REQs spaced out.
	go func() {
		for i, s := range subs {
			if i > 0 {
				select {
				case <-time.After(reqSpacing):
				case <-sctx.Done():
					return
				}
			}
			rc.mu.Lock()
			_, still := rc.subs[s.id]
			rc.mu.Unlock()
			if still {
				rc.sendReq(sctx, ws, s)
			}
		}
	}()
	// Sends the REQs parked behind the rate-limit gate; ends with sctx.
	go rc.gateLoop(sctx, ws)
	// Liveness: ping every 30 s; no pong within 10 s ends the session.
	go func() {
		t := time.NewTicker(pingInterval)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				pctx, c := context.WithTimeout(sctx, pongTimeout)
				err := ws.Ping(pctx)
				c()
				if err != nil && sctx.Err() == nil {
					rc.log.Warn("relay ping failed", "err", err)
					ws.CloseNow()
					return
				}
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			ws.Close(websocket.StatusNormalClosure, "")
			return ctx.Err()
		case b, ok := <-frames:
			if !ok {
				return <-readErr
			}
			if err := rc.handle(sctx, ws, b); err != nil {
				return err
			}
		}
	}
}

func (rc *relayConn) sendAuth(ctx context.Context, ws *websocket.Conn, challenge string) (string, error) {
	ev := &nostr.Event{
		Kind:      workspace.KindAuth,
		CreatedAt: nostr.Now(),
		Tags:      nostr.Tags{{workspace.TagAuthRelay, rc.url}, {workspace.TagAuthChallenge, challenge}},
	}
	if rc.authTag != nil {
		ev.Tags = append(ev.Tags, rc.authTag)
	}
	if err := rc.key.SignEvent(ev); err != nil {
		return "", err
	}
	b, _ := json.Marshal([]any{"AUTH", ev})
	return ev.ID, rc.write(ctx, ws, b)
}

func (rc *relayConn) write(ctx context.Context, ws *websocket.Conn, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Once started, a write is bounded only by writeTimeout, not by ctx:
	// coder/websocket closes the whole socket when a write's context ends,
	// even while the write still waits for another writer (a turn's typing
	// ending while the observer publisher writes), which would drop every
	// subscription for one abandoned typing event.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := ws.Write(wctx, websocket.MessageText, b); err != nil {
		ws.CloseNow() // a failed write means reconnect
		return err
	}
	return nil
}

// sendReq sends s's REQ, or parks it while the rate-limit gate is closed.
func (rc *relayConn) sendReq(ctx context.Context, ws *websocket.Conn, s *subState) {
	rc.mu.Lock()
	if time.Now().Before(rc.gateUntil) {
		rc.parked[s.id] = true
		rc.mu.Unlock()
		rc.log.Debug("rate-limit gate closed; REQ deferred", "sub", s.id)
		rc.wakeGate()
		return
	}
	f := s.filter
	since := nostr.Timestamp(s.since())
	s.stored = true
	rc.mu.Unlock()
	f.Since = &since
	b, _ := json.Marshal([]any{"REQ", s.id, f})
	if err := rc.write(ctx, ws, b); err != nil {
		rc.log.Warn("REQ failed", "sub", s.id, "err", err)
	}
}

// handle processes one relay frame. A returned error ends the session.
func (rc *relayConn) handle(ctx context.Context, ws *websocket.Conn, b []byte) error {
	switch env := parseEnvelope(b).(type) {
	case *nostr.EventEnvelope:
		if env.SubscriptionID == nil {
			return nil
		}
		sid := *env.SubscriptionID
		ev := &env.Event
		if ok, _ := ev.CheckSignature(); !ok {
			rc.log.Warn("dropped event with a bad signature", "event_id", ev.ID)
			return nil
		}
		rc.mu.Lock()
		if q, ok := rc.queries[sid]; ok {
			rc.mu.Unlock()
			select {
			case q <- ev:
			default:
			}
			return nil
		}
		s, ok := rc.subs[sid]
		if !ok || !rc.seen.add(ev.ID) {
			rc.mu.Unlock()
			return nil
		}
		select {
		case rc.out <- relayEvent{sub: sid, ev: ev, stored: s.stored}:
			if !s.member && int64(ev.CreatedAt) > s.lastSeen {
				s.lastSeen = int64(ev.CreatedAt)
			}
			if s.member && int64(ev.CreatedAt) > s.lastSeen {
				s.lastSeen = int64(ev.CreatedAt)
			}
			rc.mu.Unlock()
		default:
			// Backpressure: forget it and ask the relay again from its time.
			rc.seen.remove(ev.ID)
			if s.dropped == 0 || int64(ev.CreatedAt) < s.dropped {
				s.dropped = int64(ev.CreatedAt)
			}
			rc.mu.Unlock()
			rc.log.Warn("event buffer full; resubscribing", "sub", sid, "event_id", ev.ID)
			go rc.sendReq(ctx, ws, s)
		}
	case *nostr.EOSEEnvelope:
		sid := string(*env)
		rc.mu.Lock()
		if q, ok := rc.queries[sid]; ok {
			delete(rc.queries, sid)
			close(q)
		}
		s := rc.subs[sid]
		if s != nil && s.dropped > 0 {
			s.dropped = 0
		}
		replayed := s != nil && s.stored
		if replayed {
			s.stored = false
		}
		rc.mu.Unlock()
		if replayed && strings.HasPrefix(sid, "ch-") { // only channel subscriptions catch up
			// Tells intake the replay is complete. Sent in order after the
			// events, waiting for room: a lost marker would hold a
			// catch-up batch back until the next EOSE.
			select {
			case rc.out <- relayEvent{sub: sid, eose: true}:
			case <-ctx.Done():
			}
		}
	case *nostr.ClosedEnvelope:
		return rc.closed(ctx, ws, env.SubscriptionID, env.Reason)
	case *nostr.NoticeEnvelope:
		if notice := string(*env); strings.HasPrefix(notice, "rate-limited:") {
			until := rc.armGate(notice)
			rc.log.Warn("relay rate-limits us; holding REQs and typing", "notice", notice, "until", until.Format(time.RFC3339Nano))
		} else {
			rc.log.Info("relay notice", "notice", notice)
		}
	case *nostr.AuthEnvelope:
		if env.Challenge != nil {
			if _, err := rc.sendAuth(ctx, ws, *env.Challenge); err != nil {
				return err
			}
		}
	case *nostr.OKEnvelope:
		rc.mu.Lock()
		ch, ok := rc.oks[env.EventID]
		delete(rc.oks, env.EventID)
		rc.mu.Unlock()
		if ok {
			ch <- okReply{env.OK, env.Reason}
		}
	}
	return nil
}

// closed applies the CLOSED rules of spec §4.6.
func (rc *relayConn) closed(ctx context.Context, ws *websocket.Conn, sid, reason string) error {
	rc.mu.Lock()
	if q, ok := rc.queries[sid]; ok {
		delete(rc.queries, sid)
		close(q)
		rc.mu.Unlock()
		return nil
	}
	s, active := rc.subs[sid]
	rc.mu.Unlock()
	switch {
	case reason == "restricted: not a channel member" || reason == "restricted: channel access revoked":
		rc.log.Warn("relay closed channel subscription", "sub", sid, "reason", reason)
		rc.mu.Lock()
		delete(rc.subs, sid)
		rc.mu.Unlock()
		return nil
	case strings.HasPrefix(reason, "rate-limited:"):
		until := rc.armGate(reason)
		rc.log.Warn("relay rate-limits us; subscription parked", "sub", sid, "reason", reason, "until", until.Format(time.RFC3339Nano))
		if active {
			rc.sendReq(ctx, ws, s) // parks it: the gate is closed
		}
		return nil
	case strings.HasPrefix(reason, "auth-required") || strings.HasPrefix(reason, "restricted") || strings.Contains(reason, "auth"):
		return fmt.Errorf("subscription %s closed: %s", sid, reason)
	}
	if active {
		go rc.sendReq(ctx, ws, s)
	}
	return nil
}

// rateHint reads "retry in N s" from a rate-limit reason; hints under
// rateGateMinHint, or none, become rateGateDefault, and none exceeds
// rateGateMax.
func rateHint(reason string) time.Duration {
	if i := strings.Index(reason, "retry in "); i >= 0 {
		f := strings.Fields(reason[i+len("retry in "):])
		if len(f) > 0 {
			n, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
			if err == nil && n >= rateGateMinHint.Seconds() {
				return time.Duration(min(n, rateGateMax.Seconds()) * float64(time.Second))
			}
		}
	}
	return rateGateDefault
}

// armGate closes the rate-limit gate for reason's hint ±20 % (spec §4.6).
// The gate only ever extends: a shorter hint leaves a later end in place.
// It returns when the gate opens.
func (rc *relayConn) armGate(reason string) time.Time {
	until := time.Now().Add(jitter(rateHint(reason)))
	rc.mu.Lock()
	if until.After(rc.gateUntil) {
		rc.gateUntil = until
	}
	until = rc.gateUntil
	rc.mu.Unlock()
	rc.wakeGate()
	return until
}

// gated reports whether the rate-limit gate is closed.
func (rc *relayConn) gated() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return time.Now().Before(rc.gateUntil)
}

func (rc *relayConn) wakeGate() {
	select {
	case rc.gateWake <- struct{}{}:
	default:
	}
}

// waitGate blocks while the rate-limit gate is closed.
func (rc *relayConn) waitGate(ctx context.Context) error {
	for {
		rc.mu.Lock()
		wait := time.Until(rc.gateUntil)
		rc.mu.Unlock()
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
func (rc *relayConn) gateLoop(ctx context.Context, ws *websocket.Conn) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		rc.mu.Lock()
		wait := time.Until(rc.gateUntil)
		var ready []*subState
		if wait <= 0 {
			for id := range rc.parked {
				if s := rc.subs[id]; s != nil {
					ready = append(ready, s)
				}
			}
			clear(rc.parked)
		}
		rc.mu.Unlock()
		if len(ready) > 0 {
			rc.log.Info("rate-limit gate open; sending parked REQs", "subs", len(ready))
		}
		for i, s := range ready {
			if i > 0 {
				select {
				case <-time.After(reqSpacing):
				case <-ctx.Done():
					return
				}
			}
			rc.sendReq(ctx, ws, s) // parks it again if the gate closed meanwhile
		}
		var timer <-chan time.Time
		if wait > 0 {
			t.Reset(wait)
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-rc.gateWake:
		case <-timer:
		}
	}
}

// subscribe adds (or replaces) a subscription and sends its REQ when connected.
func (rc *relayConn) subscribe(ctx context.Context, id string, f nostr.Filter, floor int64, member bool) {
	rc.mu.Lock()
	s := &subState{id: id, filter: f, floor: floor, member: member}
	rc.subs[id] = s
	ws := rc.ws
	rc.mu.Unlock()
	if ws != nil {
		rc.sendReq(ctx, ws, s)
	}
}

// unsubscribe sends CLOSE and forgets the replay state.
func (rc *relayConn) unsubscribe(ctx context.Context, id string) {
	rc.mu.Lock()
	_, ok := rc.subs[id]
	delete(rc.subs, id)
	delete(rc.parked, id)
	ws := rc.ws
	rc.mu.Unlock()
	if ok && ws != nil {
		b, _ := json.Marshal([]any{"CLOSE", id})
		rc.write(ctx, ws, b)
	}
}

// publishWS sends an event over the socket; wait reports the relay's OK.
func (rc *relayConn) publishWS(ctx context.Context, ev *nostr.Event, wait bool) error {
	rc.mu.Lock()
	ws := rc.ws
	var ch chan okReply
	if wait {
		ch = make(chan okReply, 1)
		rc.oks[ev.ID] = ch
	}
	rc.mu.Unlock()
	if ws == nil {
		return errors.New("not connected")
	}
	b, _ := json.Marshal([]any{"EVENT", ev})
	if err := rc.write(ctx, ws, b); err != nil {
		return err
	}
	if !wait {
		return nil
	}
	defer func() { rc.mu.Lock(); delete(rc.oks, ev.ID); rc.mu.Unlock() }()
	select {
	case r := <-ch:
		if !r.ok {
			return fmt.Errorf("relay refused event: %s", r.msg)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queryWS runs filters as a one-shot subscription until EOSE.
func (rc *relayConn) queryWS(ctx context.Context, filters []nostr.Filter) ([]*nostr.Event, error) {
	// A query is a REQ too: it waits for the rate-limit gate.
	if err := rc.waitGate(ctx); err != nil {
		return nil, fmt.Errorf("query waiting for the relay's rate limit: %w", err)
	}
	rc.mu.Lock()
	ws := rc.ws
	id := "q-" + strconv.FormatInt(rc.qn.Add(1), 10)
	ch := make(chan *nostr.Event, maxQueryEvents)
	rc.queries[id] = ch
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		if _, open := rc.queries[id]; open {
			delete(rc.queries, id)
			if rc.ws != nil {
				b, _ := json.Marshal([]any{"CLOSE", id})
				go rc.write(context.WithoutCancel(ctx), rc.ws, b)
			}
		}
		rc.mu.Unlock()
	}()
	if ws == nil {
		return nil, errors.New("not connected")
	}
	msg := append([]any{"REQ", id}, anySlice(filters)...)
	b, _ := json.Marshal(msg)
	if err := rc.write(ctx, ws, b); err != nil {
		return nil, err
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
			return out, ctx.Err()
		}
	}
}

// maxQueryEvents bounds one websocket query's answer.
const maxQueryEvents = 2000

func anySlice(fs []nostr.Filter) []any {
	out := make([]any, len(fs))
	for i := range fs {
		out[i] = fs[i]
	}
	return out
}

// parseEnvelope decodes one relay frame; nil when it is not a known envelope.
func parseEnvelope(b []byte) nostr.Envelope {
	env, err := nostr.NewMessageParser().ParseMessage(string(b))
	if err != nil {
		return nil
	}
	return env
}
