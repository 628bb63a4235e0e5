// Package nipgs is NIP-GS v1, git commit and tag signatures made with a
// Nostr key: the armored envelope git stores, its strict parser, and the
// signing hash. git-sign-nostr (nostrgit) signs and verifies with it, and
// buzz-relay verifies the commits it shows.
//
// It does not read keys, talk to git or decide trust: a signature that
// verifies says which key signed the payload, nothing about whether that
// key should be believed.
package nipgs

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"unicode/utf8"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
)

// Limits of nostrgit-cli.md §5.5: what a stored signature may hold.
const (
	// MaxArmorLineBytes caps the base64 line of the armor (spec: 4096).
	MaxArmorLineBytes = 4096
	// MaxEnvelopeBytes caps the decoded JSON envelope (spec: 2048).
	MaxEnvelopeBytes = 2048
)

// Armor lines of a NIP-GS signature. The BEGIN line is also what makes git
// treat a stored signature as x509 and hand it to gpg.x509.program.
const (
	ArmorBegin = "-----BEGIN SIGNED MESSAGE-----"
	ArmorEnd   = "-----END SIGNED MESSAGE-----"
)

// hashPrefix starts the NIP-GS v1 signing hash.
const hashPrefix = "nostr:git:v1:"

// Envelope is a NIP-GS v1 signature: who signed, the BIP-340 signature, the
// signing time and, optionally, the owner attestation bound into the hash.
type Envelope struct {
	PK  nostrkey.PublicKey
	Sig [64]byte
	T   uint32
	OA  *OA // nil when absent
}

// OA holds the three value fields of a NIP-OA tag as they travel in `oa`.
type OA struct{ Owner, Conditions, Sig string }

