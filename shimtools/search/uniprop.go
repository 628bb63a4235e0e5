package search

import (
	"strings"
	"sync"
	"unicode"
)

// Unicode property classes (\p{...}) as ripgrep's regex crate reads them:
// names are matched loosely (case, spaces, '_' and '-' ignored, an "is"
// prefix allowed), general categories and scripts by long or short name,
// with an optional "gc=" or "sc=" key, plus the binary properties Go has
// tables for and the derived Alphabetic, Uppercase, Lowercase and
// White_Space. Go's own \p knows only exact category and script names;
// anything else is written out as ranges.

// categoryNames maps loose general category names to Go's names; LC and
// Cn are absent from Go's tables and computed (see propertyRanges).
var categoryNames = map[string]string{
	"l": "L", "letter": "L", "lu": "Lu", "uppercaseletter": "Lu", "ll": "Ll", "lowercaseletter": "Ll",
	"lt": "Lt", "titlecaseletter": "Lt", "lm": "Lm", "modifierletter": "Lm", "lo": "Lo", "otherletter": "Lo",
	"m": "M", "mark": "M", "combiningmark": "M", "mc": "Mc", "spacingmark": "Mc", "me": "Me", "enclosingmark": "Me",
	"mn": "Mn", "nonspacingmark": "Mn",
	"n": "N", "number": "N", "nd": "Nd", "decimalnumber": "Nd", "digit": "Nd", "nl": "Nl", "letternumber": "Nl",
	"no": "No", "othernumber": "No",
	"p": "P", "punctuation": "P", "punct": "P", "pc": "Pc", "connectorpunctuation": "Pc", "pd": "Pd", "dashpunctuation": "Pd",
	"pe": "Pe", "closepunctuation": "Pe", "pf": "Pf", "finalpunctuation": "Pf", "pi": "Pi", "initialpunctuation": "Pi",
	"po": "Po", "otherpunctuation": "Po", "ps": "Ps", "openpunctuation": "Ps",
	"s": "S", "symbol": "S", "sc": "Sc", "currencysymbol": "Sc", "sk": "Sk", "modifiersymbol": "Sk", "sm": "Sm",
	"mathsymbol": "Sm", "so": "So", "othersymbol": "So",
	"z": "Z", "separator": "Z", "zl": "Zl", "lineseparator": "Zl", "zp": "Zp", "paragraphseparator": "Zp",
	"zs": "Zs", "spaceseparator": "Zs",
	"c": "C", "other": "C", "cc": "Cc", "control": "Cc", "cntrl": "Cc", "cf": "Cf", "format": "Cf", "co": "Co",
	"privateuse": "Co", "cs": "Cs", "surrogate": "Cs",
	"lc": "LC", "casedletter": "LC", "cn": "Cn", "unassigned": "Cn",
}

// scriptCodes are ISO 15924 codes for the commonly used scripts.
var scriptCodes = map[string]string{
	"latn": "Latin", "grek": "Greek", "cyrl": "Cyrillic", "hani": "Han", "arab": "Arabic", "hebr": "Hebrew",
	"hira": "Hiragana", "kana": "Katakana", "hang": "Hangul", "thai": "Thai", "deva": "Devanagari",
	"zyyy": "Common", "zinh": "Inherited", "armn": "Armenian", "geor": "Georgian", "ethi": "Ethiopic",
	"beng": "Bengali", "taml": "Tamil", "telu": "Telugu", "knda": "Kannada", "mlym": "Malayalam",
	"gujr": "Gujarati", "guru": "Gurmukhi", "orya": "Oriya", "sinh": "Sinhala", "tibt": "Tibetan",
	"mong": "Mongolian", "khmr": "Khmer", "laoo": "Lao", "mymr": "Myanmar", "copt": "Coptic", "runr": "Runic",
	"ogam": "Ogham", "cher": "Cherokee", "bopo": "Bopomofo", "yiii": "Yi", "syrc": "Syriac", "thaa": "Thaana",
}

