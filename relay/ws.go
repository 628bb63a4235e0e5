package relay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"buzzbox/internal/workspace/nipoa"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"
)

// The websocket side of NIP-01, NIP-42 and NIP-45. One goroutine per
// connection reads messages and handles them in order: AUTH, EVENT, REQ
// and CLOSE at once, COUNT and a REQ's stored events on goroutines of
// their own (at most maxQueriesInFlight at a time; the next message
// waits for one to end). Another writes what the connection is
// sent, in order, each message within writeWait: a client that does not
// read loses its connection, and a publisher whose event it subscribed
// to waits for it at most that long. The relay checks AUTH itself and
// answers it directly; every write and read rule is a plain call
// (hooks.go).

func (r *Relay) serveWebsocket(w http.ResponseWriter, req *http.Request) {
	c := &conn{scheme: r.scheme(req), now: r.cfg.Now, challenge: newChallenge()}
	hw := &hijackWriter{ResponseWriter: w, conn: c, track: r.track}
	// Any origin may connect, as to any Nostr relay: reads and writes
	// need NIP-42, which a page cannot borrow from another site.
	ws, err := websocket.Accept(hw, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		r.log.Debug("websocket upgrade", "remote", req.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(maxMessageBytes)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), connKey{}, c))
	c.ws, c.ctx = ws, ctx
	c.out = make(chan []byte, maxQueuedMessages)
	c.slots = make(chan struct{}, maxQueriesInFlight)
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.live[c] = true
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.live, c)
		r.mu.Unlock()
		cancel()
		c.unsubscribeAll()
		ws.CloseNow()
	}()
	if closed {
		return
	}
	// Both end with ctx, when the read loop returns or a write fails.
	go c.writeLoop(ctx, cancel)
	go c.keepAlive(ctx, r)
	c.requestAuth()
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			if s := websocket.CloseStatus(err); s == -1 && !errors.Is(err, context.Canceled) {
				r.log.Debug("websocket read", "remote", req.RemoteAddr, "err", err)
			}
			return
		}
		r.handleMessage(ctx, c, msg)
	}
}

// writeLoop writes queued messages until ctx ends; a failed write ends
// the connection.
func (c *conn) writeLoop(ctx context.Context, stop context.CancelFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-c.out:
			wctx, cancel := context.WithTimeout(ctx, writeWait)
			err := c.ws.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				stop()
				c.ws.CloseNow()
				return
			}
		}
	}
}

// keepAlive pings the client every pingPeriod and closes the connection
// when a pong does not come back within pongWait.
func (c *conn) keepAlive(ctx context.Context, r *Relay) {
	t := time.NewTicker(pingPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, pongWait)
		err := c.ws.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.log.Debug("websocket ping", "err", err)
			}
			c.ws.CloseNow()
			return
		}
	}
}

// parseClientMessage reads one client message: an envelope, or the
// error a NOTICE reports.
func parseClientMessage(msg []byte) (nostr.Envelope, error) {
	return nostr.NewMessageParser().ParseMessage(string(msg))
}

// handleMessage answers one client message.
func (r *Relay) handleMessage(ctx context.Context, c *conn, msg []byte) {
	env, err := parseClientMessage(msg)
	if err != nil {
		c.send(noticeMsg("failed to parse envelope: " + err.Error()))
		return
	}
	switch env := env.(type) {
	case *nostr.EventEnvelope:
		ok, reason := r.receive(ctx, c, &env.Event)
		if strings.HasPrefix(reason, "auth-required:") {
			c.requestAuth()
		}
		c.send(okMsg(env.Event.ID, ok, reason))
	case *nostr.ReqEnvelope:
		r.handleReq(ctx, c, env.SubscriptionID, env.Filters)
	case *nostr.CountEnvelope:
		ext, err := parseCountExt(msg)
		if err != nil {
			c.send(closedMsg(env.SubscriptionID, err.Error()))
			return
		}
		if !c.acquire() {
			return
		}
		// Ends when the count is written (or the connection is gone).
		go func() {
			defer c.release()
			r.handleCount(ctx, c, env.SubscriptionID, env.Filter, ext)
		}()
	case *nostr.CloseEnvelope:
		c.unsubscribe(string(*env))
	case *nostr.AuthEnvelope:
		r.handleAuth(c, &env.Event)
	}
}

