package search

import (
	"bytes"
	"regexp"
	"testing"

	"buzzbox/shimtools/rustregex"
)

// matchingLines lists the indexes of lines FindLine reports, walking buf
// as the searcher does.
func matchingLines(m *Matcher, buf []byte) []int {
	var out []int
	pos := 0
	for pos < len(buf) {
		s, e, ok := m.FindLine(buf[pos:])
		if !ok {
			break
		}
		out = append(out, bytes.Count(buf[:pos+s], []byte{'\n'}))
		pos += e + 1
	}
	return out
}

// referenceLines evaluates pattern line by line with Go's regexp alone.
func referenceLines(re *regexp.Regexp, buf []byte) []int {
	var out []int
	if len(buf) == 0 {
		return nil // an empty file has no lines
	}
	lines := bytes.Split(buf, []byte{'\n'})
	if len(buf) > 0 && buf[len(buf)-1] == '\n' {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if re.Match(l) {
			out = append(out, i)
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func checkAgainstRegexp(t *testing.T, pattern string, fold bool, text []byte) {
	m, err := NewMatcher([]string{pattern}, MatcherOptions{IgnoreCase: fold})
	if err != nil {
		return
	}
	// The reference is Go's regexp on the pattern with ripgrep's Unicode
	// Perl classes spelled out, as the matcher compiles it.
	tr, err := rustregex.Translate(pattern, fold)
	if err != nil {
		return
	}
	src := tr.RE2
	if fold {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return
	}
	got, want := matchingLines(m, text), referenceLines(re, text)
	if !equalInts(got, want) {
		t.Fatalf("pattern %q fold=%v on %q: lines %v; regexp says %v", pattern, fold, text, got, want)
	}
	lines := bytes.Split(text, []byte{'\n'})
	for _, l := range lines {
		if m.MatchLine(l) != re.Match(l) {
			t.Fatalf("pattern %q fold=%v: MatchLine(%q) = %v; regexp says %v", pattern, fold, l, m.MatchLine(l), re.Match(l))
		}
	}
}

func TestPrefiltersAgreeWithRegexp(t *testing.T) {
	text := []byte("func main() {}\nFUNC MAIN\nthe \u212aind of thing\n\u017fome \u017ftring\nfoo bar\nbaz\nErrorf Sprintf\nxyz\n\nlast line no newline")
	for _, p := range []string{"func main", "kind", "string", "foo|bar", "Errorf|Sprintf", "a|b", "[xz]", "x[yz]", "(foo|baz)", "needle", "^$", "o", "main|kind", "f.*r", "^f"} {
		for _, fold := range []bool{false, true} {
			checkAgainstRegexp(t, p, fold, text)
		}
	}
}

// FuzzMatcher checks every prefilter path against Go's regexp run line by
// line: same lines, for any pattern and text.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{"foo", "foo|bar", "(?i)kind", "a|b", "[xz]q", "Errorf|Sprintf", "f.*o", "^$"} {
		f.Add(s, false, []byte("foo\nbar\nKIND \u212aind\nxq zq\nErrorf\n\n"))
	}
	f.Fuzz(func(t *testing.T, pattern string, fold bool, text []byte) {
		checkAgainstRegexp(t, pattern, fold, text)
	})
}
