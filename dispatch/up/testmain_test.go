package up

import (
	"os"
	"testing"
	"time"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/testexe"
)

// TestMain fails the run when goroutines outlive the tests, and removes
// the executable testexe built for them.
func TestMain(m *testing.M) { os.Exit(testexe.RunTests(m, leakcheck.AfterAll)) }

// waitFor polls cond (a real event from another process has no channel
// to wait on) until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
