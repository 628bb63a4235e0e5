package relay

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// FuzzTagRole: any p tag gives a known role or a reason, never both; each
// form the relay and the CLI write reads back as the role written.
func FuzzTagRole(f *testing.F) {
	pk := "5eee46b672ebb3b32b13380693296a4d1e85f9bd7af249bcc8b022bf17b088ca"
	f.Add("", "guest", "", 4)
	f.Add("admin", "", "", 3)
	f.Add("wss://relay.example", "bot", "", 4)
	f.Add("", "", "member", 2)
	f.Add("admin", "guest", "", 4)
	f.Add("root", "", "", 3)
	f.Fuzz(func(t *testing.T, a, b, roleTag string, n int) {
		tag := nostr.Tag{"p", pk, a, b}[:2+((n%3)+3)%3]
		role, reason := tagRole(tag, roleTag)
		if (role == "") == (reason == "") {
			t.Fatalf("tagRole(%q, %q) = %q, %q; want exactly one", tag, roleTag, role, reason)
		}
		if role != "" && !knownRole(role) {
			t.Fatalf("tagRole(%q, %q) = unknown role %q", tag, roleTag, role)
		}
	})
	for _, r := range []string{roleOwner, roleAdmin, roleMember, roleGuest, roleBot} {
		for _, tc := range []struct {
			tag     nostr.Tag
			roleTag string
		}{{nostr.Tag{"p", pk, "", r}, ""}, {nostr.Tag{"p", pk, r}, ""}, {nostr.Tag{"p", pk}, r}, {nostr.Tag{"p", pk, "wss://x", r}, ""}} {
			if got, reason := tagRole(tc.tag, tc.roleTag); got != r {
				f.Errorf("tagRole(%q, %q) = %q, %q; want %q", tc.tag, tc.roleTag, got, reason, r)
			}
		}
	}
}
