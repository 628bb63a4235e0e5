// Package search finds matching lines in files the way ripgrep's searcher
// does: buffers of whole lines, a literal prefilter in front of the regular
// expression engine, context lines, match limits and ripgrep 13's binary
// file rules. Results go to a Sink; the package prints nothing.
//
// Patterns are read in ripgrep's syntax (Rust's regex crate) and
// translated to Go's RE2 syntax by shimtools/rustregex. A match never
// spans lines: '\n' is removed from character classes and a literal '\n'
// is refused, as in ripgrep.
package search

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"buzzbox/shimtools/rustregex"
)

// MatcherOptions say how patterns are compiled. The zero value compiles
// case-sensitive regular expressions.
type MatcherOptions struct {
	Fixed      bool // -F: patterns are literal strings
	IgnoreCase bool // -i
	SmartCase  bool // -S: ignore case unless a pattern has an upper-case letter
	Word       bool // -w: matches must be whole words
	Line       bool // -x: matches must be whole lines
}

// Matcher finds lines matching a set of patterns. It is safe for
// concurrent use.
type Matcher struct {
	re *regexp.Regexp // nil when lit is the whole pattern
	// lit is the whole pattern when it is one case-sensitive literal.
	lit []byte
	// req is a literal every match contains, used to skip to candidate
	// lines before the regular expression runs; nil when none is known.
	req []byte
	// fold, when req is nil, finds candidate positions for a literal
	// matched case-insensitively.
	fold *foldFinder
	// any is set when the pattern matches every line (an empty pattern).
	any bool
	// multi, when req and fold are nil, finds candidates for a set of
	// literals one of which every match holds.
	multi *multiFinder
	// folds, when nothing above applies, finds candidates for a set of
	// case-insensitive literals.
	folds *foldSet
	// foldExact says the pattern is just the fold literal(s): a line
	// holding one is a match.
	foldExact bool
	// foldWord says the pattern is just the fold literal under -w: a match
	// of it with ASCII on both sides is decided by those two bytes.
	foldWord bool
	// reqWord is foldWord for a pattern that is just req.
	reqWord bool
	// multiExact says the pattern is just those literals: a candidate is a
	// match, no regex run needed.
	multiExact bool
	// word is set for -w; words holds ripgrep's word regexes.
	word  bool
	words *wordMatcher
	// ub, when the patterns hold \b or \B, decides lines that are not
	// ASCII, where Go's word boundary differs from ripgrep's.
	ub *boundaryMatcher
	// emptyInside says the pattern matches the empty string between two
	// bytes of one character, where ripgrep, stepping one byte after an
	// empty match, finds it and Go, stepping one character, does not.
	emptyInside bool
}

// wordMatcher finds -w matches the way ripgrep 13 does: a non-word
// character (Unicode \W) or a line edge on each side of the pattern,
// consumed by the match, which is then cut back to the pattern's part.
type wordMatcher struct {
	// full is (?:^|\W)(PAT)(?:\W|$), for a search from the line's start;
	// mid lacks the ^ branch, for a search from inside the line, since ^
	// cannot match there (Go would take the slice's start for one).
	full, mid *regexp.Regexp
	// whole is ^(?:PAT)$, which ripgrep tries on a match with its first
	// and last character cut off before it extracts the group.
	whole *regexp.Regexp
}

// ErrInvalidUTF8 reports a pattern that is not UTF-8 (ripgrep's own
// message, with the byte offset, is the caller's to give).
var ErrInvalidUTF8 = errors.New("pattern is not valid UTF-8")

