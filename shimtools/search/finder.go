package search

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// byteFreq estimates how often each ASCII byte occurs in the text rg
// searches, in hundredths of a percent, saturating at 255 (2.55%): counted
// over the text files of Go's source tree, about 109 MB of code, comments
// and prose. Bytes past ASCII count as rare. A prefilter scans for the
// literal's rarest byte so that fewer false candidates need checking.
var byteFreq = [utf8.RuneSelf]uint8{
	0, 1, 1, 1, 1, 1, 1, 1, 1, 255, 255, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	255, 11, 87, 2, 5, 8, 11, 9, 116, 116, 18, 13, 229, 25, 137, 118,
	255, 139, 108, 78, 81, 51, 74, 43, 63, 45, 96, 13, 10, 86, 9, 1,
	1, 110, 37, 54, 47, 67, 37, 20, 18, 55, 4, 10, 39, 43, 36, 53,
	47, 12, 63, 77, 67, 23, 38, 14, 38, 12, 6, 25, 50, 25, 1, 72,
	4, 255, 82, 181, 158, 255, 164, 99, 90, 255, 7, 41, 180, 105, 255, 251,
	124, 8, 255, 255, 255, 148, 62, 38, 206, 65, 11, 62, 12, 62, 1, 1,
}

// The letters whose simple case folding leaves ASCII: 's' and 'S' fold to
// LONG S (U+017F), 'k' and 'K' to KELVIN SIGN (U+212A). No other ASCII
// character folds to anything past ASCII.
const (
	longS  = "\u017f" // ſ
	kelvin = "\u212a" // K
)

// asciiLower maps 'A'..'Z' to 'a'..'z' and leaves every other byte.
func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldFinder finds a literal matched with Unicode simple case folding: it
// scans for one ASCII byte of it in both cases (memchr2 style) and checks
// the literal around each hit, taking LONG S for 's' and KELVIN SIGN for
// 'k', and for a rune past ASCII any rune of its folding orbit. The
// scanned byte is never 's' or 'k', so every match holds it as one ASCII
// byte and no match is missed. A literal without such a byte ("ks",
// "привет") is found through the encodings of one rune's orbit instead.
type foldFinder struct {
	lo, hi byte // the scanned byte, lower and upper case (equal for non-letters)
	off    int  // its index in lit
	// lit is the literal, ASCII lower case, with notASCII for each rune
	// past ASCII.
	lit []byte
	// orbits, set when the literal has a rune past ASCII, holds each
	// rune's simple folding orbit, which at checks rune by rune.
	orbits [][]rune
	// dist, when not 0, says the scan is for two bytes at once (pairs):
	// lit[off] and lit[off+dist], matched as b|m1 == p1 and b|m2 == p2.
	dist           int
	m1, p1, m2, p2 byte
	// needles, set when no ASCII byte can be scanned, finds the encodings
	// of the orbit of the literal's rune off.
	needles *multiFinder
}

// notASCII stands in lit for a rune past ASCII.
const notASCII = 0x80

// newFoldFinder picks how to scan for a literal matched with Unicode
// simple folding: for its ASCII byte whose two cases are rarest together,
// 'k' and 's' left out; when even that one is common, for it and the next
// rarest in the same stretch of such bytes (a fold of 'k', 's' or a rune
// past ASCII between them would move the second byte) at once. With no
// such byte it scans for the encodings of the orbit of one rune.
func newFoldFinder(lit []rune) (*foldFinder, bool) {
	if len(lit) == 0 {
		return nil, false
	}
	f := &foldFinder{lit: make([]byte, len(lit))}
	for i, r := range lit {
		if r < utf8.RuneSelf {
			f.lit[i] = asciiLower(byte(r))
		} else {
			f.lit[i] = notASCII
		}
		if r >= utf8.RuneSelf && f.orbits == nil {
			f.orbits = make([][]rune, len(lit))
		}
	}
	if f.orbits != nil {
		for i, r := range lit {
			f.orbits[i] = foldOrbit(r)
		}
	}
	low := f.lit
	best, bestFreq := rarestFold(low, 0, len(low), -1)
	if best < 0 {
		// The rune with the fewest folds, its encodings the needles.
		for i, r := range lit {
			if best < 0 || len(foldOrbit(r)) < len(foldOrbit(lit[best])) {
				best = i
			}
		}
		var encs [][]byte
		for _, o := range foldOrbit(lit[best]) {
			encs = append(encs, utf8.AppendRune(nil, o))
		}
		f.off, f.needles = best, &multiFinder{lits: encs}
		return f, true
	}
	f.off, f.lo, f.hi = best, low[best], upperOf(low[best])
	if bestFreq < pairMinFreq {
		return f, true
	}
	// The stretch around best of bytes that stay where they are.
	from, to := best, best+1
	for from > 0 && scannable(low[from-1]) {
		from--
	}
	for to < len(low) && scannable(low[to]) {
		to++
	}
	second, _ := rarestFold(low, from, to, best)
	if second < 0 {
		return f, true
	}
	i, j := min(best, second), max(best, second)
	f.off, f.dist = i, j-i
	f.m1, f.p1 = pairByte(low[i])
	f.m2, f.p2 = pairByte(low[j])
	return f, true
}

