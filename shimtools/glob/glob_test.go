package glob

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, path string
		sep       bool
		want      bool
	}{
		{"*.go", "main.go", true, true},
		{"*.go", "a/main.go", true, false},
		{"*.go", "a/main.go", false, true},
		{"**/*.go", "a/b/main.go", true, true},
		{"**/*.go", "main.go", true, true},
		{"src/**", "src/a/b", true, true},
		{"src/**", "src", true, false},
		{"a/**/b", "a/b", true, true},
		{"a/**/b", "a/x/y/b", true, true},
		{"a/**/b", "ab", true, false},
		{"**", "anything/at/all", true, true},
		{"*.{rs,py}", "x.py", true, true},
		{"*.{rs,py}", "x.go", true, false},
		{"*.[ch]", "x.h", true, true},
		{"*.[!ch]", "x.h", true, false},
		{"*.[^ch]", "x.o", true, true},
		{"[a-c]?", "bz", true, true},
		{`\*`, "*", true, true},
		{`\*`, "x", true, false},
		{"a?c", "a/c", true, false},
		{"a?c", "a/c", false, true},
		{"foo", "foo", true, true},
		{"*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), true, false},
	}
	for _, tt := range tests {
		g, err := Compile(tt.pat, Options{LiteralSeparator: tt.sep})
		if err != nil {
			t.Fatalf("Compile(%q) = %v", tt.pat, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("Compile(%q, sep=%v).Match(%q) = %v; want %v", tt.pat, tt.sep, tt.path, got, tt.want)
		}
	}
}

func TestCaseFold(t *testing.T) {
	g, err := Compile("*.MD", Options{CaseFold: true})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match("readme.md") || !g.Match("README.Md") {
		t.Error(`Compile("*.MD", fold).Match = false; want true`)
	}
}

// TestCompileErrors checks ripgrep's (globset's) words for each error.
func TestCompileErrors(t *testing.T) {
	for p, want := range map[string]string{
		"[":       `error parsing glob '[': unclosed character class; missing ']'`,
		"[a":      `error parsing glob '[a': unclosed character class; missing ']'`,
		"{a,b":    `error parsing glob '{a,b': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)`,
		"{a,{b}}": `error parsing glob '{a,{b}}': nested alternate groups are not allowed`,
		`x\`:      `error parsing glob 'x\': dangling '\'`,
		"[z-a]":   `error parsing glob '[z-a]': invalid range; 'z' > 'a'`,
	} {
		_, err := Compile(p, Options{})
		if err == nil || err.Error() != want || !errors.Is(err, ErrSyntax) {
			t.Errorf("Compile(%q) = %v; want %s", p, err, want)
		}
	}
	// A '}' with no '{' is an ordinary character.
	if g, err := Compile("a}", Options{}); err != nil || !g.Match("a}") {
		t.Errorf(`Compile("a}") = %v; want a glob matching "a}"`, err)
	}
}

// simple reports whether p uses only the syntax path.Match shares with us.
func simple(p string) bool {
	for _, c := range p {
		if !(c >= 'a' && c <= 'd' || c == '*' || c == '?' || c == '/') {
			return false
		}
	}
	return !strings.Contains(p, "**")
}

// FuzzMatch compiles arbitrary patterns and matches arbitrary paths: no
// panics, literals match themselves, and for the syntax path.Match shares
// the two agree.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*.go", "a.go"}, {"**/x", "a/b/x"}, {"{a,b}*", "bc"}, {"[!a]?", "bb"}, {"a/**/b", "a/c/b"}, {`\{`, "{"}} {
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, pat, p string, sep bool) {
		g, err := Compile(pat, Options{LiteralSeparator: sep})
		if err != nil {
			return
		}
		got := g.Match(p)
		if !strings.ContainsAny(pat, `*?[]{}\,`) && got != (pat == p) {
			t.Fatalf("literal %q.Match(%q) = %v", pat, p, got)
		}
		if sep && simple(pat) && simple(p) {
			want, _ := path.Match(pat, p)
			if got != want {
				t.Fatalf("Compile(%q).Match(%q) = %v; path.Match says %v", pat, p, got, want)
			}
		}
		// Case folding never loses a match.
		if gf, err := Compile(pat, Options{LiteralSeparator: sep, CaseFold: true}); err == nil && got && !gf.Match(p) {
			t.Fatalf("folded %q.Match(%q) = false; unfolded true", pat, p)
		}
	})
}