// looseNames maps loose script and binary property names to Go's table
// names, built on first use.
var looseNames = sync.OnceValues(func() (scripts, props map[string]string) {
	scripts = make(map[string]string, len(unicode.Scripts)+len(scriptCodes))
	for name := range unicode.Scripts {
		scripts[looseName(name)] = name
	}
	for code, name := range scriptCodes {
		scripts[code] = name
	}
	props = make(map[string]string, len(unicode.Properties))
	for name := range unicode.Properties {
		props[looseName(name)] = name
	}
	return scripts, props
})

// looseName lowers s and drops spaces, '_' and '-'.
func looseName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' || r == '-' || unicode.Is(unicode.White_Space, r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// unicodeProperty returns the Go text for \p{name} (\P when neg), as a
// class of its own or, inClass, for inside a bracket class; false when
// the property is unknown.
func unicodeProperty(name string, neg, inClass bool) (string, bool) {
	key, value := "", name
	if k, v, ok := strings.Cut(name, "!="); ok {
		key, value, neg = k, v, !neg
	} else if k, v, ok := strings.Cut(name, "="); ok {
		key, value = k, v
	} else if k, v, ok := strings.Cut(name, ":"); ok {
		key, value = k, v
	}
	goName, rs, ok := lookupProperty(looseName(key), looseName(value))
	if !ok {
		return "", false
	}
	if goName != "" {
		p := `\p{`
		if neg {
			p = `\P{`
		}
		return p + goName + "}", true
	}
	if neg {
		rs = complement(rs)
	}
	if inClass {
		return classText(rs), true
	}
	return "[" + classText(rs) + "]", true
}

// lookupProperty resolves a loose key and value to a name Go's \p knows
// or to ranges.
func lookupProperty(key, value string) (goName string, rs []runeRange, ok bool) {
	scripts, props := looseNames()
	category := func(v string) (string, []runeRange, bool) {
		switch name := categoryNames[v]; name {
		case "":
			return "", nil, false
		case "LC":
			return "", rangesOf(unicode.Lu, unicode.Ll, unicode.Lt), true
		case "Cn":
			return "", complement(assigned()), true
		default:
			return name, nil, true
		}
	}
	switch key {
	case "gc", "generalcategory":
		return category(value)
	case "sc", "script", "scx", "scriptextensions":
		// Go has no script extension tables; the script stands in.
		name, ok := scripts[value]
		return name, nil, ok
	case "":
	default:
		return "", nil, false
	}
	for _, v := range []string{value, strings.TrimPrefix(value, "is")} {
		if v == "" {
			continue
		}
		switch v {
		case "any":
			return "", []runeRange{{0, unicode.MaxRune}}, true
		case "ascii":
			return "", []runeRange{{0, unicode.MaxASCII}}, true
		case "assigned":
			return "", assigned(), true
		case "alphabetic", "alpha":
			return "", rangesOf(unicode.L, unicode.Nl, unicode.Other_Alphabetic), true
		case "uppercase", "upper":
			return "", rangesOf(unicode.Lu, unicode.Other_Uppercase), true
		case "lowercase", "lower":
			return "", rangesOf(unicode.Ll, unicode.Other_Lowercase), true
		case "whitespace", "wspace", "space":
			return "", rangesOf(unicode.White_Space), true
		}
		if name, rs, ok := category(v); ok {
			return name, rs, true
		}
		if name, ok := scripts[v]; ok {
			return name, nil, true
		}
		if name, ok := props[v]; ok {
			return "", rangesOf(unicode.Properties[name]), true
		}
	}
	return "", nil, false
}

// assigned returns every code point with a general category.
func assigned() []runeRange {
	tables := make([]*unicode.RangeTable, 0, len(unicode.Categories))
	for name, t := range unicode.Categories {
		if len(name) == 2 {
			tables = append(tables, t)
		}
	}
	return rangesOf(tables...)
}
