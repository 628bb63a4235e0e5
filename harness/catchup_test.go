package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/statedir"

	"github.com/nbd-wtf/go-nostr"
)

// promptsWith counts the prompts that carry event id.
func promptsWith(prompts []string, id string) int {
	n := 0
	for _, p := range prompts {
		if strings.Contains(p, "Event ID: "+id) {
			n++
		}
	}
	return n
}

// mentionAt publishes a mention dated at.
func (w *world) mentionAt(text string, at time.Time) *nostr.Event {
	return w.publish(&nostr.Event{Kind: 9, Content: text, CreatedAt: nostr.Timestamp(at.Unix()),
		Tags: nostr.Tags{{"h", w.channel}, {"p", w.agent.Public().Hex()}}})
}

// stateDir is the harness state dir of the world's relay and agent.
func (w *world) stateDir() string {
	dir, err := harnessStateDir("", func(k string) string {
		if k == "XDG_STATE_HOME" {
			return w.stateHome
		}
		return ""
	}, w.relay.URL(), w.agent.Public().Hex())
	if err != nil {
		w.t.Fatal(err)
	}
	return dir
}

// seedState writes the state a run that began listening at started and
// answered nothing leaves behind.
func (w *world) seedState(started time.Time) {
	st, _ := json.Marshal(harnessState{Version: harnessStateVersion, Relay: w.relay.URL(), Agent: w.agent.Public().Hex(),
		StartedAt: started.Unix(), Channels: map[string]*channelMemo{}})
	if err := statedir.WriteFile(filepath.Join(w.stateDir(), "state.json"), st); err != nil {
		w.t.Fatal(err)
	}
}

// TestBugMentionWhileDownDropped: a mention posted 12 s before the
// harness started again was never answered (only 5 s were replayed).
// Now what arrived since the last answered event is answered once, as
// one batch, and the answered one is not answered again.
func TestBugMentionWhileDownDropped(t *testing.T) {
	w := newWorld(t)
	env := w.harnessEnv("echo")
	// A run before began a minute ago; the first mention is dated back
	// so that the missed ones (older than the 5 s skew the relay replays
	// anyway) come after it, as they do in life.
	w.seedState(time.Now().Add(-time.Minute))
	first := w.mentionAt("before the stop", time.Now().Add(-30*time.Second))
	stop := w.startHarness(env, "--multiple-event-handling", "queue")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return promptsWith(w.prompts(), first.ID) == 1 })
	waitFor(t, "reactions cleaned up", 15*time.Second, func() bool { return w.seenReactions(first) == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	missed1 := w.mentionAt("missed one", now.Add(-13*time.Second))
	missed2 := w.mentionAt("missed two", now.Add(-12*time.Second))
	before := len(w.prompts())
	w.startHarness(env, "--multiple-event-handling", "queue")
	waitFor(t, "the missed mentions prompted", 30*time.Second, func() bool {
		ps := w.prompts()
		return promptsWith(ps, missed1.ID) > 0 && promptsWith(ps, missed2.ID) > 0
	})
	live := w.mention("live after the restart")
	waitFor(t, "the live mention prompted", 15*time.Second, func() bool { return promptsWith(w.prompts(), live.ID) > 0 })
	ps := w.prompts()
	for _, ev := range []*nostr.Event{first, missed1, missed2, live} {
		if n := promptsWith(ps, ev.ID); n != 1 {
			t.Errorf("%q prompted %d times; want once", ev.Content, n)
		}
	}
	batch := ps[before]
	if !strings.Contains(batch, missed1.ID) || !strings.Contains(batch, missed2.ID) {
		t.Errorf("the missed mentions did not come as one batch:\n%s", batch)
	}
}

// TestCatchupOff: with --catchup 0 a restarted harness replays only the
// relay skew, as before; the same start with catch-up on answers the
// missed mention (TestBugMentionWhileDownDropped).
func TestCatchupOff(t *testing.T) {
	w := newWorld(t)
	w.seedState(time.Now().Add(-time.Minute))
	missed := w.mentionAt("missed", time.Now().Add(-30*time.Second))
	w.startHarness(w.harnessEnv("echo"), "--catchup", "0")
	live := w.mention("live")
	waitFor(t, "the live mention prompted", 15*time.Second, func() bool { return promptsWith(w.prompts(), live.ID) > 0 })
	if n := promptsWith(w.prompts(), missed.ID); n != 0 {
		t.Errorf("with --catchup 0 the missed mention was prompted %d times", n)
	}
}

// TestCatchupMax: of more missed events than --catchup-max, the newest
// are answered and the rest skipped.
func TestCatchupMax(t *testing.T) {
	w := newWorld(t)
	env := w.harnessEnv("echo")
	w.seedState(time.Now().Add(-time.Minute))
	first := w.mentionAt("before the stop", time.Now().Add(-30*time.Second))
	stop := w.startHarness(env, "--catchup-max", "2", "--multiple-event-handling", "queue")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return promptsWith(w.prompts(), first.ID) == 1 })
	waitFor(t, "reactions cleaned up", 15*time.Second, func() bool { return w.seenReactions(first) == 0 })
	stop()
	now := time.Now()
	old := w.mentionAt("oldest", now.Add(-12*time.Second))
	mid := w.mentionAt("middle", now.Add(-11*time.Second))
	newest := w.mentionAt("newest", now.Add(-10*time.Second))
	w.startHarness(env, "--catchup-max", "2", "--multiple-event-handling", "queue")
	waitFor(t, "the newest two prompted", 30*time.Second, func() bool {
		ps := w.prompts()
		return promptsWith(ps, mid.ID) > 0 && promptsWith(ps, newest.ID) > 0
	})
	if n := promptsWith(w.prompts(), old.ID); n != 0 {
		t.Errorf("the oldest of three missed events was prompted with --catchup-max 2")
	}
}

