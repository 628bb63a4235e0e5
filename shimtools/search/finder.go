package search

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// commonBytes lists bytes from most to least frequent in source code and
// prose; a prefilter scans for the rarest byte of a literal so that fewer
// false candidates need checking. Bytes not listed count as rare.
const commonBytes = " e\ntaoinsrlcdhu\tpm.f(),g_;=\"byw:/v-'*{}0[]1x>2<k#jq!z&|+"

func rarity(b byte) int {
	if b >= 'A' && b <= 'Z' {
		// Upper case is rarer than lower case in code.
		if i := bytes.IndexByte([]byte(commonBytes), b+'a'-'A'); i >= 0 {
			return 40 + i
		}
	}
	if i := bytes.IndexByte([]byte(commonBytes), b); i >= 0 {
		return i
	}
	return 100
}

// foldFinder finds candidates for a case-insensitive literal: it scans
// for one byte of it in both cases (memchr2 style) and leaves confirming
// the match to the caller.
type foldFinder struct {
	lo, hi byte   // the scanned byte, lower and upper case (equal for non-letters)
	off    int    // its first index in lit
	lit    []byte // the literal, ASCII lower case
	// ks is set when lit has 'k' or 's', whose folds include non-ASCII
	// letters: a candidate that fails the byte check is then confirmed by
	// the caller when its line has non-ASCII bytes.
	ks bool
}

// newFoldFinder picks the byte to scan for in an ASCII literal matched
// with Unicode simple folding. 'k' and 's' are skipped: they also fold to
// non-ASCII letters (KELVIN SIGN, LONG S), which a byte scan would miss.
func newFoldFinder(lit []rune) (*foldFinder, bool) {
	best, bestRank := byte(0), 1<<30
	low := make([]byte, len(lit))
	ks := false
	for i, r := range lit {
		if r < utf8.RuneSelf {
			b := byte(r)
			if b >= 'A' && b <= 'Z' {
				b += 'a' - 'A'
			}
			low[i] = b
			ks = ks || b == 'k' || b == 's'
		}
	}
	for _, r := range lit {
		if r >= utf8.RuneSelf {
			return nil, false
		}
		b := byte(r)
		l := b
		if b >= 'A' && b <= 'Z' {
			l = b + 'a' - 'A'
		}
		if l == 'k' || l == 's' {
			continue
		}
		rk := rarity(l)
		if l >= 'a' && l <= 'z' {
			rk += rarity(l-'a'+'A') / 4 // both cases are scanned
		}
		if rk < bestRank {
			best, bestRank = l, rk
		}
	}
	if bestRank == 1<<30 {
		return nil, false
	}
	f := &foldFinder{lo: best, hi: best, lit: low, ks: ks, off: bytes.IndexByte(low, best)}
	if best >= 'a' && best <= 'z' {
		f.hi = best - 'a' + 'A'
	}
	return f, true
}

// scan iterates over the positions of the scanned byte (either case) in
// buf. It looks through windows that double in size, so finding the next
// candidate costs about its distance even when one of the two cases is
// absent (a whole-buffer search for it per call would be quadratic).
type scan struct {
	f   *foldFinder
	buf []byte
}

func (f *foldFinder) scanner(buf []byte) scan { return scan{f: f, buf: buf} }

// next returns the first candidate at or after pos, or -1.
func (sc *scan) next(pos int) int {
	f := sc.f
	for start, w := pos, firstWindow; start < len(sc.buf); start, w = start+w, w*2 {
		end := min(start+w, len(sc.buf))
		win := sc.buf[start:end]
		i := bytes.IndexByte(win, f.lo)
		if f.hi != f.lo {
			lim := win
			if i >= 0 {
				lim = win[:i]
			}
			if j := bytes.IndexByte(lim, f.hi); j >= 0 {
				i = j
			}
		}
		if i >= 0 {
			return start + i
		}
	}
	return -1
}

// maybeFolded reports whether the bytes around a failed candidate at p
// hold non-ASCII text, where a KELVIN SIGN or LONG S could stand for 'k'
// or 's' (each at most three bytes for one).
func (f *foldFinder) maybeFolded(buf []byte, p int) bool {
	lo := max(p-f.off*3, 0)
	hi := min(p+len(f.lit)*3, len(buf))
	return hasNonASCII(buf[lo:hi])
}

// at reports whether the literal matches (ASCII case-insensitively) at the
// candidate found at position p of buf.
func (f *foldFinder) at(buf []byte, p int) bool {
	st := p - f.off
	if st < 0 || st+len(f.lit) > len(buf) {
		return false
	}
	for j, c := range buf[st : st+len(f.lit)] {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f.lit[j] {
			return false
		}
	}
	return true
}

// foldLiteral returns the longest ASCII case-folded literal every match of
// t contains, if any.
func foldLiteral(t *syntax.Regexp) []rune {
	var best []rune
	consider := func(s *syntax.Regexp) {
		if s.Op == syntax.OpLiteral && s.Flags&syntax.FoldCase != 0 && len(s.Rune) > len(best) {
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
			consider(s)
		}
	case syntax.OpCapture:
		if len(t.Sub) == 1 {
			return foldLiteral(t.Sub[0])
		}
	}
	return best
}

