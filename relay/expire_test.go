package relay

import (
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestExpiredEventsSwept: a sweep deletes stored events whose NIP-40
// expiration has passed and keeps the others.
func TestExpiredEventsSwept(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)
	past := strconv.FormatInt(int64(nostr.Now())-10, 10)
	future := strconv.FormatInt(int64(nostr.Now())+3600, 10)
	gone := signed(t, owner, 1, "expired", nostr.Tag{"expiration", past})
	kept := signed(t, owner, 1, "later", nostr.Tag{"expiration", future})
	plain := signed(t, owner, 1, "forever")
	for _, ev := range []nostr.Event{gone, kept, plain} {
		mustPublish(t, c, ev)
	}
	r.expiry.sweep(testCtx(t))
	evs, _ := query(t, c, nostr.Filter{IDs: []string{gone.ID, kept.ID, plain.ID}})
	if len(evs) != 2 {
		t.Fatalf("after a sweep %d events (%s); want the two unexpired", len(evs), ids(evs))
	}
	for _, ev := range evs {
		if ev.ID == gone.ID {
			t.Errorf("expired event %s still served after a sweep", gone.ID[:8])
		}
	}
}
