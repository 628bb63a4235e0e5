package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// errStoreClosed is returned by a guarded store after Close.
var errStoreClosed = errors.New("buzz-relay: store closed")

// errNoCounter is returned by CountEvents when the backend cannot count.
var errNoCounter = errors.New("buzz-relay: store cannot count")

// errNoRanks is returned by insertionRanks when the backend cannot tell
// the order it stored events in.
var errNoRanks = errors.New("buzz-relay: store cannot tell its insertion order")

// guardedStore makes Close safe against queries still running. The badger
// backend answers QueryEvents from a goroutine that opens its transaction
// after QueryEvents returns; if the database closed in between, badger
// panics ("DB Closed") and takes the process down. The guard holds a read
// lock from each call until its result channel is drained, and Close takes
// the write lock, so the backend is closed only when nothing uses it.
type guardedStore struct {
	inner eventstore.Store

	mu      sync.RWMutex
	closed  bool          // set under mu's write lock
	closing chan struct{} // closed when Close starts: forwarders stop sending
	once    sync.Once

	// watch hears of each event saved and deleted (the search index);
	// nil when nothing listens. Set before the store is shared.
	watch storeWatcher
}

// storeWatcher hears of the store's writes after they succeed.
type storeWatcher interface {
	saved(*nostr.Event)
	deleted(*nostr.Event)
}

func guard(s eventstore.Store) *guardedStore {
	return &guardedStore{inner: s, closing: make(chan struct{})}
}

func (g *guardedStore) Init() error { return g.inner.Init() }

// Close waits for running calls to finish, then closes the backend.
func (g *guardedStore) Close() {
	g.once.Do(func() {
		close(g.closing)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.closed = true
		g.inner.Close()
	})
}

// QueryEvents forwards the backend's results. The read lock is held until
// the backend's channel is closed; the forwarder drains it even when the
// caller has gone (ctx ended) or Close has started, so the lock is always
// released.
func (g *guardedStore) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return nil, errStoreClosed
	}
	in, err := g.inner.QueryEvents(ctx, f)
	if err != nil {
		g.mu.RUnlock()
		return nil, err
	}
	out := make(chan *nostr.Event)
	// Ends when the backend closes in; sends stop once ctx ends or Close starts.
	go func() {
		defer g.mu.RUnlock()
		defer close(out)
		sending := true
		for ev := range in {
			if !sending {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				sending = false
			case <-g.closing:
				sending = false
			}
		}
	}()
	return out, nil
}

func (g *guardedStore) DeleteEvent(ctx context.Context, ev *nostr.Event) error {
	err := g.with(func() error { return g.inner.DeleteEvent(ctx, ev) })
	if err == nil && g.watch != nil {
		g.watch.deleted(ev)
	}
	return err
}

func (g *guardedStore) SaveEvent(ctx context.Context, ev *nostr.Event) error {
	err := g.with(func() error { return g.inner.SaveEvent(ctx, ev) })
	if err == nil && g.watch != nil {
		g.watch.saved(ev)
	}
	return err
}

func (g *guardedStore) ReplaceEvent(ctx context.Context, ev *nostr.Event) error {
	return g.with(func() error { return g.inner.ReplaceEvent(ctx, ev) })
}

func (g *guardedStore) with(fn func() error) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return errStoreClosed
	}
	return fn()
}

// CountEvents asks the backend's own counter, or returns errNoCounter.
func (g *guardedStore) CountEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	c, ok := g.inner.(eventstore.Counter)
	if !ok {
		return 0, errNoCounter
	}
	var n int64
	err := g.with(func() error {
		var err error
		n, err = c.CountEvents(ctx, f)
		return err
	})
	return n, err
}

// prefixReader is a store that finds events by the first 8 bytes of
// their id (the embedded search index keys its documents so).
type prefixReader interface {
	eventsByPrefix(prefixes []string) ([]*nostr.Event, map[string]bool, error)
}

// eventsByPrefix asks the backend for the events whose ids start with
// each prefix. They are not read-checked.
func (g *guardedStore) eventsByPrefix(prefixes []string) (evs []*nostr.Event, found map[string]bool, err error) {
	pr, ok := g.inner.(prefixReader)
	if !ok {
		return nil, nil, fmt.Errorf("the store cannot find events by id prefix")
	}
	err = g.with(func() error {
		var err error
		evs, found, err = pr.eventsByPrefix(prefixes)
		return err
	})
	return evs, found, err
}
