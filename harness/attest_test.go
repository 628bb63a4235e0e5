package harness

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/nostrgit/nipoa"

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
