package nipoa

import (
	"fmt"
	"strconv"
	"strings"

	"buzzbox/internal/nostrkey"

	"github.com/nbd-wtf/go-nostr"
)

// CheckEvent evaluates every clause against an event's kind and created_at:
// kind=N needs kind == N, created_at<X needs created_at < X, created_at>X
// needs created_at > X. Clauses are all required.
func (t Tag) CheckEvent(kind int, createdAt int64) error {
	for _, c := range splitClauses(t.Conditions) {
		if v, ok := strings.CutPrefix(c, "kind="); ok {
			n, _ := strconv.Atoi(v)
			if kind != n {
				return fmt.Errorf("attestation requires kind %d, event is kind %d", n, kind)
			}
		}
	}
	return t.CheckTime(createdAt)
}

// FromEvent returns the event's auth tag, fully checked for evt: zero tags
// give ok=false and no error; two or more, a malformed tag, a bad owner
// signature, self-attestation or an unmet condition give an error. It does
// not check the event's own id and signature; callers do that first.
func FromEvent(evt *nostr.Event) (tag Tag, ok bool, err error) {
	var found nostr.Tag
	n := 0
	for _, tg := range evt.Tags {
		if len(tg) > 0 && tg[0] == TagName {
			found = tg
			n++
		}
	}
	switch {
	case n == 0:
		return Tag{}, false, nil
	case n > 1:
		return Tag{}, false, fmt.Errorf("%w: event has %d auth tags", ErrInvalid, n)
	case len(found) != 4:
		return Tag{}, false, fmt.Errorf("%w: auth tag has %d elements, want 4", ErrInvalid, len(found))
	}
	tag, err = FromParts(found[1], found[2], found[3])
	if err != nil {
		return Tag{}, false, err
	}
	agent, err := nostrkey.ParsePublic(evt.PubKey)
	if err != nil {
		return Tag{}, false, fmt.Errorf("%w: event pubkey: %v", ErrInvalid, err)
	}
	if err := tag.Verify(agent); err != nil {
		return Tag{}, false, err
	}
	if err := tag.CheckEvent(evt.Kind, int64(evt.CreatedAt)); err != nil {
		return Tag{}, false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return tag, true, nil
}

// ExpandShorthand rewrites the hand-typed form `[auth,<hex>,<conditions>,<hex>]`
// (no quotes, four comma-separated fields) into the JSON array, for the buzz
// CLI's --auth-tag. Anything else, JSON included, is returned unchanged for
// Parse to judge.
func ExpandShorthand(s string) string {
	s = strings.TrimSpace(s)
	inner, ok := strings.CutPrefix(s, "[")
	if !ok || strings.HasPrefix(inner, `"`) {
		return s
	}
	inner, ok = strings.CutSuffix(inner, "]")
	if !ok || strings.ContainsAny(inner, "\"\\") {
		return s
	}
	f := strings.Split(inner, ",")
	if len(f) != 4 {
		return s
	}
	return `["` + f[0] + `","` + f[1] + `","` + f[2] + `","` + f[3] + `"]`
}