// foldOrbit returns r and every rune simple case folding makes equal to it.
func foldOrbit(r rune) []rune {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	return orbit
}

// scannable reports whether a byte of lit stands for one byte in every
// match: ASCII, and not 'k' or 's'.
func scannable(l byte) bool { return l < utf8.RuneSelf && !foldsPastASCII(l) }

// rarestFold returns the index in low[from:to] (not skip) of the byte
// whose two cases are rarest together, 'k' and 's' left out, and that
// frequency; -1 when there is none.
func rarestFold(low []byte, from, to, skip int) (best, bestFreq int) {
	best = -1
	for i := from; i < to; i++ {
		l := low[i]
		if i == skip || !scannable(l) {
			continue
		}
		freq := int(byteFreq[l])
		if u := upperOf(l); u != l {
			freq += int(byteFreq[u]) // both cases are scanned
		}
		if best < 0 || freq < bestFreq {
			best, bestFreq = i, freq
		}
	}
	return best, bestFreq
}

// foldsPastASCII reports whether the lower-case byte l also folds to a
// character past ASCII.
func foldsPastASCII(l byte) bool { return l == 'k' || l == 's' }

// upperOf returns the upper case of an ASCII lower-case letter, else l.
func upperOf(l byte) byte {
	if 'a' <= l && l <= 'z' {
		return l - 'a' + 'A'
	}
	return l
}

// pairByte returns the mask and value a byte b of the text must have,
// b|mask == value, to be l in either case: a letter's two cases differ
// only in bit 0x20, anything else must be itself.
func pairByte(l byte) (mask, value byte) {
	if 'a' <= l && l <= 'z' {
		return 0x20, l
	}
	return 0, l
}

// cursor remembers, for one byte value, the part of the buffer already
// scanned: from..to holds no occurrence before at (-1: none in it).
type cursor struct {
	b            byte
	from, to, at int
}

// find returns the first occurrence of c.b in buf[pos:upto], or -1,
// rescanning only what the last calls did not cover.
func (c *cursor) find(buf []byte, pos, upto int) int {
	start := pos
	switch {
	case c.from <= pos && c.at >= pos:
		if c.at < upto {
			return c.at
		}
		return -1
	case c.from <= pos && c.at < 0 && pos <= c.to:
		start = c.to // nothing in pos..to
	default:
		c.from = pos
	}
	if start >= upto {
		return -1
	}
	if i := bytes.IndexByte(buf[start:upto], c.b); i >= 0 {
		c.at, c.to = start+i, start+i+1
		return c.at
	}
	c.at, c.to = -1, upto
	return -1
}

// Eight bytes at a time: one in each byte of a word, and each byte's
// high bit.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// pairs returns the first position i at or after pos where buf[i] and
// buf[i+dist] are the pair's two bytes, or -1. It looks at sixteen
// positions per step, OR-ing the words of both bytes' differences so that
// a zero byte marks a position where both match: far fewer candidates
// than either byte alone gives, at about the cost of one memchr pass.
func (f *foldFinder) pairs(buf []byte, pos int) int {
	d := f.dist
	m1, p1 := uint64(f.m1)*lowBits, uint64(f.p1)*lowBits
	m2, p2 := uint64(f.m2)*lowBits, uint64(f.p2)*lowBits
	i := max(pos, 0)
	for ; i+16+d <= len(buf); i += 16 {
		w := buf[i : i+16+d]
		x0 := ((binary.LittleEndian.Uint64(w[0:8]) | m1) ^ p1) | ((binary.LittleEndian.Uint64(w[d:d+8]) | m2) ^ p2)
		x1 := ((binary.LittleEndian.Uint64(w[8:16]) | m1) ^ p1) | ((binary.LittleEndian.Uint64(w[d+8:d+16]) | m2) ^ p2)
		// A zero byte's high bit is set; so may be some above it, which
		// the check below refuses.
		z0 := (x0 - lowBits) &^ x0 & highBits
		z1 := (x1 - lowBits) &^ x1 & highBits
		for z := z0; z != 0; z &= z - 1 {
			if k := i + bits.TrailingZeros64(z)>>3; f.pairAt(buf, k) {
				return k
			}
		}
		for z := z1; z != 0; z &= z - 1 {
			if k := i + 8 + bits.TrailingZeros64(z)>>3; f.pairAt(buf, k) {
				return k
			}
		}
	}
	for ; i+d < len(buf); i++ {
		if f.pairAt(buf, i) {
			return i
		}
	}
	return -1
}

// pairAt reports whether the pair's two bytes are at k and k+dist.
func (f *foldFinder) pairAt(buf []byte, k int) bool {
	return buf[k]|f.m1 == f.p1 && buf[k+f.dist]|f.m2 == f.p2
}

// scan iterates over the positions of the scanned byte (either case) in
// buf. It looks through windows that double in size, and each case keeps
// its own cursor, so finding the next candidate costs about its distance
// and each byte is looked at about once per case, even when one of the
// two cases is absent (a whole-buffer search for it per call would be
// quadratic).
type scan struct {
	buf    []byte
	lo, hi cursor
	two    bool        // the byte has two cases
	pair   *foldFinder // set when the finder scans pairs
	multi  bool        // set when the finder scans for needles: ms
	ms     multiScan
}

