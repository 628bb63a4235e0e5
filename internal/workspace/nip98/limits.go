package nip98

import "time"

// MaxSkew is how far created_at may lie from the server's clock, either way:
// NIP-98 and the relay both use 60 s, which is all a token lives.
const MaxSkew = 60 * time.Second

// maxHeaderBytes caps the Authorization header we decode. An event with u,
// method, payload, nonce and a NIP-OA auth tag is about 1.5 KiB of base64;
// anything past 16 KiB is not a token.
const maxHeaderBytes = 16 << 10

// DefaultSeenTTL is how long a claimed event id is remembered: twice MaxSkew,
// so a token cannot outlive its entry on either side of the window (the spec
// asks for at least 120 s).
const DefaultSeenTTL = 2 * MaxSkew

// DefaultSeenMax bounds a SeenCache; at 120 s per entry it absorbs about 500
// authenticated requests a second before the oldest entries are dropped.
const DefaultSeenMax = 1 << 16
