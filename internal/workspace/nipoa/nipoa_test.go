package nipoa

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"

	"github.com/nbd-wtf/go-nostr"
)

// Vectors of the nostrgit spec §5.6.
const (
	k3       = "0000000000000000000000000000000000000000000000000000000000000003"
	k1       = "0000000000000000000000000000000000000000000000000000000000000001"
	pk1      = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
	ownerSig = "54b97dfd2b7d61c1bc1b5facab9d12a991fe0ac3dcb9044b3176f63bebb6f67340eb0ad866f2d5568b78b58ba234ee9f490f8c41e64a949c200315801520ed25"
	hashOA   = "05113b24677b87bedf6498a3addad720003e6af36820e859a26814f149f5a837"
)

func secret(t *testing.T, h string) *nostrkey.Secret {
	s, err := nostrkey.ParseSecret(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVector(t *testing.T) {
	agent := secret(t, k3).Public()
	h := Hash(agent, "")
	if got := hex.EncodeToString(h[:]); got != hashOA {
		t.Errorf("Hash = %s; want %s", got, hashOA)
	}
	sig, err := secret(t, k1).SignAux(h[:], [32]byte{})
	if err != nil || hex.EncodeToString(sig[:]) != ownerSig {
		t.Errorf("owner sig = %x, %v; want %s", sig, err, ownerSig)
	}
	tag, err := Parse(`["auth","` + pk1 + `","","` + ownerSig + `"]`)
	if err != nil {
		t.Fatal(err)
	}
	if err := tag.Verify(agent); err != nil {
		t.Errorf("Verify = %v", err)
	}
	if err := tag.Verify(tag.Owner); err == nil || !strings.Contains(err.Error(), "self-attestation") {
		t.Errorf("Verify(owner as agent) = %v; want self-attestation error", err)
	}
	if got := tag.JSON(); got != `["auth","`+pk1+`","","`+ownerSig+`"]` {
		t.Errorf("JSON = %s", got)
	}
}

func TestConditions(t *testing.T) {
	owner, agent := secret(t, k1), secret(t, k3).Public()
	tag, err := Sign(owner, agent, "kind=1&created_at<200&created_at>100")
	if err != nil {
		t.Fatal(err)
	}
	if err := tag.Verify(agent); err != nil {
		t.Fatal(err)
	}
	for ts, ok := range map[int64]bool{100: false, 101: true, 199: true, 200: false} {
		if err := tag.CheckTime(ts); (err == nil) != ok {
			t.Errorf("CheckTime(%d) = %v; want ok=%v", ts, err, ok)
		}
	}
	if !tag.KindClauses() {
		t.Error("KindClauses = false")
	}
	if !strings.Contains(tag.JSON(), "created_at<200") {
		t.Errorf("JSON escaped the conditions: %s", tag.JSON())
	}
	for _, bad := range []string{"&", "kind=", "kind=01", "kind=65536", "created_at<4294967296", "created_at=5", "kind=1&", " kind=1", "kind=-1"} {
		if _, err := Sign(owner, agent, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("conditions %q accepted", bad)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		"not-json", `["auth"]`, `["x","a","","b"]`, `{"a":1}`, `["auth",1,"",""]`,
		`["auth","` + strings.ToUpper(pk1) + `","","` + ownerSig + `"]`,
		`["auth","` + pk1 + `","","` + ownerSig[:126] + `"]`,
		`["auth","` + strings.Repeat("0", 64) + `","","` + ownerSig + `"]`,
		`["auth","` + pk1 + `","bogus","` + ownerSig + `"]`,
	} {
		if _, err := Parse(s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "invalid NIP-OA auth tag") {
			t.Errorf("Parse(%s) = %v; want invalid tag", s, err)
		}
	}
	if _, err := ParseShape(`["auth","x","","y"]`); err != nil {
		t.Errorf("ParseShape(loose values) = %v; want success", err)
	}
}

// The vector published with NIP-OA.
const (
	docAgent = "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	docTag   = `["auth","79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798","kind=1&created_at<1713957000","8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369"]`
	docHash  = "08cdecd55af4c28d3801fd69615dcf5cc04fab3bc134b38a840bf157197069a6"
)

func TestFromEvent(t *testing.T) {
	tag, err := Parse(docTag)
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := nostrkey.ParsePublic(docAgent)
	if h := Hash(agent, tag.Conditions); hex.EncodeToString(h[:]) != docHash {
		t.Errorf("Hash = %x; want %s", h, docHash)
	}
	arr, _ := ParseShape(docTag)
	evt := &nostr.Event{PubKey: docAgent, Kind: 1, CreatedAt: 1713956400, Tags: nostr.Tags{arr}}
	if got, ok, err := FromEvent(evt); err != nil || !ok || got.Owner.Hex() != pk1 {
		t.Errorf("FromEvent(doc event) = %v, %v, %v", got, ok, err)
	}
	for name, mut := range map[string]func(e *nostr.Event){
		"kind":       func(e *nostr.Event) { e.Kind = 9 },
		"late":       func(e *nostr.Event) { e.CreatedAt = 1713957000 },
		"two tags":   func(e *nostr.Event) { e.Tags = append(e.Tags, arr) },
		"short":      func(e *nostr.Event) { e.Tags = nostr.Tags{arr[:3]} },
		"other key":  func(e *nostr.Event) { e.PubKey = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9" },
		"self":       func(e *nostr.Event) { e.PubKey = pk1 },
		"bad pubkey": func(e *nostr.Event) { e.PubKey = "xyz" },
	} {
		e := *evt
		e.Tags = append(nostr.Tags{}, evt.Tags...)
		mut(&e)
		if _, _, err := FromEvent(&e); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: FromEvent = %v; want invalid", name, err)
		}
	}
	if _, ok, err := FromEvent(&nostr.Event{PubKey: docAgent}); ok || err != nil {
		t.Errorf("FromEvent(no tag) = %v, %v", ok, err)
	}
}

func TestExpandShorthand(t *testing.T) {
	short := "[auth," + pk1 + ",," + ownerSig + "]"
	if got := ExpandShorthand(short); got != `["auth","`+pk1+`","","`+ownerSig+`"]` {
		t.Errorf("ExpandShorthand = %s", got)
	}
	if _, err := Parse(ExpandShorthand(" " + short + "\n")); err != nil {
		t.Errorf("Parse(expanded) = %v", err)
	}
	for _, s := range []string{docTag, "not-json", "[a,b,c]", `[auth,"x",,y]`, ""} {
		if got := ExpandShorthand(s); got != strings.TrimSpace(s) {
			t.Errorf("ExpandShorthand(%q) = %q; want unchanged", s, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(docTag)
	f.Add(`["auth","` + pk1 + `","","` + ownerSig + `"]`)
	f.Add("[auth," + pk1 + ",kind=1," + ownerSig + "]")
	f.Fuzz(func(t *testing.T, s string) {
		tag, err := Parse(ExpandShorthand(s))
		if err != nil {
			return
		}
		again, err := Parse(tag.JSON())
		if err != nil || again != tag {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}
