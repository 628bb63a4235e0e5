package ignore

import (
	"strings"
	"testing"
)

func TestGitignore(t *testing.T) {
	m := Parse("test", []byte(strings.Join([]string{
		"# comment",
		"*.log",
		"!keep.log",
		"/root-only.txt",
		"build/",
		"docs/**/secret.md",
		`\#hash`,
		`\!bang`,
		"trailing   ",
		"a/b/",
		"**/deep",
		"x/**",
	}, "\n")), false)
	tests := []struct {
		path  string
		isDir bool
		want  Decision
	}{
		{"a.log", false, Ignore},
		{"sub/a.log", false, Ignore},
		{"sub/keep.log", false, Whitelist},
		{"root-only.txt", false, Ignore},
		{"sub/root-only.txt", false, None},
		{"build", true, Ignore},
		{"build", false, None},
		{"sub/build", true, Ignore},
		{"docs/a/b/secret.md", false, Ignore},
		{"docs/secret.md", false, Ignore},
		{"#hash", false, Ignore},
		{"!bang", false, Ignore},
		{"trailing", false, Ignore},
		{"a/b", true, Ignore},
		{"z/a/b", true, None},
		{"q/r/deep", false, Ignore},
		{"x", true, None},
		{"x/y", false, Ignore},
		{"plain.txt", false, None},
	}
	for _, tt := range tests {
		if got, _ := m.Match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("Match(%q, dir=%v) = %v; want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestStackPrecedence(t *testing.T) {
	root := (*Dir)(nil).Child("", Files{
		Git:    Parse("root/.gitignore", []byte("*.txt\n"), false),
		Ignore: Parse("root/.ignore", []byte("!keep.txt\n"), false),
		HasGit: true,
	})
	sub := root.Child("sub", Files{Git: Parse("sub/.gitignore", []byte("!local.txt\n"), false)})
	for _, tt := range []struct {
		d    *Dir
		rel  string
		want Decision
	}{
		{root, "a.txt", Ignore},
		{root, "keep.txt", Whitelist},
		{sub, "sub/local.txt", Whitelist},
		{sub, "sub/other.txt", Ignore},
	} {
		if got := tt.d.Match(tt.rel, tt.rel, false); got != tt.want {
			t.Errorf("Match(%q) = %v; want %v", tt.rel, got, tt.want)
		}
	}
	// Without a repository, .gitignore does not apply but .ignore does.
	norepo := (*Dir)(nil).Child("", Files{Git: Parse("g", []byte("*.txt\n"), false)})
	if got := norepo.Match("a.txt", "a.txt", false); got != None {
		t.Errorf("outside a repository Match = %v; want None", got)
	}
}

func TestOverrides(t *testing.T) {
	var o Overrides
	for _, g := range []string{"*.go", "!vendor/"} {
		if err := o.Add(g, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path  string
		isDir bool
		want  Decision
	}{
		{"a.go", false, Whitelist},
		{"a.txt", false, Ignore},
		{"vendor", true, Ignore},
		{"src", true, None},
	} {
		if got := o.Match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("Overrides.Match(%q) = %v; want %v", tt.path, got, tt.want)
		}
	}
}

func TestTypes(t *testing.T) {
	var ty Types
	if err := ty.Select("go", false); err != nil {
		t.Fatal(err)
	}
	if got := ty.Match("x.go", false); got != Whitelist {
		t.Errorf("Match(x.go) = %v; want Whitelist", got)
	}
	if got := ty.Match("x.rs", false); got != Ignore {
		t.Errorf("Match(x.rs) = %v; want Ignore", got)
	}
	var e *UnknownTypeError
	if err := ty.Select("nope", false); err == nil || err.Error() != "unrecognized file type: nope" {
		t.Errorf("Select(nope) = %v, want %T", err, e)
	}
}

// FuzzParseLine parses arbitrary gitignore lines and matches arbitrary
// paths against them: no panics, and a parsed rule always keeps its text.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"*.log", "!keep", "/a/b/", `\#x`, "a/**/b", "**", "x/**", "[a-", "{a,b}/c", "  ", "#c"} {
		f.Add(s, "a/b/c.log", false)
	}
	f.Fuzz(func(t *testing.T, line, path string, isDir bool) {
		r, ok := ParseLine(line, false)
		if !ok {
			return
		}
		if r.Original == "" {
			t.Fatalf("ParseLine(%q) kept no text", line)
		}
		m := &Matcher{rules: []Rule{r}}
		d, _ := m.Match(path, isDir)
		if r.DirOnly && !isDir && d != None {
			t.Fatalf("dir-only rule %q matched file %q", line, path)
		}
		if d == Whitelist && !r.Negate {
			t.Fatalf("rule %q whitelisted %q", line, path)
		}
	})
}

// FuzzParse parses whole ignore files.
func FuzzParse(f *testing.F) {
	f.Add([]byte("*.o\n!a.o\n/build/\n# c\n\\#x\n"), "a.o")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		m := Parse("fuzz", data, true)
		m.Match(path, false)
		m.Match(path, true)
	})
}
