package rustregex

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// ripgrep's regular expressions (Rust's regex crate) give the Perl classes
// their Unicode meaning unless the u flag is cleared; Go's RE2 syntax only
// has the ASCII ones. Translate spells them out before Go parses the
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
// word boundaries: RE2 cannot express a Unicode one (TranslateRelaxed
// marks them for the caller to check). Tables are Go's
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
	return normalize(rs)
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

// withoutFFFD removes U+FFFD, which stands for invalid UTF-8 in Go's
// regexp, from rs (see emitClass).
func withoutFFFD(rs []runeRange) []runeRange {
	return minus(rs, []runeRange{{utf8.RuneError, utf8.RuneError}})
}

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
		in = asciiDigit
		switch {
		case uni && neg && inClass:
			return `\P{Nd}`, true
		case uni:
			in = `\p{Nd}`
		case neg && inClass:
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
	case neg:
		// Unicode classes never match invalid UTF-8, which Go's regexp
		// reads as U+FFFD (see emitClass).
		return open + in + `\x{fffd}]`, true
	}
	return open + in + "]", true
}
