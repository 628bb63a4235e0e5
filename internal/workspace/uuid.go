package workspace

import (
	"crypto/rand"
	"encoding/hex"
)

// IsUUID reports whether s is a hyphenated UUID, 8-4-4-4-12 hex digits
// of either case: how a channel id may be written in configuration or on
// a command line.
func IsUUID(s string) bool { return uuidShape(s, true) }

// IsChannelID reports whether s is a channel id as the relay stores and
// names it: a hyphenated UUID in lower case.
func IsChannelID(s string) bool { return uuidShape(s, false) }

func uuidShape(s string, upper bool) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || upper && c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// NewUUID returns a random version 4 UUID (RFC 9562) in lower case.
// crypto/rand.Read does not fail (Go 1.24 and later: it crashes the
// program rather than return short), so neither does NewUUID.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return FormatUUID(b)
}

// FormatUUID writes 16 bytes in the hyphenated 8-4-4-4-12 form, in lower
// case; it sets no version bits (a name derived from a hash keeps all of
// the hash).
func FormatUUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
