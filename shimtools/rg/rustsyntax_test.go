package rg_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRGIssueRustRejectsPattern: patterns ripgrep's regex parser refuses
// and Go's accepts exit 2 with ripgrep's error text; close relatives it
// accepts still search.
func TestRGIssueRustRejectsPattern(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rej")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nxxab\n\naxa\nfoo x-1\n"))
	compareExact(t, dir, "", "", []string{
		`-e [\d-x] e.txt`, `-e [\w-z] e.txt`, `-e [\p{L}-x] e.txt`, `-e (?<n>x) e.txt`,
		`-e [^\w\W] e.txt`, `-e [^\s\S] e.txt`, `-e (?i)[^\d\D] e.txt`, `-e [^\x00-\x{10FFFF}] e.txt`,
		`-e (?-u)[^\w\W] e.txt`, `-e foo -e [\d-x] e.txt`, `-w [\d-x] e.txt`, `-e é[\d-x] e.txt`,
		`-F [\d-x] e.txt`, `-e [\s-] e.txt`, `-e [-\d] e.txt`, `-e [\d-] e.txt`, `-e \[\d-x] e.txt`,
		`-e [[:alpha:]-x] e.txt`, `-e (?P<n>x) e.txt`, `-e [a-z\d-] e.txt`, `-e [^\W] e.txt`, `-e [\d\D] e.txt`,
	})
}

