package relay

import (
	"testing"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestAttackDirectMessagesInvisible: a direct-message channel (type dm)
// is read by its members only. Its creator asking for an open one, or
// later editing it to public or to another type, does not open it; a
// third relay member gets none of it by id, by kind, by channel, by
// search or by count, before and after a restart.
func TestAttackDirectMessagesInvisible(t *testing.T) {
	root, alice, bob, mallory := newKey(t), newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", root.pk, "--allow", alice.pk + "," + bob.pk + "," + mallory.pk}
	b := runBinary(t, dir, args...)
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "dm"},
		nostr.Tag{workspace.TagChannelType, workspace.ChannelTypeDM}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	secret := signed(t, bob, workspace.KindStream, "just between us: the walrus plan", h)
	mustPublish(t, cb, secret)
	mustPublish(t, ca, signed(t, alice, workspace.KindEditMetadata, "", h, nostr.Tag{"visibility", "public"}, nostr.Tag{workspace.TagChannelType, workspace.ChannelTypeStream}))

	attack := func(b *binRelay) {
		t.Helper()
		cm := login(t, b.url, mallory)
		defer cm.Close()
		for _, f := range []nostr.Filter{
			{IDs: []string{secret.ID}},
			{Kinds: []int{workspace.KindStream}},
			{Kinds: []int{workspace.KindStream}, Search: "walrus"},
		} {
			if evs, _ := query(t, cm, f); len(evs) != 0 {
				t.Errorf("third member read the DM with %v", f)
			}
			if evs := bridgeEvents(t, mallory, b.http(), f); hasID(evs, secret.ID) {
				t.Errorf("third member read the DM over the bridge with %v", f)
			}
			if n, m := countBoth(t, mallory, cm, b.http(), f); n != 0 || m != 0 {
				t.Errorf("third member counts %d/%d of the DM with %v", n, m, f)
			}
		}
		if _, reason := query(t, cm, nostr.Filter{Tags: nostr.TagMap{"h": {chanA}}}); reason != "restricted: not a channel member" {
			t.Errorf("third member's REQ on the DM closed with %q", reason)
		}
		if msg := refused(t, cm, signed(t, mallory, workspace.KindJoinRequest, "", h)); msg == "" {
			t.Error("third member joined the DM")
		}
		cb := login(t, b.url, bob)
		defer cb.Close()
		if evs, _ := query(t, cb, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "walrus"}); len(evs) != 1 {
			t.Errorf("member finds %d of the DM's messages; want 1", len(evs))
		}
	}
	attack(b)
	b.stop(t)
	attack(runBinary(t, dir, args...))
}
