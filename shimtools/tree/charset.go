package tree

import "strings"

// lineSet is how tree draws one level of indentation: an entry with more
// after it, the last entry, a level with more entries below, and one
// without ("    ").
type lineSet [4]string

// charsetLines maps GNU tree 2.1's --charset (or $TREE_CHARSET) names,
// compared ignoring case, to the lines it draws for them. Any other name,
// or none, draws ASCII.
var charsetLines = []struct {
	names []string
	lines lineSet
}{
	{
		[]string{"ISO-8859-1", "ISO-8859-1:1987", "ISO_8859-1", "latin1", "l1", "IBM819", "CP819", "csISOLatin1",
			"ISO-8859-3", "ISO_8859-3:1988", "ISO_8859-3", "latin3", "ls", "csISOLatin3",
			"ISO-8859-7", "ISO_8859-7:1987", "ISO_8859-7", "ELOT_928", "ECMA-118", "greek", "greek8", "csISOLatinGreek",
			"ISO-8859-8", "ISO_8859-8:1988", "iso-ir-138", "ISO_8859-8", "hebrew", "csISOLatinHebrew",
			"ISO-8859-9", "ISO_8859-9:1989", "iso-ir-148", "ISO_8859-9", "latin5", "l5", "csISOLatin5"},
		// tree 2.1 really prints the HTML entity here.
		lineSet{"|-- ", "&middot;-- ", "|   ", "    "},
	},
	{
		[]string{"Shift_JIS", "MS_Kanji", "csShiftJIS"},
		lineSet{"\x84\xa5 ", "\x84\xa4 ", "\x84\xa0  ", "    "},
	},
	{
		[]string{"EUC-JP", "Extended_UNIX_Code_Packed_Format_for_Japanese", "csEUCPkdFmtJapanese"},
		lineSet{"\xa8\xa7 ", "\xa8\xa6 ", "\xa8\xa2  ", "    "},
	},
	{
		[]string{"EUC-KR", "csEUCKR"},
		lineSet{"\xa6\xa7 ", "\xa6\xa6 ", "\xa6\xa2  ", "    "},
	},
	{
		[]string{"ISO-2022-JP", "csISO2022JP", "ISO-2022-JP-2", "csISO2022JP2"},
		lineSet{"\x1b$B('\x1b(B ", "\x1b$B(&\x1b(B ", "\x1b$B(\"\x1b(B  ", "    "},
	},
	{
		[]string{"IBM437", "cp437", "437", "csPC8CodePage437", "IBM852", "cp852", "852", "csPCp852",
			"IBM863", "cp863", "863", "csIBM863", "IBM855", "cp855", "855", "csIBM855",
			"IBM865", "cp865", "865", "csIBM865", "IBM866", "cp866", "866", "csIBM866",
			"IBM850", "cp850", "850", "csPC850Multilingual", "IBM00858", "CCSID00858", "CP00858", "PC-Multilingual-850+euro",
			"IBM869", "cp869", "869", "cp-gr", "csIBM869"},
		lineSet{"\xc3\xc4\xc4 ", "\xc0\xc4\xc4 ", "\xb3   ", "    "},
	},
	{
		[]string{"GB2312", "csGB2312"},
		lineSet{"\xa9\xc0 ", "\xa9\xb8 ", "\xa9\xa6  ", "    "},
	},
	{
		[]string{"UTF-8", "utf8"},
		lineSet{"\u251c\u2500\u2500 ", "\u2514\u2500\u2500 ", "\u2502\u00a0\u00a0 ", "    "},
	},
	{
		[]string{"Big5", "csBig5"},
		lineSet{"\xa2u ", "\xa2| ", "\xa2x  ", "    "},
	},
	{
		[]string{"KOI8-R", "csKOI8R", "KOI8-U"},
		lineSet{"\x86\x80\x80 ", "\x84\x80\x80 ", "\x81   ", "    "},
	},
}

// asciiLines is what tree draws for any other charset.
var asciiLines = lineSet{"|-- ", "`-- ", "|   ", "    "}

// linesFor returns the lines tree draws for charset.
func linesFor(charset string) lineSet {
	for _, c := range charsetLines {
		for _, n := range c.names {
			if strings.EqualFold(n, charset) {
				return c.lines
			}
		}
	}
	return asciiLines
}