// anyIn reports whether line may hold the literal: a position passing the
// byte check (exact), or (for 'k'/'s') non-ASCII text near a candidate.
func (f *foldFinder) anyIn(line []byte) (maybe, exact bool) {
	sc := f.scanner(line)
	maybe = false
	for p := sc.next(0); p >= 0; p = sc.next(p + 1) {
		if f.at(line, p) {
			return true, true
		}
		if f.ks && f.maybeFolded(line, p) {
			maybe = true
		}
	}
	return maybe, false
}

// multiFinder finds candidates for a set of case-sensitive literals of
// which every match contains one (foo|bar): it keeps the next position of
// each and reports the smallest.
type multiFinder struct{ lits [][]byte }

type multiScan struct {
	f   *multiFinder
	buf []byte
}

func (f *multiFinder) scanner(buf []byte) multiScan { return multiScan{f: f, buf: buf} }

// at returns the first candidate position at or after pos, or -1, looking
// through doubling windows as scan.next does.
func (sc *multiScan) at(pos int) int {
	for start, w := pos, firstWindow; start < len(sc.buf); start, w = start+w, w*2 {
		end := min(start+w, len(sc.buf))
		best := -1
		for _, lit := range sc.f.lits {
			// Let a literal straddle the window's end.
			hi := min(end+len(lit)-1, len(sc.buf))
			lim := hi
			if best >= 0 {
				lim = min(hi, best+len(lit))
			}
			if j := bytes.Index(sc.buf[start:lim], lit); j >= 0 && start+j < end {
				if best < 0 || start+j < best {
					best = start + j
				}
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// anyIn reports whether line holds one of the literals.
func (f *multiFinder) anyIn(line []byte) bool {
	for _, lit := range f.lits {
		if bytes.Contains(line, lit) {
			return true
		}
	}
	return false
}

// requiredSet returns literals of which every match of t contains at least
// one, or nil when none can be named (or there would be too many).
func requiredSet(t *syntax.Regexp) [][]byte {
	switch t.Op {
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase != 0 || len(t.Rune) == 0 {
			return nil
		}
		return [][]byte{[]byte(string(t.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		if len(t.Sub) == 1 {
			return requiredSet(t.Sub[0])
		}
	case syntax.OpCharClass:
		// A small class ([ab], or a|b, which the parser turns into one).
		var out [][]byte
		for i := 0; i+1 < len(t.Rune); i += 2 {
			for r := t.Rune[i]; r <= t.Rune[i+1]; r++ {
				if len(out) == maxAltLiterals {
					return nil
				}
				out = append(out, []byte(string(r)))
			}
		}
		return out
	case syntax.OpAlternate:
		var out [][]byte
		for _, s := range t.Sub {
			set := requiredSet(s)
			if set == nil {
				return nil
			}
			out = append(out, set...)
			if len(out) > maxAltLiterals {
				return nil
			}
		}
		return out
	case syntax.OpConcat:
		var best [][]byte
		bestLen := 0
		for _, s := range t.Sub {
			set := requiredSet(s)
			if set == nil {
				continue
			}
			short := len(set[0])
			for _, l := range set {
				short = min(short, len(l))
			}
			// Fewer literals first, then longer ones.
			if best == nil || len(set) < len(best) || len(set) == len(best) && short > bestLen {
				best, bestLen = set, short
			}
		}
		return best
	}
	return nil
}

// foldSet finds candidates for several case-insensitive literals of which
// every match holds one ((?i)foo|bar).
type foldSet struct{ fs []*foldFinder }

// next returns the first position at or after pos where one of the
// literals passes its byte check (or may be folded), or -1; exact says the
// byte check passed.
func (s *foldSet) next(buf []byte, pos int) (at int, exact bool) {
	best := -1
	for _, f := range s.fs {
		lim := buf
		if best >= 0 {
			lim = buf[:min(len(buf), best+len(f.lit))]
		}
		sc := f.scanner(lim)
		for p := sc.next(pos); p >= 0; p = sc.next(p + 1) {
			if best >= 0 && p >= best {
				break
			}
			if f.at(buf, p) {
				best, exact = p, true
				break
			}
			if f.ks && f.maybeFolded(buf, p) {
				best, exact = p, false
				break
			}
		}
	}
	return best, exact
}

// anyIn reports whether line may hold one of the literals; exact says one
// passed the byte check, which for a plain literal pattern is a match.
func (s *foldSet) anyIn(line []byte) (maybe, exact bool) {
	p, ex := s.next(line, 0)
	return p >= 0, ex
}

// requiredFoldSet is requiredSet for literals matched case-insensitively.
func requiredFoldSet(t *syntax.Regexp) []*foldFinder {
	switch t.Op {
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase == 0 {
			return nil
		}
		f, ok := newFoldFinder(t.Rune)
		if !ok {
			return nil
		}
		return []*foldFinder{f}
	case syntax.OpCapture, syntax.OpPlus:
		if len(t.Sub) == 1 {
			return requiredFoldSet(t.Sub[0])
		}
	case syntax.OpAlternate:
		var out []*foldFinder
		for _, s := range t.Sub {
			set := requiredFoldSet(s)
			if set == nil {
				return nil
			}
			out = append(out, set...)
			if len(out) > maxAltLiterals {
				return nil
			}
		}
		return out
	case syntax.OpConcat:
		var best []*foldFinder
		for _, s := range t.Sub {
			if set := requiredFoldSet(s); set != nil && (best == nil || len(set) < len(best)) {
				best = set
			}
		}
		return best
	}
	return nil
}
