package relay

import (
	"buzzbox/internal/workspace"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestAttackForeignDeletionBlocksEvent: a member publishes a kind 5
// carrying the id of an event another member is about to send (an id is
// known before it is published: a re-broadcast, a client's retry) under
// tags named both "e" and "#e". khatru's own "is it deleted?" lookup asks
// for "#e" with no author, so it found that deletion and refused the event
// for everyone — after reading every deletion the relay held, on every
// publish. Only the author's own NIP-09 deletion may block an event.
func TestAttackForeignDeletionBlocksEvent(t *testing.T) {
	alice, mallory := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", mallory.pk)
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)

	pending := signed(t, alice, 1, "soon")
	mustPublish(t, cm, signed(t, mallory, workspace.KindDeletion, "", nostr.Tag{"#e", pending.ID}, nostr.Tag{"e", pending.ID}))
	if err := ca.Publish(testCtx(t), pending); err != nil {
		t.Errorf("alice's event after mallory's deletions naming it: %v; want it stored", err)
	}
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{pending.ID}}); len(evs) != 1 {
		t.Errorf("alice's event is not readable after publishing (%d found)", len(evs))
	}

	// Her own deletion still blocks the event it names.
	withdrawn := signed(t, alice, 1, "never mind")
	mustPublish(t, ca, signed(t, alice, workspace.KindDeletion, "", nostr.Tag{"e", withdrawn.ID}))
	if msg := refused(t, ca, withdrawn); !strings.Contains(msg, "deleted") {
		t.Errorf("event its author deleted first refused with %q; want a deletion reason", msg)
	}
}
