package harness

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/relayclient"
)

// connAs is a websocket connection to w's relay logged in as key.
func (w *world) connAs(t testing.TB, key *nostrkey.Secret) *relayclient.Subscriber {
	t.Helper()
	rc := newRelayConn(w.relay.URL(), key, nil, 64, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-rc.Connected():
	case <-time.After(10 * time.Second):
		t.Fatal("could not log in to the relay")
	}
	return rc
}
