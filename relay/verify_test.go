package relay

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestVerifyEventAgreesWithGoNostr: verifyEvent, with its key cache warm
// and cold, gives go-nostr's CheckID and CheckSignature verdicts on good
// events and on every kind of forgery.
func TestVerifyEventAgreesWithGoNostr(t *testing.T) {
	a, b := newKey(t), newKey(t)
	good := signed(t, a, 1, "hello")
	other := signed(t, b, 1, "hello")
	cases := map[string]func(*nostr.Event){
		"good":                        func(*nostr.Event) {},
		"content changed":             func(e *nostr.Event) { e.Content = "hellO" },
		"id of another":               func(e *nostr.Event) { e.ID = other.ID },
		"signature of another":        func(e *nostr.Event) { e.Sig = other.Sig },
		"pubkey of another, id fixed": func(e *nostr.Event) { e.PubKey = b.pk; e.ID = e.GetID() },
		"pubkey not hex":              func(e *nostr.Event) { e.PubKey = strings.Repeat("z", 64); e.ID = e.GetID() },
		"pubkey off curve":            func(e *nostr.Event) { e.PubKey = strings.Repeat("f", 64); e.ID = e.GetID() },
		"signature not hex":           func(e *nostr.Event) { e.Sig = strings.Repeat("z", 128) },
		"signature short":             func(e *nostr.Event) { e.Sig = e.Sig[:64] },
		"signature flipped": func(e *nostr.Event) { // a different first digit, whatever it was
			d := "0"
			if e.Sig[0] == '0' {
				d = "1"
			}
			e.Sig = d + e.Sig[1:]
		},
	}
	r := &Relay{}
	for round := range 2 { // cold cache, then warm
		for name, mutate := range cases {
			ev := good
			ev.Tags = append(nostr.Tags{}, good.Tags...)
			mutate(&ev)
			idOK, sigOK, err := r.verifyEvent(&ev)
			wantSig, wantErr := ev.CheckSignature()
			if idOK != ev.CheckID() || (idOK && (sigOK != wantSig || (err != nil) != (wantErr != nil))) {
				t.Errorf("round %d, %s: verifyEvent = %v %v %v; go-nostr says id %v, signature %v %v", round, name, idOK, sigOK, err, ev.CheckID(), wantSig, wantErr)
			}
			if name != "good" && idOK && sigOK {
				t.Errorf("round %d, %s: forgery accepted", round, name)
			}
		}
	}
}
