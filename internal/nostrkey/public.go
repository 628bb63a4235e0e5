package nostrkey

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// PublicKey is a BIP-340 x-only public key. The zero value is not a key.
type PublicKey [32]byte

// ParsePublic parses a public key given as npub1… (NIP-19) or 64 hex
// characters of either case, and checks that it is a point on the curve.
func ParsePublic(s string) (PublicKey, error) {
	var p PublicKey
	s = strings.TrimSpace(s)
	h := s
	switch {
	case len(s) >= 5 && strings.EqualFold(s[:5], "npub1"):
		prefix, v, err := nip19.Decode(strings.ToLower(s))
		if err != nil || prefix != "npub" {
			return p, fmt.Errorf("nostrkey: invalid public key %s: not a valid npub1 bech32 string", Shown(s))
		}
		h, _ = v.(string)
	case len(s) != 64:
		return p, fmt.Errorf("nostrkey: invalid public key %s: expected npub1… or 64 hex characters", Shown(s))
	}
	if _, err := hex.Decode(p[:], []byte(h)); err != nil || len(h) != 64 {
		return PublicKey{}, fmt.Errorf("nostrkey: invalid public key %s: not 64 hex characters", Shown(s))
	}
	if !p.Valid() {
		return PublicKey{}, fmt.Errorf("nostrkey: invalid public key %s: not a point on secp256k1", Shown(s))
	}
	return p, nil
}

// Valid reports whether p is an x-only point on secp256k1.
func (p PublicKey) Valid() bool {
	_, err := schnorr.ParsePubKey(p[:])
	return err == nil
}

// Hex returns p as 64 lower-case hex characters.
func (p PublicKey) Hex() string { return hex.EncodeToString(p[:]) }

// String returns p.Hex().
func (p PublicKey) String() string { return p.Hex() }

// Npub returns p in NIP-19 npub1… form.
func (p PublicKey) Npub() string {
	s, err := nip19.EncodePublicKey(p.Hex())
	if err != nil { // cannot happen for 32 bytes of hex
		return ""
	}
	return s
}

// IsZero reports whether p is the zero value.
func (p PublicKey) IsZero() bool { return p == PublicKey{} }

// Verify reports whether sig is a valid BIP-340 signature by p over the
// 32-byte hash.
func (p PublicKey) Verify(hash []byte, sig []byte) bool {
	if len(hash) != 32 || len(sig) != 64 {
		return false
	}
	return verifyBIP340((*[32]byte)(&p), hash, (*[64]byte)(sig))
}

// NpubToHex converts an npub1… string to 64 lower-case hex characters.
func NpubToHex(npub string) (string, error) {
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(npub)), "npub1") {
		return "", fmt.Errorf("nostrkey: %s is not an npub1… key", Shown(npub))
	}
	p, err := ParsePublic(npub)
	if err != nil {
		return "", err
	}
	return p.Hex(), nil
}

// HexToNpub converts a 64-hex public key to its npub1… form.
func HexToNpub(h string) (string, error) {
	if len(strings.TrimSpace(h)) != 64 {
		return "", fmt.Errorf("nostrkey: %s is not a 64-hex public key", Shown(h))
	}
	p, err := ParsePublic(h)
	if err != nil {
		return "", err
	}
	return p.Npub(), nil
}

// Shown returns s quoted for an error message, unless it looks like a
// secret key (nsec1…), which is replaced by a marker: people do paste an
// nsec where a public key belongs.
func Shown(s string) string {
	t := strings.TrimSpace(s)
	if len(t) >= 5 && strings.EqualFold(t[:5], "nsec1") {
		return "(an nsec1 secret key, not shown)"
	}
	if len(t) > 100 {
		t = t[:100] + "…"
	}
	return strconv.Quote(t)
}

// IsLowerHex reports whether s is exactly n lower-case hexadecimal
// characters, the form NIP-01 gives ids, pubkeys and signatures.
func IsLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
