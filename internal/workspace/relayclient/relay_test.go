package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/relay"
)

// testRelay is buzz-relay on a loopback port with an owner and a member.
type testRelay struct {
	r             *relay.Relay
	addr, dataDir string
	owner, member *nostrkey.Secret
}

func newSecret(t testing.TB) *nostrkey.Secret {
	t.Helper()
	s, err := nostrkey.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startTestRelay(t testing.TB) *testRelay {
	t.Helper()
	leakcheck.Check(t)
	tr := &testRelay{dataDir: t.TempDir(), owner: newSecret(t), member: newSecret(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr.addr = ln.Addr().String()
	ln.Close()
	tr.start(t)
	return tr
}

// start starts (or restarts) the relay on its address and data.
func (tr *testRelay) start(t testing.TB) {
	t.Helper()
	r, err := relay.Start(relay.Config{DataDir: tr.dataDir, Owner: tr.owner.Public().Hex(),
		Allow: []string{tr.member.Public().Hex()}, Logger: slog.New(slog.DiscardHandler)}, tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	tr.r = r
	t.Cleanup(func() { r.Close() })
}

// subscriber runs a Subscriber logged in as key until the test ends.
func (tr *testRelay) subscriber(t testing.TB, key *nostrkey.Secret) *Subscriber {
	t.Helper()
	s := NewSubscriber(tr.r.URL(), SubscriberOptions{Key: key, Buffer: 64})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }() // ends with cancel
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.Connected():
	case <-time.After(10 * time.Second):
		t.Fatal("could not log in to the relay")
	}
	return s
}

func signed(t testing.TB, key *nostrkey.Secret, ev *nostr.Event) *nostr.Event {
	t.Helper()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = nostr.Now()
	}
	if err := key.SignEvent(ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// channel creates an open channel with the member in it and returns its id.
func (tr *testRelay) channel(t testing.TB, c *Client) string {
	t.Helper()
	const id = "6f1c2d4e-1111-4000-8000-0000000000ab"
	for _, ev := range []*nostr.Event{
		{Kind: workspace.KindCreateGroup, Tags: nostr.Tags{{"h", id}, {workspace.TagName, "general"}, {workspace.TagVisibility, workspace.VisibilityOpen}}},
		{Kind: workspace.KindAddUser, Tags: nostr.Tags{{"h", id}, {"p", tr.member.Public().Hex(), "", "member"}}},
	} {
		if _, err := c.Publish(t.Context(), signed(t, tr.owner, ev)); err != nil {
			t.Fatalf("publish kind %d: %v", ev.Kind, err)
		}
	}
	return id
}

// TestRelayWriteAbandoned: writes whose caller gives up before or while
// they wait for another writer (a turn's typing ending while the observer
// publisher writes) leave the socket and its subscriptions up.
func TestRelayWriteAbandoned(t *testing.T) {
	tr := startTestRelay(t)
	s := tr.subscriber(t, tr.member)
	ws := s.Conn()
	big, _ := json.Marshal([]any{"CLOSE", strings.Repeat("x", 256<<10)}) // holds the writer lock a while
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%2 == 0 {
				cancel()
			} else {
				time.AfterFunc(time.Duration(i)*time.Microsecond, cancel)
			}
			b := []byte(`["CLOSE","x"]`)
			if i%10 == 1 {
				b = big
			}
			ws.Write(ctx, b)
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.query(ctx, Plain([]nostr.Filter{{Kinds: []int{workspace.KindGroupMetadata}, Limit: 1}})); err != nil {
		t.Fatalf("query after abandoned writes: %v", err)
	}
	if s.Conn() != ws {
		t.Error("abandoned writes closed the socket; the connection was replaced")
	}
}

// TestClientBothTransports: the same publishes, queries and counts give
// the same answers through the HTTP bridge, the client's own websocket and
// a subscriber's socket (counts there are NIP-45 COUNTs).
func TestClientBothTransports(t *testing.T) {
	tr := startTestRelay(t)
	sub := tr.subscriber(t, tr.member)
	owner := New(tr.r.URL(), Options{Key: tr.owner, Timeout: 10 * time.Second})
	defer owner.Close()
	ch := tr.channel(t, owner)
	for _, tc := range []struct {
		name   string
		bridge bool
		opt    Options
	}{
		{"bridge", true, Options{Key: tr.member}},
		{"websocket", false, Options{Key: tr.member}},
		{"subscriber", false, Options{Key: tr.member, Subscriber: sub}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tr.r.URL(), tc.opt)
			defer c.Close()
			info, err := c.Probe(t.Context())
			if err != nil || !info.Bridge {
				t.Fatalf("probe = %+v, %v; want the relay's bridge named", info, err)
			}
			c.SetBridge(tc.bridge)
			var ids []string
			for i := range 3 {
				ev := signed(t, tr.member, &nostr.Event{Kind: workspace.KindStream, Content: tc.name + " " + string(rune('a'+i)), Tags: nostr.Tags{{"h", ch}}})
				res, err := c.Publish(t.Context(), ev)
				if err != nil || !res.Accepted || res.EventID != ev.ID {
					t.Fatalf("publish: %+v, %v", res, err)
				}
				ids = append(ids, ev.ID)
			}
			evs, err := c.Query(t.Context(), nostr.Filter{IDs: ids})
			if err != nil || len(evs) != len(ids) {
				t.Fatalf("query = %d events, %v; want %d", len(evs), err, len(ids))
			}
			if c.Bridge() != tc.bridge {
				t.Errorf("transport changed: bridge = %v", c.Bridge())
			}
			if n, err := c.Count(t.Context(), nostr.Filter{IDs: ids}); err != nil || n != int64(len(ids)) {
				t.Errorf("count = %d, %v; want %d", n, err, len(ids))
			}
		})
	}
}

// TestSubscriberResubscribes: after the relay restarts, the subscriber
// logs in again and asks for its subscription again, so an event
// published after the restart is delivered, once.
func TestSubscriberResubscribes(t *testing.T) {
	tr := startTestRelay(t)
	owner := New(tr.r.URL(), Options{Key: tr.owner, Timeout: 10 * time.Second})
	defer owner.Close()
	ch := tr.channel(t, owner)
	s := tr.subscriber(t, tr.member)
	s.Subscribe(t.Context(), "ch", nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": {ch}}}, SubOptions{Floor: time.Now().Unix() - 60, MarkEOSE: true})
	waitEOSE(t, s)
	first := s.Conn()
	tr.r.Close()
	tr.start(t)
	ev := signed(t, tr.owner, &nostr.Event{Kind: workspace.KindStream, Content: "after the restart", Tags: nostr.Tags{{"h", ch}}})
	after := New(tr.r.URL(), Options{Key: tr.owner, Timeout: 10 * time.Second})
	defer after.Close()
	if _, err := after.Publish(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-s.Events():
			if got.Ev != nil && got.Ev.ID == ev.ID {
				if s.Conn() == first {
					t.Error("delivered on the first connection, which the restart closed")
				}
				return
			}
		case <-timeout:
			t.Fatal("the event published after the relay restarted never came")
		}
	}
}

func waitEOSE(t *testing.T, s *Subscriber) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-s.Events():
			if got.EOSE {
				return
			}
		case <-timeout:
			t.Fatal("no end of stored events")
		}
	}
}

