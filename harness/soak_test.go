package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/workspace"
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

// soakAnswers counts, for each of ids, the agent's answers to it on the
// relay: its kind 9 messages whose thread parent is the id, other than
// the harness's notices (which begin with a warning sign). The query goes
// in chunks of soakQueryIDs ids, well under the relay's page.
func (w *world) soakAnswers(ids []string) (map[string][]*nostr.Event, error) {
	const soakQueryIDs = 50
	out := map[string][]*nostr.Event{}
	for len(ids) > 0 {
		n := min(len(ids), soakQueryIDs)
		chunk := ids[:n]
		ids = ids[n:]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		evs, err := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindStream}, Authors: []string{w.agent.Public().Hex()},
			Tags: nostr.TagMap{"e": chunk}, Limit: 10 * soakQueryIDs})
		cancel()
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if strings.HasPrefix(ev.Content, "⚠️") {
				continue
			}
			if _, parent := (&Event{Event: *ev}).thread(); parent != "" {
				out[parent] = append(out[parent], ev)
			}
		}
	}
	return out, nil
}

// TestSoak runs the real buzz-acp and buzz-agent against the in-process
// relay and a scripted model that answers each mention with buzz-dev-mcp's
// send_message: a mention every 2 s over 10 channels, an agent process
// killed every 5 minutes and the relay restarted every 10 (both scaled
// down to a third and a half of shorter runs). Every mention must have
// exactly one answer on the relay, counted by event id whatever the kills
// and restarts (a kill after the answer went out must not bring a second
// one), and the harness's memory must stay flat.
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
	// No kill or restart in the last stretch: the run ends with every
	// channel settled, and a short run never kills crashesToOpen times
	// within crashWindow (the pool's circuit breaker would stop buzz-acp).
	quiet := dur - killEvery/2
	w := newWorld(t)
	channels := []string{w.channel}
	for i := 1; i < 10; i++ {
		id := fmt.Sprintf("6f1c2d4e-5555-4000-8000-%012d", i)
		w.addChannel(id, "soak"+strconv.Itoa(i))
		channels = append(channels, id)
	}
	r := newRestartRig(t, w)
	type mark struct {
		at   time.Time
		what string
	}
	var marks []mark
	kills, restarts := 0, 0
	// Every other kill lands where exactly once is hardest: the answer is
	// on the relay and the turn has not ended (the model's next request).
	var killAfterAnswer atomic.Bool
	// asked records, for each event id, when the model was asked to
	// answer it (a kill before the answer went out asks again).
	var mu sync.Mutex
	asked := map[string][]time.Time{}
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		if lastRole(req) == "tool" {
			if killAfterAnswer.CompareAndSwap(true, false) {
				for _, k := range childPIDs(r.cmd.Process.Pid) {
					syscall.Kill(k, syscall.SIGKILL)
				}
				mu.Lock()
				kills++
				marks = append(marks, mark{time.Now(), "agent killed after its answer"})
				mu.Unlock()
				return llmtest.Reply{Hang: true}
			}
			return llmtest.Reply{Text: "posted"}
		}
		calls := sendMessageCalls(req)
		mu.Lock()
		for _, c := range calls {
			var a struct {
				ReplyTo string `json:"reply_to"`
			}
			json.Unmarshal([]byte(c.Args), &a)
			asked[a.ReplyTo] = append(asked[a.ReplyTo], time.Now())
		}
		mu.Unlock()
		if calls == nil {
			return llmtest.Reply{Text: "no anchor in the prompt"}
		}
		return llmtest.Reply{Calls: calls}
	})
	// Queued, not steered: each batch is one model request.
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	pid := r.cmd.Process.Pid
	addr := strings.TrimPrefix(w.relay.URL(), "ws://")

	var rss []int
	var ids []string
	sent := map[string]*nostr.Event{}
	scheduled := 0
	start := time.Now()
	nextKill, nextRelay := start.Add(killEvery), start.Add(relayEvery)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; time.Since(start) < dur; i++ {
		<-tick.C
		ch := channels[i%len(channels)]
		ev := &nostr.Event{Kind: 9, Content: "soak " + strconv.Itoa(i), CreatedAt: nostr.Now(),
			Tags: nostr.Tags{{"h", ch}, {"p", w.agent.Public().Hex()}}}
		w.publishRetry(w.t, ev)
		sent[ev.ID] = ev
		ids = append(ids, ev.ID)
		if i%5 == 0 {
			kb := rssKB(pid)
			rss = append(rss, kb)
			t.Logf("t=%v harness rss %d KiB, agents %v", time.Since(start).Round(time.Second), kb, childPIDs(pid))
		}
		if now := time.Now(); now.After(nextKill) && now.Sub(start) < quiet {
			nextKill = now.Add(killEvery)
			if scheduled++; scheduled%2 == 1 {
				killAfterAnswer.Store(true)
				t.Logf("t=%v agent to be killed after its next answer", time.Since(start).Round(time.Millisecond))
			} else {
				for _, k := range childPIDs(pid) {
					syscall.Kill(k, syscall.SIGKILL)
				}
				mu.Lock()
				kills++
				marks = append(marks, mark{now, "agent killed"})
				mu.Unlock()
				t.Logf("t=%v agent killed", time.Since(start).Round(time.Millisecond))
			}
		}
		if now := time.Now(); now.After(nextRelay) && now.Sub(start) < quiet {
			nextRelay = now.Add(relayEvery)
			w.relay.Close()
			w.relay = startRelay(t, w.dataDir, addr, w.owner, w.agent)
			mu.Lock()
			restarts++
			marks = append(marks, mark{time.Now(), "relay restarted"})
			mu.Unlock()
			t.Logf("t=%v relay restarted", time.Since(start).Round(time.Millisecond))
		}
	}
	// The harness is done once its state lists every mention as handled
	// and none as pending; answers are on the relay by then (the reply
	// guard's, if any, follows within its bound).
	waitFor(t, "every mention handled", 2*time.Minute, func() bool {
		paths, _ := filepath.Glob(filepath.Join(w.stateHome, "buzzbox", "acp", "*", "state.json"))
		handled := map[string]bool{}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return false
			}
			st, err := parseHarnessState(b)
			if err != nil {
				return false
			}
			for _, m := range st.Channels {
				if len(m.Pending) > 0 {
					return false
				}
				for _, id := range m.Handled {
					handled[id] = true
				}
			}
		}
		for id := range sent {
			if !handled[id] {
				return false
			}
		}
		return true
	})
	var answers map[string][]*nostr.Event
	deadline := time.Now().Add(replyCheckTO * 2)
	for {
		answers, err = w.soakAnswers(ids)
		if err != nil {
			t.Fatalf("counting answers: %v", err)
		}
		if len(answers) >= len(ids) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	once, dup, lost := 0, 0, 0
	stamp := func(ts []time.Time) string {
		var out []string
		for _, at := range ts {
			out = append(out, at.Format("15:04:05.000"))
		}
		return strings.Join(out, ", ")
	}
	mu.Lock()
	reasked := 0
	for _, id := range ids {
		if n := len(asked[id]); n > 1 {
			reasked += n - 1
		}
		switch got := answers[id]; len(got) {
		case 1:
			once++
		case 0:
			lost++
			t.Errorf("%q (%s) never answered; model asked at [%s]", sent[id].Content, id, stamp(asked[id]))
		default:
			dup++
			var rids []string
			for _, a := range got {
				rids = append(rids, a.ID)
			}
			t.Errorf("%q (%s) answered %d times (%v); model asked at [%s]", sent[id].Content, id, len(got), rids, stamp(asked[id]))
		}
	}
	for _, m := range marks {
		t.Logf("%s at %s", m.what, m.at.Format("15:04:05.000"))
	}
	nkills, nrestarts := kills, restarts
	mu.Unlock()
	// Memory: the last sample within 1.5× the one a quarter in, plus 16 MiB.
	first, last, most := 0, 0, 0
	if len(rss) > 0 {
		first, last = rss[0], rss[len(rss)-1]
		for _, kb := range rss {
			most = max(most, kb)
		}
		t.Logf("harness rss: %v KiB", rss)
	}
	if len(rss) >= 4 {
		if base := rss[len(rss)/4]; last > base*3/2+16<<10 {
			t.Errorf("harness rss grew from %d to %d KiB", base, last)
		}
	}
	t.Logf("soak summary: %v, %d mentions over %d channels: %d answered once, %d more than once, %d never; "+
		"%d agent kills, %d relay restarts; the model asked %d more times than mentions (kills before an answer went out); "+
		"harness RSS first %.1f / last %.1f / max %.1f MiB (%d samples)",
		dur, len(ids), len(channels), once, dup, lost, nkills, nrestarts, reasked,
		float64(first)/1024, float64(last)/1024, float64(most)/1024, len(rss))
}
