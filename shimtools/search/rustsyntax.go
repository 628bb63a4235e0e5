package search

import "strings"

// ParseError is a pattern ripgrep's regex parser refuses, reported in
// ripgrep's words: Pattern is the text ripgrep parses (the patterns
// joined by '|'), Spans the characters its carets mark.
type ParseError struct {
	Pattern string
	Spans   []Span
	Msg     string
}

// Span is a run of characters (not bytes) of the pattern.
type Span struct{ Start, Len int }

// pcre2Hint is what ripgrep adds to errors about syntax only its PCRE2
// engine has.
const pcre2Hint = "\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around."

// Error renders the error as ripgrep 13 prints it (a one-line pattern).
func (e *ParseError) Error() string {
	var carets []byte
	for _, s := range e.Spans {
		for len(carets) < s.Start {
			carets = append(carets, ' ')
		}
		for k := 0; k < s.Len; k++ {
			if s.Start+k < len(carets) {
				carets[s.Start+k] = '^'
			} else {
				carets = append(carets, '^')
			}
		}
	}
	msg := "regex parse error:\n    " + e.Pattern + "\n    " + string(carets) + "\nerror: " + e.Msg
	if strings.Contains(e.Msg, "backreferences") || strings.Contains(e.Msg, "look-around") {
		msg += pcre2Hint
	}
	return msg
}
