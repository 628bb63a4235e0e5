package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"time"

	"buzzbox/internal/workspace/nipoa"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// conn is one websocket connection: who it authenticated as under the
// relay's NIP-42 rules, its live subscriptions, and the socket. The
// connection's context (ctx) carries the *conn, so that the read and
// write rules find their caller.
type conn struct {
	scheme    string           // "ws" or "wss": what the AUTH relay tag must say
	now       func() time.Time // the relay's clock, for the grant's time clauses
	challenge string           // the NIP-42 challenge sent on connect
	ws        *websocket.Conn  // set before the connection is served
	ctx       context.Context  // ends when the connection does
	out       chan []byte      // messages for the writer (ws.go)
	slots     chan struct{}    // COUNTs and stored-events queries running

	mu     sync.Mutex
	pubkey string     // authenticated pubkey; empty until AUTH passes
	grant  *nipoa.Tag // NIP-OA attestation of pubkey presented at AUTH; nil when none
	subs   map[string]*subscription
	nc     net.Conn // the hijacked socket, for cutting a banned key off
}

// subscription is one live REQ. Until its stored events are sent (live
// false), events broadcast to it wait in pending, so that they follow
// the stored ones and none is sent twice.
type subscription struct {
	filters  nostr.Filters
	channels []string           // channels its filters name with #h
	cancel   context.CancelFunc // ends its stored-events query
	live     bool
	pending  []*nostr.Event
}

type connKey struct{}

// connOf returns the connection a context belongs to, or nil.
func connOf(ctx context.Context) *conn {
	c, _ := ctx.Value(connKey{}).(*conn)
	return c
}

// newChallenge returns a fresh NIP-42 challenge.
func newChallenge() string {
	b := make([]byte, challengeBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// setNetConn records the connection's socket once hijacked.
func (c *conn) setNetConn(nc net.Conn) {
	c.mu.Lock()
	c.nc = nc
	c.mu.Unlock()
}

// identity returns the authenticated pubkey and the owner attesting it,
// "" when there is no attestation or its time clauses do not hold now.
func (c *conn) identity() (pubkey, owner string) {
	c.mu.Lock()
	pubkey, g := c.pubkey, c.grant
	c.mu.Unlock()
	if g != nil && c.now != nil {
		owner, _ = grantOwner(g, c.now())
	}
	return pubkey, owner
}

// attestation returns the grant presented at AUTH, or nil.
func (c *conn) attestation() *nipoa.Tag {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grant
}

// subCount returns how many subscriptions are live.
func (c *conn) subCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

// subscribe records subscription id with its filters and returns the
// context its stored-events query runs under, which ends when the
// subscription or the connection does.
func (c *conn) subscribe(id string, filters nostr.Filters) context.Context {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &subscription{filters: filters, cancel: cancel}
	for _, f := range filters {
		s.channels = append(s.channels, f.Tags["h"]...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.subs[id]; old != nil {
		old.cancel()
	}
	if c.subs == nil {
		c.subs = make(map[string]*subscription)
	}
	c.subs[id] = s
	return ctx
}

// unsubscribe ends subscription id, if live.
func (c *conn) unsubscribe(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.subs[id]; s != nil {
		s.cancel()
		delete(c.subs, id)
	}
}

// unsubscribeAll ends every subscription, when the connection ends.
func (c *conn) unsubscribeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.subs {
		s.cancel()
		delete(c.subs, id)
	}
}

// endAll ends every subscription and returns their ids.
func (c *conn) endAll() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.subs))
	for id, s := range c.subs {
		s.cancel()
		delete(c.subs, id)
		ids = append(ids, id)
	}
	return ids
}

func (s *subscription) matches(ev *nostr.Event) bool {
	for _, f := range s.filters {
		if f.Matches(ev) && (f.Search == "" || searchLive(f, ev)) {
			return true
		}
	}
	return false
}

// match is a subscription whose filters matched an event.
type match struct {
	id string
	s  *subscription
}

// matched returns the subscriptions one of whose filters matches ev
// (nil when none, the common case, without allocating).
func (c *conn) matched(ev *nostr.Event) []match {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ms []match
	for id, s := range c.subs {
		if s.matches(ev) {
			ms = append(ms, match{id, s})
		}
	}
	return ms
}

// deliver hands ev to the subscriptions ms that matched it, when each is
// still the one open under its id: it returns the ids of the live ones
// and keeps ev for those still sending stored events. The filters are not
// matched again.
func (c *conn) deliver(ev *nostr.Event, ms []match) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, m := range ms {
		switch s := m.s; {
		case c.subs[m.id] != s:
		case s.live:
			ids = append(ids, m.id)
		case len(s.pending) < maxPendingLive:
			s.pending = append(s.pending, ev)
		}
	}
	return ids
}

// goLive marks subscription id live, its stored events sent, and
// returns the events broadcast to it meanwhile. It queues eose at once
// when the writer has room, so that no live event comes before it, and
// reports whether eose is still to be sent (the queue was full). For a
// subscription no longer there it returns nothing.
func (c *conn) goLive(ctx context.Context, id string, eose []byte) (pending []*nostr.Event, later bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.subs[id]
	if s == nil || ctx.Err() != nil {
		return nil, false
	}
	select {
	case c.out <- eose:
	default:
		later = true
	}
	s.live = true
	pending, s.pending = s.pending, nil
	return pending, later
}

// revoked ends the live subscriptions that name channel id and returns
// their ids.
func (c *conn) revoked(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var subs []string
	for sid, s := range c.subs {
		for _, ch := range s.channels {
			if ch == id {
				subs = append(subs, sid)
				s.cancel()
				delete(c.subs, sid)
				break
			}
		}
	}
	return subs
}

// acquire waits for a slot to run a query in, and reports false when
// the connection ends first.
func (c *conn) acquire() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// release frees a slot acquire took.
func (c *conn) release() { <-c.slots }

// send queues one message for the connection's writer, waiting while
// maxQueuedMessages are queued; it gives up when the connection ends.
func (c *conn) send(msg []byte) {
	select {
	case c.out <- msg:
	case <-c.ctx.Done():
	}
}

// cut closes the connection with a Close frame carrying code and reason,
// waiting at most banCloseWrite for the client before the socket closes,
// so that a client that does not read cannot hold the caller.
func (c *conn) cut(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	ws, nc := c.ws, c.nc
	c.mu.Unlock()
	if ws == nil || nc == nil {
		return
	}
	// Ends after the bounded wait; the close handshake ends with the socket.
	go func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			ws.Close(code, reason)
		}()
		t := time.NewTimer(banCloseWrite)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		nc.Close()
	}()
}

// hijackWriter hands the websocket library the connection's socket and
// tells the relay about it, so that Close and bans can close it.
type hijackWriter struct {
	http.ResponseWriter
	conn  *conn
	track func(net.Conn, bool)
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	tc := &trackedConn{Conn: nc, track: w.track}
	w.track(tc, true)
	w.conn.setNetConn(tc)
	return tc, brw, nil
}

// trackedConn leaves the relay's socket list when closed.
type trackedConn struct {
	net.Conn
	track func(net.Conn, bool)
	once  sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.track(t, false) })
	return t.Conn.Close()
}
