package harness

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/testexe"
)

// BenchmarkTurnStatusRelayLoad measures what the turn status events add
// to the relay's load: the built buzz-relay as a process of its own, the
// harness with 20 fake agents that answer at once over 20 channels, and
// mentions at 200/s for statusLoadSeconds, once with turn status and once
// without (timing.noStatus), each on a fresh relay, twice (under -short,
// as the test command runs every benchmark once, for shortLoadSeconds,
// once). It reports the
// relay's CPU time per mention in both runs and the difference in
// percent (goal ≤ 10). Run with -benchtime=1x.
func BenchmarkTurnStatusRelayLoad(b *testing.B) {
	rounds := 2 // alternating, to spread the machine's noise over both
	if testing.Short() {
		rounds = 1
	}
	var on, off []float64
	for range rounds {
		off = append(off, statusLoadRun(b, false))
		on = append(on, statusLoadRun(b, true))
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	b.ReportMetric(mean(off), "relay-cpu-µs/mention-without")
	b.ReportMetric(mean(on), "relay-cpu-µs/mention-with")
	b.ReportMetric(100*(mean(on)-mean(off))/mean(off), "added-%")
}

const (
	statusLoadRate    = 200 // mentions a second
	statusLoadSeconds = 10
	shortLoadSeconds  = 1
	statusLoadChans   = 20
)

// statusLoadRun runs one load and returns the relay's CPU microseconds
// per mention.
func statusLoadRun(b *testing.B, status bool) float64 {
	b.Helper()
	w := &world{t: b, owner: mustSecret(b), agent: mustSecret(b), stateHome: b.TempDir(), logs: newLogWatch()}
	w.logPath = filepath.Join(b.TempDir(), "agent.log")
	pid, url := startRelayProcess(b, "--data", b.TempDir(), "--owner", w.owner.Public().Hex(), "--allow", w.agent.Public().Hex(),
		"--rate", "100000", "--burst", "100000")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.pub = newRelayConn(url, w.owner, nil, 4096, slog.New(slog.DiscardHandler))
	connDone := make(chan struct{})
	go func() { defer close(connDone); w.pub.Run(ctx) }()
	defer func() { cancel(); <-connDone }()
	<-w.pub.Connected()
	w.io = newRelayIO(url, w.owner, "", w.pub)
	defer w.io.Close()
	w.io.ProbeOrWebsocket(ctx)
	publish := func(ev *nostr.Event) {
		ev.CreatedAt = nostr.Now()
		w.owner.SignEvent(ev)
		pctx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		if _, err := w.io.Publish(pctx, ev); err != nil {
			b.Fatalf("publish kind %d: %v", ev.Kind, err)
		}
	}
	ids := make([]string, statusLoadChans)
	for i := range ids {
		ids[i] = fmt.Sprintf("6f1c2d4e-3333-4000-8000-%012d", i)
		publish(&nostr.Event{Kind: 9007, Tags: nostr.Tags{{"h", ids[i]}, {"name", "ch" + strconv.Itoa(i)}, {"visibility", "open"}}})
		publish(&nostr.Event{Kind: 9000, Tags: nostr.Tags{{"h", ids[i]}, {"p", w.agent.Public().Hex(), "", "member"}}})
	}
	env := w.harnessEnv("echo")
	env.Stderr = nil
	// As BenchmarkEventToPrompt runs it: no typing, so the baseline is
	// the least the relay does per mention and the share is an upper bound.
	cfg := []string{"--relay-url", url, "--agent-owner", w.owner.Public().Hex(), "--agent-command", env.Exe,
		"--mcp-command", "", "--no-presence", "--no-typing", "--agents", "20", "--multiple-event-handling", "queue"}
	c, err := LoadConfig(cfg, env)
	if err != nil {
		b.Fatal(err)
	}
	hctx, stop := context.WithCancel(ctx)
	hdone := make(chan struct{})
	go func() { run(hctx, c, env, slog.New(slog.DiscardHandler), timing{noStatus: !status}); close(hdone) }()
	defer func() { stop(); <-hdone }()
	for _, ch := range ids {
		publish(&nostr.Event{Kind: 9, Content: "warm", Tags: nostr.Tags{{"h", ch}, {"p", w.agent.Public().Hex()}}})
	}
	waitFor(b, "warm-up prompts", 60*time.Second, func() bool { return len(w.prompts()) >= statusLoadChans })
	time.Sleep(time.Second) // the warm-up turns' reactions and statuses settle
	before := cpuMicros(b, pid)
	seconds := statusLoadSeconds
	if testing.Short() {
		seconds = shortLoadSeconds
	}
	n := statusLoadRate * seconds
	tick := time.NewTicker(time.Second / statusLoadRate)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		<-tick.C
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			publish(&nostr.Event{Kind: 9, Content: "load " + strconv.Itoa(i), Tags: nostr.Tags{{"h", ids[i%statusLoadChans]}, {"p", w.agent.Public().Hex()}}})
		}()
	}
	tick.Stop()
	wg.Wait()
	// Busy channels batch mentions: count the mentions the prompts carry.
	stamp := regexp.MustCompile(`load \d+`)
	waitFor(b, "every mention prompted", 120*time.Second, func() bool {
		seen := map[string]bool{}
		for _, p := range w.prompts() {
			for _, m := range stamp.FindAllString(p, -1) {
				seen[m] = true
			}
		}
		return len(seen) >= n
	})
	time.Sleep(2 * time.Second) // the last turns end: reactions removed, statuses sent
	return float64(cpuMicros(b, pid)-before) / float64(n)
}

// startRelayProcess starts the built buzz-relay with args and returns its
// pid and websocket URL; the benchmark's end kills it.
func startRelayProcess(b *testing.B, args ...string) (int, string) {
	b.Helper()
	cmd := exec.Command(testexe.Link(b, "buzz-relay"), append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urls := make(chan string, 1)
	go func() { // reads stderr until the relay exits
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); !sent && strings.Contains(line, "msg=listening") {
				for _, f := range strings.Fields(line) {
					if u, ok := strings.CutPrefix(f, "url="); ok {
						urls <- u
						sent = true
					}
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return cmd.Process.Pid, u
	case <-time.After(30 * time.Second):
		b.Fatal("buzz-relay did not start listening")
	}
	return 0, ""
}

// cpuMicros is the user and system CPU time process pid has used, in
// microseconds (/proc/PID/stat fields 14 and 15, clock ticks of 10 ms).
func cpuMicros(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // field 3 onwards
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return (ut + st) * 10000
}
