package harness

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// relayProxy sits between the harness and buzz-relay, forwarding HTTP and
// websocket traffic both ways and recording what the harness sends, so a
// test can inject the frames buzz-relay never sends: it answers an
// over-rate EVENT with OK false, but sends no rate-limit NOTICE and closes
// no subscription for rate. Everything else is the real relay.
type relayProxy struct {
	t        testing.TB
	srv      *httptest.Server
	upstream *url.URL // the relay's ws:// URL
	ctx      context.Context
	wg       sync.WaitGroup // one per proxied websocket

	mu    sync.Mutex
	sent  []proxyFrame
	pairs []wsPair // live connections: harness side, relay side
}

type wsPair struct{ down, up *websocket.Conn }

// proxyFrame is one websocket frame the harness sent.
type proxyFrame struct {
	at   time.Time
	verb string // REQ, EVENT, CLOSE, AUTH
	sub  string // REQ and CLOSE
	kind int    // EVENT
}

// newRelayProxy starts a proxy for w's relay on one of the world's proxy
// listeners, whose URL the relay answers to. It stops after the harness
// when the harness is started after it.
func newRelayProxy(t testing.TB, w *world) *relayProxy {
	ln, up := w.takeProxyListener(t)
	httpUp := &url.URL{Scheme: "http", Host: up.Host}
	ctx, cancel := context.WithCancel(context.Background())
	p := &relayProxy{t: t, upstream: up, ctx: ctx}
	rp := httputil.NewSingleHostReverseProxy(httpUp) // tokens name the proxy's URL, one of the relay's names
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.websocket(rw, r)
			return
		}
		rp.ServeHTTP(rw, r)
	}))
	p.srv.Listener.Close()
	p.srv.Listener = ln
	p.srv.Start()
	t.Cleanup(func() {
		cancel()
		p.mu.Lock()
		for _, c := range p.pairs {
			c.down.CloseNow()
			c.up.CloseNow()
		}
		p.mu.Unlock()
		p.wg.Wait()
		p.srv.Close()
	})
	return p
}

// takeProxyListener takes one of the world's proxy listeners, whose URL
// the relay answers to, and returns it with the relay's own ws:// URL.
func (w *world) takeProxyListener(t testing.TB) (net.Listener, *url.URL) {
	t.Helper()
	if len(w.proxyLns) == 0 {
		t.Fatalf("world has no proxy listener left; raise worldProxies (%d)", worldProxies)
	}
	ln := w.proxyLns[0]
	w.proxyLns = w.proxyLns[1:]
	up, err := url.Parse(w.relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	return ln, up
}

func (p *relayProxy) URL() string { return "ws" + strings.TrimPrefix(p.srv.URL, "http") }

// websocket pairs the harness's connection with one to the relay. NIP-42's
// relay tag names the proxy, one of the relay's names.
func (p *relayProxy) websocket(rw http.ResponseWriter, r *http.Request) {
	up, _, err := websocket.Dial(p.ctx, p.upstream.String(), &websocket.DialOptions{Host: r.Host})
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	down, err := websocket.Accept(rw, r, nil)
	if err != nil {
		up.CloseNow()
		return
	}
	up.SetReadLimit(relayclient.MaxFrameBytes)
	down.SetReadLimit(relayclient.MaxFrameBytes)
	p.mu.Lock()
	p.pairs = append(p.pairs, wsPair{down, up})
	p.mu.Unlock()
	p.wg.Add(1)
	defer p.wg.Done()
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	done := make(chan struct{})
	// Relay → harness; ends when either side fails (cancel closes both).
	go func() {
		defer close(done)
		defer cancel()
		for {
			typ, b, err := up.Read(ctx)
			if err != nil || p.write(ctx, down, typ, b) != nil {
				return
			}
		}
	}()
	for {
		typ, b, err := down.Read(ctx)
		if err != nil {
			break
		}
		p.record(b)
		if err := p.write(ctx, up, typ, b); err != nil {
			break
		}
	}
	cancel()
	up.CloseNow()
	down.CloseNow()
	<-done
}

// write sends one frame; the lock keeps injected frames whole.
func (p *relayProxy) write(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.Write(ctx, typ, b)
}

func (p *relayProxy) record(b []byte) {
	var msg []json.RawMessage
	if json.Unmarshal(b, &msg) != nil || len(msg) < 2 {
		return
	}
	f := proxyFrame{at: time.Now()}
	json.Unmarshal(msg[0], &f.verb)
	switch f.verb {
	case "REQ", "CLOSE":
		json.Unmarshal(msg[1], &f.sub)
	case "EVENT":
		var ev nostr.Event
		json.Unmarshal(msg[1], &ev)
		f.kind = ev.Kind
	}
	p.mu.Lock()
	p.sent = append(p.sent, f)
	p.mu.Unlock()
}

// frames returns what the harness has sent so far.
func (p *relayProxy) frames() []proxyFrame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxyFrame(nil), p.sent...)
}

