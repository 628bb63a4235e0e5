package cli

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"buzzbox/internal/nostrkey"
)

// stripCode blanks Markdown fenced blocks and inline code spans, byte for
// byte, so that mentions inside code are not mentions.
func stripCode(text string) string {
	b := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	// Fenced blocks: ``` or ~~~ (three or more) after at most three spaces.
	var fenceChar byte
	fenceLen := 0
	for start := 0; start < len(b); {
		end := start
		for end < len(b) && b[end] != '\n' {
			end++
		}
		line := b[start:end]
		indent := 0
		for indent < len(line) && indent < 4 && line[indent] == ' ' {
			indent++
		}
		run, c := 0, byte(0)
		if indent < 4 && indent < len(line) && (line[indent] == '`' || line[indent] == '~') {
			c = line[indent]
			for indent+run < len(line) && line[indent+run] == c {
				run++
			}
		}
		switch {
		case fenceLen == 0 && run >= 3:
			fenceChar, fenceLen = c, run
			blank(start, end)
		case fenceLen > 0:
			if c == fenceChar && run >= fenceLen && strings.TrimSpace(string(line[indent+run:])) == "" {
				fenceLen = 0
			}
			blank(start, end)
		}
		start = end + 1
	}
	// Inline spans: a run of n backticks up to the next run of exactly n.
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		closeAt := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(b) && b[j+m] == '`' {
				m++
			}
			if m == n {
				closeAt = j + m
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n
			continue
		}
		blank(i, closeAt)
		i = closeAt
	}
	return string(b)
}

// nostrRefs returns the pubkeys of NIP-27 `nostr:npub1…` and
// `nostr:nprofile1…` references, in order of appearance, unique.
func nostrRefs(text string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; ; {
		k := strings.Index(text[i:], "nostr:")
		if k < 0 {
			return out
		}
		start := i + k + len("nostr:")
		end := start
		for end < len(text) && (text[end] >= 'a' && text[end] <= 'z' || text[end] >= '0' && text[end] <= '9') {
			end++
		}
		i = end
		ref := text[start:end]
		if !strings.HasPrefix(ref, "npub1") && !strings.HasPrefix(ref, "nprofile1") {
			continue
		}
		prefix, v, err := nip19.Decode(ref)
		if err != nil {
			continue
		}
		var pk string
		switch prefix {
		case "npub":
			pk, _ = v.(string)
		case "nprofile":
			if p, ok := v.(nostr.ProfilePointer); ok {
				pk = p.PublicKey
			}
		}
		if nostrkey.IsLowerHex(pk, 64) && !seen[pk] {
			seen[pk] = true
			out = append(out, pk)
		}
	}
}

// member is a channel member with the name its profile gives.
type member struct {
	Pubkey string
	Name   string
}

// atResult is what @Name resolution found.
type atResult struct {
	Resolved   []string // pubkeys, in order of appearance, unique
	Unresolved []string // names that matched no member
	Ambiguous  []string // names that matched several members
}

// isNameByte is the fallback token alphabet after '@'.
func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// resolveAt finds @Name mentions (at the start or after whitespace) in
// code-stripped text. Known member names are tried longest first,
// case-insensitively, and must end at a non-word rune; otherwise the
// mention is the run of [A-Za-z0-9._-] after '@' (trailing dots dropped).
func resolveAt(text string, members []member) atResult {
	byName := map[string][]string{}
	var names []string
	for _, m := range members {
		n := strings.ToLower(strings.TrimSpace(m.Name))
		if n == "" {
			continue
		}
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		if !contains(byName[n], m.Pubkey) {
			byName[n] = append(byName[n], m.Pubkey)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	var res atResult
	note := func(list *[]string, s string) {
		if !contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		if i > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:i])
			if !unicode.IsSpace(r) {
				continue
			}
		}
		rest := text[i+1:]
		matched := ""
		for _, n := range names {
			if len(rest) >= len(n) && strings.EqualFold(rest[:len(n)], n) && wordEnds(rest[len(n):]) {
				matched = n
				break
			}
		}
		if matched == "" {
			j := 0
			for j < len(rest) && isNameByte(rest[j]) {
				j++
			}
			tok := strings.TrimRight(rest[:j], ".")
			if tok == "" {
				continue
			}
			if _, ok := byName[strings.ToLower(tok)]; ok {
				matched = strings.ToLower(tok)
			} else {
				note(&res.Unresolved, tok)
				i += j
				continue
			}
		}
		pks := byName[matched]
		if len(pks) == 1 {
			note(&res.Resolved, pks[0])
		} else {
			note(&res.Ambiguous, rest[:len(matched)])
		}
		i += len(matched)
	}
	return res
}

// wordEnds reports whether s starts at a word boundary.
func wordEnds(s string) bool {
	if s == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-')
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
