package search

import (
	"testing"

	"buzzbox/shimtools/rustregex"
)

// FuzzTranslateWrapped checks that a pattern whose translation compiles
// alone also compiles inside the -w, -x and multi-pattern wrappers, and
// that refusals there are ripgrep's parse errors.
func FuzzTranslateWrapped(f *testing.F) {
	// The translator's own seeds are rustregex's FuzzTranslate's; these
	// are the ones the wrappers change: flags and comments that reach
	// past the pattern, classes that fold to nothing, boundaries, groups.
	for _, s := range []string{
		`(?x)a#`, `(?x)a # c`, `(?i)[a-z~~m-q]`, `[a-z&&[^aeiou]]`, `[\w--\d]`, `\b*é`, `\B{0}`,
		`(?P<n>\d)`, `x(`, `)`, `|`, `(?i)`, `\w+`, `^*`, `a**`, `\P{Any}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if _, err := NewMatcher([]string{pattern}, MatcherOptions{}); err != nil {
			return // refused, or a literal newline, whatever the options
		}
		for _, o := range []MatcherOptions{{Word: true}, {Line: true}, {IgnoreCase: true, Word: true}} {
			if _, err := NewMatcher([]string{pattern}, o); err != nil {
				if _, empty := err.(*rustregex.ParseError); empty && o.IgnoreCase {
					continue // a combined class that folds to nothing
				}
				if _, ok := err.(*rustregex.ParseError); ok && o.Line {
					continue // ^(?:p)$ as ripgrep writes it: (?x)a# comments out the ")$"
				}
				t.Fatalf("NewMatcher(%q, %+v) = %v; the pattern alone compiles", pattern, o, err)
			}
		}
		if _, err := NewMatcher([]string{pattern, "x"}, MatcherOptions{}); err != nil {
			if _, ok := err.(*rustregex.ParseError); !ok {
				t.Fatalf("NewMatcher(%q, x) = %v; the pattern alone compiles", pattern, err)
			}
		}
	})
}
