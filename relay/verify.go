package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"
)

// Checking an event's id and signature is most of what an ephemeral event
// (typing, presence, turn status) costs the relay. go-nostr's CheckID and
// CheckSignature serialise and hash the event once each and parse the
// author's key on every call; verifyEvent does the same checks with one
// serialisation, and the keys of recent authors (a workspace has few)
// parsed once.

// maxParsedKeys bounds the parsed author keys kept: enough for a
// workspace's people and agents; past it the cache starts over, so a
// flood of new keys costs a parse each, as without the cache.
const maxParsedKeys = 4096

// parsedKeys caches parsed x-only public keys by their hex.
type parsedKeys struct {
	mu sync.Mutex
	m  map[string]*btcec.PublicKey
}

func (p *parsedKeys) get(hexKey string) (*btcec.PublicKey, error) {
	p.mu.Lock()
	pk := p.m[hexKey]
	p.mu.Unlock()
	if pk != nil {
		return pk, nil
	}
	raw, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, fmt.Errorf("event pubkey %q is invalid hex: %w", hexKey, err)
	}
	if pk, err = schnorr.ParsePubKey(raw); err != nil {
		return nil, fmt.Errorf("event has invalid pubkey %q: %w", hexKey, err)
	}
	p.mu.Lock()
	if p.m == nil || len(p.m) >= maxParsedKeys {
		p.m = make(map[string]*btcec.PublicKey)
	}
	p.m[hexKey] = pk
	p.mu.Unlock()
	return pk, nil
}

// verifyEvent reports whether ev's id is the hash of its serialisation
// (idOK) and its signature verifies under its pubkey (sigOK); err is set
// when the pubkey or the signature cannot be read at all.
func (r *Relay) verifyEvent(ev *nostr.Event) (idOK, sigOK bool, err error) {
	hash := sha256.Sum256(ev.Serialize())
	if hex.EncodeToString(hash[:]) != ev.ID {
		return false, false, nil
	}
	pk, err := r.keys.get(ev.PubKey)
	if err != nil {
		return true, false, err
	}
	raw, err := hex.DecodeString(ev.Sig)
	if err != nil {
		return true, false, fmt.Errorf("signature %q is invalid hex: %w", ev.Sig, err)
	}
	sig, err := schnorr.ParseSignature(raw)
	if err != nil {
		return true, false, fmt.Errorf("parse signature: %w", err)
	}
	return true, sig.Verify(hash[:], pk), nil
}
