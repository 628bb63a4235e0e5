package rustregex

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// TestSmartCaseLiterals checks what counts for smart case: literals and
// class ends, not classes, anchors, flags or group names.
func TestSmartCaseLiterals(t *testing.T) {
	for _, tt := range []struct {
		pattern        string
		literal, upper bool
	}{
		{`foo`, true, false},
		{`Foo`, true, true},
		{`\w+`, false, false},
		{`\wfoo`, true, false},
		{`\p{Lu}`, false, false},
		{`\p{Lu}x`, true, false},
		{`\pL`, false, false},
		{`[[:upper:]]`, false, false},
		{`[A-Z]`, true, true},
		{`[a-z]`, true, false},
		{`[^\d]`, false, false},
		{`\x41`, true, true},
		{`\x{41}b`, true, true},
		{`\.`, true, false},
		{`\b\w\B`, false, false},
		{`(?P<Name>\w)`, false, false},
		{`(?i)\w`, false, false},
		{`(?U)x`, true, false},
		{`.{2,3}^$`, false, false},
		{`a\{b`, true, false},
		{`É`, true, true},
		{`\u0041`, true, true},
		{`[A-Z--B]`, true, true},
		{`[[:foo:]]`, true, false},
	} {
		tr, err := Translate(tt.pattern, false)
		if err != nil {
			t.Errorf("Translate(%q): %v", tt.pattern, err)
		}
		if tr.Literal != tt.literal || tr.Upper != tt.upper {
			t.Errorf("Translate(%q) literal, upper = %v, %v; want %v, %v", tt.pattern, tr.Literal, tr.Upper, tt.literal, tt.upper)
		}
	}
}

// FuzzTranslate checks that translation never panics, refuses only with
// a *ParseError or ErrNewline, and that whatever it accepts parses as Go
// syntax, folded or not. (search's FuzzTranslateWrapped goes on to the
// -w, -x and multi-pattern wrappers.)
func FuzzTranslate(f *testing.F) {
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
	flags := syntax.Perl &^ syntax.OneLine
	f.Fuzz(func(t *testing.T, pattern string) {
		tr, err := Translate(pattern, false)
		if err != nil {
			if _, ok := err.(*ParseError); !ok && err != ErrNewline {
				t.Fatalf("Translate(%q) = %T %v; want a *ParseError", pattern, err, err)
			}
			return
		}
		if _, err := syntax.Parse(tr.RE2, flags); err != nil {
			t.Fatalf("Translate(%q) = %q, which does not parse: %v", pattern, tr.RE2, err)
		}
		// Folded, a class combined with && -- ~~ may come out empty.
		if folded, err := Translate(pattern, true); err == nil {
			if _, err := syntax.Parse(folded.RE2, flags|syntax.FoldCase); err != nil {
				t.Fatalf("Translate(%q, fold) = %q, which does not parse case-folded: %v", pattern, folded.RE2, err)
			}
		}
	})
}

// TestRewriteMatchesGoOnASCII checks that on ASCII text, where the
// Unicode classes and Go's agree except for \v, the rewritten pattern
// finds what Go's regexp finds with the original.
func TestRewriteMatchesGoOnASCII(t *testing.T) {
	text := "foo_bar 123 x-y\tz,w.q  end"
	for _, p := range []string{`\w+`, `\W+`, `\d+`, `\D+`, `\s+`, `\S+`, `[\w.-]+`, `[^\w\s]+`, `[\d\s]+`, `\b\w+\b`} {
		tr, err := Translate(p, false)
		if err != nil {
			t.Fatalf("Translate(%q): %v", p, err)
		}
		out := tr.RE2
		want := regexp.MustCompile(p).FindAllString(text, -1)
		got := regexp.MustCompile(out).FindAllString(text, -1)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q rewritten to %.60q finds %q; Go's original finds %q", p, out, got, want)
		}
	}
}
