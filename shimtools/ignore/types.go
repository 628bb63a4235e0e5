package ignore

import (
	"fmt"
	"sort"
	"strings"

	"buzzbox/shimtools/glob"
)

// typeDefs returns the file types -t/-T know, with ripgrep 13's globs. It
// is a function so that package initialisation builds nothing.
func typeDefs() map[string][]string {
	return map[string][]string{
		"c":      {"*.[chH]", "*.[chH].in", "*.cats"},
		"cpp":    {"*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in", "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"},
		"css":    {"*.css", "*.scss"},
		"go":     {"*.go"},
		"html":   {"*.ejs", "*.htm", "*.html"},
		"java":   {"*.java", "*.jsp", "*.jspx", "*.properties"},
		"js":     {"*.js", "*.jsx", "*.vue"},
		"json":   {"*.json", "composer.lock"},
		"kotlin": {"*.kt", "*.kts"},
		"md":     {"*.markdown", "*.md", "*.mdown", "*.mkdn"},
		"py":     {"*.py"},
		"rust":   {"*.rs"},
		"sh": {"*.bash", "*.bashrc", "*.csh", "*.cshrc", "*.ksh", "*.kshrc", "*.sh", "*.tcsh", "*.zsh",
			".bash_login", ".bash_logout", ".bash_profile", ".bashrc", ".cshrc", ".kshrc", ".login", ".logout",
			".profile", ".tcshrc", ".zlogin", ".zlogout", ".zprofile", ".zshenv", ".zshrc", "bash_login",
			"bash_logout", "bash_profile", "bashrc", "profile", "zlogin", "zlogout", "zprofile", "zshenv", "zshrc"},
		"sql":  {"*.psql", "*.sql"},
		"toml": {"*.toml", "Cargo.lock"},
		"ts":   {"*.ts", "*.tsx"},
		"txt":  {"*.txt"},
		"yaml": {"*.yaml", "*.yml"},
	}
}

// TypeList writes the known types as "name: glob, glob" lines, sorted.
func TypeList() string {
	defs := typeDefs()
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		globs := append([]string(nil), defs[n]...)
		sort.Strings(globs)
		fmt.Fprintf(&b, "%s: %s\n", n, strings.Join(globs, ", "))
	}
	return b.String()
}

// UnknownTypeError reports a -t/-T name that is not defined.
type UnknownTypeError struct{ Name string }

func (e *UnknownTypeError) Error() string { return "unrecognized file type: " + e.Name }

type typeGlob struct {
	g      *glob.Glob
	negate bool
}

// Types is the -t/-T selection. The zero value selects nothing.
type Types struct {
	globs    []typeGlob
	selected bool
}

// Select adds type name; negate is -T.
func (t *Types) Select(name string, negate bool) error {
	var pats []string
	if name == "all" {
		for _, ps := range typeDefs() {
			pats = append(pats, ps...)
		}
	} else {
		ps, ok := typeDefs()[name]
		if !ok {
			return &UnknownTypeError{Name: name}
		}
		pats = ps
	}
	for _, p := range pats {
		g, err := glob.Compile(p, glob.Options{})
		if err != nil {
			return err
		}
		t.globs = append(t.globs, typeGlob{g: g, negate: negate})
	}
	if !negate {
		t.selected = true
	}
	return nil
}

// Empty reports whether no type was selected.
func (t *Types) Empty() bool { return t == nil || len(t.globs) == 0 }

// Match decides a file by its base name; directories are never decided.
func (t *Types) Match(name string, isDir bool) Decision {
	if t.Empty() || isDir {
		return None
	}
	for i := len(t.globs) - 1; i >= 0; i-- {
		if t.globs[i].g.Match(name) {
			if t.globs[i].negate {
				return Ignore
			}
			return Whitelist
		}
	}
	if t.selected {
		return Ignore
	}
	return None
}
