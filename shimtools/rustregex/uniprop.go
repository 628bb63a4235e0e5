package rustregex

import (
	"strings"
	"sync"
	"unicode"
)

// Unicode property classes (\p{...}) as ripgrep's regex crate reads them:
// names are matched loosely (case, spaces, '_' and '-' ignored, an "is"
// prefix allowed), general categories and scripts by long or short name,
// with an optional "gc=" or "sc=" key, plus the binary properties Go has
// tables for and those derived from them (Alphabetic, Cased, Math,
// ID_Start, ...). Emoji, case-change and Age properties and the break
// properties have no tables here and are refused. Go's own \p knows only
// exact category and script names; anything else is written out as ranges.

// categoryNamesTable maps loose general category names to Go's names; LC and
// Cn are absent from Go's tables and computed.
func categoryNamesTable() map[string]string {
	return map[string]string{
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
}

// scriptCodesTable returns ISO 15924 codes for the commonly used scripts.
func scriptCodesTable() map[string]string {
	return map[string]string{
		"latn": "Latin", "grek": "Greek", "cyrl": "Cyrillic", "hani": "Han", "arab": "Arabic", "hebr": "Hebrew",
		"hira": "Hiragana", "kana": "Katakana", "hang": "Hangul", "thai": "Thai", "deva": "Devanagari",
		"zyyy": "Common", "zinh": "Inherited", "armn": "Armenian", "geor": "Georgian", "ethi": "Ethiopic",
		"beng": "Bengali", "taml": "Tamil", "telu": "Telugu", "knda": "Kannada", "mlym": "Malayalam",
		"gujr": "Gujarati", "guru": "Gurmukhi", "orya": "Oriya", "sinh": "Sinhala", "tibt": "Tibetan",
		"mong": "Mongolian", "khmr": "Khmer", "laoo": "Lao", "mymr": "Myanmar", "copt": "Coptic", "runr": "Runic",
		"ogam": "Ogham", "cher": "Cherokee", "bopo": "Bopomofo", "yiii": "Yi", "syrc": "Syriac", "thaa": "Thaana",
	}
}

// propertyNames are the name tables \p needs, built on first use.
type propertyNames struct {
	categories map[string]string // loose general category names → Go's
	keys       map[string]string // properties that take a value
	aliases    map[string]string // short binary property names → Go's
	scripts    map[string]string // loose script names and codes → Go's
	props      map[string]string // loose binary property names → Go's
}

var names = sync.OnceValue(func() *propertyNames {
	n := &propertyNames{
		categories: categoryNamesTable(),
		keys:       propertyKeysTable(),
		aliases:    propertyAliasesTable(),
		scripts:    make(map[string]string, len(unicode.Scripts)),
		props:      make(map[string]string, len(unicode.Properties)),
	}
	for name := range unicode.Scripts {
		n.scripts[looseName(name)] = name
	}
	for code, name := range scriptCodesTable() {
		n.scripts[code] = name
	}
	for name := range unicode.Properties {
		n.props[looseName(name)] = name
	}
	return n
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

// Errors for properties, in regex-syntax's words.
const (
	propertyNotFound      = "Unicode property not found"
	propertyValueNotFound = "Unicode property value not found"
)

// symbolicName normalizes a property name or value as regex-syntax does:
// an "is" prefix dropped, then ' ', '_', '-' and anything past ASCII,
// the rest lowered ("isc" stays, as ISO_Comment's alias).
func symbolicName(s string) string {
	is := len(s) >= 2 && strings.EqualFold(s[:2], "is")
	if is {
		s = s[2:]
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '_' || c == '-' || c >= 0x80:
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	if is && string(b) == "c" {
		return "isc"
	}
	return string(b)
}

// propertyKeysTable maps normalized names of Unicode properties that take a
// value to what lookupProperty calls them; other property names (binary
// ones, and those regex-syntax knows but has no values for) get "".
func propertyKeysTable() map[string]string {
	return map[string]string{
		"gc": "gc", "generalcategory": "gc", "sc": "sc", "script": "sc", "scx": "sc", "scriptextensions": "sc",
		"age": "", "gcb": "", "graphemeclusterbreak": "", "sb": "", "sentencebreak": "", "wb": "", "wordbreak": "",
		"lc": "", "lowercasemapping": "", "blk": "", "block": "", "na": "", "name": "", "nv": "", "numericvalue": "",
		"ccc": "", "canonicalcombiningclass": "", "lb": "", "linebreak": "", "ea": "", "eastasianwidth": "",
		"bc": "", "bidiclass": "", "dt": "", "decompositiontype": "", "nt": "", "numerictype": "",
		"cf": "", "casefolding": "", "uc": "", "uppercasemapping": "", "tc": "", "titlecasemapping": "",
	}
}

// propertyAliasesTable maps short names of binary properties to Go's tables.
func propertyAliasesTable() map[string]string {
	return map[string]string{
		"ahex": "ASCII_Hex_Digit", "bidic": "Bidi_Control", "dep": "Deprecated", "dia": "Diacritic", "ext": "Extender",
		"hex": "Hex_Digit", "idsb": "IDS_Binary_Operator", "idst": "IDS_Trinary_Operator", "ideo": "Ideographic",
		"joinc": "Join_Control", "loe": "Logical_Order_Exception", "nchar": "Noncharacter_Code_Point",
		"oalpha": "Other_Alphabetic", "odi": "Other_Default_Ignorable_Code_Point", "ogrext": "Other_Grapheme_Extend",
		"oidc": "Other_ID_Continue", "oids": "Other_ID_Start", "olower": "Other_Lowercase", "omath": "Other_Math",
		"oupper": "Other_Uppercase", "patsyn": "Pattern_Syntax", "patws": "Pattern_White_Space",
		"pcm": "Prepended_Concatenation_Mark", "qmark": "Quotation_Mark", "ri": "Regional_Indicator", "sd": "Soft_Dotted",
		"sterm": "Sentence_Terminal", "term": "Terminal_Punctuation", "uideo": "Unified_Ideograph", "vs": "Variation_Selector",
		"wspace": "White_Space", "space": "White_Space",
	}
}

// unicodeProperty returns the Go text for \p{name} (\P when neg), as a
// class of its own or, inClass, for inside a bracket class; or, when
// regex-syntax refuses the name, its message.
func unicodeProperty(name string, neg, inClass bool) (string, string) {
	var goName, msg string
	var rs []runeRange
	if i := strings.Index(name, "!="); i >= 0 {
		// ripgrep 13's regex-syntax reads != as = (it checks the \P, not
		// the operator).
		goName, rs, msg = lookupValue(name[:i], name[i+2:])
	} else if i := strings.IndexAny(name, ":="); i >= 0 {
		goName, rs, msg = lookupValue(name[:i], name[i+1:])
	} else {
		goName, rs, msg = lookupBinary(symbolicName(name))
	}
	if msg != "" {
		return "", msg
	}
	if goName != "" {
		p := `\p{`
		if neg {
			p = `\P{`
		}
		return p + goName + "}", ""
	}
	if neg {
		rs = complement(rs)
	}
	if inClass {
		return classText(rs), ""
	}
	return "[" + classText(rs) + "]", ""
}

// category resolves a normalized general category name (or Any, ASCII,
// Assigned) to Go's name or ranges.
func category(v string) (string, []runeRange, bool) {
	switch v {
	case "any":
		return "", []runeRange{{0, unicode.MaxRune}}, true
	case "ascii":
		return "", []runeRange{{0, unicode.MaxASCII}}, true
	case "assigned":
		return "", assigned(), true
	}
	switch name := names().categories[v]; name {
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

// lookupValue resolves \p{key=value} as regex-syntax does.
func lookupValue(key, value string) (goName string, rs []runeRange, msg string) {
	key, value = symbolicName(key), symbolicName(value)
	kind, ok := names().keys[key]
	if !ok {
		if _, _, ok := binaryProperty(key); !ok {
			return "", nil, propertyNotFound
		}
	}
	switch kind {
	case "gc":
		if name, rs, ok := category(value); ok {
			return name, rs, ""
		}
	case "sc":
		// Go has no script extension tables; the script stands in.
		scripts := names().scripts
		if name, ok := scripts[value]; ok {
			return name, nil, ""
		}
	}
	return "", nil, propertyValueNotFound
}

// lookupBinary resolves \p{name} as regex-syntax does: a property name
// first (sc is Script, not Currency_Symbol, and refused, as it takes a
// value), then a general category, then a script.
func lookupBinary(v string) (goName string, rs []runeRange, msg string) {
	if v != "cf" {
		if _, ok := names().keys[v]; ok {
			return "", nil, propertyNotFound
		}
		if name, rs, ok := binaryProperty(v); ok {
			return name, rs, ""
		}
	}
	if name, rs, ok := category(v); ok {
		return name, rs, ""
	}
	scripts := names().scripts
	if name, ok := scripts[v]; ok {
		return name, nil, ""
	}
	return "", nil, propertyNotFound
}

// binaryProperty resolves a normalized binary property name: Go's tables,
// and those derived from them as the Unicode standard defines them.
func binaryProperty(v string) (goName string, rs []runeRange, ok bool) {
	props := names().props
	if name, ok := names().aliases[v]; ok {
		return "", rangesOf(unicode.Properties[name]), true
	}
	if name, ok := props[v]; ok {
		return "", rangesOf(unicode.Properties[name]), true
	}
	switch v {
	case "alphabetic", "alpha":
		return "", rangesOf(unicode.L, unicode.Nl, unicode.Other_Alphabetic), true
	case "uppercase", "upper":
		return "", rangesOf(unicode.Lu, unicode.Other_Uppercase), true
	case "lowercase", "lower":
		return "", rangesOf(unicode.Ll, unicode.Other_Lowercase), true
	case "whitespace":
		return "", rangesOf(unicode.White_Space), true
	case "cased":
		return "", rangesOf(unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Uppercase, unicode.Other_Lowercase), true
	case "math":
		return "", rangesOf(unicode.Sm, unicode.Other_Math), true
	case "idstart", "ids":
		return "", idStart(), true
	case "idcontinue", "idc":
		return "", idContinue(), true
	case "xidstart", "xids":
		return "", minus(idStart(), xidStartOut()), true
	case "xidcontinue", "xidc":
		return "", minus(idContinue(), xidContinueOut), true
	case "graphemeextend", "grext":
		return "", rangesOf(unicode.Me, unicode.Mn, unicode.Other_Grapheme_Extend), true
	case "graphemebase", "grbase":
		return "", minus(assigned(), rangesOf(unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co,
			unicode.Zl, unicode.Zp, unicode.Me, unicode.Mn, unicode.Other_Grapheme_Extend)), true
	case "defaultignorablecodepoint", "di":
		rs := minus(rangesOf(unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector),
			rangesOf(unicode.White_Space, unicode.Prepended_Concatenation_Mark))
		return "", minus(rs, []runeRange{{0xFFF9, 0xFFFB}, {0x13430, 0x1343F}}), true
	case "caseignorable", "ci":
		// Mn Me Cf Lm Sk and Word_Break MidLetter, MidNumLet, Single_Quote.
		rs := rangesOf(unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
		for _, r := range []rune{0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027,
			0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A} {
			rs = append(rs, runeRange{r, r})
		}
		return "", normalize(rs), true
	}
	return "", nil, false
}

// xidContinueOut are the code points NFKC closure takes out of
// ID_Continue for XID_Continue.
var xidContinueOut = []runeRange{{0x37A, 0x37A}, {0x309B, 0x309C}, {0xFC5E, 0xFC63}, {0xFDFA, 0xFDFB},
	{0xFE70, 0xFE70}, {0xFE72, 0xFE72}, {0xFE74, 0xFE74}, {0xFE76, 0xFE76}, {0xFE78, 0xFE78},
	{0xFE7A, 0xFE7A}, {0xFE7C, 0xFE7C}, {0xFE7E, 0xFE7E}}

// xidStartOut are those it takes out of ID_Start for XID_Start.
func xidStartOut() []runeRange {
	return normalize(append([]runeRange{{0xE33, 0xE33}, {0xEB3, 0xEB3}, {0xFF9E, 0xFF9F}}, xidContinueOut...))
}

// idStart is ID_Start: letters, letter numbers and Other_ID_Start, less
// pattern syntax and white space.
func idStart() []runeRange {
	return minus(rangesOf(unicode.L, unicode.Nl, unicode.Other_ID_Start), rangesOf(unicode.Pattern_Syntax, unicode.Pattern_White_Space))
}

// idContinue is ID_Continue: ID_Start and marks, digits, connectors and
// Other_ID_Continue, less pattern syntax and white space.
func idContinue() []runeRange {
	return minus(rangesOf(unicode.L, unicode.Nl, unicode.Other_ID_Start, unicode.Mn, unicode.Mc, unicode.Nd,
		unicode.Pc, unicode.Other_ID_Continue), rangesOf(unicode.Pattern_Syntax, unicode.Pattern_White_Space))
}

// minus returns the code points of a not in b (both sorted and merged).
func minus(a, b []runeRange) []runeRange {
	return intersect(a, complement(b))
}

// assigned returns every code point with a general category.
func assigned() []runeRange {
	tables := make([]*unicode.RangeTable, 0, len(unicode.Categories))
	for name, t := range unicode.Categories {
		if len(name) == 2 && name != "Cn" && name != "LC" {
			tables = append(tables, t)
		}
	}
	return rangesOf(tables...)
}
