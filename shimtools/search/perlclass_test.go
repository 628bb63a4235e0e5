package search

import "testing"

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
