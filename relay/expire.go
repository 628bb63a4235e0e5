package relay

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip40"
)

// expiry deletes events whose NIP-40 expiration tag has passed: those
// stored while the relay runs, and those stored before, which the first
// sweep finds by reading the whole store once. It sweeps every
// expirySweep, on a goroutine of its own, until close.
type expiry struct {
	r    *Relay
	mu   sync.Mutex
	due  expiringHeap
	stop context.CancelFunc
	done chan struct{}
}

type expiring struct {
	id string
	at nostr.Timestamp
}

type expiringHeap []expiring

func (h expiringHeap) Len() int           { return len(h) }
func (h expiringHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiringHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiringHeap) Push(x any)        { *h = append(*h, x.(expiring)) }
func (h *expiringHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// startExpiry starts the sweeper of r; stop ends it.
func startExpiry(r *Relay) *expiry {
	ctx, cancel := context.WithCancel(context.Background())
	e := &expiry{r: r, stop: cancel, done: make(chan struct{})}
	// Ends when stop cancels ctx.
	go e.run(ctx)
	return e
}

func (e *expiry) run(ctx context.Context) {
	defer close(e.done)
	t := time.NewTicker(expirySweep)
	defer t.Stop()
	scanned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !scanned {
			e.scan(ctx)
			scanned = true
		}
		e.sweep(ctx)
	}
}

// close stops the sweeper and waits for it.
func (e *expiry) close() {
	if e == nil {
		return
	}
	e.stop()
	<-e.done
}

// scan tracks the expiring events the store holds.
func (e *expiry) scan(ctx context.Context) {
	if err := e.r.eachStored(internal(ctx), nostr.Filter{}, e.track); err != nil && ctx.Err() == nil {
		e.r.log.Warn("NIP-40: read the store for expiring events", "err", err)
	}
}

// track remembers ev's expiration, if it has one.
func (e *expiry) track(ev *nostr.Event) {
	if e == nil {
		return
	}
	if at := nip40.GetExpiration(ev.Tags); at != -1 {
		e.mu.Lock()
		heap.Push(&e.due, expiring{ev.ID, at})
		e.mu.Unlock()
	}
}

// forget drops a deleted event's expiration.
func (e *expiry) forget(id string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.due {
		if e.due[i].id == id {
			heap.Remove(&e.due, i)
			return
		}
	}
}

// sweep deletes every tracked event whose time has come.
func (e *expiry) sweep(ctx context.Context) {
	now := nostr.Now()
	for {
		e.mu.Lock()
		if e.due.Len() == 0 || e.due[0].at > now {
			e.mu.Unlock()
			return
		}
		next := heap.Pop(&e.due).(expiring)
		e.mu.Unlock()
		ictx := internal(ctx)
		if ev := e.r.firstStored(ictx, nostr.Filter{IDs: []string{next.id}}); ev != nil {
			e.r.store.DeleteEvent(ictx, ev)
		}
	}
}
