package search

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// ParseError is a pattern ripgrep's regex parser refuses although Go's
// accepts it, reported in ripgrep's words: Pattern is the text ripgrep
// parses (the patterns joined by '|'), Start and Len the characters its
// carets mark.
type ParseError struct {
	Pattern    string
	Start, Len int
	Msg        string
}

// Error renders the error as ripgrep 13 prints it (a one-line pattern).
func (e *ParseError) Error() string {
	return "regex parse error:\n    " + e.Pattern + "\n    " +
		strings.Repeat(" ", e.Start) + strings.Repeat("^", e.Len) + "\nerror: " + e.Msg
}

// rustRejects finds in pattern the first of the constructs Rust's regex
// syntax refuses and Go's accepts: a Perl class (\d, \w, \s and their
// negations) as a range boundary in a bracket class, a "(?<name>" group
// and a bracket class that matches nothing, such as [^\w\W].
func rustRejects(pattern string) *ParseError {
	fail := func(start, end int, msg string) *ParseError {
		return &ParseError{
			Pattern: pattern,
			Start:   utf8.RuneCountInString(pattern[:start]),
			Len:     utf8.RuneCountInString(pattern[start:end]),
			Msg:     msg,
		}
	}
	isPerl := func(i int) bool {
		return i+1 < len(pattern) && pattern[i] == '\\' && strings.IndexByte("dDwWsS", pattern[i+1]) >= 0
	}
	for i := 0; i < len(pattern); {
		switch c := pattern[i]; {
		case c == '\\':
			i += 2
			if i-1 < len(pattern) && pattern[i-1] == 'Q' {
				j := strings.Index(pattern[i:], `\E`)
				if j < 0 {
					return nil
				}
				i += j + 2
			}
		case c == '(' && strings.HasPrefix(pattern[i:], "(?<") && !strings.HasPrefix(pattern[i:], "(?<=") && !strings.HasPrefix(pattern[i:], "(?<!"):
			return fail(i+2, i+3, "unrecognized flag")
		case c == '[':
			start := i
			i++
			if i < len(pattern) && pattern[i] == '^' {
				i++
			}
			first := i
			prevPerl, prevItem := -1, -1 // where the last item began
			prevEnd := 0                 // where a class item (prevPerl) ends
			closed := false
			for i < len(pattern) && !closed {
				switch {
				case pattern[i] == ']' && i > first:
					closed = true
					i++
				case pattern[i] == '[' && strings.HasPrefix(pattern[i:], "[:"):
					if j := strings.Index(pattern[i:], ":]"); j >= 0 {
						prevPerl, prevItem = -1, -1
						i += j + 2
					} else {
						i++
					}
				case pattern[i] == '-' && i > first && i+1 < len(pattern) && pattern[i+1] != ']' && pattern[i+1] != '-' && prevItem >= 0:
					// A range: neither end may be a Perl class.
					if prevPerl >= 0 {
						return fail(prevPerl, prevEnd, "invalid range boundary, must be a literal")
					}
					if isPerl(i + 1) {
						return fail(i+1, i+3, "invalid range boundary, must be a literal")
					}
					i++
					if pattern[i] == '\\' {
						i++
					}
					_, n := utf8.DecodeRuneInString(pattern[i:])
					i += n
					prevPerl, prevItem = -1, -1
				case isPerl(i):
					prevPerl, prevItem, prevEnd = i, i, i+2
					i += 2
				case pattern[i] == '\\':
					prevPerl, prevItem = -1, i
					i++
					if i < len(pattern) && (pattern[i] == 'p' || pattern[i] == 'P') && i+1 < len(pattern) && pattern[i+1] == '{' {
						if j := strings.IndexByte(pattern[i:], '}'); j >= 0 {
							prevPerl, prevEnd = i-1, i+j+1
							i += j + 1
							continue
						}
					}
					_, n := utf8.DecodeRuneInString(pattern[i:])
					i += n
				default:
					prevPerl, prevItem = -1, i
					_, n := utf8.DecodeRuneInString(pattern[i:])
					i += n
				}
			}
			if !closed {
				return nil
			}
			if emptyClass(pattern[start:i]) {
				return fail(start, i, "empty character classes are not allowed")
			}
		default:
			i++
		}
	}
	return nil
}

// emptyClass reports whether the bracket class text matches nothing.
func emptyClass(class string) bool {
	text, _, _ := rewritePattern(class)
	re, err := syntax.Parse(text, syntax.Perl)
	if err != nil {
		return false
	}
	re = re.Simplify()
	return re.Op == syntax.OpNoMatch || re.Op == syntax.OpCharClass && len(re.Rune) == 0
}
