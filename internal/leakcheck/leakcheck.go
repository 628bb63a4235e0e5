// Package leakcheck finds goroutines that outlive the test that started
// them. Check does it per test (it compares the goroutines running at the
// test's end with those at its start); AfterAll does it once for a
// package, from TestMain, after every test has run. Both wait a bounded
// time (settleTimeout) for goroutines already on their way out, then name
// each one still running with its stack.
//
// It knows the test runner's own goroutines and the few long-lived ones
// of libraries and of buzzbox that live as long as the process by design
// (ignored, each with its reason), and the single goroutines a test marks
// with Unstoppable where a library starts one it gives no way to stop;
// any other goroutine still running is a leak, to be fixed where it is
// started, not added here.
//
// It does not find goroutines of other processes, and a per-test Check
// cannot tell a parallel test's goroutines from the checked test's own:
// packages with parallel tests check once, in TestMain.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Goroutine is one goroutine as runtime.Stack prints it.
type Goroutine struct {
	ID        uint64
	State     string   // what it waits on: "chan receive", "select", "IO wait", …
	Funcs     []string // the functions on its stack, innermost first
	CreatedBy string   // the function whose go statement started it ("" for main)
	Stack     string   // the whole dump of it
}

// ignored are the goroutines a check passes over: those of the test
// runner and those that live as long as the process by design. A
// goroutine is passed over when any function on its stack is named here.
var ignored = []struct{ fn, why string }{
	{"testing.tRunner", "a test still running: the caller's own, its parents, parallel ones"},
	{"testing.(*M).Run", "the test binary's main goroutine"},
	{"main.main", "the test binary's main goroutine"},
	{"os/signal.loop", "signal.Notify's dispatcher lives as long as the process"},
	{"github.com/blevesearch/bleve_index_api.AnalysisWorker", "bleve's package initialisation starts its analysis workers (the relay's search index), which live as long as the process"},
	{"buzzbox/internal/proc.spawnLoop", "proc starts children from one OS thread that lives as long as the process, so their Pdeathsig does not fire early"},
}

// unstoppable holds the IDs of the goroutines Unstoppable marked, each
// with its reason.
var unstoppable sync.Map // uint64 → string

// Unstoppable runs start and marks the goroutines that the function
// createdBy started meanwhile as ones the library gives no way to stop
// (khatru's NewRelay starts an expiration ticker on context.Background):
// checks pass over exactly those goroutines, by ID, and still count any
// other goroutine createdBy starts. (By creator, not by a function on the
// stack: a goroutine not yet scheduled shows only its go statement's
// wrapper.) It fails t if start made no such goroutine, so a library that
// learns to stop its goroutine turns the exemption into a failure to
// remove it.
func Unstoppable(t testing.TB, createdBy, why string, start func()) {
	t.Helper()
	before := Now()
	start()
	marked := 0
	for _, g := range All() {
		if !before[g.ID] && g.CreatedBy == createdBy {
			unstoppable.Store(g.ID, why)
			marked++
		}
	}
	if marked == 0 {
		t.Fatalf("leakcheck.Unstoppable: %s started no goroutine (%s); drop the exemption", createdBy, why)
	}
}

// isIgnored reports whether g is one of the ignored goroutines or one
// Unstoppable marked.
func isIgnored(g Goroutine) bool {
	if _, ok := unstoppable.Load(g.ID); ok {
		return true
	}
	for _, f := range g.Funcs {
		for _, ig := range ignored {
			if f == ig.fn {
				return true
			}
		}
	}
	return false
}

// All returns every goroutine of the process, the caller's first.
func All() []Goroutine {
	size := 1 << 20
	var buf []byte
	for {
		buf = make([]byte, size)
		n := runtime.Stack(buf, true)
		if n < size || size >= maxStackBytes {
			buf = buf[:n]
			break
		}
		size *= 2
	}
	var out []Goroutine
	for _, block := range strings.Split(string(buf), "\n\n") {
		if g, ok := parse(block); ok {
			out = append(out, g)
		}
	}
	return out
}

