package search

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// ripgrep's regular expressions (Rust's regex crate) give the Perl classes
// their Unicode meaning unless the u flag is cleared; Go's RE2 syntax only
// has the ASCII ones. rewritePattern spells them out before Go parses the
// pattern:
//
//	\d  \p{Nd}
//	\s  \p{White_Space}
//	\w  [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]
//
// and, under (?-u), the ASCII classes Rust uses, whose \s has \v that Go's
// lacks. Go knows neither the u flag nor the White_Space, Alphabetic and
// Join_Control properties, so the flag is removed and the properties are
// written as categories plus explicit ranges. \b and \B stay Go's ASCII
// word boundaries: RE2 cannot express a Unicode one. Tables are Go's
// (Unicode 15; ripgrep 13 has Unicode 14's).

// wordTables make up Unicode \w: Alphabetic (letters, letter numbers and
// the Other_Alphabetic, Other_Uppercase and Other_Lowercase properties),
// marks, decimal digits, connector punctuation and Join_Control.
var wordTables = []*unicode.RangeTable{
	unicode.L, unicode.Nl, unicode.M, unicode.Nd, unicode.Pc,
	unicode.Other_Alphabetic, unicode.Other_Uppercase, unicode.Other_Lowercase,
	unicode.Join_Control,
}

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// rangesOf returns the union of tables as sorted, merged ranges.
func rangesOf(tables ...*unicode.RangeTable) []runeRange {
	var rs []runeRange
	for _, t := range tables {
		for _, r := range t.R16 {
			rs = appendStride(rs, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range t.R32 {
			rs = appendStride(rs, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	var out []runeRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func appendStride(rs []runeRange, lo, hi, stride rune) []runeRange {
	if stride == 1 {
		return append(rs, runeRange{lo, hi})
	}
	for r := lo; r <= hi; r += stride {
		rs = append(rs, runeRange{r, r})
	}
	return rs
}

// complement returns the code points not in rs (sorted and merged).
func complement(rs []runeRange) []runeRange {
	var out []runeRange
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, runeRange{next, unicode.MaxRune})
	}
	return out
}

// subtract returns the code points of rs that are in none of tables.
func subtract(rs []runeRange, tables ...*unicode.RangeTable) []runeRange {
	var out []runeRange
	for _, r := range rs {
		for c := r.lo; c <= r.hi; c++ {
			if unicode.In(c, tables...) {
				continue
			}
			if n := len(out); n > 0 && out[n-1].hi == c-1 {
				out[n-1].hi = c
			} else {
				out = append(out, runeRange{c, c})
			}
		}
	}
	return out
}

// classText writes ranges as the inside of a Go character class.
func classText(rs []runeRange) string {
	var b strings.Builder
	hex := func(r rune) {
		b.WriteString(`\x{`)
		b.WriteString(strconv.FormatInt(int64(r), 16))
		b.WriteByte('}')
	}
	for _, r := range rs {
		hex(r.lo)
		if r.hi != r.lo {
			b.WriteByte('-')
			hex(r.hi)
		}
	}
	return b.String()
}

// perlClassText holds, for each class, the text that stands for it inside
// a bracket class; \W and \S there need their complement spelled out.
type perlClassText struct {
	word, space, notSpace string
}

// unicodeClasses is built on first use: no package-level work at init.
var unicodeClasses = sync.OnceValue(func() perlClassText {
	// The categories cover almost all of \w; only the few code points the
	// extra properties add need ranges.
	extra := subtract(rangesOf(unicode.Other_Alphabetic, unicode.Other_Uppercase, unicode.Other_Lowercase, unicode.Join_Control),
		unicode.L, unicode.Nl, unicode.M, unicode.Nd, unicode.Pc)
	space := rangesOf(unicode.White_Space)
	return perlClassText{
		word:     classText(extra) + `\p{L}\p{Nl}\p{M}\p{Pc}\p{Nd}`,
		space:    classText(space),
		notSpace: classText(complement(space)),
	}
})

// unicodeNotWord is \W inside a bracket class: about 770 ranges, built
// only for a pattern that has one.
var unicodeNotWord = sync.OnceValue(func() string {
	return classText(complement(rangesOf(wordTables...)))
})

// ASCII classes of Rust's regex crate under (?-u), inside a bracket class.
const (
	asciiDigit    = `0-9`
	asciiNotDigit = `\x00-/:-\x{10ffff}`
	asciiWord     = `0-9A-Z_a-z`
	asciiNotWord  = "\\x00-/:-@\\[-\\^`\\{-\\x{10ffff}"
	asciiSpace    = `\t-\r `
	asciiNotSpace = `\x00-\x08\x0e-\x1f!-\x{10ffff}`
)

// perlClass returns the text that replaces the Perl class escape \c, for
// use inside a bracket class or on its own, or false when \c is none.
func perlClass(c byte, uni, inClass bool) (string, bool) {
	var in string
	neg := false
	switch c {
	case 'd', 'D':
		neg = c == 'D'
		if uni {
			if neg {
				return `\P{Nd}`, true
			}
			return `\p{Nd}`, true
		}
		in = asciiDigit
		if neg && inClass {
			in = asciiNotDigit
		}
	case 'w', 'W':
		neg = c == 'W'
		in = asciiWord
		switch {
		case uni && neg && inClass:
			in = unicodeNotWord()
		case uni:
			in = unicodeClasses().word
		case neg && inClass:
			in = asciiNotWord
		}
	case 's', 'S':
		neg = c == 'S'
		in = asciiSpace
		switch {
		case uni && neg && inClass:
			in = unicodeClasses().notSpace
		case uni:
			in = unicodeClasses().space
		case neg && inClass:
			in = asciiNotSpace
		}
	default:
		return "", false
	}
	open := "["
	if neg {
		open = "[^"
	}
	switch {
	case inClass:
		return in, true
	case !uni:
		// Rust folds case in ASCII mode only among ASCII letters; Go
		// would add the Kelvin sign and the long s to the folded class.
		return "(?-i:" + open + in + "])", true
	}
	return open + in + "]", true
}

// rewritePattern returns pattern with its Perl class escapes replaced as
// described above and Rust's u flag taken out of flag groups. For smart
// case it reports whether the pattern has a literal and an upper-case
// literal, as ripgrep sees them: characters, escaped ones included, and
// the characters in classes and at the ends of their ranges count; the
// classes \w, \p{Lu} or [:upper:], '.', anchors, repetitions, flags and
// group names do not. Escapes (\\w is a backslash and a w) and Go's
// \Q...\E are respected. A pattern Go would refuse may come out
// different but no less refused.
func rewritePattern(pattern string) (out string, literal, upper bool) {
	var b strings.Builder
	uni := true       // Unicode mode (Rust's u flag)
	var groups []bool // uni to restore at each ')'
	inClass := false
	classFirst := 0 // index where a ']' is still literal
	changed := false
	lit := func(r rune) {
		literal = true
		if unicode.IsUpper(r) {
			upper = true
		}
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '\\':
			if i+1 >= len(pattern) {
				b.WriteByte(c)
				i++
				continue
			}
			n := pattern[i+1]
			if n == 'Q' && !inClass {
				// \Q...\E: literal text, to \E or the end.
				j := strings.Index(pattern[i+2:], `\E`)
				end := len(pattern)
				if j >= 0 {
					end = i + 2 + j
				}
				for _, r := range pattern[i+2 : end] {
					lit(r)
				}
				b.WriteString(pattern[i:end])
				// Close it even at the end, so that text put after the
				// pattern (the -w and -x wrappers) is not swallowed.
				b.WriteString(`\E`)
				changed = changed || j < 0
				i = min(end+2, len(pattern))
				continue
			}
			if s, ok := perlClass(n, uni, inClass); ok {
				b.WriteString(s)
				changed = true
				i += 2
				if inClass && i < len(pattern) && pattern[i] == '-' {
					// A '-' after a class is a literal; spelled out, the
					// class may end in a character it would join in a range.
					b.WriteString(`\-`)
					i++
				}
				continue
			}
			if (n == 'p' || n == 'P') && i+2 < len(pattern) && pattern[i+2] == '{' {
				if j := strings.IndexByte(pattern[i+2:], '}'); j >= 0 {
					b.WriteString(pattern[i : i+3+j])
					i += 3 + j
					continue
				}
			}
			if n == 'p' || n == 'P' {
				// \pL: a one-letter class name.
				end := min(i+3, len(pattern))
				b.WriteString(pattern[i:end])
				i = end
				continue
			}
			if n == 'x' {
				// \x41 or \x{41}: a literal by its code.
				j, r := hexEscape(pattern, i+2)
				lit(r)
				b.WriteString(pattern[i:j])
				i = j
				continue
			}
			r, size := utf8.DecodeRuneInString(pattern[i+1:])
			if inClass || strings.IndexByte("AbBz", n) < 0 {
				// \n, \., \é: literals; \A, \b, \B, \z: assertions.
				lit(r)
			}
			b.WriteString(pattern[i : i+1+size])
			i += 1 + size
		case inClass:
			if c == ']' && i > classFirst {
				inClass = false
				b.WriteByte(c)
				i++
				continue
			}
			if c == '[' && i+2 < len(pattern) && pattern[i+1] == ':' {
				if j := strings.Index(pattern[i+2:], ":]"); j >= 0 {
					// [:alpha:]: an ASCII class, not literals.
					b.WriteString(pattern[i : i+2+j+2])
					i += 2 + j + 2
					continue
				}
				// A literal '[' here, which text joined after the
				// pattern could turn into the start of a named class.
				lit('[')
				b.WriteString(`\[`)
				changed = true
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(pattern[i:])
			lit(r)
			b.WriteString(pattern[i : i+size])
			i += size
		case c == '[':
			inClass = true
			b.WriteByte(c)
			i++
			if i < len(pattern) && pattern[i] == '^' {
				b.WriteByte('^')
				i++
			}
			classFirst = i
		case c == '(':
			if strings.HasPrefix(pattern[i:], "(?P<") || strings.HasPrefix(pattern[i:], "(?<") {
				// A named group: the name is no literal.
				groups = append(groups, uni)
				end := len(pattern)
				if j := strings.IndexByte(pattern[i:], '>'); j >= 0 {
					end = i + j + 1
				}
				b.WriteString(pattern[i:end])
				i = end
				continue
			}
			if strings.HasPrefix(pattern[i:], "(?") {
				if text, nuni, open, end, ok := flagGroup(pattern, i, uni); ok {
					if open {
						groups = append(groups, uni)
					}
					uni = nuni
					changed = changed || text != pattern[i:end]
					b.WriteString(text)
					i = end
					continue
				}
			}
			groups = append(groups, uni)
			b.WriteByte(c)
			i++
		case c == ')':
			if n := len(groups); n > 0 {
				uni = groups[n-1]
				groups = groups[:n-1]
			}
			b.WriteByte(c)
			i++
		case strings.IndexByte(".^$|*+?", c) >= 0:
			b.WriteByte(c)
			i++
		case c == '{' && repeatEnd(pattern, i) > 0:
			end := repeatEnd(pattern, i)
			b.WriteString(pattern[i:end])
			i = end
		default:
			r, size := utf8.DecodeRuneInString(pattern[i:])
			lit(r)
			b.WriteString(pattern[i : i+size])
			i += size
		}
	}
	if !changed {
		return pattern, literal, upper
	}
	return b.String(), literal, upper
}

// repeatEnd returns the end of a counted repetition ({2}, {2,}, {2,5}) at
// i, or 0 when p[i] starts none.
func repeatEnd(p string, i int) int {
	j := i + 1
	digits := 0
	for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ',') {
		if p[j] != ',' {
			digits++
		}
		j++
	}
	if digits == 0 || j >= len(p) || p[j] != '}' {
		return 0
	}
	return j + 1
}

// hexEscape reads the code after "\x" at i (two hex digits or {...}) and
// returns where the escape ends and the character, or -1.
func hexEscape(p string, i int) (end int, r rune) {
	if i < len(p) && p[i] == '{' {
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return len(p), -1
		}
		v, err := strconv.ParseUint(p[i+1:i+j], 16, 32)
		if err != nil {
			return i + j + 1, -1
		}
		return i + j + 1, rune(v)
	}
	end = min(i+2, len(p))
	v, err := strconv.ParseUint(p[i:end], 16, 8)
	if err != nil {
		return end, -1
	}
	return end, rune(v)
}

// flagGroup reads a flag group "(?flags)" or "(?flags:" at i. It reports
// the text to write in its place (without the u flag, which Go does not
// know), the Unicode mode after it, whether it opens a group, where it
// ends, and false when it is no flag group.
func flagGroup(p string, i int, uni bool) (text string, nuni, open bool, end int, ok bool) {
	j := i + 2
	for j < len(p) && strings.IndexByte("imsUu-", p[j]) >= 0 {
		j++
	}
	if j >= len(p) || p[j] != ':' && p[j] != ')' {
		return "", uni, false, 0, false
	}
	flags := p[i+2 : j]
	open = p[j] == ':'
	end = j + 1
	if !strings.Contains(flags, "u") {
		return p[i:end], uni, open, end, true
	}
	var on, off strings.Builder
	nuni = uni
	neg := false
	for k := 0; k < len(flags); k++ {
		switch f := flags[k]; {
		case f == '-':
			neg = true
		case f == 'u':
			nuni = !neg
		case neg:
			off.WriteByte(f)
		default:
			on.WriteByte(f)
		}
	}
	text = "(?" + on.String()
	if off.Len() > 0 {
		text += "-" + off.String()
	}
	if on.Len() == 0 && off.Len() == 0 {
		text = "(?"
		if !open {
			// "(?-u)" alone: an empty group keeps what follows in place.
			return "(?:)", nuni, false, end, true
		}
	}
	return text + p[j:end], nuni, open, end, true
}