// TestRGIssueRustSyntaxErrors: patterns ripgrep 13's parser refuses, whether
// or not Go's would, exit 2 with ripgrep's message and carets.
func TestRGIssueRustSyntaxErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "err")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nfoo bar\nx-1\n"))
	var cases []string
	for _, p := range []string{
		`(?=a)`, `(?!a)b`, `(?<=x)a`, `(?<!x)a`, `(foo)\1`, `\0`, `\8`, `\Qa.b\E`, `[\Q]`,
		`(?P<n>a)(?P<n>b)`, `(?P<n>a)|(?P<n>b)`, `(?P<>a)`, `(?P<1a>x)`, `(?P<a-b>x)`, `(?P<n`, `(?P<`, `(?P`,
		`(ab`, `ab)`, `((a)`, `(a(b`, `(?`, `(?)`, `(?i`, `(?z)a`, `(?i-)`, `(?--i)`, `(?ii)`, `(?i-i)`,
		`[ab`, `[]`, `[^]`, `[^a`, `[-a`, `[a[^]b`, `[z-a]`, `[é-a]`, `[a-\n]`, `[\b]`, `[a&&]`, `[&&a]`,
		`\y`, `\<foo`, `\Z`, `\K`, `\h`, `\cA`, `\e`, `\o{101}`, `\`, `a\`,
		`\p{Foo}`, `\p{L&}`, `\pé`, `\p{^L}`, `\p{`, `\p{L`, `(?-u)é`, `(?-u)[é]`, `(?-u)\p{L}`,
		`\x`, `\x{`, `\x{41`, `\x{}`, `\xZZ`, `\x{110000}`, `\x{D800}`, `\u004`,
		`*a`, `a|*`, `{`, `{1}`, `a(?i)*`, `a{`, `a{1`, `a{1,`, `a{x}`, `a{,3}`, `a{,}`, `a{2,1}`, `a{99999999999}`,
		`foo|(?=x)`,
	} {
		cases = append(cases, "-e "+p+" e.txt")
	}
	cases = append(cases, `-e foo -e (?=x) e.txt`, `-e a) -e (b e.txt`, `-e (?P<n>a) -e (?P<n>b) e.txt`)
	compareExact(t, dir, "", "", cases)
}

// TestRGIssueRustSyntaxAccepted: syntax ripgrep 13 accepts that Go's parser
// refuses or reads differently.
func TestRGIssueRustSyntaxAccepted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acc")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nxxab\nfoo bar\néfoo\nx-1\nAAA\naaa\nfoofoo\nαβγ Ωmega\nz:f\n"+strings.Repeat("x", 1200)+"\n"))
	var cases []string
	for _, p := range []string{
		`a**`, `a++`, `a?+`, `a{2}{3}`, `^*`, `$+`, `\A*`,
		`\u0041`, `\u{41}`, `\U00000041`, `\U{3a9}`, `\x{41}{3}`,
		`[\d--x]`, `[a-z&&b]`, `[a-c~~b]`, `[\w--\d]`, `(?i)[a-z--b]`, `[a--]`, `[a-z&&[^aeiou]]`, `[[a][b]]`, `[^a[b]]`,
		`[[:foo:]]`, `[:alpha:]`, `[[:^alpha:]x]`, `[a-z[:digit:]]`, `[]a]`, `[^]a]`, `[a-]`, `[-a]`,
		`(?x)a#c`, `(?x)f\#`, `(?x:a)b`,
		`x{1001}`, `x{1000,}`, `x{5,1200}`, `x{2,1500}?`, `a{0,1000}`, `a{0,999}b`, `a{1000}{2}`, `(?:x{500}){3}`, `(a{2}){2,3}`,
		`a\z`, `^a`, `(?m)^a`, `(?-m)b$`,
		`\p{Greek}`, `\p{greek}`, `\p{Script=Greek}`, `\p{sc=grek}`, `\p{gc=L}`, `\p{Letter}`, `\p{lu}`,
		`\p{Uppercase}`, `\P{Lowercase}`, `\p{Alphabetic}`, `\p{ASCII}`, `\p{Any}`, `[\p{Greek}\d]`,
		`(?P<a.b>x)`, `(?P<a[1]>x)`, `(?P<_a1>x)`, `()`, `(?:)`, `(|a)`, `a||b`, `|`, `a]`, `a}`,
		`\&`, `\-`, `\~`, `\#`, `[\&]`, `[\-]`, `[a\-z]`, `(?u)a`, `(?-u:\w)`, `(?-u)\xFF`,
	} {
		cases = append(cases, "-n -e "+p+" e.txt", "-o -e "+p+" e.txt")
	}
	// \b* takes the \b where it can, and the relaxed match that checks
	// Unicode boundaries then refuses empty matches inside words that
	// ripgrep, skipping the \b, keeps (boundary.go): lines only.
	cases = append(cases, `-n -e \Afoo e.txt`, `-n -e \b* e.txt`,
		// The patterns are joined as they are: a flag reaches the next one.
		`-n -e (?i)A -e B e.txt`, `-n -e x( -e ) e.txt`, `-n -x -e abc -e AAA e.txt`,
		`-n -i -e [a-z--b] e.txt`, `-n -S -e [a-z--b] e.txt`, `-n -S -e [A-Z--B] e.txt`,
	)
	compareExact(t, dir, "", "", cases)
}

// TestRGIssueInvalidUTF8Classes: in Unicode mode no class, negated class
// or '.' matches a byte that is not valid UTF-8 (a Latin-1 file here).
// Under (?-u) a high byte in the pattern matches any invalid byte, not
// only itself (DEVELOPERS.md), so only patterns where that is the same.
func TestRGIssueInvalidUTF8Classes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "latin1")
	write(t, filepath.Join(dir, "l1.txt"), []byte("caf\xe9 ok\nna\xefve\nplain text\n\xff\xfe\nz\xe9\xe9z\n"))
	var cases []string
	for _, p := range []string{
		`caf.`, `\W+`, `.+`, `(?s).`, `[^a]+`, `\S+`, `\D`, `na.ve`, `\P{L}`, `\p{So}`, `[\x{0}-\x{10FFFF}]+`,
		`\w+`, `[\W]`, `[^\w]`, `[\S\d]+`, `z[^a]+z`, `(?-u)z\xE9`, `(?-u:.)+`,
	} {
		cases = append(cases, "-o -e "+p+" l1.txt", "-c -e "+p+" l1.txt")
	}
	cases = append(cases, `-w -o ok l1.txt`, `-w -o caf l1.txt`, `-w -o text l1.txt`, `-w -c z l1.txt`)
	compareExact(t, dir, "", "", cases)
}

// TestRGIssueUnicodeWordBoundary: \b and \B know Unicode word characters
// (é is one), where Go's RE2 knows only ASCII ones.
func TestRGIssueUnicodeWordBoundary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wb")
	write(t, filepath.Join(dir, "w.txt"), []byte("café ok\nun café\nécafé\nthe cafés\nx_café_y\ncafé\nnaïve test\nfoo éfoo fooé foo\nçaé ça\nxé é ée\n"))
	var cases []string
	for _, p := range []string{
		`\bcafé\b`, `\bfoo\b`, `\Bfoo`, `foo\B`, `\b\w+\b`, `\bna`, `ïve\b`, `(?i)\bCAFÉ\b`, `\bé`, `é\b`,
		`(?-u:\b)foo`, `\b.`, `.\b`, `^\b`, `\w\B\w`, `\Bé`, `é\B`, `\b(é|c)`, `\b`, `\B`,
	} {
		cases = append(cases, "-n -e "+p+" w.txt", "-c -e "+p+" w.txt")
	}
	// Matches themselves; ripgrep's engine has quirks resuming after a
	// match that ends in a character of several bytes, so only patterns
	// whose matches do not follow one another.
	for _, p := range []string{`\bcafé\b`, `\bfoo\b`, `\Bfoo`, `foo\B`, `(?i)\bCAFÉ\b`, `é\b`, `\w\B\w`} {
		cases = append(cases, "-o -e "+p+" w.txt", "--column -n -e "+p+" w.txt")
	}
	cases = append(cases, `-x -e \bcafé\b w.txt`, `-v -e \bfoo\b w.txt`, `-i -c -e \bCAFÉ w.txt`)
	compareExact(t, dir, "", "", cases)
}

// TestRGIssueRustParseOrder: ripgrep reports errors as regex-syntax finds
// them: syntax errors anywhere before the ones found translating (an
// unknown property, Unicode under (?-u), an empty class); patterns
// under -x as ^(?:p)$ and an empty one as (?:z{0})*; a pattern of
// several lines with numbered lines; a literal newline with its hint.
func TestRGIssueRustParseOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "order")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nfoo bar\nx-1\n]\n-\nz\naaaaaaaaaaaa\né\n"))
	var cases []string
	for _, p := range []string{
		`[-&&&\r--]{2}{3}|\w\xZ`, `\p{Foo}(`, `\p{Foo}{x}`, `[\p{Sk}&&]|[\B]`, `(?-u)é(`, `[^\x00-\x{10FFFF}]\8`,
		`(?-u)\u00C9`, `(?-u)\x{e9}`, `(?-u)[\x{e9}]`, `(?-u)[a-\u00e9]`, `(?-u)\xE9`, `(?-u)[\xE9]`,
		`[\1]`, `[a\9]`, `\x{12[`, `\x{}`, `\x{zz}`, `\x4`, `\xg1`, `[]-a-é-k]`, `[--z]`, `[]-z]`, `[^--z]`, `[&&a]`,
		`a{1,2}{3,2}?`, `a{3,2}?`, `a{,}`, `\n`, `[\n]`, `a|\n`,
	} {
		cases = append(cases, "-n -e "+p+" e.txt")
	}
	cases = append(cases, `-x -e a( -e b e.txt`, `-x -e (?x)a# e.txt`, `-x -e (?i)ABC -e FOO e.txt`, `-x -e a{3,2} e.txt`,
		`-x -e \p{Foo} e.txt`, `-x -e \n e.txt`)
	compareExact(t, dir, "", "", cases)
	var argv [][]string
	for _, p := range []string{
		"a{ 1 , }", "a{1, 2}", "a{ 2 }", "(?x)a{1 2}", "(?x)a{1, # c\n 2}", "(?x)[ ^ a]", "(?x)\\x 4 1", "(?x)\\x{ 4 1 }", "(?x)a{3,2} ?",
		"a\n(", "[a-\n]", "(?x)a\n#\n(", "(\n\r", "(\r", "a\n(?ii)", "x\n\n\n\n\n\n\n\n\n\n(", "é\n\\p{Foo}", "a\n", "[\n]",
		"a\r\n)",
	} {
		argv = append(argv, []string{"-n", "-e", p, "e.txt"})
	}
	argv = append(argv, []string{"-e", "", "-e", "(", "e.txt"}, []string{"-x", "-e", "", "-e", "(", "e.txt"},
		[]string{"-c", "-x", "-e", "", "e.txt"}, []string{"-c", "-S", "-e", "", "-e", `\p{Lu}`, "e.txt"},
		[]string{"-x", "-e", "a\n(", "e.txt"})
	compareArgv(t, dir, argv)
}

