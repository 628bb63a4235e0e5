package search

import (
	"bytes"
	"regexp"
	"strconv"
)

// Replacer rewrites matches with ripgrep's --replace template: "$N",
// "${N}", "$name" and "${name}" insert a capture group (nothing when the
// group did not take part or does not exist), "$$" is a '$', and any other
// '$' stands for itself. A name is as long as it can be ("$1a" names the
// group "1a"), as in ripgrep and Go's Regexp.Expand. It is safe for
// concurrent use.
type Replacer struct {
	template []byte
	// caps is the patterns compiled with their capture groups, nil when
	// the template refers to no group but the whole match ($0).
	caps *regexp.Regexp
	// whole is caps anchored at both ends, for a match that caps does not
	// find itself in the line (a -w match is a group of ripgrep's word
	// regex): the groups are then taken from the match alone.
	whole *regexp.Regexp
}

// NewReplacer prepares template for the matches of a Matcher built from
// the same patterns and options.
func NewReplacer(patterns []string, o MatcherOptions, template string) (*Replacer, error) {
	r := &Replacer{template: []byte(template)}
	if !refersToGroups(template) {
		return r, nil
	}
	tree, _, err := parseSource(patterns, o)
	if err != nil {
		return nil, err
	}
	text := tree.Simplify().String()
	if r.caps, err = regexp.Compile(text); err != nil {
		return nil, err
	}
	if r.whole, err = regexp.Compile(`\A(?:` + text + `)\z`); err != nil {
		return nil, err
	}
	return r, nil
}

// Groups returns the matches in line (no terminator) with their capture
// groups, for Expand; nil when the template needs no group.
func (r *Replacer) Groups(line []byte) [][]int {
	if r.caps == nil {
		return nil
	}
	return r.caps.FindAllSubmatchIndex(line, -1)
}

// Expand appends to dst the template expanded for the match line[start:end];
// groups are what Groups returned for line.
func (r *Replacer) Expand(dst, line []byte, start, end int, groups [][]int) []byte {
	var loc []int
	if r.caps != nil {
		for _, l := range groups {
			if l[0] == start && l[1] == end {
				loc = l
				break
			}
		}
		if loc == nil {
			if l := r.whole.FindSubmatchIndex(line[start:end]); l != nil {
				loc = l
				for i := range loc {
					if loc[i] >= 0 {
						loc[i] += start
					}
				}
			}
		}
	}
	group := func(i int) []byte {
		switch {
		case i == 0:
			return line[start:end]
		case 2*i+1 < len(loc) && loc[2*i] >= 0:
			return line[loc[2*i]:loc[2*i+1]]
		}
		return nil
	}
	t := r.template
	for len(t) > 0 {
		i := bytes.IndexByte(t, '$')
		if i < 0 {
			break
		}
		dst = append(dst, t[:i]...)
		t = t[i:]
		if len(t) > 1 && t[1] == '$' {
			dst = append(dst, '$')
			t = t[2:]
			continue
		}
		name, n, ok := capRef(t)
		if !ok {
			dst = append(dst, '$')
			t = t[1:]
			continue
		}
		t = t[n:]
		if k, err := strconv.ParseUint(name, 10, 32); err == nil {
			dst = append(dst, group(int(k))...)
		} else if r.caps != nil {
			if k := r.caps.SubexpIndex(name); k >= 0 {
				dst = append(dst, group(k)...)
			}
		}
	}
	return append(dst, t...)
}

// capRef parses the group reference at the start of t (which begins with
// '$'), returning the name and the bytes it takes, as ripgrep's
// find_cap_ref does.
func capRef(t []byte) (name string, n int, ok bool) {
	if len(t) <= 1 {
		return "", 0, false
	}
	i := 1
	brace := t[i] == '{'
	if brace {
		i++
	}
	end := i
	for end < len(t) && isCapLetter(t[end]) {
		end++
	}
	if end == i {
		return "", 0, false
	}
	name = string(t[i:end])
	if brace {
		if end >= len(t) || t[end] != '}' {
			return "", 0, false
		}
		end++
	}
	return name, end, true
}

func isCapLetter(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_'
}

// refersToGroups reports whether template names any group but $0.
func refersToGroups(template string) bool {
	t := []byte(template)
	for len(t) > 0 {
		i := bytes.IndexByte(t, '$')
		if i < 0 {
			return false
		}
		t = t[i:]
		if len(t) > 1 && t[1] == '$' {
			t = t[2:]
			continue
		}
		name, n, ok := capRef(t)
		if !ok {
			t = t[1:]
			continue
		}
		if name != "0" {
			if k, err := strconv.ParseUint(name, 10, 32); err != nil || k != 0 {
				return true
			}
		}
		t = t[n:]
	}
	return false
}
