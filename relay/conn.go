package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"buzzbox/internal/workspace/nipoa"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
)

// conn is what the relay knows about one websocket connection beyond what
// khatru keeps: who it authenticated as under our stricter NIP-42 rules and
// how many subscriptions it holds. khatru's WebSocket carries the upgrade
// request, whose context holds the *conn.
type conn struct {
	scheme string           // "ws" or "wss": what the AUTH relay tag must say
	now    func() time.Time // the relay's clock, for the grant's time clauses
	// req is the upgrade request khatru keeps. Its Host is rewritten only
	// by the connection's reader goroutine, before khatru handles the AUTH.
	req *http.Request

	mu        sync.Mutex
	challenge string
	pubkey    string     // authenticated pubkey; empty until AUTH passes
	grant     *nipoa.Tag // NIP-OA attestation of pubkey presented at AUTH; nil when none
	reqs      map[context.Context]*reqState
	ws        *khatru.WebSocket // set on connect
	nc        net.Conn          // the hijacked socket, for cutting a banned key off
}

// setNetConn records the connection's socket once hijacked.
func (c *conn) setNetConn(nc net.Conn, open bool) {
	if open {
		c.mu.Lock()
		c.nc = nc
		c.mu.Unlock()
	}
}

type connKey struct{}

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

// reqState is what the relay counts for one REQ.
type reqState struct {
	filters  int
	verdict  string   // non-empty: the CLOSED reason for this REQ
	subID    string   // the client's subscription id
	channels []string // channels its filters name with #h
}

// noteFilter records one more filter for the REQ whose context is reqCtx
// and sets its verdict when the REQ has more than maxFilters filters or the
// connection more than maxSubs live REQs. A REQ stops counting when khatru
// cancels its context (CLOSE, a rejected filter, or the connection ending).
func (c *conn) noteFilter(reqCtx context.Context, f *nostr.Filter, maxFilters, maxSubs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reqs == nil {
		c.reqs = make(map[context.Context]*reqState)
	}
	st := c.reqs[reqCtx]
	if st == nil {
		st = &reqState{subID: subscriptionID(reqCtx)}
		c.reqs[reqCtx] = st
		context.AfterFunc(reqCtx, func() {
			c.mu.Lock()
			delete(c.reqs, reqCtx)
			c.mu.Unlock()
		})
		if len(c.reqs) > maxSubs {
			st.verdict = fmt.Sprintf("error: more than %d subscriptions on one connection; CLOSE some first", maxSubs)
		}
	}
	st.filters++
	st.channels = append(st.channels, f.Tags["h"]...)
	if st.filters > maxFilters && st.verdict == "" {
		st.verdict = fmt.Sprintf("invalid: more than %d filters in one REQ", maxFilters)
	}
}

// subscriptionID returns the REQ's id. khatru v0.19.0 runs OverwriteFilter,
// whence this is called, from two places: handleRequest, for a REQ, whose
// context carries the id; and startNegentropySession, for NIP-77, whose
// context is marked by eventstore.SetNegentropy and carries none (and which
// this relay does not enable: khatru.Relay.Negentropy stays false). Its
// accessor asserts the id's type unchecked, so it is asked only for a REQ.
func subscriptionID(reqCtx context.Context) string {
	if eventstore.IsNegentropySession(reqCtx) {
		return ""
	}
	return khatru.GetSubscriptionID(reqCtx)
}

// revoked returns the ids of the live subscriptions that name channel id.
func (c *conn) revoked(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var subs []string
	for _, st := range c.reqs {
		for _, ch := range st.channels {
			if ch == id && st.subID != "" {
				subs = append(subs, st.subID)
				break
			}
		}
	}
	return subs
}

// setVerdict refuses the REQ whose context is reqCtx, unless it already is.
func (c *conn) setVerdict(reqCtx context.Context, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.reqs[reqCtx]; st != nil && st.verdict == "" {
		st.verdict = msg
	}
}

// hijackWriter hands khatru's websocket upgrader a connection whose reads
// pass through a frame inspector, so that the relay sees each AUTH message
// before khatru does.
type hijackWriter struct {
	http.ResponseWriter
	inspect func(payload []byte) authVerdict
	track   func(net.Conn, bool)
}

// authVerdict is what the relay decided about one AUTH message.
type authVerdict struct {
	ok        bool
	challenge string // the connection's challenge, to spoil on refusal
	id        string // the AUTH event id
	reason    string // why it was refused, for the OK message
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	sc := &sniffConn{Conn: nc, src: brw.Reader, inspect: w.inspect, track: w.track}
	w.track(sc, true)
	return sc, bufio.NewReadWriter(bufio.NewReader(sc), brw.Writer), nil
}

// sniffConn releases client bytes to the websocket library one whole frame
// at a time. An unfragmented text frame holding an AUTH envelope is shown
// to inspect; when inspect refuses it, every copy of the challenge in the
// frame is spoiled (same length, re-masked) so khatru answers OK false too.
type sniffConn struct {
	net.Conn
	src     io.Reader
	inspect func(payload []byte) authVerdict
	track   func(net.Conn, bool)

	mu      sync.Mutex
	refused map[string]string // AUTH event id → reason, until its OK is written

	buf     []byte // read from src, not yet handed on
	ready   int    // buf[:ready] has been inspected
	through bool   // a frame too big to buffer: stop inspecting
	err     error
	once    sync.Once
}

const sniffChunk = 16 << 10 // read size from the client socket

