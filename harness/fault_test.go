package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func (w *world) pids() map[int]bool {
	out := map[int]bool{}
	for _, l := range w.agentLog() {
		if l.Method == "initialize" {
			out[l.Pid] = true
		}
	}
	return out
}

func promptHas(prompts []string, s string) int {
	n := 0
	for _, p := range prompts {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
}

func TestAgentDiesMidTurn(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(t.TempDir(), "died")
	w.startHarness(w.harnessEnv("die", envFakeMarker+"="+marker))
	ev := w.mention("first")
	waitFor(t, "the event retried on a new agent", 20*time.Second, func() bool {
		return len(w.pids()) >= 2 && promptHas(w.prompts(), ev.ID) >= 2 && w.count("permission-answer") >= 1
	})
	ev2 := w.mention("second")
	waitFor(t, "the next event", 20*time.Second, func() bool { return promptHas(w.prompts(), ev2.ID) == 1 && w.count("permission-answer") >= 2 })
}

// TestAttackKeepalivesFeedIdleTimeout: an agent that sends only keepalive
// updates (as buzz-agent does while its model stalls) used to reset the
// idle timeout forever, holding the channel until the hard cap.
func TestAttackKeepalivesFeedIdleTimeout(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("keepalive"), "--idle-timeout", "1", "--max-turn-duration", "600")
	w.mention("never answered")
	waitFor(t, "session/cancel and a respawned agent", 30*time.Second, func() bool {
		return w.count("session/cancel") >= 1 && len(w.pids()) >= 2
	})
}

func TestIdleTimeoutCancels(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("hang"), "--idle-timeout", "1", "--max-turn-duration", "60")
	w.mention("never answered")
	waitFor(t, "session/cancel and a respawned agent", 30*time.Second, func() bool {
		return w.count("session/cancel") >= 1 && len(w.pids()) >= 2
	})
}

// TestStdinWriteTimeout: an agent that stops reading stdin while it keeps
// sending requests fills the pipe; the timed-out write retires it and the
// batch is retried on a new agent instead of the turn hanging until the
// (here ten-minute) idle timeout.
func TestStdinWriteTimeout(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(t.TempDir(), "deafened")
	w.startHarnessTiming(w.harnessEnv("deaf", envFakeMarker+"="+marker),
		timing{retryBase: 20 * time.Millisecond, respawn: 10 * time.Millisecond, stdinTimeout: 300 * time.Millisecond},
		"--idle-timeout", "600", "--max-turn-duration", "1200")
	ev := w.mention("are you listening?")
	waitFor(t, "the batch retried on a respawned agent", 30*time.Second, func() bool {
		return len(w.pids()) >= 2 && promptHas(w.prompts(), ev.ID) >= 2 && w.count("permission-answer") >= 1
	})
}

// TestInflightBackstop: a turn that outlives its deadline by the backstop
// (the agent ignores session/cancel, so the drain would hold the channel
// for another 30 s) releases its channel: the next event runs on the
// second agent, the stuck batch is given up, and an event withheld for a
// native steer that never returns is recovered.
func TestInflightBackstop(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"queued event", nil, []string{"--multiple-event-handling", "queue"}},
		{"withheld steer event", []string{envFakeSteering + "=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			gate := filepath.Join(t.TempDir(), "gate")
			env := w.harnessEnv("stuck", append(tc.env, envFakeMarker+"="+gate)...)
			w.startHarnessTiming(env, timing{retryBase: 20 * time.Millisecond, respawn: 10 * time.Millisecond, backstop: 500 * time.Millisecond},
				append([]string{"--agents", "2", "--idle-timeout", "1", "--max-turn-duration", "2"}, tc.args...)...)
			// Runs before the harness is stopped: lets the stuck agents answer.
			t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
			first := w.mention("never answered")
			waitFor(t, "first prompt", 15*time.Second, func() bool { return promptHas(w.prompts(), first.ID) == 1 })
			second := w.mention("after the backstop")
			if len(tc.env) > 0 {
				waitFor(t, "the steer request", 15*time.Second, func() bool { return w.count("_session/steering") == 1 })
			}
			waitFor(t, "the second event prompted on the other agent", 20*time.Second, func() bool {
				return promptHas(w.prompts(), second.ID) == 1
			})
			if n := promptHas(w.prompts(), first.ID); n != 1 {
				t.Errorf("first event prompted %d times; the released batch must be given up", n)
			}
		})
	}
}

func TestBadFramesTearDown(t *testing.T) {
	for _, mode := range []string{"oversize", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t)
			w.startHarness(w.harnessEnv(mode))
			w.mention("provoke")
			waitFor(t, "a respawned agent", 30*time.Second, func() bool { return len(w.pids()) >= 2 })
		})
	}
}