func (f *foldFinder) scanner(buf []byte) scan {
	sc := scan{
		buf: buf, two: f.hi != f.lo,
		lo: cursor{b: f.lo, from: -1, at: -1},
		hi: cursor{b: f.hi, from: -1, at: -1},
	}
	if f.dist > 0 {
		sc.pair = f
	}
	if f.needles != nil {
		sc.multi, sc.ms = true, f.needles.scanner(buf)
	}
	return sc
}

// next returns the first candidate at or after pos, or -1.
func (sc *scan) next(pos int) int {
	if sc.pair != nil {
		return sc.pair.pairs(sc.buf, pos)
	}
	if sc.multi {
		return sc.ms.at(pos)
	}
	for w := firstWindow; pos < len(sc.buf); w *= 2 {
		upto := min(pos+w, len(sc.buf))
		i := sc.lo.find(sc.buf, pos, upto)
		if sc.two {
			lim := upto
			if i >= 0 {
				lim = i
			}
			if j := sc.hi.find(sc.buf, pos, lim); j >= 0 {
				i = j
			}
		}
		if i >= 0 {
			return i
		}
		if upto == len(sc.buf) {
			break
		}
	}
	return -1
}

// at reports whether the literal matches with its rune off at position p
// of buf (a candidate), and where that match starts and ends.
func (f *foldFinder) at(buf []byte, p int) (start, end int, ok bool) {
	if f.orbits != nil {
		return f.runesAt(buf, p)
	}
	i := p
	for j := f.off - 1; j >= 0; j-- {
		c := f.lit[j]
		switch {
		case i > 0 && asciiLower(buf[i-1]) == c:
			i--
		case c == 's' && bytes.HasSuffix(buf[:i], []byte(longS)):
			i -= len(longS)
		case c == 'k' && bytes.HasSuffix(buf[:i], []byte(kelvin)):
			i -= len(kelvin)
		default:
			return 0, 0, false
		}
	}
	start, i = i, p
	for _, c := range f.lit[f.off:] {
		switch {
		case i < len(buf) && asciiLower(buf[i]) == c:
			i++
		case c == 's' && bytes.HasPrefix(buf[i:], []byte(longS)):
			i += len(longS)
		case c == 'k' && bytes.HasPrefix(buf[i:], []byte(kelvin)):
			i += len(kelvin)
		default:
			return 0, 0, false
		}
	}
	return start, i, true
}

// runesAt is at for a literal with runes past ASCII: each character of
// the text (a byte that is not UTF-8 is one that matches nothing) must be
// in the orbit of the literal's rune.
func (f *foldFinder) runesAt(buf []byte, p int) (start, end int, ok bool) {
	i := p
	for j := f.off - 1; j >= 0; j-- {
		r, n := utf8.DecodeLastRune(buf[:i])
		if n == 0 || !inOrbit(f.orbits[j], r, n) {
			return 0, 0, false
		}
		i -= n
	}
	start, i = i, p
	for _, orbit := range f.orbits[f.off:] {
		r, n := utf8.DecodeRune(buf[i:])
		if n == 0 || !inOrbit(orbit, r, n) {
			return 0, 0, false
		}
		i += n
	}
	return start, i, true
}

// inOrbit reports whether r, decoded from n bytes, is one of orbit's
// runes (a byte that is not UTF-8 decodes as one U+FFFD, which no orbit
// here holds).
func inOrbit(orbit []rune, r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	for _, o := range orbit {
		if o == r {
			return true
		}
	}
	return false
}

// foldLiteral returns the longest case-folded literal every match of t
// contains, if any.
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

// anyIn reports whether line holds the literal.
func (f *foldFinder) anyIn(line []byte) bool {
	sc := f.scanner(line)
	for p := sc.next(0); p >= 0; p = sc.next(p + 1) {
		if _, _, ok := f.at(line, p); ok {
			return true
		}
	}
	return false
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

// next returns the position of a candidate at or after pos that is part
// of a match of one of the literals, on the first line that holds one, or
// -1. It looks through windows that double in size, each literal scanned
// only as far as the window (or the best candidate so far), so that a
// rare literal is not scanned to the buffer's end on every call.
func (s *foldSet) next(buf []byte, pos int) int {
	for start, w := pos, firstWindow; start < len(buf); start, w = start+w, w*2 {
		end := min(start+w, len(buf))
		best := -1
		for _, f := range s.fs {
			lim := end
			if best >= 0 {
				lim = best
			}
			// Room for the bytes a candidate before lim is scanned by:
			// at most four per rune of the literal.
			sc := f.scanner(buf[:min(len(buf), lim+utf8.UTFMax*len(f.lit))])
			for p := sc.next(start); p >= 0 && p < lim; p = sc.next(p + 1) {
				if _, _, ok := f.at(buf, p); ok {
					best = p
					break
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
func (s *foldSet) anyIn(line []byte) bool { return s.next(line, 0) >= 0 }

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
