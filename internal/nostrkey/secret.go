package nostrkey

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// ErrZeroed is returned when a Secret is used after Zero.
var ErrZeroed = errors.New("nostrkey: secret key was wiped")

// redacted is what a Secret prints as, everywhere.
const redacted = "[redacted nostr secret key]"

// KeyError reports a private key that does not parse. It never holds the key.
type KeyError struct {
	// Source names where the key came from (an env var, a flag, "keyfile
	// PATH"); empty when the caller parsed a bare value.
	Source string
	// Reason says what is wrong, without quoting the key.
	Reason string
}

func (e *KeyError) Error() string {
	if e.Source == "" {
		return "invalid nostr private key: " + e.Reason
	}
	return "invalid nostr private key in " + e.Source + ": " + e.Reason
}

// Secret is a BIP-340 private key. Its zero value holds no key. Printing it
// with fmt or logging it with log/slog shows a redaction marker, never the
// key. Call Zero when done; use a *Secret so that copies are not left behind.
type Secret struct {
	k    [32]byte
	pub  PublicKey
	live bool
}

// ParseSecret parses a private key given as nsec1… (NIP-19) or as 64 hex
// characters. Surrounding whitespace, such as a file's trailing newline, is
// ignored. The error says what is wrong without repeating the input.
func ParseSecret(s string) (*Secret, error) {
	return ParseSecretBytes([]byte(s))
}

// ParseSecretBytes is ParseSecret for bytes, so callers reading a file can
// wipe their buffer afterwards. b is not modified or retained.
func ParseSecretBytes(b []byte) (*Secret, error) {
	b = bytes.TrimSpace(b)
	var k [32]byte
	defer clear(k[:])
	switch {
	case len(b) == 0:
		return nil, &KeyError{Reason: "empty value"}
	case hasPrefixFold(b, "nsec1"):
		prefix, v, err := nip19.Decode(strings.ToLower(string(b)))
		if err != nil || prefix != "nsec" {
			return nil, &KeyError{Reason: "not a valid nsec1 bech32 string"}
		}
		h, _ := v.(string)
		if _, err := hex.Decode(k[:], []byte(h)); err != nil || len(h) != 64 {
			return nil, &KeyError{Reason: "nsec does not hold 32 bytes"}
		}
	case len(b) == 64:
		if _, err := hex.Decode(k[:], b); err != nil {
			return nil, &KeyError{Reason: "64 characters but not all hex digits"}
		}
	default:
		return nil, &KeyError{Reason: fmt.Sprintf("expected nsec1… or 64 hex characters, got %d characters", len(b))}
	}
	return fromBytes(&k)
}

// NewSecret makes a fresh random key.
func NewSecret() (*Secret, error) {
	var k [32]byte
	defer clear(k[:])
	for range 8 { // a random 32 bytes is out of range with odds ~2^-128
		if _, err := rand.Read(k[:]); err != nil {
			return nil, fmt.Errorf("nostrkey: generate key: %w", err)
		}
		if s, err := fromBytes(&k); err == nil {
			return s, nil
		}
	}
	return nil, errors.New("nostrkey: generate key: no valid scalar drawn")
}

func fromBytes(k *[32]byte) (*Secret, error) {
	var sc btcec.ModNScalar
	overflow := sc.SetBytes(k)
	defer sc.Zero()
	if overflow != 0 || sc.IsZero() {
		return nil, &KeyError{Reason: "value is not a valid secp256k1 scalar (zero or not below the curve order)"}
	}
	s := &Secret{k: *k, live: true}
	s.pub = xOnlyPublic(&sc)
	return s, nil
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// Public returns the x-only public key of s. It is the zero PublicKey after
// Zero.
func (s *Secret) Public() PublicKey {
	if s == nil || !s.live {
		return PublicKey{}
	}
	return s.pub
}

// Zero wipes the key. Later signing fails with ErrZeroed.
func (s *Secret) Zero() {
	if s == nil {
		return
	}
	clear(s.k[:])
	s.pub = PublicKey{}
	s.live = false
}

// Equal reports whether s and o hold the same key, in constant time.
func (s *Secret) Equal(o *Secret) bool {
	if s == nil || o == nil || !s.live || !o.live {
		return false
	}
	return subtle.ConstantTimeCompare(s.k[:], o.k[:]) == 1
}

// Sign makes a BIP-340 signature over a 32-byte hash with fresh auxiliary
// randomness.
func (s *Secret) Sign(hash []byte) ([64]byte, error) {
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		return [64]byte{}, fmt.Errorf("nostrkey: sign: read randomness: %w", err)
	}
	return s.SignAux(hash, aux)
}

// SignAux makes a BIP-340 signature over a 32-byte hash with the given
// auxiliary randomness. Use it with zero aux only to reproduce test vectors.
func (s *Secret) SignAux(hash []byte, aux [32]byte) ([64]byte, error) {
	var out [64]byte
	if s == nil || !s.live {
		return out, ErrZeroed
	}
	if len(hash) != 32 {
		return out, fmt.Errorf("nostrkey: sign: hash is %d bytes, want 32", len(hash))
	}
	var d btcec.ModNScalar
	d.SetBytes(&s.k)
	defer d.Zero()
	return signBIP340(&d, hash, &aux)
}

// AppendHex appends the key as 64 lower-case hex characters to dst, for
// writing a key file from a buffer the caller wipes. It is the one way to
// get the key's text out.
func (s *Secret) AppendHex(dst []byte) ([]byte, error) {
	if s == nil || !s.live {
		return dst, ErrZeroed
	}
	return hex.AppendEncode(dst, s.k[:]), nil
}

// The redaction methods have value receivers so that a Secret value, not
// only a pointer, prints redacted too.

// String returns a redaction marker, never the key.
func (Secret) String() string { return redacted }

// GoString returns a redaction marker, so %#v does not show the key.
func (Secret) GoString() string { return redacted }

// LogValue implements slog.LogValuer: logs show a redaction marker.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Format implements fmt.Formatter so every verb, %x and %d included, prints
// the redaction marker.
func (Secret) Format(f fmt.State, _ rune) { fmt.Fprint(f, redacted) }
