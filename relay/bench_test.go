package relay

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/leakcheck"
)

// Benchmarks compare buzz-relay (badger store, AUTH, access rules) with a
// plain khatru relay on eventstore's in-memory slicestore, same run, same
// workload, over loopback:
//
//	go test ./relay -run '^$' -bench Publish -benchtime 4000x -count 3
//	go test ./relay -run '^$' -bench Fanout -benchtime 1000x -count 3
//
// BenchmarkPublish reports acknowledged events/s with 16 publishers on 4
// connections per relay, and the ratio buzz/khatru. BenchmarkFanout publishes at 500 events/s to 100
// subscribers and reports delivery latency percentiles.

// lockedSlices is slicestore with its mutex used: SliceStore embeds a
// sync.Mutex but never locks it, and concurrent publishers corrupt its
// slice (a nil event, then a panic in its comparator). Queries run to the
// end under the lock, then hand on what they found; ctx is not used.
type lockedSlices struct {
	mu sync.Mutex
	slicestore.SliceStore
}

func (s *lockedSlices) SaveEvent(ctx context.Context, ev *nostr.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.SliceStore.SaveEvent(ctx, ev)
}

func (s *lockedSlices) DeleteEvent(ctx context.Context, ev *nostr.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.SliceStore.DeleteEvent(ctx, ev)
}

func (s *lockedSlices) ReplaceEvent(ctx context.Context, ev *nostr.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.SliceStore.ReplaceEvent(ctx, ev)
}

func (s *lockedSlices) QueryEvents(_ context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	s.mu.Lock()
	// Not ctx: slicestore leaves its channel open when ctx ends.
	ch, err := s.SliceStore.QueryEvents(context.Background(), f)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	var found []*nostr.Event
	for ev := range ch {
		found = append(found, ev)
	}
	s.mu.Unlock()
	out := make(chan *nostr.Event, len(found))
	for _, ev := range found {
		out <- ev
	}
	close(out)
	return out, nil
}

// startPlain serves a khatru relay with no policies on slicestore.
func startPlain(b *testing.B) string {
	b.Helper()
	// NewRelay starts its NIP-40 expiration ticker on context.Background,
	// and khatru v0.19.0 has no way to stop it (Shutdown does not).
	var kr *khatru.Relay
	leakcheck.Unstoppable(b, "github.com/fiatjaf/khatru.NewRelay",
		"khatru's NewRelay starts it on context.Background and nothing stops it",
		func() { kr = khatru.NewRelay() })
	kr.Log = log.New(io.Discard, "", 0)
	st := &lockedSlices{}
	st.Init()
	kr.StoreEvent = append(kr.StoreEvent, st.SaveEvent)
	kr.QueryEvents = append(kr.QueryEvents, st.QueryEvents)
	kr.DeleteEvent = append(kr.DeleteEvent, st.DeleteEvent)
	kr.ReplaceEvent = append(kr.ReplaceEvent, st.ReplaceEvent)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: kr}
	// Stops when Close runs at cleanup.
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "ws://" + ln.Addr().String()
}

// benchTargets returns, per relay under test, its URL and how to open an
// authorised client connection as k.
func benchTargets(b *testing.B, k testKey) map[string]func() *nostr.Relay {
	buzz := startRelay(b, Config{Owner: k.pk, EventsPerSecond: 1e9, EventBurst: 1e9, Logger: testLoggerAt(b, 8)})
	plain := startPlain(b)
	return map[string]func() *nostr.Relay{
		"relay=buzz-badger":   func() *nostr.Relay { return login(b, buzz.URL(), k) },
		"relay=khatru-memory": func() *nostr.Relay { return connect(b, plain) },
	}
}

