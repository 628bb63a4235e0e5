package harness

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// TestBridgeDialsPerRequest: the harness publishes reactions ten at a time
// through the HTTP bridge. With net/http's two idle connections kept, most
// of every burst dialled a new connection, and the relay accepted one, for
// a single small POST — a round trip and a handshake on the way of every
// message. Bursts after the first must reuse the first's connections.
func TestBridgeDialsPerRequest(t *testing.T) {
	w := newWorld(t)
	ln := w.proxyLns[0]
	w.proxyLns = w.proxyLns[1:]
	up, err := url.Parse(w.relay.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(up), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	io := newRelayIO("ws://"+ln.Addr().String(), w.owner, "", w.pub)
	io.SetBridge(true)
	const rounds, burst = 8, maxReactionsInFly
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, burst)
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev := &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Content: "burst " + strconv.Itoa(r*burst+i), Tags: nostr.Tags{{"h", w.channel}}}
				if err := w.owner.SignEvent(ev); err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := io.Publish(ctx, ev)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("publish through the bridge: %v", err)
			}
		}
	}
	// One burst's worth of connections, and a few for a burst that starts
	// before the last one's connections are back in the pool.
	if n := accepted.Load(); n > 2*burst {
		t.Errorf("%d publishes in bursts of %d opened %d connections; want at most %d", rounds*burst, burst, n, 2*burst)
	}
}
