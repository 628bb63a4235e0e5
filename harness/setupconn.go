package harness

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/relayclient"
)

// ErrNoAnswer is DialSetup's error when the relay accepted no login
// within the harness's dial timeout.
var ErrNoAnswer = errors.New("relay did not answer")

// SetupConn is a relay connection for set-up done before a harness runs:
// `buzzbox up` creates its channel and the profiles through one. It reads
// and writes as the harness does (the HTTP bridge when the relay offers
// one, else the websocket), signed by one key. It is not a harness: it
// subscribes to nothing.
type SetupConn struct {
	io     *relayclient.Client
	cancel context.CancelFunc
	done   chan error
}

// DialSetup connects to the relay at url as key and waits for its NIP-42
// login. A relay that refuses the login ends the wait at once with the
// refusal; one that does not answer within the dial timeout, with
// ErrNoAnswer. The connection lives until Close or until ctx ends.
func DialSetup(ctx context.Context, url string, key *nostrkey.Secret, log *slog.Logger) (*SetupConn, error) {
	cctx, cancel := context.WithCancel(ctx)
	rc := newRelayConn(url, key, nil, 64, log)
	s := &SetupConn{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- rc.Run(cctx) }() // ends with Close (cancel), or by itself on a refusal
	t := time.NewTimer(dialTimeout)
	defer t.Stop()
	select {
	case <-rc.Connected():
	case err := <-s.done:
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	case <-t.C:
		s.Close()
		return nil, ErrNoAnswer
	}
	s.io = newRelayIO(url, key, "", rc)
	probeRelay(cctx, s.io)
	return s, nil
}

// Query returns the events matching f, signatures verified.
func (s *SetupConn) Query(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	return s.io.Query(ctx, f)
}

// Publish sends ev, which must be signed, and waits for the relay's answer.
func (s *SetupConn) Publish(ctx context.Context, ev *nostr.Event) error {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	_, err := s.io.Publish(ctx, ev)
	return err
}

// Close ends the connection and waits for its goroutine.
func (s *SetupConn) Close() {
	s.cancel()
	<-s.done
}
