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

// TestExpiryScanFindsStoredEvents: events stored before the relay
// started (here: more than one store page of them) are found by the
// first sweep's scan.
func TestExpiryScanFindsStoredEvents(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, EventsPerSecond: 1e6, EventBurst: 1e6})
	c := login(t, r.URL(), owner)
	past := strconv.FormatInt(int64(nostr.Now())-10, 10)
	// Dated back, as if stored by an earlier run, and the newer events
	// spread over half a minute: the walk pages by created_at and cannot
	// split one second holding over a page.
	dated := func(content string, ago nostr.Timestamp, tags ...nostr.Tag) nostr.Event {
		ev := nostr.Event{Kind: 1, Content: content, CreatedAt: nostr.Now() - ago, Tags: nostr.Tags(tags)}
		if err := ev.Sign(owner.sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	expired := dated("expired", 60, nostr.Tag{"expiration", past})
	mustPublish(t, c, expired)
	for i := range maxQueryLimit + 10 {
		mustPublish(t, c, dated("newer "+strconv.Itoa(i), nostr.Timestamp(i%30)))
	}
	r.expiry.forget(expired.ID) // as if stored by an earlier run
	r.expiry.scan(testCtx(t))
	r.expiry.sweep(testCtx(t))
	if evs, _ := query(t, c, nostr.Filter{IDs: []string{expired.ID}}); len(evs) != 0 {
		t.Errorf("expired event below a page of newer ones survived the scan and sweep")
	}
}
