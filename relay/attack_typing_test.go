package relay

import (
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestAttackTypingInPrivateChannel: typing indicators (kind 20002) and
// other ephemeral events are never stored, so the store's read checks do
// not see them; the live fan-out must. Against the built buzz-relay, a
// relay member outside a private channel subscribes to every typing
// event (a #h filter naming the channel is refused outright) and must
// not learn that, or when, anyone types there, while a member does; an
// outsider cannot type into the channel either. A typing event in an
// open channel, sent last on the same connection, proves the outsider's
// subscription works and that whatever came before it has arrived.
func TestAttackTypingInPrivateChannel(t *testing.T) {
	lead, mate, eve := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--open")
	lc := login(t, b.url, lead)
	mustPublish(t, lc, signed(t, lead, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "board"}, nostr.Tag{"private"}))
	mustPublish(t, lc, signed(t, lead, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", mate.pk}, nostr.Tag{"role", roleMember}))
	mustPublish(t, lc, signed(t, lead, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"name", "lobby"}))

	ec, mc := login(t, b.url, eve), login(t, b.url, mate)
	if _, why := query(t, ec, nostr.Filter{Kinds: []int{workspace.KindTyping}, Tags: nostr.TagMap{"h": {chanA}}}); !strings.HasPrefix(why, "restricted") {
		t.Errorf("an outsider's REQ for the private channel's typing = CLOSED %q; want restricted", why)
	}
	ctx := testCtx(t)
	all := nostr.Filters{{Kinds: []int{workspace.KindTyping, workspace.KindPresence}}}
	eveSub, err := ec.Subscribe(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	mateSub, err := mc.Subscribe(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*nostr.Subscription{eveSub, mateSub} {
		select {
		case <-s.EndOfStoredEvents:
		case <-ctx.Done():
			t.Fatal("no EOSE")
		}
	}

	// The outsider tries to type into the private channel.
	forged := signed(t, eve, workspace.KindTyping, "", nostr.Tag{"h", chanA})
	eveRefused := ec.Publish(ctx, forged) != nil
	secret := signed(t, lead, workspace.KindTyping, "", nostr.Tag{"h", chanA})
	threadSecret := signed(t, lead, workspace.KindTyping, "", nostr.Tag{"h", chanA}, nostr.Tag{"e", strings.Repeat("ab", 32), "", "root"})
	open := signed(t, lead, workspace.KindTyping, "", nostr.Tag{"h", chanB})
	for _, ev := range []nostr.Event{secret, threadSecret, open} {
		lc.Publish(ctx, ev) // ephemeral: the OK is not what is tested
	}

	got := func(s *nostr.Subscription, who string) map[string]bool {
		seen := map[string]bool{}
		timeout := time.After(20 * time.Second)
		for !seen[open.ID] {
			select {
			case ev := <-s.Events:
				seen[ev.ID] = true
			case <-timeout:
				t.Fatalf("%s never got the open channel's typing event", who)
			}
		}
		return seen
	}
	if seen := got(eveSub, "the outsider"); seen[secret.ID] || seen[threadSecret.ID] {
		t.Errorf("an outsider got typing events of a private channel (channel %v, thread %v)", seen[secret.ID], seen[threadSecret.ID])
	}
	seen := got(mateSub, "the member")
	if !seen[secret.ID] || !seen[threadSecret.ID] {
		t.Errorf("the member missed the private channel's typing (channel %v, thread %v)", seen[secret.ID], seen[threadSecret.ID])
	}
	if seen[forged.ID] || !eveRefused {
		t.Errorf("an outsider typed into the private channel: refused %v, delivered to a member %v", eveRefused, seen[forged.ID])
	}
}
