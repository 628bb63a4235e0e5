package relay

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/nbd-wtf/go-nostr"
)

// The search syntax of NIP-50 filters (the websocket's REQ and COUNT, the
// bridge's /query and /count, `buzz messages search`, the web client):
//
//	word            the word, in any form the analyzer folds to it
//	"a phrase"      the words next to each other
//	from:@name      by the member whose profile name or display name is
//	                name (from:npub1…, from:<hex> too); several from: are ORed
//	in:#channel     in the channel of that name or id; several in: are ORed
//	has:file        carrying a file (a NIP-92 imeta tag)
//	before:DATE     created before DATE (YYYY-MM-DD, UTC)
//	after:DATE      created after DATE, DATE itself excluded
//
// Every word and phrase must match. A token with an unknown prefix is a
// word.

// maxSearchTerms bounds the words, phrases and operators of one search, so
// that one filter cannot make the index run thousands of clauses.
const maxSearchTerms = 32

// searchQuery is a parsed search string.
type searchQuery struct {
	words, phrases []string
	from, in       []string // as written, without @ and #
	hasFile        bool
	after, before  *nostr.Timestamp // created_at > after, created_at < before
}

// empty reports whether q asks nothing of the text.
func (q searchQuery) textless() bool { return len(q.words) == 0 && len(q.phrases) == 0 }

// parseSearch reads s; its error's text is a NIP-01 reason.
func parseSearch(s string) (searchQuery, error) {
	var q searchQuery
	n := 0
	for rest := strings.TrimSpace(s); rest != ""; rest = strings.TrimLeftFunc(rest, unicode.IsSpace) {
		n++
		if n > maxSearchTerms {
			return q, fmt.Errorf("invalid: search: more than %d terms", maxSearchTerms)
		}
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			var phrase string
			if end < 0 {
				phrase, rest = rest[1:], ""
			} else {
				phrase, rest = rest[1:1+end], rest[2+end:]
			}
			if p := strings.Join(strings.Fields(phrase), " "); p != "" {
				q.phrases = append(q.phrases, p)
			}
			continue
		}
		tok := rest
		if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
			tok, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		key, val, ok := strings.Cut(tok, ":")
		if !ok || val == "" {
			q.words = append(q.words, tok)
			continue
		}
		switch strings.ToLower(key) {
		case "from":
			q.from = append(q.from, strings.TrimPrefix(val, "@"))
		case "in":
			q.in = append(q.in, strings.TrimPrefix(val, "#"))
		case "has":
			if !strings.EqualFold(val, "file") {
				return q, fmt.Errorf("invalid: search: has:%s is not known; has:file is", val)
			}
			q.hasFile = true
		case "before", "after":
			day, err := time.Parse(time.DateOnly, val)
			if err != nil {
				return q, fmt.Errorf("invalid: search: %s:%s is not a date; write %s:YYYY-MM-DD", key, val, key)
			}
			if strings.EqualFold(key, "before") {
				t := nostr.Timestamp(day.Unix())
				q.before = &t
			} else {
				t := nostr.Timestamp(day.Add(24*time.Hour).Unix() - 1)
				q.after = &t
			}
		default:
			q.words = append(q.words, tok)
		}
	}
	return q, nil
}

// matchesText reports whether ev's content holds every word and phrase of
// q, case-insensitively: the test for live events of a search
// subscription, which the index has not seen yet.
func (q searchQuery) matchesText(ev *nostr.Event) bool {
	content := strings.ToLower(ev.Content)
	for _, w := range append(append([]string(nil), q.words...), q.phrases...) {
		if !strings.Contains(content, strings.ToLower(w)) {
			return false
		}
	}
	if q.hasFile && ev.Tags.Find("imeta") == nil {
		return false
	}
	if q.after != nil && ev.CreatedAt <= *q.after || q.before != nil && ev.CreatedAt >= *q.before {
		return false
	}
	return true
}

// matchesPhrases reports whether ev's content holds each phrase of q: its
// words, folded to lower case, next to each other in that order. The
// indexes find the events holding a phrase's words; this checks their
// order.
func (q searchQuery) matchesPhrases(ev *nostr.Event) bool {
	if len(q.phrases) == 0 {
		return true
	}
	content := searchWords(ev.Content)
	for _, p := range q.phrases {
		want := searchWords(p)
		if len(want) == 0 {
			continue
		}
		found := false
		for i := 0; i+len(want) <= len(content) && !found; i++ {
			found = slices.Equal(content[i:i+len(want)], want)
		}
		if !found {
			return false
		}
	}
	return true
}

// searchWords splits s into its words (runs of letters and digits),
// folded to lower case.
func searchWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
