package relay

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// Attacks on the relay's roles from outside the built buzz-relay: a relay
// admin reaching a private channel through an invite, a removed key
// keeping its rights, and a leaked invite that cannot be taken back.

const chanC = "4d1e7a52-93b0-4f6c-a8d2-6e0b5c3f9a17"

// inviteRow is one row of listinvites as a client reads it.
type inviteRow struct {
	ID        string   `json:"id"`
	CreatedBy string   `json:"created_by"`
	Channels  []string `json:"channels"`
	CreatedAt int64    `json:"created_at"`
	ExpiresAt int64    `json:"expires_at"`
}

// inviteID is the id listinvites gives the invite of token: the first 16
// hex digits of the token's SHA-256.
func inviteID(token string) string { return tokenHash(token)[:16] }

// inviteList calls listinvites as k; a failure is reported, and nothing
// listed.
func inviteList(t *testing.T, base string, k testKey) []inviteRow {
	t.Helper()
	var list []inviteRow
	status, rep := manage(t, base, k, "listinvites")
	if status != http.StatusOK || rep.Error != "" {
		t.Errorf("listinvites = %d %q; want 200 without error", status, rep.Error)
		return nil
	}
	if err := json.Unmarshal(rep.Result, &list); err != nil {
		t.Errorf("listinvites: %v", err)
	}
	return list
}

// refusal publishes ev and returns the relay's reason for refusing it, or
// "" when it was accepted.
func refusal(t *testing.T, c *nostr.Relay, ev nostr.Event) string {
	t.Helper()
	if err := c.Publish(testCtx(t), ev); err != nil {
		return err.Error()
	}
	return ""
}

func listsInvite(list []inviteRow, id string) bool {
	for _, e := range list {
		if e.ID == id {
			return true
		}
	}
	return false
}

