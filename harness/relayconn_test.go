package harness

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// TestRelayWriteAbandoned: writes whose caller gives up before or while
// they wait for another writer (a turn's typing ending while the observer
// publisher writes) leave the socket and its subscriptions up.
func TestRelayWriteAbandoned(t *testing.T) {
	w := newWorld(t)
	rc := w.connAs(t, w.agent)
	rc.mu.Lock()
	ws := rc.ws
	rc.mu.Unlock()
	big, _ := json.Marshal([]any{"CLOSE", strings.Repeat("x", 256<<10)}) // holds the writer lock a while
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%2 == 0 {
				cancel()
			} else {
				time.AfterFunc(time.Duration(i)*time.Microsecond, cancel)
			}
			b := []byte(`["CLOSE","x"]`)
			if i%10 == 1 {
				b = big
			}
			rc.write(ctx, ws, b)
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rc.queryWS(ctx, []nostr.Filter{{Kinds: []int{workspace.KindGroupMetadata}, Limit: 1}}); err != nil {
		t.Fatalf("query after abandoned writes: %v", err)
	}
	rc.mu.Lock()
	same := rc.ws == ws
	rc.mu.Unlock()
	if !same {
		t.Error("abandoned writes closed the socket; the connection was replaced")
	}
}

// connAs is a websocket connection to w's relay logged in as key.
func (w *world) connAs(t testing.TB, key *nostrkey.Secret) *relayConn {
	t.Helper()
	rc := newRelayConn(w.relay.URL(), key, nil, 64, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rc.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-rc.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("could not log in to the relay")
	}
	return rc
}