// TestSubscriberLeavesNoGoroutines: once Run has returned, nothing of the
// subscriber is left running (reader, pinger, resubscribe, gate loop).
func TestSubscriberLeavesNoGoroutines(t *testing.T) {
	tr := startTestRelay(t)
	before := leakcheck.Now()
	s := NewSubscriber(tr.r.URL(), SubscriberOptions{Key: tr.member, Buffer: 4})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Connected()
	s.Subscribe(ctx, "a", nostr.Filter{Kinds: []int{workspace.KindStream}, Limit: 1}, SubOptions{})
	if _, err := s.query(ctx, Plain([]nostr.Filter{{Kinds: []int{workspace.KindStream}, Limit: 1}})); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	var ours []leakcheck.Goroutine
	for _, g := range leakcheck.Leaked(before) {
		if strings.Contains(g.Stack, "relayclient.") {
			ours = append(ours, g)
		}
	}
	if len(ours) > 0 {
		t.Fatalf("goroutines left after Run returned: %s", leakcheck.Format(ours))
	}
}

// failInfo is a transport whose NIP-11 requests fail (a relay whose HTTP
// side is broken, or a proxy that drops them) and whose other requests,
// the websocket's among them, pass; it counts the NIP-11 attempts.
type failInfo struct {
	next  http.RoundTripper
	mu    sync.Mutex
	infos int
}

func (f *failInfo) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept") == "application/nostr+json" {
		f.mu.Lock()
		f.infos++
		f.mu.Unlock()
		return nil, errors.New("NIP-11 document unavailable")
	}
	return f.next.RoundTrip(req)
}

func (f *failInfo) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.infos
}

// TestProbeOrWebsocket: a relay whose NIP-11 document cannot be read is
// talked to over the websocket from then on. Before, a failed probe left
// the client unprobed: every later query and publish probed again, waited
// out the retry ladder and failed, so the caller's one probe (whose error
// was ignored) decided nothing.
func TestProbeOrWebsocket(t *testing.T) {
	tr := startTestRelay(t)
	owner := New(tr.r.URL(), Options{Key: tr.owner, Timeout: 10 * time.Second})
	defer owner.Close()
	ch := tr.channel(t, owner)

	ft := &failInfo{next: http.DefaultTransport}
	c := New(tr.r.URL(), Options{Key: tr.member, Timeout: 10 * time.Second, HTTPClient: &http.Client{Transport: ft}})
	defer c.Close()
	if _, err := c.ProbeOrWebsocket(t.Context()); err == nil {
		t.Fatal("the probe of a relay without a readable NIP-11 document succeeded")
	}
	if c.Bridge() {
		t.Error("the bridge stays chosen after a failed probe")
	}
	probes := ft.count()
	ev := signed(t, tr.member, &nostr.Event{Kind: workspace.KindStream, Content: "over the websocket", Tags: nostr.Tags{{"h", ch}}})
	if res, err := c.Publish(t.Context(), ev); err != nil || !res.Accepted {
		t.Fatalf("publish after a failed probe: %+v, %v; want it over the websocket", res, err)
	}
	evs, err := c.Query(t.Context(), nostr.Filter{IDs: []string{ev.ID}})
	if err != nil || len(evs) != 1 {
		t.Fatalf("query after a failed probe = %d events, %v; want the event over the websocket", len(evs), err)
	}
	if n := ft.count(); n != probes {
		t.Errorf("the NIP-11 document was asked for %d more times after the probe; want none", n-probes)
	}
}
