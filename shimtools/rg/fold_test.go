package rg_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// foldLines put LONG S (ſ, U+017F) and KELVIN SIGN (K, U+212A), which fold
// to 's' and 'k', at the start, middle and end of literals, next to ASCII
// and non-ASCII word characters and to non-word ones, so that the
// case-insensitive literal scan and its -w shortcut meet every edge.
var foldLines = []string{
	"func (h handler) ServeHTTP(w http.ResponseWriter)",
	"\u017fervehttp at the start, SERVEHTTP upper, serveHttp mixed",
	"servehttp\u017f glued, xservehttp prefixed, servehttp_ suffixed",
	"é\u017fervehttp accented before, servehttpé after",
	"ctx context.Context // CONTEXT Context contextual",
	"\u212aind kind KIND \u212a\u212a k\u212a kk",
	"s\u017fs SSS \u017f\u017f\u017f sss ſ",
	"masks MAS\u212a\u017f ma\u017fk\u017f",
	"a-k-s a-\u212a-\u017f a-K-S",
	"ñcontext contextñ 日context context日",
	"context\u00a0nbsp \u3000context ideographic space",
	"(context) [CONTEXT] {Context}",
	"invalid \xffcontext\xfe bytes, \xc5servehttp",
	"\u212aontext no, \u017fontext no, conte\u212at no",
	"CAFÉ café Café cafÉ caf\xc3 xcafé caféx",
	"STRASSE straße STRAẞE Straße stra\u017f\u017fe",
	"ПРИВЕТ привет Привет при\xd0вет мирпривет",
	"日本 ß ẞ SS é É",
}

// TestRGFoldLiteralKelvinLongS: a literal searched with -i, -F -i, -S or
// -i -w finds what ripgrep finds where the text spells 's' as LONG S or
// 'k' as KELVIN SIGN, or a letter past ASCII in another case, with every
// match and count the same; -w without -i too, next to the same
// neighbours.
func TestRGFoldLiteralKelvinLongS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fold")
	text := strings.Join(foldLines, "\n") + "\n"
	write(t, filepath.Join(dir, "f.txt"), []byte(text))
	// Past the first 64 KiB fill, so that the scan meets fill starts too.
	write(t, filepath.Join(dir, "big/big.txt"), []byte(strings.Repeat(text, 300)))
	var cases []string
	for _, p := range []string{"servehttp", "ServeHTTP", "context", "kind", "k", "ks", "sks", "mask", "a-k-s", "k-s", "ss", "café", "straße", "привет", "ß", "日本", "é"} {
		for _, f := range []string{"-i", "-F -i", "-S", "-i -w", "-F -i -w", "-i -o", "-i -w -o", "-i -c", "-i -w --count-matches", "-i -v", "-i -x", "-i -w -C1", "-w", "-w -o", "-F -w -c"} {
			cases = append(cases, f+" -n --sort path -e "+p)
		}
	}
	cases = append(cases, "-i -w -c -e context big", "-i -c -e servehttp big", "-i -w -o -e kind big/big.txt",
		"-i -e servehttp -e context --sort path", "-i -w -e kind -e mask --sort path",
		"-w -c -e context big", "-w -e Context -e ServeHTTP --sort path", "-w -e é --sort path", "-w -e 日 --sort path")
	compareExact(t, dir, "", "", cases)
}
