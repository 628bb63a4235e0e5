package nostrkey

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
)

// SignEvent sets evt's PubKey, ID (NIP-01) and Sig (BIP-340, fresh
// auxiliary randomness). A nil Tags becomes empty, as NIP-01 serialises it.
func (s *Secret) SignEvent(evt *nostr.Event) error {
	if s == nil || !s.live {
		return ErrZeroed
	}
	if evt.Tags == nil {
		evt.Tags = nostr.Tags{}
	}
	evt.PubKey = s.pub.Hex()
	id := sha256.Sum256(evt.Serialize())
	sig, err := s.Sign(id[:])
	if err != nil {
		return fmt.Errorf("nostrkey: sign event kind %d: %w", evt.Kind, err)
	}
	evt.ID = hex.EncodeToString(id[:])
	evt.Sig = hex.EncodeToString(sig[:])
	return nil
}

// CheckEvent reports whether evt's ID hashes its content (NIP-01) and Sig is
// a valid signature by PubKey over that ID.
func CheckEvent(evt *nostr.Event) bool {
	pub, err := ParsePublic(evt.PubKey)
	if err != nil {
		return false
	}
	id, err := hex.DecodeString(evt.ID)
	if err != nil || len(id) != 32 {
		return false
	}
	sig, err := hex.DecodeString(evt.Sig)
	if err != nil || len(sig) != 64 {
		return false
	}
	if sha256.Sum256(evt.Serialize()) != [32]byte(id) {
		return false
	}
	return pub.Verify(id, sig)
}
