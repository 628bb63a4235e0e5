package relay

import (
	"encoding/json"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestNegentropyOpenLeavesRelayServing: the relay does not serve NIP-77;
// a NEG-OPEN (whose filter once reached the REQ checks without a
// subscription id, and crashed the relay) must get a NOTICE and leave the
// relay serving the same connection and new ones.
func TestNegentropyOpenLeavesRelayServing(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--open")
	w := dialWS(t, url, nil)
	if label, _ := w.next(); label != "AUTH" {
		t.Fatalf("first message is %s, not an AUTH challenge", label)
	}
	w.send("NEG-OPEN", "neg", nostr.Filter{Kinds: []int{1}}, "6100")
	if label, f := w.next(); label != "NOTICE" {
		t.Errorf("NEG-OPEN answered with %s %s; want a NOTICE", label, f)
	}
	for _, w := range []*wsClient{w, dialWS(t, url, nil)} {
		w.send("REQ", "after", nostr.Filter{Kinds: []int{1}, Limit: 1})
		for {
			label, f := w.next()
			var sub string
			if (label == "EOSE" || label == "CLOSED") && json.Unmarshal(f[0], &sub) == nil && sub == "after" {
				break
			}
		}
	}
}
