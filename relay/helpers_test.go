package relay

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/leakcheck"
)

type testKey struct{ sk, pk string }

func newKey(t testing.TB) testKey {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{sk, pk}
}

func testLogger(t testing.TB) *slog.Logger { return testLoggerAt(t, slog.LevelInfo) }

func testLoggerAt(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// startRelay starts a relay on 127.0.0.1:0 with a fresh data dir unless
// cfg names one, and closes it when the test ends; goroutines it or the
// test started after it that are still running then fail the test.
func startRelay(t testing.TB, cfg Config) *Relay {
	t.Helper()
	leakcheck.Check(t)
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	r, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a go-nostr client connection.
func connect(t testing.TB, url string) *nostr.Relay {
	t.Helper()
	c, err := nostr.RelayConnect(testCtx(t), url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// awaitChallenge makes one round trip that the relay refuses for lack of
// AUTH; the challenge, sent on connect, has arrived by then.
func awaitChallenge(t testing.TB, c *nostr.Relay) {
	t.Helper()
	sub, err := c.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{1}, Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.ClosedReason:
	case <-sub.EndOfStoredEvents:
	case <-testCtx(t).Done():
		t.Fatal("no answer to the probe REQ")
	}
	sub.Unsub()
}

// login connects and authenticates as k.
func login(t testing.TB, url string, k testKey) *nostr.Relay {
	t.Helper()
	c := connect(t, url)
	awaitChallenge(t, c)
	if err := c.Auth(testCtx(t), func(ev *nostr.Event) error { return ev.Sign(k.sk) }); err != nil {
		t.Fatalf("auth as %s: %v", k.pk[:8], err)
	}
	return c
}

func signed(t testing.TB, k testKey, kind int, content string, tags ...nostr.Tag) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Now(), Tags: nostr.Tags(tags)}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(k.sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func mustPublish(t testing.TB, c *nostr.Relay, ev nostr.Event) {
	t.Helper()
	if err := c.Publish(testCtx(t), ev); err != nil {
		t.Fatalf("publish kind %d: %v", ev.Kind, err)
	}
}

// refused publishes ev and returns the relay's reason for refusing it.
func refused(t testing.TB, c *nostr.Relay, ev nostr.Event) string {
	t.Helper()
	err := c.Publish(testCtx(t), ev)
	if err == nil {
		t.Fatalf("publish kind %d = accepted; want refused", ev.Kind)
	}
	return err.Error()
}

// query runs one REQ to EOSE and returns the events, or the CLOSED reason.
func query(t testing.TB, c *nostr.Relay, f ...nostr.Filter) ([]*nostr.Event, string) {
	t.Helper()
	ctx := testCtx(t)
	sub, err := c.Subscribe(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsub()
	// go-nostr closes sub.Events when the relay sends CLOSED; a receive
	// from the closed channel is no event.
	var evs []*nostr.Event
	for {
		select {
		case ev, ok := <-sub.Events:
			if !ok {
				return evs, closedReason(sub)
			}
			evs = append(evs, ev)
		case <-sub.EndOfStoredEvents:
			// drain what was queued before EOSE
			for {
				select {
				case ev, ok := <-sub.Events:
					if !ok {
						return evs, closedReason(sub)
					}
					evs = append(evs, ev)
				default:
					return evs, ""
				}
			}
		case reason := <-sub.ClosedReason:
			return evs, reason
		case <-ctx.Done():
			t.Fatal("REQ got neither EOSE nor CLOSED")
		}
	}
}

// closedReason is the CLOSED reason of a subscription whose events
// channel has closed, or "" when it closed for another cause.
func closedReason(sub *nostr.Subscription) string {
	select {
	case reason := <-sub.ClosedReason:
		return reason
	case <-time.After(time.Second):
		return ""
	}
}

func ids(evs []*nostr.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.ID[:8])
	}
	return strings.Join(s, ",")
}