func (s *sniffConn) Read(p []byte) (int, error) {
	for {
		if s.ready > 0 {
			n := copy(p, s.buf[:s.ready])
			s.buf = s.buf[n:]
			s.ready -= n
			return n, nil
		}
		if len(s.buf) > 0 && (s.through || s.err != nil) {
			s.ready = len(s.buf)
			continue
		}
		if len(s.buf) > 0 {
			size, complete := frameSize(s.buf)
			switch {
			case size > maxMessageBytes+16:
				s.through = true
				continue
			case complete:
				s.look(s.buf[:size])
				s.ready = size
				continue
			}
		}
		if s.err != nil {
			return 0, s.err
		}
		if cap(s.buf)-len(s.buf) < sniffChunk {
			grown := make([]byte, len(s.buf), 2*cap(s.buf)+sniffChunk)
			copy(grown, s.buf)
			s.buf = grown
		}
		n, err := s.src.Read(s.buf[len(s.buf) : len(s.buf)+sniffChunk])
		s.buf = s.buf[:len(s.buf)+n]
		s.err = err
	}
}

func (s *sniffConn) Close() error {
	s.once.Do(func() { s.track(s, false) })
	return s.Conn.Close()
}

// frameSize returns the length of the websocket frame at the start of b
// and whether b holds all of it (RFC 6455 §5.2).
func frameSize(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	hdr, n := 2, uint64(b[1]&0x7f)
	switch n {
	case 126:
		if len(b) < 4 {
			return 0, false
		}
		hdr, n = 4, uint64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		if len(b) < 10 {
			return 0, false
		}
		hdr, n = 10, binary.BigEndian.Uint64(b[2:10])
	}
	if b[1]&0x80 != 0 {
		hdr += 4
	}
	if n > 1<<40 {
		return 1 << 40, false
	}
	total := hdr + int(n)
	return total, len(b) >= total
}

const authLabel = `"AUTH"`

// maxPendingAuth bounds the refused AUTH ids a connection remembers while
// their OK is on its way.
const maxPendingAuth = 16

// Write passes server frames through, except the OK khatru writes for an
// AUTH we refused: its generic "error: failed to authenticate" becomes
// our reason, so a client can tell a refusal from a transient error.
func (s *sniffConn) Write(p []byte) (int, error) {
	s.mu.Lock()
	pending := len(s.refused) > 0
	s.mu.Unlock()
	if !pending {
		return s.Conn.Write(p)
	}
	size, complete := frameSize(p)
	if !complete || size != len(p) || p[0] != 0x81 || p[1]&0x80 != 0 {
		return s.Conn.Write(p)
	}
	payload := p[size-frameLen(p):]
	var msg []json.RawMessage
	var label, id string
	if !bytes.HasPrefix(payload, []byte(`["OK",`)) || json.Unmarshal(payload, &msg) != nil || len(msg) != 4 ||
		json.Unmarshal(msg[0], &label) != nil || json.Unmarshal(msg[1], &id) != nil {
		return s.Conn.Write(p)
	}
	s.mu.Lock()
	reason, ok := s.refused[id]
	delete(s.refused, id)
	s.mu.Unlock()
	if !ok {
		return s.Conn.Write(p)
	}
	out, _ := json.Marshal([]any{"OK", id, false, "invalid: AUTH refused: " + reason})
	if _, err := s.Conn.Write(textFrame(out)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// textFrame builds one unmasked, final text frame.
func textFrame(payload []byte) []byte {
	n := len(payload)
	var hdr []byte
	switch {
	case n < 126:
		hdr = []byte{0x81, byte(n)}
	case n <= 0xffff:
		hdr = []byte{0x81, 126, byte(n >> 8), byte(n)}
	default:
		hdr = make([]byte, 10)
		hdr[0], hdr[1] = 0x81, 127
		binary.BigEndian.PutUint64(hdr[2:], uint64(n))
	}
	return append(hdr, payload...)
}

// look inspects one whole client frame in place.
func (s *sniffConn) look(f []byte) {
	const finText = 0x81
	if f[0] != finText || f[1]&0x80 == 0 {
		return
	}
	size, _ := frameSize(f)
	hdr := size - frameLen(f)
	mask := f[hdr-4 : hdr]
	// Unmask a short head first: only AUTH messages are looked at whole.
	const headLen = 32
	head := make([]byte, min(headLen, size-hdr))
	for i := range head {
		head[i] = f[hdr+i] ^ mask[i%4]
	}
	rest := bytes.TrimLeft(head, " \t\r\n")
	if !bytes.HasPrefix(rest, []byte("[")) || !bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte(authLabel)) {
		return
	}
	payload := make([]byte, size-hdr)
	for i := range payload {
		payload[i] = f[hdr+i] ^ mask[i%4]
	}
	v := s.inspect(payload)
	if v.ok || v.challenge == "" {
		return
	}
	if v.id != "" {
		s.mu.Lock()
		if s.refused == nil {
			s.refused = make(map[string]string)
		}
		if len(s.refused) < maxPendingAuth {
			s.refused[v.id] = v.reason
		}
		s.mu.Unlock()
	}
	challenge := v.challenge
	for off := 0; ; {
		i := bytes.Index(payload[off:], []byte(challenge))
		if i < 0 {
			return
		}
		at := off + i
		f[hdr+at] = 'x' ^ mask[at%4]
		off = at + len(challenge)
	}
}

// frameLen returns the payload length of a complete frame.
func frameLen(f []byte) int {
	switch n := f[1] & 0x7f; n {
	case 126:
		return int(binary.BigEndian.Uint16(f[2:4]))
	case 127:
		return int(binary.BigEndian.Uint64(f[2:10]))
	default:
		return int(n)
	}
}
