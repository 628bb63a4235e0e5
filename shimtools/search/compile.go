package search

import (
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"

	"buzzbox/shimtools/rustregex"
)

// compileTree compiles a parsed (and edited) pattern. Go's regexp takes
// only text, and syntax.Regexp.String decides for each character class
// whether it needs (?i) by folding every code point in it, milliseconds for
// a Unicode class such as \w or [^"]. This printer writes every class as
// explicit ranges, every case-folded literal in (?i:...) and every
// assertion with its flag, so the text means the same under any flags and
// reparses quickly. Capture groups are printed as plain groups, except
// capture, which becomes group 1, and boundaryMatcher's named groups.
func compileTree(re, capture *syntax.Regexp) (*regexp.Regexp, error) {
	var b strings.Builder
	writeTree(&b, re, capture)
	return regexp.Compile(b.String())
}

func writeTree(b *strings.Builder, re, capture *syntax.Regexp) {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString(`[^\x00-\x{10ffff}]`)
	case syntax.OpEmptyMatch:
		b.WriteString(`(?:)`)
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			b.WriteString(`(?i:`)
		}
		for _, r := range re.Rune {
			writeRune(b, r)
		}
		if re.Flags&syntax.FoldCase != 0 {
			b.WriteByte(')')
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			b.WriteString(`[^\x00-\x{10ffff}]`)
			return
		}
		b.WriteByte('[')
		for i := 0; i+1 < len(re.Rune); i += 2 {
			writeRune(b, re.Rune[i])
			if re.Rune[i+1] != re.Rune[i] {
				b.WriteByte('-')
				writeRune(b, re.Rune[i+1])
			}
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL:
		b.WriteString(`(?-s:.)`)
	case syntax.OpAnyChar:
		b.WriteString(`(?s:.)`)
	case syntax.OpBeginLine:
		b.WriteString(`(?m:^)`)
	case syntax.OpEndLine:
		b.WriteString(`(?m:$)`)
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\z`)
	case syntax.OpWordBoundary:
		b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\B`)
	case syntax.OpCapture:
		switch {
		case re == capture:
			b.WriteByte('(')
		case strings.HasPrefix(re.Name, rustregex.BoundaryPrefix):
			b.WriteString("(?P<" + re.Name + ">")
		default:
			b.WriteString(`(?:`)
		}
		writeTree(b, re.Sub[0], capture)
		b.WriteByte(')')
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString(`(?:`)
		writeTree(b, re.Sub[0], capture)
		b.WriteByte(')')
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			b.WriteByte('{')
			b.WriteString(strconv.Itoa(re.Min))
			if re.Max != re.Min {
				b.WriteByte(',')
				if re.Max >= 0 {
					b.WriteString(strconv.Itoa(re.Max))
				}
			}
			b.WriteByte('}')
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			b.WriteString(`(?:)`)
		}
		for _, s := range re.Sub {
			writeTree(b, s, capture)
		}
	case syntax.OpAlternate:
		b.WriteString(`(?:`)
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			writeTree(b, s, capture)
		}
		b.WriteByte(')')
	default:
		// Not produced by the parser; String's form is then the best guess.
		b.WriteString(`(?:`)
		b.WriteString(re.String())
		b.WriteByte(')')
	}
}

// writeRune writes r so that it means itself in and out of a class.
func writeRune(b *strings.Builder, r rune) {
	if r < unicode.MaxASCII && ('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_') {
		b.WriteRune(r)
		return
	}
	b.WriteString(`\x{`)
	b.WriteString(strconv.FormatInt(int64(r), 16))
	b.WriteByte('}')
}
