package leakcheck

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// parked is a function a leaked goroutine is found in by name.
func parked(release <-chan struct{}) { <-release }

// startParked starts parked the way a library starts its ticker.
//
//go:noinline
func startParked(release <-chan struct{}) { go parked(release) }

func TestLeakedFindsAGoroutineLeftRunning(t *testing.T) {
	before := Now()
	release := make(chan struct{})
	defer close(release)
	go parked(release)
	got := leaked(before, 50*time.Millisecond)
	if len(got) != 1 {
		t.Fatalf("leaked = %d goroutines; want the one left running:\n%s", len(got), Format(got))
	}
	g := got[0]
	if !strings.Contains(g.CreatedBy, "TestLeakedFindsAGoroutineLeftRunning") || !contains(g.Funcs, "buzzbox/internal/leakcheck.parked") || g.State != "chan receive" {
		t.Errorf("leaked goroutine = created by %q, funcs %q, state %q; want created by the test, in parked, on a chan receive", g.CreatedBy, g.Funcs, g.State)
	}
	if text := Format(got); !strings.Contains(text, "leakcheck.parked") {
		t.Errorf("Format does not show the stack:\n%s", text)
	}
}

func TestLeakedWaitsForAGoroutineOnItsWayOut(t *testing.T) {
	// The retry loop is the subject: synctest's clock lets the goroutine
	// end "later" without the test waiting for real time.
	synctest.Test(t, func(t *testing.T) {
		before := Now()
		release := make(chan struct{})
		go parked(release)
		time.AfterFunc(300*time.Millisecond, func() { close(release) })
		if got := leaked(before, time.Second); len(got) != 0 {
			t.Errorf("leaked = %s; want none: the goroutine ends within the settle time", Format(got))
		}
	})
}

func TestLeakedGivesUpAtTheSettleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := Now()
		release := make(chan struct{})
		go parked(release)
		start := time.Now()
		got := leaked(before, time.Second)
		if waited := time.Since(start); waited != time.Second || len(got) != 1 {
			t.Errorf("leaked waited %v and found %d; want 1s and the parked goroutine", waited, len(got))
		}
		close(release)
	})
}

func TestLeakedPassesOverOldAndIgnoredGoroutines(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	go parked(release) // running before the snapshot: not new
	before := Now()
	if got := leaked(before, 0); len(got) != 0 {
		t.Errorf("leaked = %s; want none: nothing started since the snapshot", Format(got))
	}
	g, ok := parse("goroutine 9 [select]:\nbuzzbox/internal/proc.spawnLoop(0xc000010000)\n\t/src/proc.go:10 +0x1\ncreated by buzzbox/internal/proc.start in goroutine 1\n\t/src/proc.go:5 +0x2")
	if !ok || !isIgnored(g) {
		t.Errorf("parse = %+v, %v; want proc's spawner, ignored", g, ok)
	}
}

func TestCheckFailsALeakingTest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var ft fakeT
	check(&ft, 50*time.Millisecond)
	go parked(release)
	ft.cleanup()
	if !strings.Contains(ft.errors, "leakcheck.parked") {
		t.Errorf("Check reported %q; want the parked goroutine", ft.errors)
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in      string
		ok      bool
		id      uint64
		state   string
		funcs   []string
		created string
	}{
		{"goroutine 1 [running]:\nmain.main()\n\t/m.go:3 +0x1", true, 1, "running", []string{"main.main"}, ""},
		{"goroutine 42 [IO wait, 3 minutes]:\ninternal/poll.runtime_pollWait(0x7f, 0x72)\n\t/p.go:1 +0x1\nnet/http.(*persistConn).readLoop(0xc0001b2000)\n\t/t.go:2 +0x2\ncreated by net/http.(*Transport).dialConn in goroutine 41\n\t/t.go:3 +0x3",
			true, 42, "IO wait", []string{"internal/poll.runtime_pollWait", "net/http.(*persistConn).readLoop"}, "net/http.(*Transport).dialConn"},
		{"goroutine x [running]:", false, 0, "", nil, ""},
		{"not a goroutine", false, 0, "", nil, ""},
		{"goroutine 3 running", false, 0, "", nil, ""},
	} {
		g, ok := parse(c.in)
		if ok != c.ok || g.ID != c.id || g.State != c.state || strings.Join(g.Funcs, "|") != strings.Join(c.funcs, "|") || g.CreatedBy != c.created {
			t.Errorf("parse(%q) = %+v, %v; want id %d state %q funcs %q created by %q, %v", c.in, g, ok, c.id, c.state, c.funcs, c.created, c.ok)
		}
	}
}

func contains(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// fakeT is the part of testing.TB that Check uses, recording what it
// reports; cleanup runs what Check registered.
type fakeT struct {
	testing.TB
	cleanups []func()
	errors   string
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Failed() bool      { return false }
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors += fmt.Sprintf(format, args...)
}
func (f *fakeT) Fatalf(format string, args ...any) { f.Errorf(format, args...) }
func (f *fakeT) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCheckCountsTheFirstCallOnly(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var ft fakeT
	check(&ft, 50*time.Millisecond)
	go parked(release) // started after the first call, before the second
	check(&ft, 50*time.Millisecond)
	if len(ft.cleanups) != 1 {
		t.Fatalf("Check registered %d cleanups; want 1", len(ft.cleanups))
	}
	ft.cleanup()
	if !strings.Contains(ft.errors, "leakcheck.parked") {
		t.Errorf("Check reported %q; want the goroutine started between the calls", ft.errors)
	}
}

func TestUnstoppablePassesOverOnlyTheGoroutinesItMarked(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	before := Now()
	var ft fakeT
	Unstoppable(&ft, "buzzbox/internal/leakcheck.startParked", "a library's ticker", func() { startParked(release) })
	if ft.errors != "" {
		t.Fatalf("Unstoppable failed: %s", ft.errors)
	}
	if got := leaked(before, 0); len(got) != 0 {
		t.Errorf("leaked = %s; want none: the one goroutine started is marked", Format(got))
	}
	startParked(release) // the same creator, not marked
	if got := leaked(before, 0); len(got) != 1 {
		t.Errorf("leaked = %d goroutines; want the unmarked one:\n%s", len(got), Format(got))
	}
}

func TestUnstoppableFailsWhenNothingNeedsIt(t *testing.T) {
	var ft fakeT
	Unstoppable(&ft, "buzzbox/internal/leakcheck.startParked", "a library's ticker", func() {})
	if !strings.Contains(ft.errors, "drop the exemption") {
		t.Errorf("Unstoppable with nothing started: errors %q; want a failure saying to drop the exemption", ft.errors)
	}
}