// NewMatcher compiles patterns (joined as alternatives).
func NewMatcher(patterns []string, o MatcherOptions) (*Matcher, error) {
	tree, flags, err := parseSource(patterns, o)
	if err != nil {
		return nil, err
	}
	tree = tree.Simplify()
	m := &Matcher{word: o.Word && !o.Line}
	if m.ub, err = newBoundaryMatcher(patterns, o, flags&syntax.FoldCase != 0); err != nil {
		return nil, err
	}
	if m.word {
		if m.words, err = newWordMatcher(tree, flags); err != nil {
			return nil, err
		}
	}
	if tree.Op == syntax.OpEmptyMatch && !m.word {
		m.any = true
		return m, nil
	}
	if literalRune(tree, utf8.RuneError) {
		// A byte under (?-u) (see rustregex's appendLiteral): it matches invalid
		// UTF-8, which no byte search for U+FFFD's encoding finds.
		if err := m.compile(tree); err != nil {
			return nil, err
		}
		return m, nil
	}
	if tree.Op == syntax.OpLiteral && tree.Flags&syntax.FoldCase == 0 && !m.word {
		m.lit = []byte(string(tree.Rune))
		m.req = m.lit
		return m, nil
	}
	m.req = requiredLiteral(tree)
	m.reqWord = m.req != nil && m.word && m.ub == nil && tree.Op == syntax.OpLiteral
	if m.req == nil {
		if lit := foldLiteral(tree); len(lit) > 0 {
			m.fold, _ = newFoldFinder(lit)
			m.foldExact = m.fold != nil && !m.word && tree.Op == syntax.OpLiteral
			m.foldWord = m.fold != nil && m.word && m.ub == nil && tree.Op == syntax.OpLiteral
		}
	}
	if m.req == nil && m.fold == nil {
		if set := requiredSet(tree); len(set) > 1 {
			m.multi = &multiFinder{lits: set}
			m.multiExact = !m.word && isLiteralAlternation(tree)
		}
	}
	if m.req == nil && m.fold == nil && m.multi == nil {
		if set := requiredFoldSet(tree); len(set) > 1 {
			m.folds = &foldSet{fs: set}
			m.foldExact = !m.word && isFoldAlternation(tree)
		}
	}
	if err := m.compile(tree); err != nil {
		return nil, err
	}
	return m, nil
}

// compile sets the regular expression that does the matching.
func (m *Matcher) compile(tree *syntax.Regexp) error {
	re, err := compileTree(tree, nil)
	if err != nil {
		return err
	}
	m.re = re
	m.emptyInside = emptyInside(tree)
	return nil
}

// literalRune reports whether r appears as a literal anywhere in t.
func literalRune(t *syntax.Regexp, r rune) bool {
	if t.Op == syntax.OpLiteral {
		for _, c := range t.Rune {
			if c == r {
				return true
			}
		}
	}
	for _, s := range t.Sub {
		if literalRune(s, r) {
			return true
		}
	}
	return false
}

// source returns the Go regular expression for patterns (joined as
// alternatives) under o, -x applied, and the flags to parse it with.
func source(patterns []string, o MatcherOptions) (src string, flags syntax.Flags, err error) {
	for _, p := range patterns {
		if !utf8.ValidString(p) {
			return "", 0, ErrInvalidUTF8
		}
	}
	var literal, upper bool
	if o.Fixed {
		quoted := make([]string, len(patterns))
		for i, p := range patterns {
			literal = literal || p != ""
			upper = upper || strings.IndexFunc(p, unicode.IsUpper) >= 0
			quoted[i] = regexp.QuoteMeta(p)
		}
		src = strings.Join(quoted, "|")
	} else {
		tr, err := rustregex.Translate(joinPatterns(patterns, o.Line), o.IgnoreCase)
		if err != nil {
			return "", 0, err
		}
		src, literal, upper = tr.RE2, tr.Literal, tr.Upper
	}
	// Smart case, as ripgrep: ignore case when the patterns have a literal
	// and no upper-case one (\p{Lu} alone stays case-sensitive).
	fold := o.IgnoreCase || o.SmartCase && literal && !upper
	if fold && !o.IgnoreCase && !o.Fixed {
		// Classes combined with && -- ~~ must fold before they combine.
		tr, _ := rustregex.Translate(joinPatterns(patterns, o.Line), true)
		src = tr.RE2
	}
	if o.Line && o.Fixed {
		src = "^(?:" + src + ")$"
	}
	return src, matchFlags(fold), nil
}

// matchFlags are the flags translated patterns are parsed with: Perl
// syntax, ^ and $ at line ends, case folded when fold.
func matchFlags(fold bool) syntax.Flags {
	flags := syntax.Perl &^ syntax.OneLine
	if fold {
		flags |= syntax.FoldCase
	}
	return flags
}

