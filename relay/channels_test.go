package relay

import (
	"buzzbox/internal/workspace"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

const chanA = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"

// channelState returns the 39000 and 39002 events of channel id.
func channelState(t *testing.T, c *nostr.Relay, id string) (meta, members *nostr.Event) {
	t.Helper()
	evs, reason := query(t, c, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata, workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {id}}})
	if reason != "" {
		t.Fatalf("channel state query closed: %s", reason)
	}
	for _, ev := range evs {
		switch ev.Kind {
		case workspace.KindGroupMetadata:
			meta = ev
		case workspace.KindGroupMembers:
			members = ev
		}
	}
	return meta, members
}

func roles(ev *nostr.Event) map[string]string {
	out := map[string]string{}
	if ev == nil {
		return out
	}
	for _, t := range ev.Tags {
		if len(t) >= 4 && t[0] == "p" {
			out[t[1]] = t[3]
		}
	}
	return out
}

func TestChannelLifecycle(t *testing.T) {
	owner, alice, bob := newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir, Owner: owner.pk, Allow: []string{alice.pk, bob.pk}})
	co, ca, cb := login(t, r.URL(), owner), login(t, r.URL(), alice), login(t, r.URL(), bob)
	h := nostr.Tag{"h", chanA}

	if msg := refused(t, ca, signed(t, alice, 9, "before", h)); !strings.Contains(msg, "restricted: not a channel member") {
		t.Errorf("post to a missing channel refused with %q", msg)
	}
	if msg := refused(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", "not-a-uuid"})); !strings.Contains(msg, "invalid:") {
		t.Errorf("create with a bad UUID refused with %q; want invalid:", msg)
	}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "general"}, nostr.Tag{"visibility", "private"}, nostr.Tag{"channel_type", "stream"}, nostr.Tag{"about", "talk"}))

	meta, members := channelState(t, co, chanA)
	if meta == nil || meta.PubKey != r.PublicKey() || members == nil || members.PubKey != r.PublicKey() {
		t.Fatalf("channel state after create: meta %v members %v; want both signed by the relay", meta, members)
	}
	if v, _ := tagValue(meta, "name"); v != "general" || !hasFlag(meta, "private") {
		t.Errorf("39000 tags = %v; want name general and [private]", meta.Tags)
	}
	if got := roles(members); got[owner.pk] != roleOwner || len(got) != 1 {
		t.Errorf("39002 roles = %v; want the creator as owner", got)
	}

	// alice is a relay member but not in the channel.
	if msg := refused(t, ca, signed(t, alice, 9, "hi", h)); !strings.Contains(msg, "restricted: not a channel member") {
		t.Errorf("non-member post refused with %q", msg)
	}
	if msg := refused(t, ca, signed(t, alice, workspace.KindJoinRequest, "", h)); !strings.Contains(msg, "private") {
		t.Errorf("join of a private channel refused with %q; want private", msg)
	}
	if msg := refused(t, cb, signed(t, bob, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk})); !strings.Contains(msg, "restricted:") {
		t.Errorf("add by a non-admin refused with %q; want restricted:", msg)
	}

	// A live subscription by alice must not see private traffic.
	sub, err := ca.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{9}}})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.EndOfStoredEvents
	secret := signed(t, owner, 9, "secret", h)
	mustPublish(t, co, secret)
	if evs, _ := query(t, ca, nostr.Filter{Kinds: []int{9}}); len(evs) != 0 {
		t.Errorf("non-member read %d private events", len(evs))
	}
	if _, reason := query(t, ca, nostr.Filter{Tags: nostr.TagMap{"h": {chanA}}}); reason != "restricted: not a channel member" {
		t.Errorf("non-member REQ on #h closed with %q; want restricted: not a channel member", reason)
	}

	// Owner adds alice as admin; she gets a notification and can post.
	notes, err := ca.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{workspace.KindMemberAdded}, Tags: nostr.TagMap{"p": {alice.pk}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-notes.EndOfStoredEvents
	mustPublish(t, co, signed(t, owner, workspace.KindAddUser, "", h, nostr.Tag{"p", alice.pk, "admin"}))
	select {
	case n := <-notes.Events:
		if v, _ := tagValue(n, "h"); v != chanA || n.PubKey != r.PublicKey() {
			t.Errorf("member notification = %v", n)
		}
	case <-testCtx(t).Done():
		t.Fatal("no 44100 notification")
	}
	select {
	case ev := <-sub.Events:
		t.Fatalf("non-member subscription received private event %s", ev.Content)
	default:
	}
	// Undrained subscriptions would stall the client's reader.
	sub.Unsub()
	notes.Unsub()
	if _, members = channelState(t, co, chanA); roles(members)[alice.pk] != roleAdmin {
		t.Errorf("39002 after add = %v; want alice admin", roles(members))
	}
	mustPublish(t, ca, signed(t, alice, 9, "hello", h))
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{secret.ID}}); len(evs) != 1 {
		t.Errorf("member cannot read the private history")
	}
	// Now an admin, alice adds bob.
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, cb, signed(t, bob, 9, "bob here", h))
	// bob listens to the channel, then leaves: his subscription is closed.
	// (limit 0: no stored events the test would have to drain.)
	bsub, err := cb.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{9}, Tags: nostr.TagMap{"h": {chanA}}, LimitZero: true}})
	if err != nil {
		t.Fatal(err)
	}
	<-bsub.EndOfStoredEvents
	mustPublish(t, cb, signed(t, bob, workspace.KindLeaveRequest, "", h))
	select {
	case reason := <-bsub.ClosedReason:
		if reason != "restricted: channel access revoked" {
			t.Errorf("subscription of a departed member closed with %q", reason)
		}
	case <-testCtx(t).Done():
		t.Fatal("subscription of a departed member not closed")
	}
	// A reaction from outside the channel to a channel event is refused.
	if msg := refused(t, cb, signed(t, bob, workspace.KindReaction, "+", nostr.Tag{"e", secret.ID})); !strings.Contains(msg, "not a channel member") {
		t.Errorf("outside reaction refused with %q", msg)
	}
	if msg := refused(t, cb, signed(t, bob, 9, "gone", h)); !strings.Contains(msg, "not a channel member") {
		t.Errorf("post after leaving refused with %q", msg)
	}

	// Archive, then nobody posts.
	mustPublish(t, co, signed(t, owner, workspace.KindEditMetadata, "", h, nostr.Tag{"archived", "true"}, nostr.Tag{"topic", "old"}))
	if msg := refused(t, ca, signed(t, alice, 9, "late", h)); !strings.Contains(msg, "archived") {
		t.Errorf("post to archived channel refused with %q", msg)
	}
	meta, _ = channelState(t, co, chanA)
	if v, _ := tagValue(meta, "archived"); v != "true" {
		t.Errorf("39000 after archive has archived=%q", v)
	}

	// State survives a restart.
	r.Close()
	r2 := startRelay(t, Config{DataDir: dir, Owner: owner.pk, Allow: []string{alice.pk, bob.pk}})
	if got := r2.Members(chanA); got[alice.pk] != roleAdmin || got[owner.pk] != roleOwner || got[bob.pk] != "" {
		t.Errorf("members after restart = %v", got)
	}
	co2 := login(t, r2.URL(), owner)
	mustPublish(t, co2, signed(t, owner, workspace.KindEditMetadata, "", h, nostr.Tag{"archived", "false"}))
	mustPublish(t, co2, signed(t, owner, 9, "back", h))

	mustPublish(t, co2, signed(t, owner, workspace.KindDeleteGroup, "", h))
	if meta, members := channelState(t, co2, chanA); meta != nil || members != nil {
		t.Errorf("channel state after delete: %v %v; want none", meta, members)
	}
}

