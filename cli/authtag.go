package cli

import (
	"fmt"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
)

// authTag is a validated NIP-OA owner attestation (spec §1.6).
type authTag struct {
	tag   nipoa.Tag
	Owner string // the owner's pubkey, lower-case hex
}

// Tag returns the 4-element tag appended to every event the CLI signs.
func (a *authTag) Tag() []string { return a.tag.Nostr() }

// JSON returns the canonical JSON array sent as the x-auth-tag header.
func (a *authTag) JSON() string { return a.tag.JSON() }

// parseAuthTag parses the JSON form, or the hand-typed shorthand
// `[auth,<hex>,,<hex>]`, and checks its shape (not the signature).
func parseAuthTag(raw string) (*authTag, error) {
	t, err := nipoa.Parse(nipoa.ExpandShorthand(raw))
	if err != nil {
		return nil, err
	}
	return &authTag{tag: t, Owner: t.Owner.Hex()}, nil
}

// verify checks the owner's signature over the agent's pubkey and the
// conditions, and that the owner is not the agent itself.
func (a *authTag) verify(agent string) error {
	pk, err := nostrkey.ParsePublic(agent)
	if err != nil {
		return fmt.Errorf("agent key: %w", err)
	}
	return a.tag.Verify(pk)
}