// parseSource parses the Go expression for patterns under o (source),
// '\n' taken out of its classes, and returns it with its flags.
func parseSource(patterns []string, o MatcherOptions) (*syntax.Regexp, syntax.Flags, error) {
	src, flags, err := source(patterns, o)
	if err != nil {
		return nil, 0, err
	}
	tree, err := parseGo(src, flags)
	return tree, flags, err
}

// parseGo parses translated Go syntax and takes '\n' out of its classes.
func parseGo(src string, flags syntax.Flags) (*syntax.Regexp, error) {
	tree, err := syntax.Parse(src, flags)
	if err != nil {
		return nil, err
	}
	if err := stripNewlines(tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// joinPatterns joins patterns as ripgrep 13 does before it parses them,
// so that its errors point where ripgrep's do: each one under -x (line)
// as ^(?:p)$, an empty one otherwise as (?:z{0})*, all joined by '|'.
// Without -x a flag set at the top of one pattern reaches those after it.
func joinPatterns(patterns []string, line bool) string {
	var b strings.Builder
	for i, p := range patterns {
		if i > 0 {
			b.WriteByte('|')
		}
		switch {
		case line:
			b.WriteString("^(?:" + p + ")$")
		case p == "":
			b.WriteString("(?:z{0})*")
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

// emptyInside reports whether t matches the empty string inside a
// character: between two bytes that are neither newlines nor ASCII word
// characters and are not the text's ends.
func emptyInside(t *syntax.Regexp) bool {
	switch t.Op {
	case syntax.OpEmptyMatch, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(t.Rune) == 0
	case syntax.OpRepeat:
		return t.Min == 0 || emptyInside(t.Sub[0])
	case syntax.OpCapture, syntax.OpPlus:
		return emptyInside(t.Sub[0])
	case syntax.OpConcat:
		for _, s := range t.Sub {
			if !emptyInside(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range t.Sub {
			if emptyInside(s) {
				return true
			}
		}
	}
	return false
}

// stripNewlines removes '\n' from classes and refuses literal newlines, so
// that no match can cross a line.
func stripNewlines(t *syntax.Regexp) error {
	switch t.Op {
	case syntax.OpLiteral:
		for _, r := range t.Rune {
			if r == '\n' {
				return rustregex.ErrNewline
			}
		}
	case syntax.OpAnyChar:
		t.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(t.Rune); i += 2 {
			lo, hi := t.Rune[i], t.Rune[i+1]
			switch {
			case lo <= '\n' && '\n' <= hi:
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
			default:
				out = append(out, lo, hi)
			}
		}
		if len(out) == 0 {
			t.Op = syntax.OpNoMatch
			t.Rune = nil
		} else {
			t.Rune = out
		}
	}
	for _, s := range t.Sub {
		if err := stripNewlines(s); err != nil {
			return err
		}
	}
	return nil
}

// requiredLiteral returns the longest case-sensitive literal that every
// match of t contains, or nil.
func requiredLiteral(t *syntax.Regexp) []byte {
	var best []rune
	consider := func(s *syntax.Regexp) {
		if s.Op == syntax.OpLiteral && s.Flags&syntax.FoldCase == 0 && len(s.Rune) > len(best) {
			best = s.Rune
		}
	}
	switch t.Op {
	case syntax.OpLiteral:
		consider(t)
	case syntax.OpConcat:
		for _, s := range t.Sub {
			if s.Op == syntax.OpCapture && len(s.Sub) == 1 {
				s = s.Sub[0]
			}
			if s.Op == syntax.OpPlus && len(s.Sub) == 1 {
				s = s.Sub[0]
			}
			consider(s)
		}
	case syntax.OpCapture, syntax.OpPlus:
		if len(t.Sub) == 1 {
			return requiredLiteral(t.Sub[0])
		}
	}
	if len(best) == 0 {
		return nil
	}
	return []byte(string(best))
}

// lineBounds returns the start of the line holding i and the end of that
// line, the terminator excluded.
func lineBounds(buf []byte, i int) (start, end int) {
	start = bytes.LastIndexByte(buf[:i], '\n') + 1
	end = bytes.IndexByte(buf[i:], '\n')
	if end < 0 {
		end = len(buf)
	} else {
		end += i
	}
	return start, end
}

// FindLine returns the bounds of the first line in buf that matches, the
// terminator excluded. buf must start at a line boundary.
func (m *Matcher) FindLine(buf []byte) (start, end int, ok bool) {
	if len(buf) == 0 {
		return 0, 0, false
	}
	if m.any {
		_, end := lineBounds(buf, 0)
		return 0, end, true
	}
	if m.req != nil {
		pos := 0
		for pos < len(buf) {
			i := bytes.Index(buf[pos:], m.req)
			if i < 0 {
				return 0, 0, false
			}
			if m.reqWord {
				switch wordEdges(buf, pos+i, pos+i+len(m.req)) {
				case edgesWord:
					s, e := lineBounds(buf, pos+i)
					return s, e, true
				case edgesNotWord:
					pos += i + 1
					continue
				}
			}
			s, e := lineBounds(buf, pos+i)
			if m.lineOK(buf[s:e]) {
				return s, e, true
			}
			pos = e + 1
		}
		return 0, 0, false
	}
	if m.fold != nil {
		sc := m.fold.scanner(buf)
		for p := sc.next(0); p >= 0; {
			ms, me, ok := m.fold.at(buf, p)
			if !ok {
				p = sc.next(p + 1)
				continue
			}
			if m.foldWord {
				switch wordEdges(buf, ms, me) {
				case edgesWord:
					s, e := lineBounds(buf, p)
					return s, e, true
				case edgesNotWord:
					p = sc.next(p + 1)
					continue
				}
			}
			s, e := lineBounds(buf, p)
			if m.foldExact || m.lineOK(buf[s:e]) {
				return s, e, true
			}
			p = sc.next(e + 1)
		}
		return 0, 0, false
	}
	if m.multi != nil {
		sc := m.multi.scanner(buf)
		for p := sc.at(0); p >= 0; {
			s, e := lineBounds(buf, p)
			if m.multiExact || m.lineOK(buf[s:e]) {
				return s, e, true
			}
			p = sc.at(e + 1)
		}
		return 0, 0, false
	}
	if m.folds != nil {
		for p := m.folds.next(buf, 0); p >= 0; {
			s, e := lineBounds(buf, p)
			if m.foldExact || m.lineOK(buf[s:e]) {
				return s, e, true
			}
			p = m.folds.next(buf, e+1)
		}
		return 0, 0, false
	}
	pos := 0
	for pos <= len(buf) {
		loc := m.re.FindIndex(buf[pos:])
		if m.ub != nil {
			// Go's \b is exact on ASCII lines only: lines before the
			// match that have other bytes are decided on their own.
			limit := len(buf)
			if loc != nil {
				limit = pos + loc[0]
			}
			s, e, ok, decided := m.ub.findNonASCII(buf, pos, limit)
			if ok {
				return s, e, true
			}
			if loc != nil {
				if s, e := lineBounds(buf, limit); s < decided {
					// The match's line was checked there, and refused.
					pos = e + 1
					continue
				}
			}
		}
		if loc == nil {
			return 0, 0, false
		}
		at := pos + loc[0]
		if at == len(buf) && len(buf) > 0 && buf[len(buf)-1] == '\n' {
			// An empty match after the final terminator is not on a line.
			return 0, 0, false
		}
		s, e := lineBounds(buf, at)
		if !m.word && (m.ub == nil || !hasNonASCII(buf[s:e])) || m.lineOK(buf[s:e]) {
			return s, e, true
		}
		pos = e + 1
	}
	return 0, 0, false
}

// How the bytes around a match decide a -w match (wordEdges).
const (
	edgesUnknown = iota // a neighbour is past ASCII: ask the regex
	edgesWord           // both neighbours are line edges or ASCII non-word bytes
	edgesNotWord        // an ASCII word byte touches the match
)

// wordEdges classifies the match buf[s:e] for -w, which (as ripgrep's
// (?:^|\W)PAT(?:\W|$)) takes a match with a line edge or a non-word
// character on each side.
func wordEdges(buf []byte, s, e int) int {
	var before, after byte = '\n', '\n'
	if s > 0 {
		before = buf[s-1]
	}
	if e < len(buf) {
		after = buf[e]
	}
	if isWordByte(before) || isWordByte(after) {
		return edgesNotWord
	}
	if before >= utf8.RuneSelf || after >= utf8.RuneSelf {
		return edgesUnknown
	}
	return edgesWord
}

// isWordByte reports whether c is an ASCII word character.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// lineOK confirms a candidate line (no terminator).
func (m *Matcher) lineOK(line []byte) bool {
	if m.ub != nil && hasNonASCII(line) {
		return m.ub.match(line)
	}
	if m.word {
		return m.words.full.Match(line)
	}
	return m.re == nil || m.re.Match(line)
}

// newWordMatcher compiles ripgrep's -w regexes around the parsed pattern.
func newWordMatcher(pat *syntax.Regexp, flags syntax.Flags) (*wordMatcher, error) {
	notWord, err := syntax.Parse(rustregex.NonWordClass(), flags)
	if err != nil {
		return nil, err
	}
	if err := stripNewlines(notWord); err != nil {
		return nil, err
	}
	node := func(op syntax.Op, sub ...*syntax.Regexp) *syntax.Regexp {
		return &syntax.Regexp{Op: op, Sub: sub}
	}
	group := &syntax.Regexp{Op: syntax.OpCapture, Cap: 1, Sub: []*syntax.Regexp{pat}}
	tail := node(syntax.OpAlternate, notWord, node(syntax.OpEndLine))
	var w wordMatcher
	if w.full, err = compileTree(node(syntax.OpConcat, node(syntax.OpAlternate, node(syntax.OpBeginLine), notWord), group, tail), group); err != nil {
		return nil, err
	}
	if w.mid, err = compileTree(node(syntax.OpConcat, notWord, group, tail), group); err != nil {
		return nil, err
	}
	if w.whole, err = compileTree(node(syntax.OpConcat, node(syntax.OpBeginText), pat, node(syntax.OpEndText)), nil); err != nil {
		return nil, err
	}
	return &w, nil
}

// find returns ripgrep's next -w match in line at or after at. bufStart
// says the line starts ripgrep's buffer: only there does ripgrep see that
// a match began at the buffer's start and take the group directly.
// Elsewhere it first cuts one character off each end of the whole match
// and keeps that when the pattern matches it entirely, which drops the
// first character of a match that began at a line's start: on a later
// line "foo bar", -w '[a-z]+' gives "oo", and "straße" gives "traße" for
// -w '\w+'.
func (w *wordMatcher) find(line []byte, at int, bufStart bool) (start, end int, ok bool) {
	re := w.mid
	if at == 0 {
		re = w.full
	}
	loc := re.FindSubmatchIndex(line[at:])
	if loc == nil {
		return 0, 0, false
	}
	cs, ce := at+loc[0], at+loc[1]
	gs, ge := at+loc[2], at+loc[3]
	if (bufStart && cs == 0) || ce == len(line) {
		return gs, ge, true
	}
	_, sl := utf8.DecodeRune(line[cs:ce])
	_, el := utf8.DecodeLastRune(line[cs:ce])
	if cs+sl <= ce-el && w.whole.Match(line[cs+sl:ce-el]) {
		return cs + sl, ce - el, true
	}
	return gs, ge, true
}

// eachWord reports the -w matches in line as ripgrep's match iterator
// does: the next search starts at a match's end, one byte further after
// an empty match, and an empty match right after a match is skipped.
func (m *Matcher) eachWord(line []byte, bufStart bool, fn func(start, end int) bool) {
	lastEnd := -1
	for pos := 0; pos <= len(line); {
		s, e, ok := m.words.find(line, pos, bufStart)
		if !ok {
			return
		}
		if s == e {
			pos = e + 1
			if e == lastEnd {
				continue
			}
		} else {
			pos = e
		}
		lastEnd = e
		if !fn(s, e) {
			return
		}
	}
}

// MatchLine reports whether line (no terminator) matches.
func (m *Matcher) MatchLine(line []byte) bool {
	if m.any {
		return true
	}
	if m.req != nil && !bytes.Contains(line, m.req) {
		return false
	}
	if m.fold != nil {
		if !m.fold.anyIn(line) {
			return false
		}
		if m.foldExact {
			return true
		}
	}
	if m.folds != nil {
		if !m.folds.anyIn(line) {
			return false
		}
		if m.foldExact {
			return true
		}
	}
	if m.multi != nil {
		if !m.multi.anyIn(line) {
			return false
		}
		if m.multiExact {
			return true
		}
	}
	return m.lineOK(line)
}

// Each calls fn with the bounds of every match in line (no terminator),
// left to right, stopping when fn returns false. Empty matches are
// reported as ripgrep reports them (at most one per position). bufStart
// says the line starts ripgrep's search buffer (Line.BufStart), which
// changes some -w matches.
func (m *Matcher) Each(line []byte, bufStart bool, fn func(start, end int) bool) {
	if m.word {
		m.eachWord(line, bufStart, fn)
		return
	}
	if m.any {
		// ripgrep steps one byte after an empty match, into characters.
		for i := 0; i <= len(line); i++ {
			if !fn(i, i) {
				return
			}
		}
		return
	}
	if m.re == nil {
		pos := 0
		for {
			i := bytes.Index(line[pos:], m.lit)
			if i < 0 {
				return
			}
			s := pos + i
			if !fn(s, s+len(m.lit)) {
				return
			}
			pos = s + len(m.lit)
			if len(m.lit) == 0 {
				pos++
			}
			if pos > len(line) {
				return
			}
		}
	}
	var locs [][]int
	if m.ub != nil && hasNonASCII(line) {
		locs = m.ub.all(line)
	} else {
		locs = m.re.FindAllIndex(line, -1)
	}
	if !m.emptyInside {
		for _, loc := range locs {
			if !fn(loc[0], loc[1]) {
				return
			}
		}
		return
	}
	// ripgrep steps one byte after an empty match where Go steps one
	// character, so it also finds the empty matches inside each character
	// of several bytes that no match covers. Elsewhere the two agree: a
	// search from inside a character finds what one from its end finds.
	p := 0 // the next character start not yet looked at
	// inside reports the empty matches inside the character at p, up to
	// limit, and steps p past the character.
	inside := func(limit int) bool {
		_, w := utf8.DecodeRune(line[p:])
		for k := 1; k < w && p+k < limit; k++ {
			if !fn(p+k, p+k) {
				return false
			}
		}
		p += w
		return true
	}
	for _, loc := range locs {
		s, e := loc[0], loc[1]
		for p < s {
			if !inside(s) {
				return
			}
		}
		if !fn(s, e) {
			return
		}
		switch {
		case s != e:
			p = e
		case p == s && p < len(line):
			if !inside(len(line)) {
				return
			}
		}
	}
	for p < len(line) {
		if !inside(len(line)) {
			return
		}
	}
}

// hasNonASCII reports whether b holds a byte past ASCII.
func hasNonASCII(b []byte) bool { return indexNonASCII(b) >= 0 }

// isLiteralAlternation reports whether t is an alternation of plain
// case-sensitive literals (foo|bar).
func isLiteralAlternation(t *syntax.Regexp) bool {
	if t.Op == syntax.OpCharClass {
		return t.Flags&syntax.FoldCase == 0
	}
	if t.Op != syntax.OpAlternate {
		return false
	}
	for _, s := range t.Sub {
		if s.Op != syntax.OpLiteral || s.Flags&syntax.FoldCase != 0 {
			return false
		}
	}
	return true
}

// isFoldAlternation reports whether t is an alternation of literals
// matched case-insensitively ((?i)foo|bar).
func isFoldAlternation(t *syntax.Regexp) bool {
	if t.Op != syntax.OpAlternate {
		return false
	}
	for _, s := range t.Sub {
		if s.Op != syntax.OpLiteral || s.Flags&syntax.FoldCase == 0 {
			return false
		}
	}
	return true
}
