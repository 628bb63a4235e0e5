package relay

import (
	"os/exec"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"github.com/nbd-wtf/go-nostr"
)

// runRelay starts the real buzz-relay binary on 127.0.0.1:0 and returns
// the process and its websocket URL, read from the "listening" log line.
func runRelay(t *testing.T, exe, dir string) (*exec.Cmd, string) {
	t.Helper()
	return runRelayArgs(t, exe, "--data", dir, "--open", "--rate", "1000000", "--burst", "1000000")
}

// runRelayArgs starts the real buzz-relay binary on 127.0.0.1:0 with args
// and waits for its address (spawnRelay), failing t if it exits first.
func runRelayArgs(t testing.TB, exe string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	inst, log := spawnRelay(t, exe, args...)()
	if inst.url == "" {
		t.Fatalf("buzz-relay exited before listening:\n%s", log)
	}
	return inst.cmd, inst.url
}

// TestKillDuringBurst publishes 10 000 events to the real binary, kills it
// with SIGKILL part way, restarts it on the same data dir and checks that
// every event the relay acknowledged is there.
func TestKillDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 10 000 events to a subprocess")
	}
	const total, killAt, workers = 10000, 4000, 8
	exe := testexe.Link(t, "buzz-relay")
	dir := t.TempDir()
	cmd, url := runRelay(t, exe, dir)

	k := newKey(t)
	events := make([]nostr.Event, total)
	for i := range events {
		events[i] = signed(t, k, 1, "burst "+time.Duration(i).String())
	}
	c := connect(t, url)
	began := time.Now()

	conns := make([]*nostr.Relay, workers)
	for i := range conns {
		conns[i] = c // the publishers share one connection
	}
	acked := burstUntilKill(t, conns, events, killAt, func() { cmd.Process.Kill() })
	cmd.Wait()
	t.Logf("%d events acknowledged before SIGKILL, %s", len(acked), time.Since(began))

	began = time.Now()
	_, url = runRelay(t, exe, dir)
	t.Logf("restarted in %s", time.Since(began))
	c2 := connect(t, url)
	have := make(map[string]bool, len(acked))
	for start := 0; start < len(acked); start += 500 {
		chunk := acked[start:min(start+500, len(acked))]
		evs, reason := query(t, c2, nostr.Filter{IDs: chunk})
		if reason != "" {
			t.Fatalf("query after restart closed: %s", reason)
		}
		for _, ev := range evs {
			have[ev.ID] = true
		}
	}
	missing := 0
	for _, id := range acked {
		if !have[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events missing after kill -9 and restart", missing, len(acked))
	}
}