// receive runs a client's EVENT through the checks and the write
// pipeline and returns the OK flag and reason.
func (r *Relay) receive(ctx context.Context, c *conn, ev *nostr.Event) (bool, string) {
	idOK, sigOK, err := r.verifyEvent(ev)
	switch {
	case !idOK:
		return false, "invalid: id is computed incorrectly"
	case err != nil:
		return false, "error: failed to verify signature"
	case !sigOK:
		return false, "invalid: signature is invalid"
	}
	// NIP-70: a protected event only from its authenticated author.
	if nip70.IsProtected(*ev) {
		pk, _ := c.identity()
		switch {
		case pk == "":
			return false, "auth-required: must be published by authenticated event author"
		case pk != ev.PubKey:
			return false, "blocked: must be published by event author"
		}
	} else if nip70.HasEmbeddedProtected(*ev) {
		return false, "blocked: can't repost nip70 protected"
	}
	skip, err := r.addEvent(ctx, ev)
	if err != nil {
		return false, err.Error()
	}
	if skip {
		return true, ""
	}
	n := r.broadcast(ev)
	if nostr.IsEphemeralKind(ev.Kind) {
		return true, "broadcasted to " + strconv.Itoa(n) + " listeners"
	}
	return true, ""
}

// handleAuth checks a NIP-42 AUTH event under the relay's rules and
// answers OK true or false with the reason.
func (r *Relay) handleAuth(c *conn, ev *nostr.Event) {
	if err := checkAuthEvent(ev, c.challenge, r.names().bases(c.scheme), r.cfg.Now()); err != nil {
		r.log.Debug("auth refused", "pubkey", ev.PubKey, "err", err)
		reason := "invalid: AUTH refused: " + err.Error()
		if ev.ID == "" {
			reason = "error: failed to authenticate"
		}
		c.send(okMsg(ev.ID, false, reason))
		return
	}
	var grant *nipoa.Tag
	if t := ev.Tags.Find(nipoa.TagName); t != nil {
		grant, _ = attestedGrant(t, ev.PubKey)
	}
	c.mu.Lock()
	c.pubkey, c.grant = ev.PubKey, grant
	c.mu.Unlock()
	_, owner := c.identity()
	r.log.Debug("authenticated", "pubkey", ev.PubKey, "owner", owner)
	c.send(okMsg(ev.ID, true, ""))
}

// handleReq opens subscription id: the verdict first, then the stored
// events, EOSE and live events until CLOSE. A REQ reusing a live id
// replaces that subscription.
func (r *Relay) handleReq(ctx context.Context, c *conn, id string, filters nostr.Filters) {
	c.unsubscribe(id)
	if msg := r.reqVerdict(ctx, c, filters); msg != "" {
		if strings.HasPrefix(msg, "auth-required:") {
			c.requestAuth()
		}
		c.send(closedMsg(id, msg))
		return
	}
	sctx := c.subscribe(id, filters)
	if !c.acquire() {
		return
	}
	// Ends when the stored events are sent or the subscription ends.
	go func() {
		defer c.release()
		r.sendStored(sctx, c, id, filters)
	}()
}

