package rustregex

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// ParseError is a pattern ripgrep's regex parser refuses, reported in
// ripgrep's words: Pattern is the text ripgrep parses (the patterns
// joined by '|'), Spans the characters its carets mark.
type ParseError struct {
	Pattern string
	Spans   []Span
	Msg     string
}

// Span is a run of characters (not bytes) of the pattern; Len may be 0
// (a place, as the end of the pattern), which still gets one caret.
type Span struct{ Start, Len int }

// pcre2Hint is what ripgrep adds to errors about syntax only its PCRE2
// engine has.
const pcre2Hint = "\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around."

// Error renders the error as ripgrep 13 prints it (regex-syntax's
// formatter): the pattern with carets under it, or, for a pattern of
// several lines, the lines numbered between dividers and spans that
// cross lines described in words.
func (e *ParseError) Error() string {
	lines := patternLines(e.Pattern)
	count := len(lines)
	if strings.HasSuffix(e.Pattern, "\n") {
		count++
	}
	width := 0
	if count > 1 {
		width = len(strconv.Itoa(count))
	}
	byLine := make([][]linePos, count)
	var multi [][2]linePos
	for _, s := range e.sortedSpans() {
		start, end := position(e.Pattern, s.Start), position(e.Pattern, s.Start+s.Len)
		if start.line == end.line {
			byLine[start.line-1] = append(byLine[start.line-1], start, end)
		} else {
			multi = append(multi, [2]linePos{start, end})
		}
	}
	var b strings.Builder
	b.WriteString("regex parse error:\n")
	divider := strings.Repeat("~", 79) + "\n"
	several := strings.Contains(e.Pattern, "\n")
	if several {
		b.WriteString(divider)
	}
	pad := 4
	if width > 0 {
		pad = 2 + width
	}
	for i, line := range lines {
		if width > 0 {
			n := strconv.Itoa(i + 1)
			b.WriteString(strings.Repeat(" ", width-len(n)) + n + ": ")
		} else {
			b.WriteString("    ")
		}
		b.WriteString(line + "\n")
		if spans := byLine[i]; len(spans) > 0 {
			b.WriteString(strings.Repeat(" ", pad))
			pos := 0
			for k := 0; k+1 < len(spans); k += 2 {
				for ; pos < spans[k].col-1; pos++ {
					b.WriteByte(' ')
				}
				n := max(1, spans[k+1].col-spans[k].col)
				b.WriteString(strings.Repeat("^", n))
				pos += n
			}
			b.WriteByte('\n')
		}
	}
	if several {
		b.WriteString(divider)
		for i, m := range multi {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("on line " + strconv.Itoa(m[0].line) + " (column " + strconv.Itoa(m[0].col) +
				") through line " + strconv.Itoa(m[1].line) + " (column " + strconv.Itoa(m[1].col-1) + ")")
		}
		if len(multi) > 0 {
			b.WriteByte('\n')
		}
	}
	b.WriteString("error: " + e.Msg)
	if strings.Contains(e.Msg, "backreferences") || strings.Contains(e.Msg, "look-around") {
		b.WriteString(pcre2Hint)
	}
	return b.String()
}

// sortedSpans returns the spans in order, as the formatter sorts them.
func (e *ParseError) sortedSpans() []Span {
	s := slices.Clone(e.Spans)
	slices.SortStableFunc(s, func(a, b Span) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Len, b.Len))
	})
	return s
}

// linePos is a place in the pattern: its line and character column,
// both from 1, as regex-syntax counts them.
type linePos struct{ line, col int }

// position returns where the character at offset chars of p is.
func position(p string, chars int) linePos {
	at := linePos{1, 1}
	k := 0
	for _, r := range p {
		if k == chars {
			break
		}
		k++
		if r == '\n' {
			at.line++
			at.col = 1
		} else {
			at.col++
		}
	}
	return at
}

// patternLines splits p as the Rust library ripgrep 13 was built with
// did (str::lines): at each '\n', with no empty line after a final one,
// and one '\r' dropped from the end of every line.
func patternLines(p string) []string {
	if p == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(p, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