// parse reads one goroutine's dump:
//
//	goroutine 7 [chan receive, 2 minutes]:
//	buzzbox/relay.(*Relay).run(0xc000123450)
//		/src/relay/relay.go:120 +0x45
//	created by buzzbox/relay.Start in goroutine 1
//		/src/relay/relay.go:80 +0x1f
func parse(block string) (Goroutine, bool) {
	block = strings.TrimSpace(block)
	header, rest, _ := strings.Cut(block, "\n")
	idText, ok := strings.CutPrefix(header, "goroutine ")
	if !ok {
		return Goroutine{}, false
	}
	idText, state, ok := strings.Cut(idText, " [")
	if !ok {
		return Goroutine{}, false
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return Goroutine{}, false
	}
	state, _, _ = strings.Cut(state, "]")
	state, _, _ = strings.Cut(state, ",")
	g := Goroutine{ID: id, State: state, Stack: block}
	for line := range strings.Lines(rest) {
		line = strings.TrimRight(line, "\n")
		if line == "" || line[0] == '\t' {
			continue
		}
		if by, ok := strings.CutPrefix(line, "created by "); ok {
			by, _, _ = strings.Cut(by, " in goroutine ")
			g.CreatedBy = by
			continue
		}
		if i := strings.LastIndexByte(line, '('); i > 0 {
			line = line[:i]
		}
		g.Funcs = append(g.Funcs, line)
	}
	return g, true
}

// Set is the IDs of the goroutines running at one moment.
type Set map[uint64]bool

// Now returns the goroutines running now.
func Now() Set {
	s := Set{}
	for _, g := range All() {
		s[g.ID] = true
	}
	return s
}

// Leaked returns the goroutines started since before (nil: since the
// process began) that are still running after waiting up to
// settleTimeout for them to end; the caller's own and the ignored ones
// are never counted.
func Leaked(before Set) []Goroutine { return leaked(before, settleTimeout) }

func leaked(before Set, settle time.Duration) []Goroutine {
	deadline := time.Now().Add(settle)
	wait := firstRetry
	for {
		var out []Goroutine
		for i, g := range All() {
			if i == 0 || before[g.ID] || isIgnored(g) {
				continue // the caller, or not new, or long-lived by design
			}
			out = append(out, g)
		}
		if len(out) == 0 || !time.Now().Before(deadline) {
			return out
		}
		time.Sleep(min(wait, time.Until(deadline)))
		wait = min(2*wait, maxRetry)
	}
}

// Format prints gs for a failure message: a count, then each stack.
func Format(gs []Goroutine) string {
	gs = slices.Clone(gs)
	slices.SortFunc(gs, func(a, b Goroutine) int {
		return strings.Compare(a.CreatedBy, b.CreatedBy)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutine(s) still running after %v:\n", len(gs), settleTimeout)
	for _, g := range gs {
		b.WriteString("\n")
		b.WriteString(g.Stack)
		b.WriteString("\n")
	}
	return b.String()
}

// Check fails t when goroutines started after this call are still
// running once t's cleanups registered after it have run (cleanups run
// last first, so call Check before starting what must stop). Only the
// first call for a test counts: helpers that each call it (one per world
// a test builds) are checked once, after everything the test started. A
// test that has failed already is not checked: what it left behind is
// noise.
func Check(t testing.TB) { t.Helper(); check(t, settleTimeout) }

// checked holds the tests Check is registered for.
var checked sync.Map // testing.TB → struct{}

func check(t testing.TB, settle time.Duration) {
	t.Helper()
	if _, dup := checked.LoadOrStore(t, struct{}{}); dup {
		return
	}
	before := Now()
	t.Cleanup(func() {
		defer checked.Delete(t)
		if t.Failed() {
			return
		}
		if gs := leaked(before, settle); len(gs) > 0 {
			t.Errorf("leakcheck: goroutines outlived the test: %s", Format(gs))
		}
	})
}

// AfterAll is for TestMain, after the package's tests have run: given
// their exit code, it returns it unchanged when they failed or no
// goroutine is left, else it prints the leaked goroutines to standard
// error and returns 1.
//
//	func TestMain(m *testing.M) { os.Exit(testexe.RunTests(m, leakcheck.AfterAll)) }
func AfterAll(code int) int {
	if code != 0 {
		return code
	}
	if gs := Leaked(nil); len(gs) > 0 {
		fmt.Fprintf(os.Stderr, "leakcheck: goroutines outlived the package's tests: %s", Format(gs))
		return 1
	}
	return 0
}
