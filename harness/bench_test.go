package harness

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

var benchStamp = regexp.MustCompile(`Content: bench (\d+)`)

// BenchmarkEventToPrompt measures relay publish → session/prompt read by
// the agent, at 200 events/s over 20 channels, with a fake agent that
// answers at once. Run with -benchtime=2000x.
func BenchmarkEventToPrompt(b *testing.B) {
	if b.N == 1 {
		return // the framework's probe run; the fixed-count run does the work
	}
	w := newWorld(b)
	const channels = 20
	ids := make([]string, channels)
	for i := range ids {
		ids[i] = fmt.Sprintf("6f1c2d4e-2222-4000-8000-%012d", i)
		w.addChannel(ids[i], "ch"+strconv.Itoa(i))
	}
	env := w.harnessEnv("echo")
	env.Stderr = nil
	cfg := []string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--agent-command", env.Exe,
		"--mcp-command", "", "--no-presence", "--no-typing", "--agents", "20", "--multiple-event-handling", "queue"}
	c, err := LoadConfig(cfg, env)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var mu sync.Mutex
	measuring := false
	hops := map[int64]*benchHops{} // by the stamp in the content: its send time
	hop := func(sent int64) *benchHops {
		h := hops[sent]
		if h == nil {
			h = &benchHops{}
			hops[sent] = h
		}
		return h
	}
	tm := timing{prompting: func(batch []*Event, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if measuring {
			for _, e := range batch {
				if m := benchStamp.FindStringSubmatch("Content: " + e.Content); m != nil {
					sent, _ := strconv.ParseInt(m[1], 10, 64)
					h := hop(sent)
					h.received, h.prompted = e.Received.UnixNano(), at.UnixNano()
				}
			}
		}
	}}
	go func() { run(ctx, c, env, slog.New(slog.DiscardHandler), tm); close(done) }()
	defer func() { cancel(); <-done }()
	// Warm every channel's session first.
	for _, ch := range ids {
		w.publish(&nostr.Event{Kind: 9, Content: "warm", Tags: nostr.Tags{{"h", ch}, {"p", w.agent.Public().Hex()}}})
	}
	waitFor(b, "warm-up prompts", 60*time.Second, func() bool { return len(w.prompts()) >= channels })
	base := len(w.agentLog())

	mu.Lock()
	measuring = true
	mu.Unlock()
	b.ResetTimer()
	tick := time.NewTicker(time.Second / 200)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < b.N; i++ {
		<-tick.C
		ch := ids[i%channels]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sent := time.Now().UnixNano()
			ev := &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Content: "bench " + strconv.FormatInt(sent, 10),
				Tags: nostr.Tags{{"h", ch}, {"p", w.agent.Public().Hex()}}}
			w.owner.SignEvent(ev)
			signed := time.Now().UnixNano()
			pctx, c := context.WithTimeout(context.Background(), 10*time.Second)
			defer c()
			w.io.Publish(pctx, ev)
			posted := time.Now().UnixNano()
			mu.Lock()
			h := hop(sent)
			h.signed, h.posted = signed, posted
			mu.Unlock()
		}()
	}
	tick.Stop()
	wg.Wait()
	var lat []time.Duration
	read := map[int64]int64{} // send stamp → the agent's read time
	waitFor(b, "every benchmark event prompted", 60*time.Second, func() bool {
		lat = lat[:0]
		for _, l := range w.agentLog()[base:] {
			if l.Method != "session/prompt" {
				continue
			}
			for _, m := range benchStamp.FindAllStringSubmatch(string(l.Params), -1) {
				sent, _ := strconv.ParseInt(m[1], 10, 64)
				lat = append(lat, time.Duration(l.T-sent))
				read[sent] = l.T
			}
		}
		return len(lat) >= b.N
	})
	b.StopTimer()
	report := func(unit string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, unit+"-p50")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, unit+"-p99")
	}
	report("ms", lat)
	mu.Lock()
	defer mu.Unlock()
	// Each hop: sign (the event, in the sender), post (NIP-98 header,
	// HTTP round trip, the relay's checks, store and fan-out), deliver
	// (publish start → the harness's read of the event off its websocket,
	// which the fan-out does before the HTTP answer), harness (read →
	// prompt written), pipe (prompt written → read by the agent).
	var sign, post, deliver, inner, pipe []time.Duration
	for sent, h := range hops {
		if h.signed != 0 {
			sign = append(sign, time.Duration(h.signed-sent))
			post = append(post, time.Duration(h.posted-h.signed))
		}
		if h.received != 0 {
			deliver = append(deliver, time.Duration(h.received-h.signed))
			inner = append(inner, time.Duration(h.prompted-h.received))
			if t, ok := read[sent]; ok {
				pipe = append(pipe, time.Duration(t-h.prompted))
			}
		}
	}
	report("sign-ms", sign)
	report("post-ms", post)
	report("deliver-ms", deliver)
	report("harness-ms", inner)
	report("pipe-ms", pipe)
}

// benchHops are one benchmark event's times at each hop, unix nanoseconds.
type benchHops struct {
	signed, posted, received, prompted int64
}

// BenchmarkBusyChannelBurst sends 10 000 mentions (1 000 under -short,
// as the test command runs it: still twice the cap) to one channel whose
// turn never ends, and reports the queue length and heap afterwards: the
// queue stays at its cap of 500.
func BenchmarkBusyChannelBurst(b *testing.B) {
	n := 10000
	if testing.Short() {
		n = 2 * maxQueuePerChannel
	}
	for i := 0; i < b.N; i++ {
		q, heap := busyBurst(b, n)
		b.ReportMetric(float64(q), "queued")
		b.ReportMetric(heap, "heap-MiB")
	}
}

// busyBurst returns the longest channel queue and the heap in MiB after n
// mentions to a channel whose turn never ends.
func busyBurst(tb testing.TB, n int) (int, float64) {
	w := newWorld(tb)
	var h *harness
	ready := make(chan struct{})
	env := w.harnessEnv("hang")
	env.Stderr = nil
	cfg := []string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--agent-command", env.Exe,
		"--mcp-command", "", "--no-presence", "--no-typing", "--multiple-event-handling", "queue"}
	c, err := LoadConfig(cfg, env)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		run(ctx, c, env, slog.New(slog.DiscardHandler), timing{started: func(x *harness) { h = x; close(ready) }})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	<-ready
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.mentionRetry(tb, "burst "+strconv.Itoa(i))
		}()
	}
	wg.Wait()
	queued := func() int {
		got := make(chan int, 1)
		h.do(func() {
			q := 0
			for _, cs := range h.queues {
				q = max(q, len(cs.queue))
			}
			got <- q
		})
		return <-got
	}
	waitFor(tb, "queue at its cap", 60*time.Second, func() bool { return queued() == min(maxQueuePerChannel, n-1) })
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return queued(), float64(ms.HeapInuse) / (1 << 20)
}

// TestBusyChannelQueueCap is the cap check at a size that suits a unit test.
func TestBusyChannelQueueCap(t *testing.T) {
	if testing.Short() {
		t.Skip("burst")
	}
	if q, _ := busyBurst(t, 700); q != maxQueuePerChannel {
		t.Errorf("queue after 700 events = %d; want the cap %d", q, maxQueuePerChannel)
	}
}
