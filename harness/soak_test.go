package harness

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// envSoak is the soak's duration (a Go duration); unset skips TestSoak.
// scripts/soak.sh sets it.
const envSoak = "BUZZ_SOAK_DURATION"

// rssKB reads a process's resident set in KiB; 0 when it is gone.
func rssKB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

var soakEventID = regexp.MustCompile(`Event ID: ([0-9a-f]{64})`)

// TestSoak runs the real buzz-acp and buzz-agent against the in-process
// relay and a scripted model: a mention every 2 s over 10 channels, an
// agent process killed every 5 minutes and the relay restarted every 10
// (both scaled down to a third and a half of shorter runs). Every mention
// must be answered, none twice unless a kill or restart came between the
// two answers, and the harness's memory must stay flat.
func TestSoak(t *testing.T) {
	raw := os.Getenv(envSoak)
	if raw == "" {
		t.Skip("set " + envSoak + " (scripts/soak.sh DURATION)")
	}
	dur, err := time.ParseDuration(raw)
	if err != nil || dur < 10*time.Second {
		t.Fatalf("%s=%q: want a duration of at least 10s", envSoak, raw)
	}
	killEvery, relayEvery := min(5*time.Minute, dur/3), min(10*time.Minute, dur/2)
	w := newWorld(t)
	channels := []string{w.channel}
	for i := 1; i < 10; i++ {
		id := fmt.Sprintf("6f1c2d4e-5555-4000-8000-%012d", i)
		w.addChannel(id, "soak"+strconv.Itoa(i))
		channels = append(channels, id)
	}
	r := newRestartRig(t, w)
	// Queued, not steered: each batch is one model request, so answers
	// can be counted from the model's side.
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	pid := r.cmd.Process.Pid
	addr := strings.TrimPrefix(w.relay.URL(), "ws://")

	type mark struct {
		at   time.Time
		what string
	}
	var marks []mark
	var rss []int
	sent := map[string]string{}
	start := time.Now()
	nextKill, nextRelay := start.Add(killEvery), start.Add(relayEvery)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; time.Since(start) < dur; i++ {
		<-tick.C
		ch := channels[i%len(channels)]
		ev := &nostr.Event{Kind: 9, Content: "soak " + strconv.Itoa(i), CreatedAt: nostr.Now(),
			Tags: nostr.Tags{{"h", ch}, {"p", w.agent.Public().Hex()}}}
		w.publishRetry(ev)
		sent[ev.ID] = ev.Content
		if i%5 == 0 {
			kb := rssKB(pid)
			rss = append(rss, kb)
			t.Logf("t=%v harness rss %d KiB, agents %v", time.Since(start).Round(time.Second), kb, childPIDs(pid))
		}
		if now := time.Now(); now.After(nextKill) {
			nextKill = now.Add(killEvery)
			for _, k := range childPIDs(pid) {
				syscall.Kill(k, syscall.SIGKILL)
			}
			marks = append(marks, mark{now, "agent killed"})
			t.Logf("t=%v agent killed", time.Since(start).Round(time.Second))
		}
		if now := time.Now(); now.After(nextRelay) {
			nextRelay = now.Add(relayEvery)
			w.relay.Close()
			w.relay = startRelay(t, w.dataDir, addr, w.owner, w.agent)
			marks = append(marks, mark{time.Now(), "relay restarted"})
			t.Logf("t=%v relay restarted", time.Since(start).Round(time.Second))
		}
	}
	// Every mention reaches the model.
	type ask struct {
		at  time.Time
		ids []string
	}
	asks := func() []ask {
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []ask
		for i, l := range r.lasts {
			a := ask{at: r.askedAt[i]}
			for _, m := range soakEventID.FindAllStringSubmatch(strings.ReplaceAll(l, `\n`, "\n"), -1) {
				a.ids = append(a.ids, m[1])
			}
			out = append(out, a)
		}
		return out
	}
	waitFor(t, "every mention answered", 2*time.Minute, func() bool {
		got := map[string]bool{}
		for _, a := range asks() {
			for _, id := range a.ids {
				got[id] = true
			}
		}
		for id := range sent {
			if !got[id] {
				return false
			}
		}
		return true
	})
	// None twice, unless an agent kill or a relay restart came between.
	seen := map[string]time.Time{}
	for _, a := range asks() {
		for _, id := range a.ids {
			if _, ours := sent[id]; !ours {
				continue
			}
			if prev, ok := seen[id]; ok {
				excused := false
				for _, m := range marks {
					excused = excused || (m.at.After(prev) && m.at.Before(a.at))
				}
				if !excused {
					t.Errorf("%q answered twice (%v and %v) with no kill or restart between", sent[id], prev.Format(time.TimeOnly), a.at.Format(time.TimeOnly))
				}
			}
			seen[id] = a.at
		}
	}
	// Memory: the last sample within 1.5× the one a quarter in, plus 16 MiB.
	if len(rss) >= 4 {
		base, last := rss[len(rss)/4], rss[len(rss)-1]
		t.Logf("harness rss: %v KiB", rss)
		if last > base*3/2+16<<10 {
			t.Errorf("harness rss grew from %d to %d KiB", base, last)
		}
	}
	t.Logf("%d mentions over %v, %d kills/restarts", len(sent), dur, len(marks))
}

// publishRetry signs ev as the owner and publishes it, retrying while the
// relay restarts.
func (w *world) publishRetry(ev *nostr.Event) {
	w.t.Helper()
	if err := w.owner.SignEvent(ev); err != nil {
		w.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.io.Publish(ctx, ev)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("publish during the soak: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
