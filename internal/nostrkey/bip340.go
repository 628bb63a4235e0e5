package nostrkey

import (
	"crypto/sha256"
	"errors"
	"sync/atomic"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// BIP-340 signing and verification, with plain scalar multiplication until
// a process has done tableAfterBaseMults base-point multiplications.
//
// The secp256k1 package's base-point multiplication first unpacks a large
// precomputed table, 5–15 ms of CPU once per process. The short-lived
// identities (git-sign-nostr, git-credential-nostr, buzz) sign or verify once
// or twice per run, so that table would be most of their run time; the
// generic multiplication costs about 20 µs a call and needs no table. A
// harness or relay signs and verifies hundreds of events a second (every
// event, reaction and NIP-98 header), where the table's 8 µs a call saves
// a third of the signing CPU; go-nostr's verifier has usually unpacked the
// table in those processes already. Like the library's own signer, these
// are not constant-time.

// The generator of secp256k1, affine coordinates, big-endian.
var (
	genX = [32]byte{
		0x79, 0xbe, 0x66, 0x7e, 0xf9, 0xdc, 0xbb, 0xac, 0x55, 0xa0, 0x62, 0x95, 0xce, 0x87, 0x0b, 0x07,
		0x02, 0x9b, 0xfc, 0xdb, 0x2d, 0xce, 0x28, 0xd9, 0x59, 0xf2, 0x81, 0x5b, 0x16, 0xf8, 0x17, 0x98,
	}
	genY = [32]byte{
		0x48, 0x3a, 0xda, 0x77, 0x26, 0xa3, 0xc4, 0x65, 0x5d, 0xa4, 0xfb, 0xfc, 0x0e, 0x11, 0x08, 0xa8,
		0xfd, 0x17, 0xb4, 0x48, 0xa6, 0x85, 0x54, 0x19, 0x9c, 0x47, 0xd0, 0x8f, 0xfb, 0x10, 0xd4, 0xb8,
	}
)

// BIP-340 tags for the tagged hashes.
const (
	tagAux       = "BIP0340/aux"
	tagNonce     = "BIP0340/nonce"
	tagChallenge = "BIP0340/challenge"
)

var errBadNonce = errors.New("nostrkey: sign: derived nonce is zero")

// baseMults counts this process's base-point multiplications, to tell a
// long-running process from a short-lived one.
var baseMults atomic.Int64

// mulG sets r to k·G in affine coordinates.
func mulG(k *secp256k1.ModNScalar, r *secp256k1.JacobianPoint) {
	if baseMults.Load() >= tableAfterBaseMults {
		secp256k1.ScalarBaseMultNonConst(k, r)
		r.ToAffine()
		return
	}
	baseMults.Add(1)
	var g secp256k1.JacobianPoint
	g.X.SetBytes(&genX)
	g.Y.SetBytes(&genY)
	g.Z.SetInt(1)
	secp256k1.ScalarMultNonConst(k, &g, r)
	r.ToAffine()
}

// taggedHash is SHA256(SHA256(tag) || SHA256(tag) || parts...).
func taggedHash(tag string, parts ...[]byte) [32]byte {
	th := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(th[:])
	h.Write(th[:])
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// xOnlyPublic returns the x coordinate of d·G; d must be a valid scalar.
func xOnlyPublic(d *secp256k1.ModNScalar) [32]byte {
	var p secp256k1.JacobianPoint
	mulG(d, &p)
	var x [32]byte
	p.X.PutBytes(&x)
	return x
}

// signBIP340 signs the 32-byte msg with secret scalar d0 and auxiliary
// randomness aux, following BIP-340's default signing algorithm, and checks
// the signature before returning it.
func signBIP340(d0 *secp256k1.ModNScalar, msg []byte, aux *[32]byte) ([64]byte, error) {
	var sig [64]byte
	var d secp256k1.ModNScalar
	d.Set(d0)
	defer d.Zero()
	var p secp256k1.JacobianPoint
	mulG(&d, &p)
	if p.Y.IsOdd() {
		d.Negate()
	}
	var px, db [32]byte
	p.X.PutBytes(&px)
	d.PutBytes(&db)
	defer clear(db[:])
	t := taggedHash(tagAux, aux[:])
	for i := range t {
		t[i] ^= db[i]
	}
	nonce := taggedHash(tagNonce, t[:], px[:], msg)
	clear(t[:])
	var k secp256k1.ModNScalar
	k.SetBytes(&nonce)
	clear(nonce[:])
	defer k.Zero()
	if k.IsZero() {
		return sig, errBadNonce
	}
	var r secp256k1.JacobianPoint
	mulG(&k, &r)
	if r.Y.IsOdd() {
		k.Negate()
	}
	var rx [32]byte
	r.X.PutBytes(&rx)
	eh := taggedHash(tagChallenge, rx[:], px[:], msg)
	var e secp256k1.ModNScalar
	e.SetBytes(&eh)
	s := e.Mul(&d).Add(&k)
	copy(sig[:32], rx[:])
	s.PutBytes((*[32]byte)(sig[32:]))
	if !verifyBIP340(&px, msg, &sig) {
		return [64]byte{}, errors.New("nostrkey: sign: produced signature does not verify")
	}
	return sig, nil
}

// verifyBIP340 reports whether sig is a valid BIP-340 signature over msg by
// the x-only public key pub.
func verifyBIP340(pub *[32]byte, msg []byte, sig *[64]byte) bool {
	var px, py secp256k1.FieldVal
	if px.SetByteSlice(pub[:]) { // not below the field prime
		return false
	}
	if !secp256k1.DecompressY(&px, false, &py) {
		return false
	}
	var r secp256k1.FieldVal
	if r.SetByteSlice(sig[:32]) {
		return false
	}
	var s secp256k1.ModNScalar
	if s.SetByteSlice(sig[32:]) { // not below the group order
		return false
	}
	eh := taggedHash(tagChallenge, sig[:32], pub[:], msg)
	var e secp256k1.ModNScalar
	e.SetBytes(&eh)
	e.Negate()
	var p, sG, eP, sum secp256k1.JacobianPoint
	p.X.Set(&px)
	p.Y.Set(&py)
	p.Z.SetInt(1)
	mulG(&s, &sG)
	secp256k1.ScalarMultNonConst(&e, &p, &eP)
	secp256k1.AddNonConst(&sG, &eP, &sum)
	if sum.Z.IsZero() || (sum.X.IsZero() && sum.Y.IsZero()) {
		return false
	}
	sum.ToAffine()
	if sum.Y.IsOdd() {
		return false
	}
	r.Normalize()
	return sum.X.Equals(&r)
}
