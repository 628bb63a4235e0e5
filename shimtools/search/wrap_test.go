package search

import (
	"testing"

	"buzzbox/shimtools/rustregex"
)

// FuzzTranslateWrapped checks that a pattern whose translation compiles
// alone also compiles inside the -w, -x and multi-pattern wrappers, and
// that refusals there are ripgrep's parse errors.
func FuzzTranslateWrapped(f *testing.F) {
	for _, s := range []string{
		`\w+`, `[\w.-]+`, `[\W\d]`, `[^\S\n]`, `\\w`, `\Q\w`, `(?-u)\w(?u)\d`, `(?i-u:\s)`,
		`[\w-a]`, `[]\w]`, `[^]\d]`, `[[:alpha:]\s]`, `\p{Greek}\D`, `\x{41}\S`, `a{2}\w{1,}`,
		`(?P<n>\d)`, `(?:\w|\W)*`, `[\d-\w]`, `\`, `[`, `(?u`, `\pN\w`,
		`[a-z&&[^aeiou]]`, `[\w--\d]`, `[[:foo:]]`, `a**`, `^*`, `x{1001}`, `(?x) a # c`, `\u00e9`,
		`\p{greek}`, `(?-u)[\x80-\xff]`, `[^\n]`, `(?i)[a-z~~m-q]`,
		"a{ 1 , }", "(?x)a{1 0}", `\x{12[`, `[\1]`, `[]-a-é-k]`, `[--z]`, `[&&a]`, `(?x)[ ^ a]`, "(?x)\\x 4 1",
		`\p{Foo}(`, `(?-u)\u00e9`, `(?-u)[\x{e9}]`, "a\n(", "[\n]", `\x{`, `\x{}`, `\x4`,
		`\p\S`, `[\P{Any}]*`, `[^\P{Any}]`, `[[\P{Any}]a]`, `\P{Any}`, `\p{Cn}*`, `\b*é`, `^*`, `\B{0}`, "(?x)\\p{ L u }",
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
