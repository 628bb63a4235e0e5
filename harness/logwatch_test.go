package harness

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// logWatch is a harness logger that tests can wait on: every record goes
// to the test's output, as testLogger's do, and is offered to the
// waiters, so a test awaits the harness's own account of a decision (an
// event dropped, a channel joined) instead of sleeping through it.
type logWatch struct {
	mu      sync.Mutex
	records []logRecord
	changed chan struct{} // closed and replaced on every record
}

// logRecord is one record's message and attributes, those given through
// With included, as text.
type logRecord struct {
	msg   string
	attrs map[string]string
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

// logger returns a logger writing to t's output and to lw.
func (lw *logWatch) logger(t testing.TB) *slog.Logger {
	base := slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(&watchHandler{lw: lw, next: base})
}

func (lw *logWatch) add(r logRecord) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.records = append(lw.records, r)
	close(lw.changed)
	lw.changed = make(chan struct{})
}

// await returns the first record with message msg whose attributes
// include every key/value pair of kv, waiting up to d for it.
func (lw *logWatch) await(t testing.TB, d time.Duration, msg string, kv ...string) logRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for seen := 0; ; {
		lw.mu.Lock()
		recs, changed := lw.records[seen:], lw.changed
		seen = len(lw.records)
		lw.mu.Unlock()
		for _, r := range recs {
			if r.match(msg, kv) {
				return r
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the harness did not log %q %v within %v", msg, kv, d)
		}
	}
}

func (r logRecord) match(msg string, kv []string) bool {
	if r.msg != msg {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if r.attrs[kv[i]] != kv[i+1] {
			return false
		}
	}
	return true
}

// watchHandler hands every record to the next handler and to lw.
type watchHandler struct {
	lw    *logWatch
	next  slog.Handler
	attrs []slog.Attr
}

func (h *watchHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *watchHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.lw.add(rec)
	return h.next.Handle(ctx, r)
}

func (h *watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &watchHandler{lw: h.lw, next: h.next.WithAttrs(as), attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

// WithGroup keeps the group for the test output only; the harness logs
// no groups that tests wait on.
func (h *watchHandler) WithGroup(name string) slog.Handler {
	return &watchHandler{lw: h.lw, next: h.next.WithGroup(name), attrs: h.attrs}
}

// awaitListening waits until the harness the world started last listens
// and returns it.
func (w *world) awaitListening(t testing.TB) *harness {
	t.Helper()
	select {
	case <-w.listening:
		return w.running
	case <-time.After(30 * time.Second):
		t.Fatal("the harness did not start listening within 30s")
		return nil
	}
}

// inLoop runs f on the loop goroutine of the harness the world started
// last, which owns the queues and turns, and returns when f has run.
func (w *world) inLoop(t testing.TB, f func(h *harness)) {
	t.Helper()
	h := w.awaitListening(t)
	done := make(chan struct{})
	h.do(func() { f(h); close(done) })
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the harness's loop did not run a step within 30s")
	}
}
