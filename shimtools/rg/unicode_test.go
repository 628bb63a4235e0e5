package rg_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// unicodeLines are where Rust's Unicode Perl classes and Go's ASCII ones
// part: accented and Cyrillic letters, ß, Arabic-Indic, Devanagari and
// fullwidth digits, no-break, ideographic, thin and vertical-tab spaces,
// NEL and LINE SEPARATOR, a letter number, circled letters, joiners,
// combining marks, CJK, Greek, a title-case digraph, an emoji.
var unicodeLines = []string{
	"café crème brûlée",
	"straße STRASSE Maß",
	"Привет мир, ёжик Ёлка",
	"arabic digits ٠١٢٣٤٥٦٧٨٩ and 123",
	"devanagari ०१२ fullwidth ０１２",
	"nbsp:a\u00a0b ideographic:c\u3000d thin:e\u2009f",
	"nel:x\u0085y ls:x\u2028y vt:x\u000by ff:x\u000cy",
	"roman \u216b numeral, circled \u24b6\u24d0 letters",
	"zwj a\u200db zwnj c\u200cd combining e\u0301 and n\u0303",
	"under_score snake_case_name x__y",
	"日本語のテキスト 中文",
	"tab\there word-with-dash",
	"emoji 😀 smile, math 𝑥𝑦",
	"ǅ title Ǆ DŽ",
	"Ελληνικά λέξεις",
	"a1b2 c3d4",
	"١٢foo٣ foo٤",
	`back\w slash \d`,
	"name@example.com x",
	"foo bar",
	"xx foo",
}

func unicodeCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "uni")
	write(t, filepath.Join(dir, "u.txt"), []byte(strings.Join(unicodeLines, "\n")+"\n"))
	// Over 64 KiB, so that ripgrep's fills start at lines of their own.
	var big strings.Builder
	for i := 0; big.Len() < 200000; i++ {
		// Lines cut at a varying rune, so that they start with all sorts
		// of characters.
		l := []rune(unicodeLines[(i*7)%len(unicodeLines)])
		fmt.Fprintf(&big, "%s\n", string(l[(i*3)%(len(l)/2+1):]))
	}
	write(t, filepath.Join(dir, "big/big.txt"), []byte(big.String()))
	return dir
}

// TestRGIssueUnicodePerlClasses: \w, \d and \s (and \W, \D, \S) match as
// in ripgrep, where they are Unicode classes, outside and inside brackets,
// and as ASCII ones under (?-u); escapes, smart case and -w follow.
func TestRGIssueUnicodePerlClasses(t *testing.T) {
	dir := unicodeCorpus(t)
	patterns := []string{
		`\w+`, `\W+`, `\d+`, `\D+`, `\s+`, `\S+`, `[\w.-]+`, `[\W\d]+`, `[^\w]+`, `[^\W]+`,
		`[\s\d]+`, `[^\s]+`, `[\S]+`, `[\D]+`, `[^\d\s]+`, `[\w-]+`, `\S+@\S+`, `\w{3}`,
		`(?-u)\w+`, `(?-u:\w+)`, `(?-u)\s`, `(?-u)[\w]+`, `\w+(?-u)\w+`, `(?u)\w+`,
		`(?i-u)\w+`, `(?i)\W+`, `(?i)ß\w`, `e\w`, `\\w`, `[\\w]+`, `\p{Greek}\w`,
		`\p{Lu}\w+`, `[[:upper:]]\w+`, `\d\D\s\S\w\W`, `[a-z]+`, `мир`, `café`,
	}
	var cases []string
	for _, p := range patterns {
		for _, f := range []string{"-o", "-c", "-o -w", "-o -i", "-o -S", "-w --count-matches"} {
			cases = append(cases, f+" --sort path -e "+p)
		}
	}
	for _, f := range []string{"-w --column", "-w --color always", "-w -v -C1 --color always", "-w --vimgrep", "-w -o -b", "-w --json", "-x -i"} {
		for _, p := range []string{`\w+`, `\W+`, `\d+`, `[a-z]+`, `foo`} {
			cases = append(cases, f+" --sort path -e "+p)
		}
	}
	cases = append(cases,
		// Smart case counts literals only: \p{Lu} alone stays case-sensitive.
		`-S -c -e \p{Lu} u.txt`, `-S -c -e \p{Lu}x u.txt`, `-S -c -e \wSTRASSE u.txt`, `-S -c -e \wstrasse u.txt`,
		`-S -c -e [[:upper:]] u.txt`, `-S -o -e \x41 u.txt`,
		// -w past the first fill, walked, named and with -a.
		`-o -w -e \w+ big`, `-o -w -e [a-z]+ big/big.txt`, `-o -w -a -e \S+ big`, `-w --column -e \d+ big`,
	)
	compareExact(t, dir, "", "", cases)
	t.Run("stdin", func(t *testing.T) {
		compareExact(t, dir, "", filepath.Join(dir, "big/big.txt"), []string{`-o -w -e \w+`, `-c -e \s\d`, `-o -e [\W\d]+`})
	})
}
