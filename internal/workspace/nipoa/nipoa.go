// Package nipoa parses and checks NIP-OA owner attestations: the `auth` tag
// `["auth", <owner hex>, <conditions>, <owner sig hex>]` by which an owner
// key vouches for an agent key. The owner signs, with BIP-340,
// SHA256("nostr:agent-auth:" || agent pubkey hex || ":" || conditions);
// conditions is "" or clauses `kind=N`, `created_at<N`, `created_at>N`
// joined by `&`.
//
// Parse checks everything that can be checked without the agent key; Verify
// adds the signature and the owner ≠ agent rule; CheckTime applies the
// created_at clauses. The package does not look up membership or bans.
package nipoa

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"buzzbox/internal/nostrkey"

	"github.com/nbd-wtf/go-nostr"
)

// TagName is the first element of the tag.
const TagName = "auth"

// Env and git config names the tag is configured under.
const (
	GitConfigAuthTag = "nostr.authtag"
)

// ErrInvalid is wrapped by every error about a malformed tag; its text is
// the phrase the spec asks messages to contain.
var ErrInvalid = errors.New("invalid NIP-OA auth tag")

// Tag is a parsed attestation.
type Tag struct {
	Owner      nostrkey.PublicKey
	Conditions string
	Sig        [64]byte
}

// ParseShape checks only that s is a JSON array of exactly four strings
// whose first is "auth", at most 1024 bytes, and returns it as a tag. The
// credential helper stops here and leaves signature checks to the relay.
func ParseShape(s string) (nostr.Tag, error) {
	if len(s) > maxTagBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrInvalid, len(s), maxTagBytes)
	}
	var arr []string
	if err := json.Unmarshal([]byte(s), &arr); err != nil {
		return nil, fmt.Errorf("%w: not a JSON array of strings: %v", ErrInvalid, err)
	}
	if len(arr) != 4 || arr[0] != TagName {
		return nil, fmt.Errorf("%w: want 4 strings starting with %q, got %d", ErrInvalid, TagName, len(arr))
	}
	return nostr.Tag(arr), nil
}

// Parse checks a tag fully: shape, owner as 64 lower-case hex on the curve,
// signature as 128 lower-case hex, and the conditions grammar.
func Parse(s string) (Tag, error) {
	arr, err := ParseShape(s)
	if err != nil {
		return Tag{}, err
	}
	return FromParts(arr[1], arr[2], arr[3])
}

// FromParts checks the three value fields of a tag (owner, conditions,
// owner signature), as they appear in a NIP-GS `oa` array.
func FromParts(owner, conditions, sig string) (Tag, error) {
	var t Tag
	if !nostrkey.IsLowerHex(owner, 64) {
		return t, fmt.Errorf("%w: owner is not 64 lower-case hex characters", ErrInvalid)
	}
	hex.Decode(t.Owner[:], []byte(owner))
	if !t.Owner.Valid() {
		return t, fmt.Errorf("%w: owner %s is not a point on secp256k1", ErrInvalid, owner)
	}
	if !nostrkey.IsLowerHex(sig, 128) {
		return t, fmt.Errorf("%w: signature is not 128 lower-case hex characters", ErrInvalid)
	}
	hex.Decode(t.Sig[:], []byte(sig))
	if err := checkConditions(conditions); err != nil {
		return t, err
	}
	t.Conditions = conditions
	return t, nil
}

// Hash returns what the owner signs for agent.
func Hash(agent nostrkey.PublicKey, conditions string) [32]byte {
	return sha256.Sum256([]byte("nostr:agent-auth:" + agent.Hex() + ":" + conditions))
}

// Sign makes an attestation by owner for agent under conditions; tests and
// tools use it, agents never do.
func Sign(owner *nostrkey.Secret, agent nostrkey.PublicKey, conditions string) (Tag, error) {
	if err := checkConditions(conditions); err != nil {
		return Tag{}, err
	}
	h := Hash(agent, conditions)
	sig, err := owner.Sign(h[:])
	if err != nil {
		return Tag{}, err
	}
	return Tag{Owner: owner.Public(), Conditions: conditions, Sig: sig}, nil
}

// Verify checks that t attests agent: owner differs from agent and the
// owner signature verifies.
func (t Tag) Verify(agent nostrkey.PublicKey) error {
	if t.Owner == agent {
		return fmt.Errorf("%w: owner and agent are the same key (self-attestation)", ErrInvalid)
	}
	h := Hash(agent, t.Conditions)
	if !t.Owner.Verify(h[:], t.Sig[:]) {
		return fmt.Errorf("%w: owner signature does not verify for agent %s", ErrInvalid, agent.Hex())
	}
	return nil
}

// CheckTime applies the created_at clauses to unix time ts: `created_at<X`
// needs ts < X, `created_at>X` needs ts > X. kind clauses are not checked
// here; KindClauses reports whether there are any.
func (t Tag) CheckTime(ts int64) error {
	for _, c := range splitClauses(t.Conditions) {
		if v, ok := strings.CutPrefix(c, "created_at<"); ok {
			x, _ := strconv.ParseInt(v, 10, 64)
			if ts >= x {
				return fmt.Errorf("attestation requires created_at < %d, got %d", x, ts)
			}
		} else if v, ok := strings.CutPrefix(c, "created_at>"); ok {
			x, _ := strconv.ParseInt(v, 10, 64)
			if ts <= x {
				return fmt.Errorf("attestation requires created_at > %d, got %d", x, ts)
			}
		}
	}
	return nil
}

// KindClauses reports whether the conditions restrict event kinds.
func (t Tag) KindClauses() bool {
	for _, c := range splitClauses(t.Conditions) {
		if strings.HasPrefix(c, "kind=") {
			return true
		}
	}
	return false
}

// Nostr returns t as an event tag.
func (t Tag) Nostr() nostr.Tag {
	return nostr.Tag{TagName, t.Owner.Hex(), t.Conditions, hex.EncodeToString(t.Sig[:])}
}

// JSON returns t as the canonical JSON array.
func (t Tag) JSON() string {
	// Every field is validated hex or grammar text with no character JSON
	// must escape; json.Marshal would escape < > & and so is not used.
	return `["` + TagName + `","` + t.Owner.Hex() + `","` + t.Conditions + `","` + hex.EncodeToString(t.Sig[:]) + `"]`
}

func splitClauses(c string) []string {
	if c == "" {
		return nil
	}
	return strings.Split(c, "&")
}

// checkConditions enforces the grammar: "" or clause(&clause)*, clause one
// of kind=<0..65535>, created_at<<0..4294967295>, created_at><0..4294967295>,
// canonical decimals.
func checkConditions(c string) error {
	for _, cl := range splitClauses(c) {
		var num string
		var max uint64
		switch {
		case strings.HasPrefix(cl, "kind="):
			num, max = cl[len("kind="):], 65535
		case strings.HasPrefix(cl, "created_at<"):
			num, max = cl[len("created_at<"):], 4294967295
		case strings.HasPrefix(cl, "created_at>"):
			num, max = cl[len("created_at>"):], 4294967295
		default:
			return fmt.Errorf("%w: unknown or empty condition clause %.40q", ErrInvalid, cl)
		}
		if !canonicalUint(num, max) {
			return fmt.Errorf("%w: condition %.40q needs a canonical decimal up to %d", ErrInvalid, cl, max)
		}
	}
	return nil
}

func canonicalUint(s string, max uint64) bool {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return err == nil && v <= max
}
