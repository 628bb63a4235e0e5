// Package ignore decides which paths a walk skips: gitignore-style files
// (.gitignore, .ignore, .rgignore, .git/info/exclude, the global excludes
// file), -g override globs and -t/-T file types, with the precedence
// ripgrep 13 gives them. Each decision keeps the pattern that made it.
//
// It reads no directories itself; package walk hands it file contents.
package ignore

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode"

	"buzzbox/shimtools/glob"
)

// Decision is the outcome of matching one path.
type Decision uint8

const (
	None      Decision = iota // no pattern applies
	Ignore                    // skip the path
	Whitelist                 // keep the path, overriding later sources
)

// Rule is one parsed line of an ignore file.
type Rule struct {
	// Original is the line as written, for diagnostics.
	Original string
	// Negate is set for "!pattern" lines.
	Negate bool
	// DirOnly is set for patterns ending in '/'.
	DirOnly bool
	g       *glob.Glob
}

// Matcher holds the rules of one ignore file, matched against paths
// relative to the directory that holds the file. The zero value matches
// nothing.
type Matcher struct {
	rules []Rule
	// Source names the file, for diagnostics.
	Source string
	// Errors are the lines that do not compile, as *LineError.
	Errors []error
}

// LineError is a line of an ignore file that does not compile; ripgrep
// prints it as a warning and goes on without the line.
type LineError struct {
	Source string
	Line   int
	Err    error // a *glob.SyntaxError naming the whole line
}

func (e *LineError) Error() string {
	return e.Source + ": line " + strconv.Itoa(e.Line) + ": " + e.Err.Error()
}

func (e *LineError) Unwrap() error { return e.Err }

// Len returns the number of rules.
func (m *Matcher) Len() int {
	if m == nil {
		return 0
	}
	return len(m.rules)
}

// Parse reads gitignore lines from data. Lines that do not compile are
// dropped, as git and ripgrep drop them. caseFold matches case-insensitively.
func Parse(source string, data []byte, caseFold bool) *Matcher {
	m := &Matcher{Source: source}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxIgnoreLine)
	for n := 1; sc.Scan(); n++ {
		r, ok, err := parseLine(sc.Text(), caseFold)
		if err != nil {
			m.Errors = append(m.Errors, &LineError{Source: source, Line: n, Err: err})
		}
		if ok {
			m.rules = append(m.rules, r)
		}
	}
	return m
}

// ParseLine parses one gitignore line. ok is false for blank lines,
// comments and patterns that do not compile.
func ParseLine(line string, caseFold bool) (r Rule, ok bool) {
	r, ok, _ = parseLine(line, caseFold)
	return r, ok
}

// parseLine is ParseLine, with the error of a line that does not compile
// (naming the line as written, trailing blanks cut).
func parseLine(line string, caseFold bool) (r Rule, ok bool, err error) {
	line = strings.TrimSuffix(line, "\r")
	if strings.HasPrefix(line, "#") {
		return r, false, nil
	}
	if !strings.HasSuffix(line, "\\ ") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	if line == "" {
		return r, false, nil
	}
	r.Original = line
	anchored := false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
		anchored = strings.HasPrefix(line, "/")
	} else {
		if strings.HasPrefix(line, "!") {
			r.Negate = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			line = line[1:]
			anchored = true
		}
	}
	if strings.HasSuffix(line, "/") {
		r.DirOnly = true
		line = line[:len(line)-1]
		line = strings.TrimSuffix(line, `\`)
	}
	if line == "" {
		return r, false, nil
	}
	actual := line
	if !anchored && !strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") {
		actual = "**/" + actual
	}
	if strings.HasSuffix(actual, "/**") {
		actual += "/*"
	}
	g, err := glob.Compile(actual, glob.Options{LiteralSeparator: true, CaseFold: caseFold})
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			err = &glob.SyntaxError{Glob: r.Original, Msg: se.Msg}
		}
		return r, false, err
	}
	r.g = g
	return r, true, nil
}

// Match decides rel, a slash-separated path relative to the matcher's
// directory. The last matching rule wins; directory-only rules skip files.
func (m *Matcher) Match(rel string, isDir bool) (Decision, *Rule) {
	if m == nil {
		return None, nil
	}
	for i := len(m.rules) - 1; i >= 0; i-- {
		r := &m.rules[i]
		if r.DirOnly && !isDir {
			continue
		}
		if r.g.Match(rel) {
			if r.Negate {
				return Whitelist, r
			}
			return Ignore, r
		}
	}
	return None, nil
}