// sendStored sends what the store holds for a subscription's filters,
// each filter's newest first with one second's events in the order they
// were stored (orderTies), then EOSE, then the events broadcast to it meanwhile that the store
// did not already yield; the subscription is live once the store is read.
func (r *Relay) sendStored(ctx context.Context, c *conn, id string, filters nostr.Filters) {
	sent := make(map[string]bool)
	for _, f := range filters {
		if f.LimitZero {
			continue
		}
		var evs []*nostr.Event
		var err error
		if r.indexed(f) {
			evs, err = r.searchEvents(ctx, f)
		} else {
			evs, err = r.storedInOrder(ctx, f)
		}
		if err != nil {
			c.send(noticeMsg(err.Error()))
			continue
		}
		for _, ev := range evs {
			if ctx.Err() == nil && !sent[ev.ID] {
				sent[ev.ID] = true
				c.sendEvent(id, ev)
			}
		}
		cl := callerOf(ctx)
		for _, ev := range r.present.matching(f) {
			if ctx.Err() == nil && !sent[ev.ID] && r.canRead(cl, ev) {
				sent[ev.ID] = true
				c.sendEvent(id, ev)
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	pending, later := c.goLive(ctx, id, eoseMsg(id))
	if later {
		// Under backpressure a live event may overtake the EOSE; none
		// is sent twice (the store has been read).
		c.send(eoseMsg(id))
	}
	for _, ev := range pending {
		if !sent[ev.ID] {
			c.sendEvent(id, ev)
		}
	}
}

// reqVerdict returns the CLOSED reason for a REQ, or "": the caller must
// pass the gate, the connection stay within MaxSubscriptions and the REQ
// within MaxFilters, and no filter may name (#h) a private channel the
// caller is not in.
func (r *Relay) reqVerdict(ctx context.Context, c *conn, filters nostr.Filters) string {
	cl := callerOf(ctx)
	if msg := r.gate(cl); msg != "" {
		return r.explainGate(ctx, cl, msg)
	}
	if n := r.cfg.MaxSubscriptions; c.subCount()+1 > n {
		return "error: more than " + strconv.Itoa(n) + " subscriptions on one connection; CLOSE some first"
	}
	for i, f := range filters {
		if i+1 > r.cfg.MaxFilters {
			return "invalid: more than " + strconv.Itoa(r.cfg.MaxFilters) + " filters in one REQ"
		}
		if msg := r.channelFilterVerdict(cl, &f); msg != "" {
			return msg
		}
		if cl.pubkey == "" && namesOwnOnly(f) {
			return "auth-required: read markers are served only to their author; authenticate first"
		}
	}
	return ""
}

// handleCount answers a NIP-45 COUNT: a refusal comes as a NOTICE and a
// count of 0, as clients of this relay expect.
func (r *Relay) handleCount(ctx context.Context, c *conn, id string, f nostr.Filter, ext countExt) {
	var total int64
	cl := callerOf(ctx)
	if msg := r.gate(cl); msg != "" {
		c.send(noticeMsg(r.explainGate(ctx, cl, msg)))
	} else {
		n, err := r.countEventsExt(ctx, f, ext)
		if err != nil {
			c.send(noticeMsg(err.Error()))
		}
		total = n
	}
	c.send(countMsg(id, total))
}

// requestAuth sends the connection's NIP-42 challenge.
func (c *conn) requestAuth() {
	c.send(marshal([]any{"AUTH", c.challenge}))
}

// sendEvent writes ev for subscription id.
func (c *conn) sendEvent(id string, ev *nostr.Event) {
	b, err := ev.MarshalJSON()
	if err != nil {
		return
	}
	c.send(eventMsg(id, b))
}

// eventMsg builds ["EVENT", id, event] around an event's JSON.
func eventMsg(id string, event []byte) []byte {
	sid, _ := json.Marshal(id)
	out := make([]byte, 0, len(`["EVENT",,]`)+len(sid)+len(event))
	out = append(out, `["EVENT",`...)
	out = append(out, sid...)
	out = append(out, ',')
	out = append(out, event...)
	return append(out, ']')
}

func okMsg(id string, ok bool, reason string) []byte {
	return marshal([]any{"OK", id, ok, reason})
}

func closedMsg(id, reason string) []byte { return marshal([]any{"CLOSED", id, reason}) }

func noticeMsg(text string) []byte { return marshal([]any{"NOTICE", text}) }

func eoseMsg(id string) []byte { return marshal([]any{"EOSE", id}) }

func countMsg(id string, n int64) []byte {
	return marshal([]any{"COUNT", id, map[string]int64{"count": n}})
}

// marshal encodes a relay message; its parts are strings, booleans and
// numbers, which always encode.
func marshal(v []any) []byte {
	b, _ := json.Marshal(v)
	return b
}
