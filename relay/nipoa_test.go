package relay

import (
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// attest returns owner's NIP-OA tag for agent under conditions.
func attest(t *testing.T, owner, agent testKey, conditions string) nostr.Tag {
	t.Helper()
	sec, err := nostrkey.ParseSecret(owner.sk)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := nostrkey.ParsePublic(agent.pk)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := nipoa.Sign(sec, pub, conditions)
	if err != nil {
		t.Fatal(err)
	}
	return tag.Nostr()
}

// TestAgentOfMember: an agent key that is not a member gets in with its
// owner's attestation, on the websocket (auth tag in AUTH) and on the
// bridge (x-auth-tag header), and not with a forged one.
func TestAgentOfMember(t *testing.T) {
	owner, agent, stranger := newKey(t), newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	good := attest(t, owner, agent, "")
	forged := attest(t, stranger, agent, "")

	for name, tag := range map[string]nostr.Tag{"attested": good, "forged": forged} {
		c := connect(t, r.URL())
		awaitChallenge(t, c)
		if err := c.Auth(testCtx(t), func(ev *nostr.Event) error {
			ev.Tags = append(ev.Tags, tag)
			return ev.Sign(agent.sk)
		}); err != nil {
			t.Fatalf("%s AUTH: %v", name, err)
		}
		err := c.Publish(testCtx(t), signed(t, agent, 1, name))
		if name == "attested" && err != nil {
			t.Errorf("attested agent publish: %v", err)
		}
		if name == "forged" && (err == nil || !strings.Contains(err.Error(), "restricted")) {
			t.Errorf("forged attestation publish = %v; want restricted", err)
		}
	}

	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}}})
	url := r.HTTPURL() + "/query"
	hdr := nip98Header(t, agent, url, q)
	if status, _ := postHeader(t, url, hdr, q); status != 403 {
		t.Errorf("agent without x-auth-tag = %d; want 403", status)
	}
	req := func(tag nostr.Tag) int {
		t.Helper()
		b := jsonOf(t, tag)
		status, _ := postWith(t, url, nip98Header(t, agent, url, q), string(b), q)
		return status
	}
	if status := req(good); status != 200 {
		t.Errorf("agent with x-auth-tag = %d; want 200", status)
	}
	if status := req(forged); status != 403 {
		t.Errorf("agent with a forged x-auth-tag = %d; want 403", status)
	}
}
