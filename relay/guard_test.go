package relay

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestGuardedStoreCloseDuringQueries closes the badger store while queries
// are starting and running. Unguarded, badger panics with "DB Closed" when a
// query's goroutine opens its transaction after Close.
func TestGuardedStoreCloseDuringQueries(t *testing.T) {
	inner, err := openStore(Config{DataDir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := guard(inner)
	ctx := context.Background()
	sk := nostr.GeneratePrivateKey()
	for i := range 50 {
		ev := nostr.Event{Kind: 1, Content: "x", CreatedAt: nostr.Timestamp(1700000000 + i)}
		ev.Sign(sk)
		if err := s.SaveEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 50 {
				ch, err := s.QueryEvents(ctx, nostr.Filter{Kinds: []int{1}, Limit: 10})
				if errors.Is(err, errStoreClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				// Read one result and abandon the rest, as a closing
				// subscription does.
				<-ch
			}
		}()
	}
	close(start)
	s.Close()
	wg.Wait()
	if _, err := s.QueryEvents(ctx, nostr.Filter{}); !errors.Is(err, errStoreClosed) {
		t.Errorf("QueryEvents after Close = %v; want errStoreClosed", err)
	}
	ev := nostr.Event{Kind: 1}
	if err := s.SaveEvent(ctx, &ev); !errors.Is(err, errStoreClosed) {
		t.Errorf("SaveEvent after Close = %v; want errStoreClosed", err)
	}
}
