package search

import (
	"regexp"
	"unicode/utf8"

	"buzzbox/shimtools/rustregex"
)

// boundaryMatcher gives \b and \B ripgrep's meaning, a change between a
// Unicode word character (\w) and anything else, where Go's RE2 only
// knows ASCII word characters. On ASCII text the two agree and the
// matcher's own expression runs; on a line with other bytes the pattern
// runs with every boundary relaxed to an empty group, and each match is
// kept only if every group sits where its assertion holds.
//
// A relaxed match that fails the check hides any other match starting
// inside it; ripgrep might find one there. That needs a boundary next to
// an alternation or repetition that can match at the same place in two
// ways, and is left as is.
type boundaryMatcher struct {
	re     *regexp.Regexp // relaxed, the boundaries as named groups
	checks []boundaryCheck
}

// boundaryCheck is one assertion: the submatch index of its group and
// whether it wants a boundary (\b) or none (\B).
type boundaryCheck struct {
	group int
	want  bool
}

// newBoundaryMatcher compiles the relaxed form of patterns under o, or
// returns nil when they hold no Unicode \b or \B.
func newBoundaryMatcher(patterns []string, o MatcherOptions, fold bool) (*boundaryMatcher, error) {
	if o.Fixed || o.Word {
		return nil, nil
	}
	src, n := rustregex.TranslateRelaxed(joinPatterns(patterns, o.Line), fold)
	if n == 0 {
		return nil, nil
	}
	tree, err := parseGo(src, matchFlags(fold))
	if err != nil {
		return nil, err
	}
	re, err := compileTree(tree.Simplify(), nil)
	if err != nil {
		return nil, err
	}
	b := &boundaryMatcher{re: re}
	for k := range n {
		for _, want := range []bool{true, false} {
			if i := re.SubexpIndex(rustregex.BoundaryName(k, want)); i >= 0 {
				b.checks = append(b.checks, boundaryCheck{group: i, want: want})
			}
		}
	}
	return b, nil
}

// findNonASCII returns the first line of buf that has a byte past ASCII
// in [from, limit) and a verified match. Lines that start before decided
// were checked and refused.
func (b *boundaryMatcher) findNonASCII(buf []byte, from, limit int) (start, end int, ok bool, decided int) {
	for from < limit {
		i := indexNonASCII(buf[from:limit])
		if i < 0 {
			break
		}
		s, e := lineBounds(buf, from+i)
		if b.match(buf[s:e]) {
			return s, e, true, from
		}
		from = e + 1
	}
	return 0, 0, false, from
}

// indexNonASCII returns the index of the first byte of b past ASCII, or -1.
func indexNonASCII(b []byte) int {
	for i, c := range b {
		if c >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}

// all returns the verified matches in line, as FindAllIndex would.
// (ripgrep 13's regex engine, resuming after a match that ends in a
// character of several bytes, sometimes sees a boundary there that is
// not; that quirk is not copied.)
func (b *boundaryMatcher) all(line []byte) [][]int {
	var out [][]int
	for _, loc := range b.re.FindAllSubmatchIndex(line, -1) {
		if b.holds(line, loc) {
			out = append(out, loc[:2])
		}
	}
	return out
}

// match reports whether line has a verified match.
func (b *boundaryMatcher) match(line []byte) bool {
	for _, loc := range b.re.FindAllSubmatchIndex(line, -1) {
		if b.holds(line, loc) {
			return true
		}
	}
	return false
}

// holds checks every assertion whose group took part in the match.
func (b *boundaryMatcher) holds(line []byte, loc []int) bool {
	for _, c := range b.checks {
		if at := loc[2*c.group]; at >= 0 && isBoundary(line, at) != c.want {
			return false
		}
	}
	return true
}

// isBoundary reports whether exactly one side of line[at] is a Unicode
// word character; bytes that are not UTF-8 are not.
func isBoundary(line []byte, at int) bool {
	before, after := false, false
	if at > 0 {
		r, _ := utf8.DecodeLastRune(line[:at])
		before = isWordRune(r)
	}
	if at < len(line) {
		r, _ := utf8.DecodeRune(line[at:])
		after = isWordRune(r)
	}
	return before != after
}

// isWordRune reports whether r is in Rust's Unicode \w.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return r != utf8.RuneError && rustregex.IsWord(r)
}
