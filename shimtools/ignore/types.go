package ignore

import (
	"sort"
	"strings"

	"buzzbox/shimtools/glob"
)

// typeDef is one file type: its name and its globs.
type typeDef struct {
	name  string
	globs []string
}

// lookupType returns the globs of the type called name.
func lookupType(name string) ([]string, bool) {
	i := sort.Search(len(typeDefs), func(i int) bool { return typeDefs[i].name >= name })
	if i < len(typeDefs) && typeDefs[i].name == name {
		return typeDefs[i].globs, true
	}
	return nil, false
}

// TypeList writes the known types as "name: glob, glob" lines, sorted, as
// ripgrep's --type-list does.
func TypeList() string {
	var b strings.Builder
	for _, d := range typeDefs {
		b.WriteString(d.name)
		b.WriteString(": ")
		b.WriteString(strings.Join(d.globs, ", "))
		b.WriteByte('\n')
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
		for _, d := range typeDefs {
			pats = append(pats, d.globs...)
		}
	} else {
		ps, ok := lookupType(name)
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
