package harness

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// TestAttackSiblingAttestationConditionsIgnored: the author gate took any
// sibling whose profile attestation verified, so an expired one
// (created_at< in the past) or one limited to other kinds (kind=7) still
// passed owner-only mode for every message.
func TestAttackSiblingAttestationConditionsIgnored(t *testing.T) {
	expired := "kind=9&created_at<" + strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	for _, cond := range []string{expired, "kind=7"} {
		t.Run(cond, func(t *testing.T) {
			w := newWorld(t)
			a, err := nipoa.Sign(w.owner, w.sibling.Public(), cond)
			if err != nil {
				t.Fatal(err)
			}
			w.publishAs(w.sibling, &nostr.Event{Kind: 0, Content: `{"name":"sib"}`, Tags: nostr.Tags{a.Nostr()}})
			post := func(text string) {
				w.publishAs(w.owner, &nostr.Event{Kind: 9, Content: text, Tags: nostr.Tags{{"h", w.channel}, {"p", w.agent.Public().Hex()}}})
			}
			stop := w.startHarness(w.harnessEnv("echo"), "--respond-to", "owner-only", "--multiple-event-handling", "queue")
			defer stop()
			w.publishAs(w.sibling, &nostr.Event{Kind: 9, Content: "sibling outside its attestation",
				Tags: nostr.Tags{{"h", w.channel}, {"p", w.agent.Public().Hex()}}})
			post("marker")
			waitFor(t, "the owner's marker", 15*time.Second, func() bool { return promptHas(w.prompts(), "Content: marker") == 1 })
			if promptHas(w.prompts(), "Content: sibling outside its attestation") != 0 {
				t.Errorf("sibling under attestation %q passed the owner-only gate:\n%s", cond, strings.Join(w.prompts(), "\n=====\n"))
			}
		})
	}
}

// TestAuthTagLapsedWarns: a BUZZ_AUTH_TAG whose time clauses do not hold
// still names the owner, with a warning that says why and what to do.
func TestAuthTagLapsedWarns(t *testing.T) {
	owner := mustSecret(t)
	agent, err := nostrkey.ParseSecret(testKey)
	if err != nil {
		t.Fatal(err)
	}
	for cond, lapsed := range map[string]bool{
		"created_at<" + strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10):       true,
		"created_at>" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10):        true,
		"kind=9&created_at<" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10): false,
	} {
		a, err := nipoa.Sign(owner, agent.Public(), cond)
		if err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig([]string{"--relay-url", "ws://127.0.0.1:1", "--agent-command", "x"}, testEnv("BUZZ_AUTH_TAG="+a.JSON()))
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(c.Warnings, "\n"), "BUZZ_AUTH_TAG does not hold now")
		if c.Owner != owner.Public().Hex() || warned != lapsed {
			t.Errorf("BUZZ_AUTH_TAG with %q: owner %s, warnings %q; want owner %s, warned %v", cond, c.Owner, c.Warnings, owner.Public().Hex(), lapsed)
		}
	}
}