// TestAttackAdminInviteToPrivateChannel: a relay --admin manages members,
// not channels. It used to read any private channel by inviting itself:
// createinvite naming the channel, then redeeming with its own key. Now
// createinvite refuses a private channel the caller does not administer,
// and a redemption checks the invite's maker again: an invite made while
// the admin was a channel admin is refused once it no longer is.
func TestAttackAdminInviteToPrivateChannel(t *testing.T) {
	owner, admin, lead, newcomer := newKey(t), newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", owner.pk, "--admin", admin.pk, "--allow", lead.pk)
	base := b.http()
	lc := login(t, b.url, lead)
	mustPublish(t, lc, signed(t, lead, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "board"}, nostr.Tag{"private"}))
	secret := signed(t, lead, 9, "the acquisition closes friday", nostr.Tag{"h", chanA})
	mustPublish(t, lc, secret)
	mustPublish(t, lc, signed(t, lead, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"name", "lobby"}))

	// At creation.
	status, rep := manage(t, base, admin, "createinvite", map[string]any{"channels": []string{chanA}})
	if rep.Error == "" {
		var res struct {
			Token string `json:"token"`
		}
		json.Unmarshal(rep.Result, &res)
		redeemInvite(t, base, admin, res.Token, nip98.Options{})
		ac := login(t, b.url, admin)
		evs, _ := query(t, ac, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {chanA}}})
		t.Fatalf("admin's createinvite for a private channel it is not in accepted (%d); redeemed with its own key it reads %d of its messages", status, len(evs))
	}
	if !strings.Contains(rep.Error, "private") || !strings.Contains(rep.Error, chanA) {
		t.Errorf("refusal %q; want the private channel named", rep.Error)
	}
	createInvite(t, base, admin, map[string]any{"channels": []string{chanB}}) // an open channel: anyone may join it anyway
	createInvite(t, base, owner, map[string]any{"channels": []string{chanA}}) // the relay owner reads everything anyway

	// At redemption: made while the admin was a channel admin, used after
	// the channel's owner took that back.
	mustPublish(t, lc, signed(t, lead, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", admin.pk, "", roleAdmin}))
	mine, _, _ := createInvite(t, base, admin, map[string]any{"channels": []string{chanA}})
	theirs, _, _ := createInvite(t, base, admin, map[string]any{"channels": []string{chanA}})
	mustPublish(t, lc, signed(t, lead, workspace.KindRemoveUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", admin.pk}))
	for who, tc := range map[string]struct {
		k     testKey
		token string
	}{"the admin itself": {admin, mine}, "a newcomer": {newcomer, theirs}} {
		status, body := redeemInvite(t, base, tc.k, tc.token, nip98.Options{})
		if status != http.StatusForbidden || !strings.Contains(string(body), chanA) {
			t.Errorf("%s redeeming the admin's invite after it left the channel = %d %s; want 403 naming the channel", who, status, body)
		}
		c := login(t, b.url, tc.k)
		if evs, _ := query(t, c, nostr.Filter{IDs: []string{secret.ID}}); len(evs) != 0 {
			t.Errorf("%s reads the private channel's message after the refused redemption", who)
		}
		c.Close()
	}
	if !listsInvite(inviteList(t, base, owner), inviteID(mine)) {
		t.Errorf("the refused invite was spent; want it kept pending for its maker to revoke")
	}
}

// TestAttackRemovedKeyKeepsRights: buzz members remove (disallowpubkey)
// used to take back only the run-time allowance; a key some channel listed
// (one it made, one an invite put it in) kept AUTHing, posting, making
// channels and 9000-adding strangers into relay membership. After removal
// it holds nothing a stranger lacks: its channel memberships end
// (relay-signed 9001s, in 39002 and 44101), its live subscriptions close,
// and the invites it made die.
func TestAttackRemovedKeyKeepsRights(t *testing.T) {
	owner, ex, stranger := newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	// ex is an admin first, long enough to make an invite; then the relay
	// restarts without --admin and ex stays a member by allowpubkey and
	// an invite into a private channel.
	b := runBinary(t, dir, "--owner", owner.pk, "--admin", ex.pk)
	leftover, _, _ := createInvite(t, b.http(), ex)
	b.stop(t)
	b = runBinary(t, dir, "--owner", owner.pk)
	base := b.http()
	oc := login(t, b.url, owner)
	mustPublish(t, oc, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "board"}, nostr.Tag{"private"}))
	mustManage(t, base, owner, "allowpubkey", ex.pk)
	token, _, _ := createInvite(t, base, owner, map[string]any{"channels": []string{chanA}})
	if status, body := redeemInvite(t, base, ex, token, nip98.Options{}); status != http.StatusOK {
		t.Fatalf("redeem = %d %s", status, body)
	}
	xc := login(t, b.url, ex)
	mustPublish(t, xc, signed(t, ex, workspace.KindCreateGroup, "", nostr.Tag{"h", chanC}, nostr.Tag{"name", "side project"}))
	if !listsInvite(inviteList(t, base, owner), inviteID(leftover)) {
		t.Errorf("listinvites before the removal does not show ex's invite")
	}
	live, err := xc.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	<-live.EndOfStoredEvents

	mustManage(t, base, owner, "disallowpubkey", ex.pk)
	boardMsg := signed(t, owner, 9, "after the removal", nostr.Tag{"h", chanA})
	mustPublish(t, oc, boardMsg)

	select {
	case reason := <-live.ClosedReason:
		if !strings.HasPrefix(reason, "restricted:") {
			t.Errorf("live subscription closed with %q; want restricted:", reason)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("live subscription still open 2 s after the removal")
	}
	if msg := refusal(t, xc, signed(t, ex, 1, "still here")); !strings.Contains(msg, "not a relay member") {
		t.Errorf("kind 1 on the open websocket after removal: %q; want not a relay member", msg)
	}
	if reason := publishAs(t, b.url, ex); !strings.Contains(reason, "not a relay member") {
		t.Errorf("kind 1 after a new AUTH: %q; want not a relay member", reason)
	}
	const chanD = "0c6b2f4e-1d3a-4b5c-9e7f-8a9b0c1d2e3f"
	xc2 := login(t, b.url, ex)
	if msg := refusal(t, xc2, signed(t, ex, workspace.KindCreateGroup, "", nostr.Tag{"h", chanD}, nostr.Tag{"name", "another"})); !strings.Contains(msg, "not a relay member") {
		t.Errorf("creating a channel after removal: %q; want not a relay member", msg)
	}
	if msg := refusal(t, xc2, signed(t, ex, workspace.KindAddUser, "", nostr.Tag{"h", chanC}, nostr.Tag{"p", stranger.pk})); msg == "" {
		t.Errorf("9000-adding a stranger to its old channel after removal accepted")
	}
	if reason := publishAs(t, b.url, stranger); !strings.Contains(reason, "not a relay member") {
		t.Errorf("the stranger it tried to add: %q; want not a relay member", reason)
	}
	// go-nostr closes Events on CLOSED, so a nil may come first.
	if evs, reason := query(t, xc2, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {chanA}}}); len(slices.DeleteFunc(evs, func(ev *nostr.Event) bool { return ev == nil })) != 0 || !strings.HasPrefix(reason, "restricted:") {
		t.Errorf("reading the private channel after removal: %v, %q; want a refusal", evs, reason)
	}
	for _, id := range []string{chanA, chanC} {
		evs, _ := query(t, oc, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {id}}})
		if len(evs) != 1 || evs[0].Tags.FindWithValue("p", ex.pk) != nil {
			t.Errorf("39002 of %s after removal = %v; want it without the removed key", id, evs)
		}
		evs, _ = query(t, oc, nostr.Filter{Kinds: []int{workspace.KindMemberRemoved}, Authors: []string{evs[0].PubKey}, Tags: nostr.TagMap{"h": {id}, "p": {ex.pk}}})
		if len(evs) != 1 {
			t.Errorf("44101 for the removed key in %s: %d; want 1, relay-signed", id, len(evs))
		}
	}
	if listsInvite(inviteList(t, base, owner), inviteID(leftover)) {
		t.Errorf("listinvites after the removal still shows the removed key's invite")
	}
	if status, body := redeemInvite(t, base, stranger, leftover, nip98.Options{}); status != http.StatusGone {
		t.Errorf("redeeming the removed key's invite = %d %s; want 410", status, body)
	}
	// Removal is not a ban: the key may be admitted again.
	mustPublish(t, oc, signed(t, owner, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", ex.pk}))
	if reason := publishAs(t, b.url, ex); reason != "" {
		t.Errorf("re-admitted key: %q; want accepted", reason)
	}
}

// TestAttackRevokedInviteRedeemed: a leaked invite stayed good until used
// or expired. revokeinvite ends it (410, across a restart); listinvites
// shows ids, makers, channels and expiry, never the token, and only the
// invites the caller could have made.
func TestAttackRevokedInviteRedeemed(t *testing.T) {
	owner, admin, guest := newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	b := runBinary(t, dir, "--owner", owner.pk, "--admin", admin.pk)
	base := b.http()
	oc := login(t, b.url, owner)
	mustPublish(t, oc, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "board"}, nostr.Tag{"private"}))
	leaked, _, expires := createInvite(t, base, owner, map[string]any{"channels": []string{chanA}})
	kept, _, _ := createInvite(t, base, admin)
	leakedID, keptID := inviteID(leaked), inviteID(kept)

	raw := mustManage(t, base, owner, "listinvites")
	if strings.Contains(string(raw), leaked) || strings.Contains(string(raw), kept) {
		t.Fatalf("listinvites shows a token: %s", raw)
	}
	list := inviteList(t, base, owner)
	byID := map[string]inviteRow{}
	for _, e := range list {
		byID[e.ID] = e
	}
	if e := byID[leakedID]; len(list) != 2 || e.CreatedBy != owner.pk || len(e.Channels) != 1 || e.Channels[0] != chanA || e.ExpiresAt != expires || byID[keptID].CreatedBy != admin.pk {
		t.Errorf("owner's listinvites = %+v; want the two invites with maker, channels and expiry", list)
	}
	if list := inviteList(t, base, admin); len(list) != 1 || list[0].ID != keptID {
		t.Errorf("admin's listinvites = %+v; want only its own (the other names a private channel it is not in)", list)
	}
	if _, rep := manage(t, base, admin, "revokeinvite", leakedID); !strings.Contains(rep.Error, "no invite") {
		t.Errorf("admin revoking the owner's private-channel invite: %q; want refused", rep.Error)
	}
	if _, rep := manage(t, base, owner, "revokeinvite", "zz"); !strings.Contains(rep.Error, "hex") {
		t.Errorf("revokeinvite with a bad id: %q; want the form named", rep.Error)
	}
	mustManage(t, base, owner, "revokeinvite", leakedID)
	if status, body := redeemInvite(t, base, guest, leaked, nip98.Options{}); status != http.StatusGone || !strings.Contains(string(body), "revoked") {
		t.Errorf("redeeming the revoked invite = %d %s; want 410 revoked", status, body)
	}
	b.stop(t)
	b = runBinary(t, dir, "--owner", owner.pk, "--admin", admin.pk)
	if status, body := redeemInvite(t, b.http(), guest, leaked, nip98.Options{}); status != http.StatusGone {
		t.Errorf("revoked invite after a restart = %d %s; want 410", status, body)
	}
	if list := inviteList(t, b.http(), owner); len(list) != 1 || list[0].ID != keptID {
		t.Errorf("listinvites after a restart = %+v; want only the invite not revoked", list)
	}
	if reason := publishAs(t, b.url, guest); !strings.Contains(reason, "not a relay member") {
		t.Errorf("key of the refused redemption: %q; want not a relay member", reason)
	}
	if status, body := redeemInvite(t, b.http(), guest, kept, nip98.Options{}); status != http.StatusOK {
		t.Errorf("the invite not revoked = %d %s; want 200", status, body)
	}
}