// TestBugHarnessStateDamaged: a truncated state file or one of another
// version is reported and set aside; the harness starts and answers.
func TestBugHarnessStateDamaged(t *testing.T) {
	for _, body := range []string{`{"version":1,"relay":"ws:`, `{"version":9,"channels":{}}`, "\x00garbage"} {
		w := newWorld(t)
		dir := w.stateDir()
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		w.startHarness(w.harnessEnv("echo"))
		ev := w.mention("hello")
		waitFor(t, "a prompt despite the damaged state", 15*time.Second, func() bool { return promptsWith(w.prompts(), ev.ID) == 1 })
	}
}

// FuzzParseHarnessState: any bytes give a state or an error, never a
// panic, and what parses keeps its bounds.
func FuzzParseHarnessState(f *testing.F) {
	f.Add([]byte(`{"version":1,"relay":"ws://x","agent":"ab","startedAt":5,"channels":{"c":{"session":"s","lastAt":3,"pending":{"e":2},"handled":["a","b"]}}}`))
	f.Add([]byte(`{"version":1,"channels":{"c":null}}`))
	f.Add([]byte(`{"version":1,"channels":{"c":{"notices":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseHarnessState(b)
		if err != nil {
			return
		}
		for ch, m := range st.Channels {
			if m == nil || len(m.Handled) > maxHandledIDs || len(m.Pending) > maxQueuePerChannel || len(m.Notices) > maxSavedNotices {
				t.Fatalf("channel %q out of bounds after parse", ch)
			}
		}
	})
}

// TestBugOwnerShutdownReplayedAfterRestart: catch-up replays what came
// since the last run; an owner's "!shutdown" that ended that run must not
// end the next one.
func TestBugOwnerShutdownReplayedAfterRestart(t *testing.T) {
	w := newWorld(t)
	w.seedState(time.Now().Add(-time.Minute))
	w.mentionAt("!shutdown", time.Now().Add(-30*time.Second))
	w.startHarness(w.harnessEnv("echo"))
	live := w.mention("still there?")
	waitFor(t, "the live mention prompted", 15*time.Second, func() bool { return promptsWith(w.prompts(), live.ID) > 0 })
	select {
	case <-w.exited:
		t.Error("the harness obeyed a !shutdown from before it started")
	default:
	}
}
