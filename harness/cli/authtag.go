package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"buzzbox/internal/nostrkey"
)

// authTag is a validated NIP-OA owner attestation (spec §1.6).
type authTag struct {
	Owner      string
	Conditions string
	Sig        string
}

// Tag returns the 4-element tag appended to every event the CLI signs.
func (a *authTag) Tag() []string { return []string{"auth", a.Owner, a.Conditions, a.Sig} }

// JSON returns the canonical JSON array sent as the x-auth-tag header.
func (a *authTag) JSON() string {
	b, _ := json.Marshal(a.Tag())
	return string(b)
}

// parseAuthTag parses the JSON form, or the hand-typed shorthand
// `[auth,<hex>,,<hex>]`, and checks its shape (not the signature).
func parseAuthTag(raw string) (*authTag, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) > maxAuthTagBytes {
		return nil, fmt.Errorf("auth tag is %d bytes, over the %d-byte limit", len(raw), maxAuthTagBytes)
	}
	var parts []string
	if err := json.Unmarshal([]byte(raw), &parts); err != nil {
		// The shorthand: brackets, four comma-separated fields, no quotes.
		inner, ok := strings.CutPrefix(raw, "[")
		inner, ok2 := strings.CutSuffix(inner, "]")
		if !ok || !ok2 || strings.ContainsAny(inner, `"' `) {
			return nil, fmt.Errorf("auth tag is neither a JSON array nor [auth,<owner>,<conditions>,<sig>]")
		}
		parts = strings.Split(inner, ",")
	}
	if len(parts) != 4 || parts[0] != "auth" {
		return nil, fmt.Errorf(`auth tag must be ["auth",owner,conditions,sig] (4 strings)`)
	}
	a := &authTag{Owner: parts[1], Conditions: parts[2], Sig: parts[3]}
	if !isLowerHex(a.Owner, 64) {
		return nil, fmt.Errorf("auth tag owner must be 64 lower-case hex characters")
	}
	if !isLowerHex(a.Sig, 128) {
		return nil, fmt.Errorf("auth tag signature must be 128 lower-case hex characters")
	}
	if err := checkConditions(a.Conditions); err != nil {
		return nil, err
	}
	return a, nil
}

// checkConditions enforces the clause grammar: "" or clause(&clause)* with
// kind=<0..65535>, created_at<N, created_at>N; canonical decimals.
func checkConditions(c string) error {
	if c == "" {
		return nil
	}
	for _, clause := range strings.Split(c, "&") {
		var num string
		var max uint64
		switch {
		case strings.HasPrefix(clause, "kind="):
			num, max = clause[len("kind="):], 65535
		case strings.HasPrefix(clause, "created_at<"):
			num, max = clause[len("created_at<"):], 4294967295
		case strings.HasPrefix(clause, "created_at>"):
			num, max = clause[len("created_at>"):], 4294967295
		default:
			return fmt.Errorf("auth tag condition %q is not kind=, created_at< or created_at>", clause)
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || n > max || strconv.FormatUint(n, 10) != num {
			return fmt.Errorf("auth tag condition %q has a non-canonical or out-of-range number", clause)
		}
	}
	return nil
}

// verify checks the owner's signature over the agent's pubkey and the
// conditions, and that the owner is not the agent itself.
func (a *authTag) verify(agent string) error {
	if a.Owner == agent {
		return fmt.Errorf("owner equals the agent key (self-attestation)")
	}
	owner, err := nostrkey.ParsePublic(a.Owner)
	if err != nil {
		return fmt.Errorf("owner key: %w", err)
	}
	sig, err := hex.DecodeString(a.Sig)
	if err != nil {
		return err
	}
	h := sha256.Sum256([]byte("nostr:agent-auth:" + agent + ":" + a.Conditions))
	if !owner.Verify(h[:], sig) {
		return fmt.Errorf("owner signature does not verify")
	}
	return nil
}

func isLowerHex(s string, n int) bool {
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
