package search

import (
	"bytes"
	"strings"
	"testing"
)

// foldAlphabet is what FuzzFoldLiteral builds texts from: both cases of
// letters that fold only in ASCII and of 'k' and 's', their non-ASCII
// folds, letters past ASCII with their other cases, word and non-word
// neighbours in and out of ASCII, newlines and bytes that are not UTF-8.
// Literals are built from the first litPieces.
var foldAlphabet = []string{
	"a", "A", "b", "E", "e", "k", "K", "s", "S", "t", "T", "x", "X", "_", "1", "-",
	"\u017f", "\u212a", "é", "É", "ß", "\u1e9e", "п", "П", "日",
	"\u00a0", " ", ".", "\n", "\xff", "\xc5", "\xe2\x84", "\xd0",
}

// litPieces is how many pieces of foldAlphabet literals are made of.
const litPieces = 25

// fromAlphabet turns each byte of b into a piece of foldAlphabet (only
// the first n pieces).
func fromAlphabet(b []byte, n int) string {
	var s strings.Builder
	for _, c := range b {
		s.WriteString(foldAlphabet[int(c)%n])
	}
	return s.String()
}

// regexOnly is m with every literal prefilter taken off, so that lines are
// decided by the regular expressions alone.
func regexOnly(m *Matcher) *Matcher {
	r := *m
	r.fold, r.folds, r.foldExact, r.foldWord = nil, nil, false, false
	r.req, r.lit, r.multi, r.multiExact, r.reqWord = nil, nil, nil, false, false
	return &r
}

// checkFold compares the literal scans (case-insensitive unless
// sensitive) with the regular expression for one pattern set, text and
// options.
func checkFold(t *testing.T, patterns []string, sensitive, word bool, text []byte) {
	t.Helper()
	m, err := NewMatcher(patterns, MatcherOptions{Fixed: true, IgnoreCase: !sensitive, Word: word})
	if err != nil {
		return
	}
	if m.re == nil && m.words == nil {
		return
	}
	ref := regexOnly(m)
	if got, want := matchingLines(m, text), matchingLines(ref, text); !equalInts(got, want) {
		t.Fatalf("-F -i=%v -w=%v %q on %q: lines %v; the regex alone says %v", !sensitive, word, patterns, text, got, want)
	}
	for _, l := range bytes.Split(text, []byte{'\n'}) {
		if got, want := m.MatchLine(l), ref.MatchLine(l); got != want {
			t.Fatalf("-F -i=%v -w=%v %q: MatchLine(%q) = %v; the regex alone says %v", !sensitive, word, patterns, l, got, want)
		}
	}
}

func TestFoldLiteralAgreesWithRegexp(t *testing.T) {
	text := []byte("\u017fervehttp ServeHTTP xservehttp servehttp_\n\u212aind kind é\u212aind kindé\nctx context.Context contextual\n\xffcontext\xfe s\u017fs ks\u212a\nCAFÉ café caf\xc3 STRASSE straße STRA\u1e9eE\nПРИВЕТ привет при\xd0вет")
	for _, p := range []string{"servehttp", "kind", "context", "ks", "sks", "s-k", "k", "xs", "e", "café", "straße", "привет", "ß", "é", "日"} {
		for _, word := range []bool{false, true} {
			for _, sensitive := range []bool{false, true} {
				checkFold(t, []string{p}, sensitive, word, text)
				checkFold(t, []string{p, "kind"}, sensitive, word, text)
			}
		}
	}
}

// FuzzFoldLiteral checks the literal scans, case-insensitive (unless
// sensitive) and their -w shortcut, against the regular expression alone:
// the same lines, for random literals and texts full of 's', 'k' and
// their non-ASCII folds.
func FuzzFoldLiteral(f *testing.F) {
	f.Add([]byte{0, 7, 9}, []byte{15, 0, 7, 9, 23, 16, 9, 0, 7, 9, 19, 0, 7, 9, 17}, false, false, false)
	f.Add([]byte{5, 7, 9}, []byte{15, 5, 7, 9, 21, 5, 8, 10, 13, 5, 7, 9, 24}, false, true, false)
	f.Add([]byte{9, 5}, []byte{16, 15, 22, 9, 5, 23, 8, 6, 17, 15, 26}, false, true, true)
	f.Add([]byte{0, 9}, []byte{0, 9, 20, 17, 0, 9, 23, 0, 9, 13, 24, 0, 9}, true, true, false)
	f.Fuzz(func(t *testing.T, lit, text []byte, sensitive, word, two bool) {
		// Short literals and texts: each case compiles regexes, and
		// length finds nothing more.
		if len(lit) > 12 || len(text) > 1024 {
			return
		}
		p := fromAlphabet(lit, litPieces)
		if p == "" {
			return
		}
		patterns := []string{p}
		if two {
			patterns = append(patterns, fromAlphabet(lit[len(lit)/2:], litPieces))
		}
		checkFold(t, patterns, sensitive, word, []byte(fromAlphabet(text, len(foldAlphabet))))
	})
}

// TestFoldScanPicksRareByte: a case-insensitive literal is scanned for its
// rarest byte, never 'k' or 's' (whose folds leave ASCII), and for two
// bytes at once when even the rarest is common. Scanning for the commonest
// (a space in "func main") made -i three times slower than ripgrep.
func TestFoldScanPicksRareByte(t *testing.T) {
	for _, c := range []struct {
		lit      string
		lo, pair byte // the first scanned byte; the second, 0 for none
	}{
		{"func main", 'u', 'm'},
		{"servehttp", 'v', 0},
		{"ServeHTTP", 'v', 0},
		{"context", 'c', 'x'},
		{"ks-sk", '-', 0},
		{"kind", 'n', 'd'},
	} {
		f, ok := newFoldFinder([]rune(c.lit))
		if !ok {
			t.Fatalf("newFoldFinder(%q) refused", c.lit)
		}
		var pair byte
		if f.dist > 0 {
			pair = f.lit[f.off+f.dist]
		}
		if got := f.lit[f.off]; got != c.lo || pair != c.pair {
			t.Errorf("newFoldFinder(%q) scans %q and %q; want %q and %q", c.lit, got, pair, c.lo, c.pair)
		}
	}
	// Without a byte to scan, the encodings of one rune's folds are
	// searched for; with one, the runes past ASCII are checked in place.
	for _, c := range []struct {
		lit     string
		needles int // 0: a byte is scanned
	}{{"ks", 3}, {"SKS", 3}, {"k", 3}, {"привет", 2}, {"ß", 2}, {"日", 1}, {"straße", 0}, {"café", 0}} {
		f, ok := newFoldFinder([]rune(c.lit))
		if !ok {
			t.Fatalf("newFoldFinder(%q) refused", c.lit)
		}
		n := 0
		if f.needles != nil {
			n = len(f.needles.lits)
		}
		if n != c.needles {
			t.Errorf("newFoldFinder(%q) scans for %d needles; want %d", c.lit, n, c.needles)
		}
	}
}
