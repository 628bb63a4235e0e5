package harness

import (
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/relayclient"
)

// The harness's side of the relay: one Subscriber (the long-lived login
// its subscriptions run on) and one Client on it (reads and writes through
// the HTTP bridge when the relay has one, else on the subscriber's
// socket). Which filters it subscribes, the dedup set and the intake are
// the harness's own.

// newRelayConn is the subscriber of the harness's relay connection, with
// the two-generation dedup of spec §4.5 and events buffered up to buffer.
func newRelayConn(url string, key *nostrkey.Secret, authTag nostr.Tag, buffer int, log *slog.Logger) *relayclient.Subscriber {
	return relayclient.NewSubscriber(url, relayclient.SubscriberOptions{
		Key: key, AuthTag: authTag, Buffer: buffer, Log: log, Seen: newIDSet(dedupGeneration),
	})
}

// newRelayIO is the client reading and writing on url's relay as key,
// over rc's socket when the relay has no HTTP bridge; authTag is the
// canonical JSON of the NIP-OA tag for x-auth-tag ("" none).
func newRelayIO(url string, key *nostrkey.Secret, authTag string, rc *relayclient.Subscriber) *relayclient.Client {
	return relayclient.New(url, relayclient.Options{
		Key: key, AuthTagJSON: authTag, Subscriber: rc,
		HTTPClient: &http.Client{
			Timeout: httpTimeout,
			Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, Proxy: http.ProxyFromEnvironment,
				MaxIdleConnsPerHost: maxIdleBridgeConns},
		},
	})
}

// jitter returns d ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// idSet is the two-generation dedup set of spec §4.5.
type idSet struct {
	gen  int
	cur  map[string]bool
	prev map[string]bool
}

func newIDSet(gen int) *idSet {
	return &idSet{gen: gen, cur: map[string]bool{}, prev: map[string]bool{}}
}

// Add records id and reports whether it was new.
func (s *idSet) Add(id string) bool {
	if s.cur[id] || s.prev[id] {
		return false
	}
	if len(s.cur) >= s.gen {
		s.prev, s.cur = s.cur, map[string]bool{}
	}
	s.cur[id] = true
	return true
}

// Remove forgets id.
func (s *idSet) Remove(id string) { delete(s.cur, id); delete(s.prev, id) }