// TestTagQueryMatchesTagName: a query by #h returns the channel's messages,
// not the relay's 39000/39002 whose d tag holds the same id (the store
// indexes tag values without their names). Read through the HTTP bridge,
// since go-nostr's client drops non-matching events itself.
func TestTagQueryMatchesTagName(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	co := login(t, r.URL(), owner)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "general"}))
	mustPublish(t, co, signed(t, owner, 9, "hello", h))
	// Newer than the channel's state events, which would take limit slots.
	older := signed(t, owner, 9, "older", h)
	older.CreatedAt -= 100
	older.Sign(owner.sk)
	mustPublish(t, co, older)
	for _, f := range []nostr.Filter{
		{Tags: nostr.TagMap{"h": {chanA}}},
		{Tags: nostr.TagMap{"h": {chanA}}, Kinds: []int{9, workspace.KindGroupMetadata, workspace.KindGroupMembers}},
		{Tags: nostr.TagMap{"h": {chanA}}, Kinds: []int{9, workspace.KindGroupMetadata, workspace.KindGroupMembers}, Limit: 2},
	} {
		status, body := post(t, owner, r.HTTPURL()+"/query", "", jsonOf(t, []nostr.Filter{f}))
		var evs []nostr.Event
		if err := json.Unmarshal([]byte(body), &evs); status != 200 || err != nil {
			t.Fatalf("POST /query %v = %d %s (%v)", f, status, body, err)
		}
		kinds := map[int]bool{}
		for _, ev := range evs {
			kinds[ev.Kind] = true
			if !f.Matches(&ev) {
				t.Errorf("query %v returned kind %d with tags %v", f, ev.Kind, ev.Tags)
			}
		}
		if !kinds[9] || (f.Kinds != nil && len(evs) != 2) {
			t.Errorf("query %v returned %d events of kinds %v; want the two messages", f, len(evs), kinds)
		}
	}
}

func TestPublicChannelJoin(t *testing.T) {
	owner, alice := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{alice.pk}})
	co, ca := login(t, r.URL(), owner), login(t, r.URL(), alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "open"}, nostr.Tag{"visibility", "open"}))
	post := signed(t, owner, 9, "public words", h)
	mustPublish(t, co, post)
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{post.ID}}); len(evs) != 1 {
		t.Errorf("relay member cannot read a public channel")
	}
	refused(t, ca, signed(t, alice, 9, "not yet", h))
	mustPublish(t, ca, signed(t, alice, workspace.KindJoinRequest, "", h))
	mustPublish(t, ca, signed(t, alice, 9, "joined", h))
	// Discovery as the harness does it: 39002 by #p.
	evs, _ := query(t, ca, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"p": {alice.pk}}})
	if len(evs) != 1 || evs[0].Tags.GetD() != chanA {
		t.Errorf("39002 #p discovery = %d events", len(evs))
	}
	if msg := refused(t, ca, signed(t, alice, workspace.KindGroupMetadata, "", nostr.Tag{"d", chanA})); !strings.Contains(msg, "only the relay") {
		t.Errorf("forged 39000 refused with %q", msg)
	}
}