// TestRGIssueRustProperties: \p names resolved as regex-syntax resolves
// them (a property name before a category: \p{Sc} is Script, refused;
// != read as =), the properties derived from Go's tables, and repeated
// assertions, which match what the assertion alone or nothing matches.
func TestRGIssueRustProperties(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "props")
	write(t, filepath.Join(dir, "p.txt"), []byte("abc\n$ 5 ∑\nx\u0301y\nΩmega\n_id9 ½\nit's\n\u00ad\ncafé\nStraße\n"))
	var cases []string
	for _, p := range []string{
		`\p{Sc}`, `\p{isSc}`, `\p{LC}`, `\p{lc}`, `\p{gc=Sc}`, `\p{gc!=L}`, `\P{gc!=L}`, `\p{Alphabetic=no}`, `\p{sc=foo}`,
		`\p{gc=foo}`, `\p{foo=bar}`, `\p{isc}`, `\p{Lé}`, `\p{Cn}`, `\p{Cn}*`, `ω\p{Cn}*`, `\p{Math}`, `\p{ID_Start}+`,
		`\p{XID_Continue}+`, `\p{idc}+`, `\p{Cased}+`, `\p{Case_Ignorable}`, `\p{Grapheme_Extend}`, `\p{gr_base}+`,
		`\p{Default_Ignorable_Code_Point}`, `\p{ahex}+`, `\p{wspace}`, `\p{sc:Latin}+`, `[\p{Sc}\^&&]`,
		`\b*é`, `\B**|O+`, `E\-*\B*`, `\b+x`, `\B{1,3}?[-a]?x`, `^*a`, `$?`, `\b{0}c`,
		`\p\S`, `\P{Any}`, `[\P{Any}]*x`, `[^\P{Any}]`, `[[\P{Any}]a]`, `\P{Any}|a`, `[\P{Any}&&a]`, `(?x)\p{L}`, `[a\A`, `[\b`, `[\bx]`, `[[a]\z`,
	} {
		cases = append(cases, "-n -e "+p+" p.txt", "-c -e "+p+" p.txt")
	}
	compareExact(t, dir, "", "", cases)
}
