package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// burstUntilKill publishes events from one goroutine per connection in
// conns (a connection may be given more than once), each taking the next
// event not yet sent, until all are sent or its connection drops. Once
// killAt events are acknowledged it calls kill, once. It returns the ids
// acknowledged while their connection was still up, after every
// publisher has stopped, and fails the test when fewer than killAt were.
func burstUntilKill(t *testing.T, conns []*nostr.Relay, events []nostr.Event, killAt int, kill func()) []string {
	t.Helper()
	var (
		next   atomic.Int64
		mu     sync.Mutex
		acked  []string
		killed sync.Once
		wg     sync.WaitGroup
	)
	for _, c := range conns {
		wg.Add(1)
		go func() { // ends when the events run out or c drops
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(events) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := c.Publish(ctx, events[i])
				cancel()
				// go-nostr returns nil when the connection drops while it
				// waits for the OK, so a nil error counts only while the
				// connection is still up.
				if err != nil || !c.IsConnected() {
					return // the relay is gone
				}
				mu.Lock()
				acked = append(acked, events[i].ID)
				n := len(acked)
				mu.Unlock()
				if n >= killAt {
					killed.Do(kill)
				}
			}
		}()
	}
	wg.Wait()
	if len(acked) < killAt {
		t.Fatalf("only %d acknowledged; the burst did not reach the kill point", len(acked))
	}
	return acked
}