// publishAll publishes evs with 16 publishers over cs and returns the
// time taken; any refusal fails the benchmark.
func publishAll(b *testing.B, cs []*nostr.Relay, evs []nostr.Event) time.Duration {
	const perConn = 4
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range cs {
		for range perConn {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(len(evs)) {
						return
					}
					if c.Publish(context.Background(), evs[i]) != nil {
						failed.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d publishes failed", failed.Load())
	}
	return time.Since(start)
}

// BenchmarkPublish publishes b.N events to each relay, alternating rounds
// of 250 between them so that a change in machine load hits both alike,
// and reports each relay's acknowledged events/s and their ratio.
func BenchmarkPublish(b *testing.B) {
	const conns, round = 4, 250
	k := newKey(b)
	targets := benchTargets(b, k)
	names := []string{"relay=khatru-memory", "relay=buzz-badger"}
	cs := make(map[string][]*nostr.Relay)
	for _, name := range names {
		for range conns {
			c := targets[name]()
			c.AssumeValid = true
			cs[name] = append(cs[name], c)
		}
	}
	evs := make(map[string][]nostr.Event)
	for _, name := range names {
		for i := range b.N {
			evs[name] = append(evs[name], signed(b, k, 1, name+strconv.Itoa(i)))
		}
	}
	spent := make(map[string]time.Duration)
	b.ResetTimer()
	for start := 0; start < b.N; start += round {
		end := min(start+round, b.N)
		for _, name := range names {
			spent[name] += publishAll(b, cs[name], evs[name][start:end])
		}
	}
	b.StopTimer()
	base := float64(b.N) / spent[names[0]].Seconds()
	buzz := float64(b.N) / spent[names[1]].Seconds()
	b.ReportMetric(base, "khatru-memory-ev/s")
	b.ReportMetric(buzz, "buzz-badger-ev/s")
	b.ReportMetric(buzz/base, "ratio")
}

func BenchmarkFanout(b *testing.B) {
	k := newKey(b)
	for _, name := range []string{"relay=khatru-memory", "relay=buzz-badger"} {
		b.Run(name, func(b *testing.B) {
			const subscribers, rate = 100, 500
			open := benchTargets(b, k)[name]
			var (
				mu   sync.Mutex
				lats []time.Duration
				// sentAt is written before each publish, under mu.
				sentAt = make(map[string]time.Time, b.N)
				got    atomic.Int64
				done   = make(chan struct{})
			)
			want := int64(b.N * subscribers)
			for range subscribers {
				c := open()
				c.AssumeValid = true
				sub, err := c.Subscribe(context.Background(), nostr.Filters{{Kinds: []int{1}, LimitZero: true}})
				if err != nil {
					b.Fatal(err)
				}
				// Ends when the connection closes at cleanup.
				go func() {
					for ev := range sub.Events {
						now := time.Now()
						mu.Lock()
						d := now.Sub(sentAt[ev.ID])
						lats = append(lats, d)
						mu.Unlock()
						if got.Add(1) == want {
							close(done)
						}
					}
				}()
			}
			pub := open()
			evs := make([]nostr.Event, b.N)
			for i := range evs {
				evs[i] = signed(b, k, 1, "fan "+strconv.Itoa(i))
			}
			b.ResetTimer()
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			start := time.Now()
			for i := range evs {
				<-tick.C
				mu.Lock()
				sentAt[evs[i].ID] = time.Now()
				mu.Unlock()
				// Fire and forget: waiting for each OK would slow the pace.
				go pub.Publish(context.Background(), evs[i])
			}
			sendRate := float64(b.N) / time.Since(start).Seconds()
			// A loaded machine may lag far behind; give it ample time.
			select {
			case <-done:
			case <-time.After(60*time.Second + 4*time.Duration(b.N)*time.Second/rate):
				b.Fatalf("only %d of %d deliveries", got.Load(), want)
			}
			b.StopTimer()
			mu.Lock()
			sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
			pct := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(pct(1), "max-ms")
			b.ReportMetric(sendRate, "sent-ev/s")
			mu.Unlock()
		})
	}
}
