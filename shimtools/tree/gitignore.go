package tree

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// GNU tree 2.1 reads .gitignore files its own way, not git's, and
// --gitignore has to list what it lists:
//
//   - a directory's .gitignore applies below it whether or not a
//     repository is there, and none above a root is read;
//   - $GIT_DIR/info/exclude applies everywhere when GIT_DIR is set, and
//     .git/info/exclude is never read otherwise;
//   - a line starting with '#' is a comment and '!' negates; trailing
//     spaces go unless escaped, a '\r' stays, then every '\' goes, its
//     next byte kept;
//   - a pattern without a '/' matches entry names at any depth; any other
//     ("build/" too) is joined to the path of the .gitignore's directory
//     as tree spells it ("./a", or ".//a" below a root "./") and matched
//     against the entry's path;
//   - an entry is hidden when any pattern of any file in force matches it
//     and no negated pattern of any of them does, in whatever order;
//   - with --prune or --matchdirs, a directory left with no entries keeps
//     its .gitignore in force for every directory read after it, and
//     pops one read later in its place (tree returns early, before it
//     pops its own).

// pushGit puts the .gitignore of directory dir in force, and reports
// whether there was one.
func (t *lister) pushGit(dir string) bool {
	if !t.o.gitignore {
		return false
	}
	f := readGitFile(t.abs(dir), dir)
	if f == nil {
		return false
	}
	t.stack = append(t.stack, f)
	return true
}

// popGit takes the last ignore file put in force out of force.
func (t *lister) popGit() {
	t.stack = t.stack[:len(t.stack)-1]
}

// gitPattern is one .gitignore line.
type gitPattern struct {
	pat string
	// relative patterns match names; the others match paths.
	relative bool
}

// gitFile is one ignore file in force.
type gitFile struct {
	// dir is the path tree reads the file through: its directory, or for
	// $GIT_DIR/info/exclude the file itself.
	dir             string
	remove, reverse []gitPattern
}

// readGitFile reads path, or path/.gitignore when path is not a regular
// file, as tree's new_ignorefile does. It returns nil when there is
// nothing to read.
func readGitFile(path, dir string) *gitFile {
	name := path
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		name = path + "/.gitignore"
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGitignoreBytes))
	if err != nil && len(data) == 0 {
		// tree opens a directory named .gitignore and reads no line.
		return &gitFile{dir: dir}
	}
	g := &gitFile{dir: dir}
	for len(data) > 0 {
		// tree reads lines with fgets into a PATH_MAX buffer: a longer
		// line comes in pieces, each taken as a line of its own.
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 || n > gitLineBytes {
			n = min(len(data), gitLineBytes)
		}
		line := string(data[:n])
		data = data[n:]
		line, _, _ = strings.Cut(line, "\x00")
		if line == "" || line[0] == '#' {
			continue
		}
		rev := line[0] == '!'
		line = gitTrim(line)
		if line == "" {
			continue
		}
		if rev {
			line = line[1:]
		}
		p := gitPattern{pat: strings.TrimPrefix(line, "/"), relative: strings.IndexByte(line, '/') < 0}
		if rev {
			g.reverse = append(g.reverse, p)
		} else {
			g.remove = append(g.remove, p)
		}
	}
	return g
}

// gitTrim is tree's gittrim: it drops a line's newline (not a '\r') and
// unescaped trailing spaces but a first one, then every backslash,
// keeping the byte after each.
func gitTrim(s string) string {
	e := len(s) - 1
	if e >= 0 && s[e] == '\n' {
		// Only the newline: a '\r' before it stays in the pattern.
		e--
	}
	for i := e; i >= 0; i-- {
		if s[i] != ' ' {
			break
		}
		if i > 0 && s[i-1] != '\\' {
			e--
		}
	}
	s = s[:e+1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ignored reports whether the ignore files in force hide the entry name
// at path.
func (t *lister) ignored(path, name string, isdir bool) bool {
	hit := func(p gitPattern, dir string) bool {
		if p.relative {
			return t.m.match(name, p.pat, isdir) == patMatched
		}
		return t.m.match(path, dir+"/"+p.pat, isdir) == patMatched
	}
	removed := false
	for _, f := range t.stack {
		if removed {
			break
		}
		for _, p := range f.remove {
			if hit(p, f.dir) {
				removed = true
				break
			}
		}
	}
	if !removed {
		return false
	}
	for _, f := range t.stack {
		for _, p := range f.reverse {
			if hit(p, f.dir) {
				return false
			}
		}
	}
	return true
}
