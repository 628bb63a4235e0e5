package relay

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkInstances runs buzz-relay processes on one PostgreSQL
// database, 25 publishers on each instance and a live subscriber on each,
// and reports cross-instance delivery latency (published on one instance,
// received by the other's subscriber: p50-ms, p99-ms; on the same
// instance: p50-local-ms, p99-local-ms), acknowledged events/s, and events
// lost or delivered twice; instances=1 is a single instance with all 50
// publishers, for comparison. rate=max publishes as fast as the relays
// acknowledge; rate=250 and rate=50 pace all publishers together to that
// many events/s for 20 seconds (1 under -short), for latency below
// saturation:
//
//	go test ./relay -run '^$' -bench Instances -benchtime 1x -count 3
func BenchmarkInstances(b *testing.B) {
	for _, rate := range []int{0, 250, 50} {
		for _, n := range []int{1, 2} {
			name := fmt.Sprintf("rate=%d/instances=%d", rate, n)
			if rate == 0 {
				name = fmt.Sprintf("rate=max/instances=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchInstances(b, n, rate) })
		}
	}
}

// pacedFor is how long a paced run publishes, and shortPacedFor the same
// under -short, which the test command uses to run every benchmark once
// (scripts/test.sh): long enough to check the benchmark works, not to
// measure. unpaced and shortUnpaced are the events per publisher at
// rate=max.
const (
	pacedFor, shortPacedFor = 20, 1 // seconds
	unpaced, shortUnpaced   = 100, 10
)

func benchInstances(b *testing.B, n, rate int) {
	const publishers = 50
	perPublisher, seconds := unpaced, pacedFor
	if testing.Short() {
		perPublisher, seconds = shortUnpaced, shortPacedFor
	}
	if rate > 0 {
		perPublisher = rate * seconds / publishers
	}
	c := newCluster(b)
	ins := c.start(n)
	k := c.owner
	type got struct {
		id string
		at time.Time
	}
	subs := make([]chan got, n)
	var subWG sync.WaitGroup
	stops := make([]nostr.Event, n)
	for i := range stops {
		stops[i] = signed(b, k, 1, fmt.Sprintf("sentinel %d", i))
	}
	for i, in := range ins {
		sub := live(b, benchLogin(b, in.url, k), nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
		subs[i] = make(chan got, publishers*perPublisher*2)
		subWG.Add(1)
		// Ends when the sentinel of instance i arrives.
		go func() {
			defer subWG.Done()
			defer close(subs[i])
			for ev := range sub.Events {
				subs[i] <- got{ev.ID, time.Now()}
				if ev.ID == stops[i].ID {
					return
				}
			}
		}()
	}
	for b.Loop() {
		var mu sync.Mutex
		sent := make(map[string]time.Time, publishers*perPublisher)
		from := make(map[string]int, publishers*perPublisher)
		conns := make([]*nostr.Relay, publishers)
		for p := range publishers {
			conns[p] = benchLogin(b, ins[p%n].url, k)
		}
		var wg sync.WaitGroup
		began := time.Now()
		for p := range publishers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var pace *time.Ticker
				if rate > 0 {
					// Staggered, so that the publishers together send evenly.
					every := time.Duration(publishers) * time.Second / time.Duration(rate)
					time.Sleep(every * time.Duration(p) / publishers)
					pace = time.NewTicker(every)
					defer pace.Stop()
				}
				for i := range perPublisher {
					if pace != nil {
						<-pace.C
					}
					ev := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{}, Content: fmt.Sprintf("p%d e%d %d", p, i, began.UnixNano())}
					ev.Sign(k.sk)
					mu.Lock()
					sent[ev.ID], from[ev.ID] = time.Now(), p%n
					mu.Unlock()
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					err := conns[p].Publish(ctx, ev)
					cancel()
					if err != nil {
						b.Errorf("publish: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(began)
		b.StopTimer()
		// A sentinel per instance, published on the other, ends each subscriber.
		for i := range n {
			mustPublish(b, benchLogin(b, ins[(i+1)%n].url, k), stops[i])
		}
		subWG.Wait()
		var lat, local []time.Duration
		lost, twice := 0, 0
		for i := range n {
			seen := make(map[string]int)
			for g := range subs[i] {
				seen[g.id]++
				if t0, ok := sent[g.id]; ok && seen[g.id] == 1 {
					if from[g.id] != i {
						lat = append(lat, g.at.Sub(t0))
					} else {
						local = append(local, g.at.Sub(t0))
					}
				}
			}
			for id := range sent {
				switch seen[id] {
				case 0:
					lost++
				case 1:
				default:
					twice++
				}
			}
		}
		b.ReportMetric(float64(len(sent))/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(twice), "duplicated")
		report := func(ds []time.Duration, unit string) {
			if len(ds) == 0 {
				return
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-"+unit)
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-"+unit)
		}
		report(lat, "ms")         // published on one instance, received on the other
		report(local, "local-ms") // published and received on one instance
		b.StartTimer()
	}
}

// benchLogin is login on a connection that lives as long as the
// benchmark, not testCtx's 30 seconds.
func benchLogin(b *testing.B, url string, k testKey) *nostr.Relay {
	b.Helper()
	c, err := nostr.RelayConnect(b.Context(), url)
	if err != nil {
		b.Fatalf("connect %s: %v", url, err)
	}
	b.Cleanup(func() { c.Close() })
	awaitChallenge(b, c)
	if err := c.Auth(testCtx(b), func(ev *nostr.Event) error { return ev.Sign(k.sk) }); err != nil {
		b.Fatalf("auth: %v", err)
	}
	return c
}
