package nostrkey

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/nbd-wtf/go-nostr"
)

func unhex32(t *testing.T, s string) [32]byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex %q", s)
	}
	return [32]byte(b)
}

// TestBIP340Vector0 is test vector 0 of BIP-340 (secret key 3, zero aux and
// message).
func TestBIP340Vector0(t *testing.T) {
	var d secp256k1.ModNScalar
	d.SetInt(3)
	if got, want := xOnlyPublic(&d), unhex32(t, "F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9"); got != want {
		t.Fatalf("public key = %x; want %x", got, want)
	}
	var aux, msg [32]byte
	sig, err := signBIP340(&d, msg[:], &aux)
	if err != nil {
		t.Fatal(err)
	}
	want := "E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA821525F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0"
	if got := strings.ToUpper(hex.EncodeToString(sig[:])); got != want {
		t.Fatalf("signature = %s; want %s", got, want)
	}
}

// TestBIP340AgainstBtcec signs and verifies random keys and messages both
// ways against the library go-nostr signs with.
func TestBIP340AgainstBtcec(t *testing.T) {
	for range 64 {
		var kb, aux, msg [32]byte
		rand.Read(kb[:])
		rand.Read(aux[:])
		rand.Read(msg[:])
		var d secp256k1.ModNScalar
		if d.SetBytes(&kb) != 0 || d.IsZero() {
			continue
		}
		priv, _ := btcec.PrivKeyFromBytes(kb[:])
		pub := xOnlyPublic(&d)
		if want := schnorr.SerializePubKey(priv.PubKey()); string(pub[:]) != string(want) {
			t.Fatalf("public key of %x = %x; btcec says %x", kb, pub, want)
		}
		ours, err := signBIP340(&d, msg[:], &aux)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := schnorr.Sign(priv, msg[:], schnorr.CustomNonce(aux))
		if err != nil {
			t.Fatal(err)
		}
		if string(ours[:]) != string(theirs.Serialize()) {
			t.Fatalf("signatures differ for key %x msg %x aux %x", kb, msg, aux)
		}
		pk, _ := schnorr.ParsePubKey(pub[:])
		if parsed, err := schnorr.ParseSignature(ours[:]); err != nil || !parsed.Verify(msg[:], pk) {
			t.Fatalf("btcec rejects our signature: %v", err)
		}
		if !verifyBIP340(&pub, msg[:], &ours) {
			t.Fatal("we reject our own signature")
		}
		bad := ours
		bad[63] ^= 1
		if verifyBIP340(&pub, msg[:], &bad) {
			t.Fatal("verified a signature with a flipped bit")
		}
		other := msg
		other[0] ^= 0x80
		if verifyBIP340(&pub, other[:], &ours) {
			t.Fatal("verified a signature over another message")
		}
	}
}

func TestBIP340RejectsOutOfRange(t *testing.T) {
	var d secp256k1.ModNScalar
	d.SetInt(7)
	pub := xOnlyPublic(&d)
	var aux, msg [32]byte
	sig, _ := signBIP340(&d, msg[:], &aux)
	// s at or above the group order.
	high := sig
	copy(high[32:], []byte(strings.Repeat("\xff", 32)))
	if verifyBIP340(&pub, msg[:], &high) {
		t.Error("accepted s >= n")
	}
	// A public key that is not on the curve (x = 5 has no square root).
	var notOnCurve [32]byte
	notOnCurve[31] = 5
	if verifyBIP340(&notOnCurve, msg[:], &sig) {
		t.Error("accepted a public key off the curve")
	}
}

func BenchmarkSignFresh(b *testing.B) {
	var d secp256k1.ModNScalar
	d.SetInt(12345)
	var aux, msg [32]byte
	for b.Loop() {
		signBIP340(&d, msg[:], &aux)
	}
}

func TestCheckEvent(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ev := nostr.Event{Kind: 1, Content: "hello", CreatedAt: 1700000000}
	if err := s.SignEvent(&ev); err != nil {
		t.Fatal(err)
	}
	if !CheckEvent(&ev) {
		t.Fatal("CheckEvent rejects a freshly signed event")
	}
	if ok, err := ev.CheckSignature(); !ok || err != nil {
		t.Fatalf("go-nostr rejects our event: %v", err)
	}
	changed := ev
	changed.Content = "hellO"
	if CheckEvent(&changed) {
		t.Error("CheckEvent accepts changed content under the old id")
	}
	forged := ev
	forged.Sig = strings.Repeat("0", 128)
	if CheckEvent(&forged) {
		t.Error("CheckEvent accepts a zero signature")
	}
}

// TestBIP340TableSwitchAgrees: past tableAfterBaseMults the base point is
// multiplied with the precomputed table; keys and signatures must come out
// the same as the generic way's, and verify under either.
func TestBIP340TableSwitchAgrees(t *testing.T) {
	saved := baseMults.Load()
	defer baseMults.Store(saved)
	for range 16 {
		var kb, aux, msg [32]byte
		rand.Read(kb[:])
		rand.Read(aux[:])
		rand.Read(msg[:])
		var d secp256k1.ModNScalar
		if d.SetBytes(&kb) != 0 || d.IsZero() {
			continue
		}
		baseMults.Store(0)
		pubG := xOnlyPublic(&d)
		sigG, errG := signBIP340(&d, msg[:], &aux)
		baseMults.Store(tableAfterBaseMults)
		pubT := xOnlyPublic(&d)
		sigT, errT := signBIP340(&d, msg[:], &aux)
		if errG != nil || errT != nil {
			t.Fatalf("sign: generic %v, table %v", errG, errT)
		}
		if pubG != pubT || sigG != sigT {
			t.Fatalf("key %x: generic and table disagree: public %x / %x, signature %x / %x", kb, pubG, pubT, sigG, sigT)
		}
		if !verifyBIP340(&pubT, msg[:], &sigG) {
			t.Fatalf("key %x: the generic signature does not verify with the table", kb)
		}
		baseMults.Store(0)
		if !verifyBIP340(&pubG, msg[:], &sigT) {
			t.Fatalf("key %x: the table's signature does not verify the generic way", kb)
		}
	}
}