func TestQueuedEventsBatch(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "gate")
	w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--multiple-event-handling", "queue")
	w.mention("first")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	a, b, c := w.mention("a"), w.mention("b"), w.mention("c")
	// The three wait behind the running turn; 👀 on each says they are queued.
	waitFor(t, "three queued 👀", 10*time.Second, func() bool { return w.seenReactions(a, b, c) == 3 })
	os.WriteFile(gate, nil, 0o600)
	waitFor(t, "batched prompt", 15*time.Second, func() bool { return len(w.prompts()) == 2 })
	p := w.prompts()[1]
	if !strings.Contains(p, "[Buzz events — 3 events]") || !(strings.Index(p, "Content: a") < strings.Index(p, "Content: b") && strings.Index(p, "Content: b") < strings.Index(p, "Content: c")) {
		t.Errorf("batched prompt:\n%s", p)
	}
}

func TestSteerWithoutNativeSteering(t *testing.T) {
	for _, tc := range []struct{ handling, prior, latest string }{
		{"steer", "[What you were working on]", "[New message — arrived while you were working]"},
		{"interrupt", "[Previous request — interrupted before completion]", "[New request — supersedes previous]"},
	} {
		t.Run(tc.handling, func(t *testing.T) {
			w := newWorld(t)
			gate := filepath.Join(t.TempDir(), "gate")
			w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--multiple-event-handling", tc.handling)
			w.mention("first")
			waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
			w.mention("second")
			waitFor(t, "merged prompt", 15*time.Second, func() bool { return len(w.prompts()) >= 2 })
			p := w.prompts()[1]
			if !strings.Contains(p, tc.prior) || !strings.Contains(p, tc.latest) || w.count("session/cancel") < 1 {
				t.Errorf("merged prompt (cancels %d):\n%s", w.count("session/cancel"), p)
			}
			os.WriteFile(gate, nil, 0o600)
		})
	}
}

func TestNativeSteer(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "gate")
	w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate, envFakeSteering+"=1"))
	w.mention("first")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	w.mention("second")
	waitFor(t, "_session/steering", 15*time.Second, func() bool { return w.count("_session/steering") == 1 })
	os.WriteFile(gate, nil, 0o600)
	waitFor(t, "turn end", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })
	if n := w.count("session/cancel"); n != 0 {
		t.Errorf("%d session/cancel; a native steer must not cancel", n)
	}
}