// toHarness sends msg to the harness on every live connection and returns
// the time it was sent.
func (p *relayProxy) toHarness(msg ...any) time.Time {
	p.t.Helper()
	b, _ := json.Marshal(msg)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.pairs {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		err := c.down.Write(ctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			p.t.Logf("proxy: inject %s: %v", b, err)
		}
	}
	return time.Now()
}

// closeSub makes the relay end sub and tells the harness so, with reason:
// what a relay that rate-limits subscriptions does.
func (p *relayProxy) closeSub(sub, reason string) time.Time {
	b, _ := json.Marshal([]any{"CLOSE", sub})
	p.mu.Lock()
	for _, c := range p.pairs {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		c.up.Write(ctx, websocket.MessageText, b)
		cancel()
	}
	p.mu.Unlock()
	return p.toHarness("CLOSED", sub, reason)
}

// reqs returns the times the harness sent a REQ for sub.
func (p *relayProxy) reqs(sub string) []time.Time {
	var out []time.Time
	for _, f := range p.frames() {
		if f.verb == "REQ" && f.sub == sub {
			out = append(out, f.at)
		}
	}
	return out
}

// typing returns the times the harness sent a typing event.
func (p *relayProxy) typing() []time.Time {
	var out []time.Time
	for _, f := range p.frames() {
		if f.verb == "EVENT" && f.kind == workspace.KindTyping {
			out = append(out, f.at)
		}
	}
	return out
}

// TestRateLimitNotice: a NOTICE "rate-limited: …" closes the gate for its
// hint (5 s ±20 %): the REQ for a channel joined meanwhile waits for it,
// and the typing events of the running turn are dropped, then resume.
func TestRateLimitNotice(t *testing.T) {
	w := newWorld(t)
	p := newRelayProxy(t, w)
	gate := filepath.Join(t.TempDir(), "gate")
	w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--relay-url", p.URL(), "--multiple-event-handling", "queue")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) }) // before the harness stops
	w.mention("work")
	waitFor(t, "typing from the running turn", 15*time.Second, func() bool { return len(p.typing()) >= 1 })

	const hint = 5 * time.Second
	armed := p.toHarness("NOTICE", "rate-limited: too many requests; retry in 5 s")
	const ch2 = "6f1c2d4e-4444-4000-8000-0000000000ef"
	w.addChannel(ch2, "joined while gated")
	waitFor(t, "the REQ for the joined channel", 20*time.Second, func() bool { return len(p.reqs("ch-"+ch2)) >= 1 })
	if at := p.reqs("ch-" + ch2)[0]; at.Sub(armed) < hint*8/10 {
		t.Errorf("REQ for the joined channel sent %v after the NOTICE; want it held for the gate (≥ %v)", at.Sub(armed), hint*8/10)
	}
	waitFor(t, "typing after the gate opened", 15*time.Second, func() bool {
		ts := p.typing()
		return ts[len(ts)-1].Sub(armed) >= hint*8/10
	})
	// The turn types every 3 s; the gate covers more than one period.
	for _, at := range p.typing() {
		if d := at.Sub(armed); d > 300*time.Millisecond && d < hint*8/10 {
			t.Errorf("typing sent %v after the NOTICE, while the gate was closed", d)
		}
	}
}

// TestRateLimitClosed: a CLOSED "rate-limited: …" closes the gate for its
// hint (6 s ±20 %) and parks the subscription; a later, shorter NOTICE
// does not shorten the gate. When it opens the subscription is requested
// again, and the event published meanwhile is replayed; the REQ of a
// channel joined meanwhile waited for the gate too.
func TestRateLimitClosed(t *testing.T) {
	w := newWorld(t)
	p := newRelayProxy(t, w)
	w.startHarness(w.harnessEnv("echo"), "--relay-url", p.URL())
	sub := "ch-" + w.channel
	waitFor(t, "the channel REQ", 15*time.Second, func() bool { return len(p.reqs(sub)) >= 1 })

	const hint = 6 * time.Second
	armed := p.closeSub(sub, "rate-limited: slow down; retry in 6 s")
	p.toHarness("NOTICE", "rate-limited: easy; retry in 2 s")
	ev := w.mention("sent while parked")
	const ch2 = "6f1c2d4e-5555-4000-8000-0000000000ef"
	w.addChannel(ch2, "joined while gated")
	waitFor(t, "the channel re-requested", 20*time.Second, func() bool { return len(p.reqs(sub)) >= 2 })
	if at := p.reqs(sub)[1]; at.Sub(armed) < hint*8/10 {
		t.Errorf("channel re-requested %v after CLOSED; want it parked for the gate (≥ %v)", at.Sub(armed), hint*8/10)
	}
	waitFor(t, "the REQ for the joined channel", 20*time.Second, func() bool { return len(p.reqs("ch-"+ch2)) >= 1 })
	if at := p.reqs("ch-" + ch2)[0]; at.Sub(armed) < hint*8/10 {
		t.Errorf("REQ for the joined channel sent %v after CLOSED; want it held for the gate (≥ %v)", at.Sub(armed), hint*8/10)
	}
	waitFor(t, "the event replayed through the new REQ", 20*time.Second, func() bool { return promptHas(w.prompts(), ev.ID) == 1 })
}