// JSON returns the canonical envelope text: compact, keys v, pk, sig, t[, oa]
// in that order, built by formatting so the bytes are fixed.
func (e *Envelope) JSON() []byte {
	var b bytes.Buffer
	b.WriteString(`{"v":1,"pk":"`)
	b.WriteString(e.PK.Hex())
	b.WriteString(`","sig":"`)
	b.WriteString(hex.EncodeToString(e.Sig[:]))
	b.WriteString(`","t":`)
	b.WriteString(strconv.FormatUint(uint64(e.T), 10))
	if e.OA != nil {
		// The three fields are validated hex and condition grammar: nothing
		// in them needs JSON escaping.
		fmt.Fprintf(&b, `,"oa":["%s","%s","%s"]`, e.OA.Owner, e.OA.Conditions, e.OA.Sig)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Armor returns the three LF-terminated lines git stores as the signature.
func (e *Envelope) Armor() []byte {
	j := e.JSON()
	out := make([]byte, 0, len(ArmorBegin)+len(ArmorEnd)+base64.StdEncoding.EncodedLen(len(j))+3)
	out = append(out, ArmorBegin+"\n"...)
	out = base64.StdEncoding.AppendEncode(out, j)
	out = append(out, '\n')
	out = append(out, ArmorEnd+"\n"...)
	return out
}

// Verify reports whether e's signature holds over payload, the signed
// object as git hands it to the signer (for a commit: the object without
// its gpgsig header).
func (e *Envelope) Verify(payload []byte) bool {
	h := NewHash(e.T, e.OA)
	h.Write(payload)
	return e.PK.Verify(h.Sum(nil), e.Sig[:])
}

// OA statuses, as git-sign-nostr's nostr-oa-status notation says them.
const (
	OANone    = "none"
	OAValid   = "valid"
	OAInvalid = "invalid_signature"
	OAExpired = "expired"
)

// OAStatus says whether e's owner attestation, if any, holds: its
// signature over the signer's key, and its time clauses at the signing
// time.
func (e *Envelope) OAStatus() string {
	if e.OA == nil {
		return OANone
	}
	tag, err := nipoa.FromParts(e.OA.Owner, e.OA.Conditions, e.OA.Sig)
	switch {
	case err != nil || tag.Verify(e.PK) != nil:
		return OAInvalid
	case tag.CheckTime(int64(e.T)) != nil:
		return OAExpired
	}
	return OAValid
}

// SigTime is unix as a signature's time, an unsigned 32-bit count of
// seconds; a time outside that range is refused.
func SigTime(unix int64) (uint32, error) {
	if unix < 0 || unix > 1<<32-1 {
		return 0, fmt.Errorf("time %d does not fit the u32 signature time", unix)
	}
	return uint32(unix), nil
}

// Seal signs h — NewHash(t, oa) with the payload written into it — with
// key (fresh auxiliary randomness, as NIP-GS asks) and returns the
// envelope git stores.
func Seal(key *nostrkey.Secret, h hash.Hash, t uint32, oa *OA) (*Envelope, error) {
	sig, err := key.Sign(h.Sum(nil))
	if err != nil {
		return nil, err
	}
	return &Envelope{PK: key.Public(), Sig: sig, T: t, OA: oa}, nil
}

// NewHash starts H = SHA256("nostr:git:v1:" || t || ":" || [oa0 ":" oa1 ":"
// oa2 ":"] || payload); the caller writes the payload.
func NewHash(t uint32, a *OA) hash.Hash {
	h := sha256.New()
	h.Write([]byte(hashPrefix + strconv.FormatUint(uint64(t), 10) + ":"))
	if a != nil {
		h.Write([]byte(a.Owner + ":" + a.Conditions + ":" + a.Sig + ":"))
	}
	return h
}

// MalformedError is why a signature could not be read. PK is the signer's
// key when a best-effort scan found it, for the ERRSIG line.
type MalformedError struct {
	PK     string
	Reason string
}

func (e *MalformedError) Error() string { return "malformed signature: " + e.Reason }

// ParseArmor reads a stored signature strictly (nostrgit-cli.md §5.5
// steps 2–6): the exact armor, standard base64, canonical compact JSON
// with only v=1, pk, sig, t and an optional valid oa, and pk on the curve.
func ParseArmor(data []byte) (*Envelope, error) {
	fail := func(pk, format string, args ...any) (*Envelope, error) {
		return nil, &MalformedError{PK: pk, Reason: fmt.Sprintf(format, args...)}
	}
	body, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		return fail("", "armor does not end with a newline")
	}
	lines := bytes.Split(body, []byte("\n"))
	if len(lines) != 3 {
		return fail("", "armor has %d lines, want 3", len(lines))
	}
	for i, l := range lines {
		if n := len(l); n > 0 && (l[n-1] == ' ' || l[n-1] == '\t' || l[n-1] == '\r') {
			return fail("", "armor line %d ends in whitespace or CR", i+1)
		}
	}
	if string(lines[0]) != ArmorBegin || string(lines[2]) != ArmorEnd {
		return fail("", "armor lacks the %s / %s lines", ArmorBegin, ArmorEnd)
	}
	b64 := lines[1]
	if len(b64) > MaxArmorLineBytes {
		return fail("", "base64 line is %d bytes, over %d", len(b64), MaxArmorLineBytes)
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Strict().Decode(raw, b64)
	if err != nil {
		return fail("", "not standard base64")
	}
	raw = raw[:n]
	if len(raw) > MaxEnvelopeBytes {
		return fail("", "envelope is %d bytes, over %d", len(raw), MaxEnvelopeBytes)
	}
	pk := scanPK(raw)
	if !utf8.Valid(raw) {
		return fail(pk, "envelope is not UTF-8")
	}
	if whitespaceOutsideStrings(raw) {
		return fail(pk, "envelope JSON is not compact")
	}
	var f struct {
		V   json.RawMessage `json:"v"`
		PK  *string         `json:"pk"`
		Sig *string         `json:"sig"`
		T   json.RawMessage `json:"t"`
		OA  *[]string       `json:"oa"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fail(pk, "envelope is not the v1 JSON object: %v", err)
	}
	if dec.More() {
		return fail(pk, "trailing data after the envelope")
	}
	if string(f.V) != "1" {
		return fail(pk, "unsupported version %.16s (only v1 is known)", f.V)
	}
	if f.PK == nil || !nostrkey.IsLowerHex(*f.PK, 64) {
		return fail(pk, "pk is not 64 lower-case hex characters")
	}
	if f.Sig == nil || !nostrkey.IsLowerHex(*f.Sig, 128) {
		return fail(pk, "sig is not 128 lower-case hex characters")
	}
	t, err := strconv.ParseUint(string(f.T), 10, 32)
	if err != nil {
		return fail(pk, "t %.24s is not an integer from 0 to 4294967295", f.T)
	}
	e := &Envelope{T: uint32(t)}
	hex.Decode(e.PK[:], []byte(*f.PK))
	hex.Decode(e.Sig[:], []byte(*f.Sig))
	if f.OA != nil {
		a := *f.OA
		if len(a) != 3 {
			return fail(pk, "oa has %d elements, want 3", len(a))
		}
		tag, err := nipoa.FromParts(a[0], a[1], a[2])
		if err != nil {
			return fail(pk, "oa: %v", err)
		}
		if tag.Owner == e.PK {
			return fail(pk, "oa owner is the signer itself")
		}
		e.OA = &OA{a[0], a[1], a[2]}
	}
	if !bytes.Equal(e.JSON(), raw) {
		return fail(pk, "envelope is not in canonical form (key order, duplicates or number format)")
	}
	if !e.PK.Valid() {
		return fail(pk, "pk is not a point on secp256k1")
	}
	return e, nil
}

// scanPK finds a 64-lower-hex value after `"pk":"` for the ERRSIG line, or
// returns "" when there is none.
func scanPK(raw []byte) string {
	_, after, ok := bytes.Cut(raw, []byte(`"pk":"`))
	if !ok || len(after) < 64 || !nostrkey.IsLowerHex(string(after[:64]), 64) {
		return ""
	}
	return string(after[:64])
}

func whitespaceOutsideStrings(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		}
	}
	return false
}