func TestOwnerCommands(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "gate")
	stop := w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--multiple-event-handling", "queue")
	w.mention("work")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	w.mention("!cancel")
	waitFor(t, "cancel", 15*time.Second, func() bool { return w.count("session/cancel") == 1 })
	os.WriteFile(gate, nil, 0o600)
	w.mention("after cancel")
	waitFor(t, "next prompt", 15*time.Second, func() bool { return len(w.prompts()) == 2 })
	if promptHas(w.prompts(), "!cancel") != 0 {
		t.Errorf("!cancel was forwarded to the agent")
	}
	news := w.count("session/new")
	w.mention("!rotate")
	w.mention("after rotate")
	waitFor(t, "prompt after rotate", 15*time.Second, func() bool { return len(w.prompts()) == 3 })
	if w.count("session/new") != news+1 {
		t.Errorf("session/new count %d; want %d after !rotate", w.count("session/new"), news+1)
	}
	w.mention("!shutdown")
	// !shutdown ends run by itself; stop only collects the result.
	select {
	case <-w.exited:
		if err := stop(); err != nil {
			t.Errorf("harness after !shutdown: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("harness still running after !shutdown")
	}
}

// TestRelayRestartDuringBurst kills the relay halfway through 500 mentions;
// every event must reach the agent in exactly one prompt.
func TestRelayRestartDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("500-event burst")
	}
	w := newWorld(t)
	// Every event missed while the relay was down is caught up, not only
	// the newest --catchup-max.
	w.startHarness(w.harnessEnv("echo"), "--multiple-event-handling", "queue", "--no-typing", "--catchup-max", "500")
	const n = 500
	ids := map[string]bool{}
	var order []string
	addr := strings.TrimPrefix(w.relay.URL(), "ws://")
	for i := 0; i < n; i++ {
		if i == n/2 {
			w.relay.Close()
			w.relay = startRelay(t, w.dataDir, addr, w.owner, w.agent)
		}
		ev := w.mentionRetry(t, "burst "+strconv.Itoa(i))
		ids[ev.ID] = true
		order = append(order, ev.ID)
	}
	seen := func() map[string]int {
		got := map[string]int{}
		for _, p := range w.prompts() {
			for _, m := range eventIDLine.FindAllStringSubmatch(p, -1) {
				got[m[1]]++
			}
		}
		return got
	}
	missing := func() []string {
		got := seen()
		var out []string
		for i := 0; i < n; i++ {
			if id := order[i]; got[id] == 0 {
				out = append(out, strconv.Itoa(i)+":"+id[:8])
			}
		}
		return out
	}
	deadline := time.Now().Add(120 * time.Second)
	for len(missing()) > 0 {
		if time.Now().After(deadline) {
			m := missing()
			// Whether the relay kept them tells a lost write from a
			// missed replay.
			var want []string
			for _, x := range m {
				want = append(want, ids0(order, x))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			stored, err := w.io.Query(ctx, nostr.Filter{IDs: want})
			cancel()
			t.Logf("the restarted relay holds %d of the %d missing events (query error %v)", len(stored), len(want), err)
			if len(m) > 20 {
				m = append(m[:20], "…")
			}
			t.Fatalf("after 2m %d of %d events never reached a prompt (burst index:id): %s", len(missing()), n, strings.Join(m, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for id, c := range seen() {
		if c != 1 && ids[id] {
			t.Errorf("event %s was prompted %d times", id, c)
		}
	}
}

// ids0 is the full id of a missing-list entry "index:prefix".
func ids0(order []string, entry string) string {
	i, _ := strconv.Atoi(strings.SplitN(entry, ":", 2)[0])
	return order[i]
}

var eventIDLine = regexp.MustCompile(`Event ID: ([0-9a-f]{64})`)

// promptSessions lists the sessionId of each session/prompt the fake saw.
func promptSessions(w *world) []string {
	var out []string
	for _, l := range w.agentLog() {
		if l.Method != "session/prompt" {
			continue
		}
		var p struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(l.Params, &p)
		out = append(out, p.SessionID)
	}
	return out
}

// TestAttackMidTurnMentionLosesHistory: a mention that interrupted a
// running turn made the harness open a new session for the re-run without
// closing the old one, so the model lost the channel's earlier turns and
// the agent kept the orphan. The re-run must prompt the same session; a
// rotation that really needs a new one closes the old.
func TestAttackMidTurnMentionLosesHistory(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "gate")
	w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--multiple-event-handling", "interrupt")
	w.mention("first")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	w.mention("second, mid-turn")
	waitFor(t, "the interrupted batch re-run", 15*time.Second, func() bool { return w.count("session/cancel") == 1 && len(w.prompts()) == 2 })
	os.WriteFile(gate, nil, 0o600)
	if ids := promptSessions(w); len(ids) != 2 || ids[0] != ids[1] || w.count("session/new") != 1 {
		t.Errorf("prompts went to sessions %v after %d session/new; want one session", ids, w.count("session/new"))
	}
	waitFor(t, "turn end", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })
	w.mention("!rotate")
	w.mention("after rotate")
	waitFor(t, "prompt after rotate", 15*time.Second, func() bool { return len(w.prompts()) == 3 })
	waitFor(t, "the rotated session closed", 15*time.Second, func() bool { return w.count("session/close") == 1 })
	var closed struct {
		SessionID string `json:"sessionId"`
	}
	for _, l := range w.agentLog() {
		if l.Method == "session/close" {
			json.Unmarshal(l.Params, &closed)
		}
	}
	if ids := promptSessions(w); closed.SessionID != ids[0] || ids[2] == ids[0] {
		t.Errorf("closed %q; prompts went to %v", closed.SessionID, ids)
	}
}

// TestCatchupPastRelayPage: more missed mentions than a relay's default
// page (250 for a REQ without a limit) are all caught up, not only the
// newest 250.
func TestCatchupPastRelayPage(t *testing.T) {
	if testing.Short() {
		t.Skip("300-event catch-up")
	}
	w := newWorld(t)
	const n = 300
	want := map[string]bool{}
	for i := range n {
		want[w.mention("missed "+strconv.Itoa(i)).ID] = true
	}
	w.startHarness(w.harnessEnv("echo"), "--multiple-event-handling", "queue", "--no-typing", "--catchup-max", "500")
	last := 0
	defer func() { t.Logf("prompted %d of %d", last, n) }()
	waitFor(t, "all 300 missed mentions prompted", 30*time.Second, func() bool {
		got := 0
		for _, p := range w.prompts() {
			for _, m := range eventIDLine.FindAllStringSubmatch(p, -1) {
				if want[m[1]] {
					got++
				}
			}
		}
		last = got
		return got >= n
	})
}
