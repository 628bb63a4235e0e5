package search

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// TestPerlClassesAreUnicode checks each class against characters where
// Rust's regex crate (ripgrep) and Go's RE2 disagree.
func TestPerlClassesAreUnicode(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		text    string
		want    string // the first match; "" for none
	}{
		{`\w+`, "straße", "straße"},
		{`\w+`, "Привет", "Привет"},
		{`\w+`, "e\u0301x", "e\u0301x"},         // a combining mark
		{`\w+`, "\u216b\u24b6", "\u216b\u24b6"}, // a letter number, a circled letter (Other_Alphabetic)
		{`\w+`, "a\u200db", "a\u200db"},         // ZERO WIDTH JOINER (Join_Control)
		{`\w+`, "x\u203fy", "x\u203fy"},         // UNDERTIE (Pc)
		{`\W+`, "é ß", " "},
		{`\d+`, "x٠١٢٣y", "٠١٢٣"},
		{`\d+`, "０１２", "０１２"},
		{`\D+`, "٣abc", "abc"},
		{`\s`, "a\u00a0b", "\u00a0"},
		{`\s`, "a\u3000b", "\u3000"},
		{`\s`, "a\vb", "\v"},
		{`\S+`, "\u00a0ab\u2009", "ab"},
		{`[\w.-]+`, " ünï-cödé.txt ", "ünï-cödé.txt"},
		{`[\W\d]+`, "ab٣ é", "٣ "},
		{`[^\w]+`, "éa ß", " "},
		{`[^\W]+`, " éa ", "éa"},
		{`[\S]+`, "\u00a0é\u00a0", "é"},
		{`[\s\d]+`, "a\u3000٣b", "\u3000٣"},
		{`[\D]+`, "٣é٣", "é"},
		{`[\w-]+`, "x ab-ç y", "x"},
		{`(?-u)\w+`, "éab", "ab"},
		{`(?-u:\d)+`, "٣12", "12"},
		{`(?-u)\s`, "\u00a0\v", "\v"},
		{`(?-u)[\W]`, "aé", "é"},
		{`(?-u:\w)\w`, "aé", "aé"},
		{`\w(?-u)\w`, "éé ab", "ab"},
		{`(?i-u)\w+`, "\u212aK", "K"},
		{`(?u)\w+`, "éa", "éa"},
		{`\\w`, `x\w`, `\w`},
		{`[\\w]+`, `ww\\`, `ww\\`},
		{`\p{Greek}\w`, "αβ", "αβ"},
		{`\d\D\s\S\w\W`, "٣x\u00a0éé!", "٣x\u00a0éé!"},
	} {
		m, err := NewMatcher([]string{tt.pattern}, MatcherOptions{})
		if err != nil {
			t.Errorf("NewMatcher(%q) = %v", tt.pattern, err)
			continue
		}
		got := ""
		m.Each([]byte(tt.text), true, func(s, e int) bool {
			got = tt.text[s:e]
			return false
		})
		if got != tt.want {
			t.Errorf("%q on %q matches %q; want %q", tt.pattern, tt.text, got, tt.want)
		}
	}
}

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
		_, literal, upper, err := translate(tt.pattern, false)
		if err != nil {
			t.Errorf("translate(%q): %v", tt.pattern, err)
		}
		if literal != tt.literal || upper != tt.upper {
			t.Errorf("translate(%q) literal, upper = %v, %v; want %v, %v", tt.pattern, literal, upper, tt.literal, tt.upper)
		}
	}
}

// FuzzTranslate checks that translation never panics and that whatever
// it accepts parses as Go syntax, folded or not, and compiles alone and
// inside the -w, -x and multi-pattern wrappers.
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
		out, _, _, err := translate(pattern, false)
		if err != nil {
			if _, ok := err.(*ParseError); !ok && err != ErrNewline {
				t.Fatalf("translate(%q) = %T %v; want a *ParseError", pattern, err, err)
			}
			return
		}
		if _, err := syntax.Parse(out, flags); err != nil {
			t.Fatalf("translate(%q) = %q, which does not parse: %v", pattern, out, err)
		}
		// Folded, a class combined with && -- ~~ may come out empty.
		if folded, _, _, err := translate(pattern, true); err == nil {
			if _, err := syntax.Parse(folded, flags|syntax.FoldCase); err != nil {
				t.Fatalf("translate(%q, fold) = %q, which does not parse case-folded: %v", pattern, folded, err)
			}
		}
		if _, err := NewMatcher([]string{pattern}, MatcherOptions{}); err != nil {
			return // a literal newline, refused whatever the options
		}
		for _, o := range []MatcherOptions{{Word: true}, {Line: true}, {IgnoreCase: true, Word: true}} {
			if _, err := NewMatcher([]string{pattern}, o); err != nil {
				if _, empty := err.(*ParseError); empty && o.IgnoreCase {
					continue // a combined class that folds to nothing
				}
				if _, ok := err.(*ParseError); ok && o.Line {
					continue // ^(?:p)$ as ripgrep writes it: (?x)a# comments out the ")$"
				}
				t.Fatalf("NewMatcher(%q, %+v) = %v; the pattern alone compiles", pattern, o, err)
			}
		}
		if _, err := NewMatcher([]string{pattern, "x"}, MatcherOptions{}); err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("NewMatcher(%q, x) = %v; the pattern alone compiles", pattern, err)
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
		out, _, _, err := translate(p, false)
		if err != nil {
			t.Fatalf("translate(%q): %v", p, err)
		}
		want := regexp.MustCompile(p).FindAllString(text, -1)
		got := regexp.MustCompile(out).FindAllString(text, -1)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q rewritten to %.60q finds %q; Go's original finds %q", p, out, got, want)
		}
	}
}
