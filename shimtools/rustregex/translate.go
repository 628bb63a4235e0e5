package rustregex

import (
	"errors"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Translation is a pattern written in Go's RE2 syntax, with what smart
// case needs to know of the original.
type Translation struct {
	// RE2 is the pattern in Go's syntax, to be parsed with Perl flags
	// minus OneLine (the package doc says what changed on the way).
	RE2 string
	// Literal says the pattern has a literal character and Upper an
	// upper-case one, counted as ripgrep counts them for smart case:
	// characters, escaped ones included, and the characters in classes
	// and at the ends of ranges; not \w, \p{Lu} or [:upper:], '.',
	// anchors, repetitions, flags or names.
	Literal, Upper bool
}

// Translate reads pattern as ripgrep 13 does (the syntax of Rust's
// regex-syntax 0.6) and writes the same regular expression in Go's RE2
// syntax (the package doc says what changes on the way). A pattern ripgrep refuses comes back as a *ParseError in
// ripgrep's words, with its spans, and one with a literal newline as
// ErrNewline.
//
// fold says the whole pattern is matched ignoring case (-i, or smart case
// deciding so); classes computed here must fold before they combine.
func Translate(pattern string, fold bool) (Translation, error) {
	t := &translator{p: pattern, fl: rflags{i: fold, u: true}}
	if perr := t.parse(); perr != nil {
		return Translation{}, perr
	}
	if t.newline {
		// Checked by ripgrep once the pattern is parsed and translated;
		// Go would fold a|\n into a class, from which \n is then removed.
		return Translation{}, ErrNewline
	}
	return Translation{RE2: string(t.out), Literal: t.literal, Upper: t.upper}, nil
}

// ErrNewline reports a pattern that can only match across lines, in
// ripgrep's words.
var ErrNewline = errors.New(`the literal '"\n"' is not allowed in a regex`)

// TranslateRelaxed translates a pattern Translate accepts with each
// Unicode \b and \B written as an empty group named by BoundaryName, for
// the caller to check ripgrep's Unicode word boundary where each group
// matched; n counts them. A pattern Translate refuses gives "", 0.
func TranslateRelaxed(pattern string, fold bool) (out string, n int) {
	t := &translator{p: pattern, fl: rflags{i: fold, u: true}, relax: true}
	if t.parse() != nil {
		return "", 0
	}
	return string(t.out), t.boundaries
}

// BoundaryPrefix starts the names of the groups standing for \b and \B
// in TranslateRelaxed's output.
const BoundaryPrefix = "bzzw"

// BoundaryName names the group standing for the k-th \b (want) or \B.
func BoundaryName(k int, want bool) string {
	if want {
		return BoundaryPrefix + "b" + strconv.Itoa(k)
	}
	return BoundaryPrefix + "B" + strconv.Itoa(k)
}

// IsWord reports whether r is a Unicode word character, ripgrep's \w.
func IsWord(r rune) bool { return unicode.In(r, wordTables...) }

// NonWordClass is ripgrep's Unicode \W written in Go's syntax.
func NonWordClass() string {
	text, _ := perlClass('W', true, false)
	return text
}

// rflags are the Rust flags in force that the translation itself needs;
// m is dropped (see the package doc) and U passed on to Go.
type rflags struct{ i, s, u, x bool }

// translator is one translation in progress. Offsets are bytes of p.
type translator struct {
	p     string
	i     int
	out   []byte
	fl    rflags
	names map[string]int // group name → offset of the name
	// last is where the output of the last repeatable item starts, or -1
	// after '|', '(' or a flag group; lastKind says what it was.
	last     int
	lastKind itemKind
	literal  bool
	upper    bool
	// relax writes each Unicode \b and \B as an empty named group,
	// BoundaryName(k, want), for boundaryMatcher to check; boundaries
	// counts them.
	relax      bool
	boundaries int
	// late is the first error regex-syntax finds only when it translates
	// the parsed pattern (Unicode where it is not allowed, an unknown
	// property, an empty class): any syntax error, even one further on,
	// is reported before it. See defer.
	late *ParseError
	// newline says a literal '\n' was written outside a class.
	newline bool
	// byteEscape says the last literal escape was \xHH, which under
	// (?-u) stands for a byte rather than a character.
	byteEscape bool
}

type itemKind int

const (
	itemNone      itemKind = iota
	itemAtom               // a literal, class, dot or group
	itemRepeat             // an atom with a repetition operator
	itemAssertion          // ^ $ \A \z \b \B: Go refuses to repeat these
)

// fail makes the error for the byte span [start, end) of the pattern.
func (t *translator) fail(start, end int, msg string) *ParseError {
	return &ParseError{Pattern: t.p, Spans: []Span{t.span(start, end)}, Msg: msg}
}

// parse translates the whole pattern and returns its first syntax error,
// or else its first late one.
func (t *translator) parse() *ParseError {
	if err := t.alternation(); err != nil {
		return err
	}
	return t.late
}

// lateFail records the error for [start, end) as a late one (see
// translator.late); parsing goes on with a stand-in for the item.
func (t *translator) lateFail(start, end int, msg string) {
	if t.late == nil {
		t.late = t.fail(start, end, msg)
	}
}

// span converts a byte span to ripgrep's character columns.
func (t *translator) span(start, end int) Span {
	return Span{Start: utf8.RuneCountInString(t.p[:start]), Len: utf8.RuneCountInString(t.p[start:end])}
}

func (t *translator) eof() bool { return t.i >= len(t.p) }

// char returns the character at the current offset and its size.
func (t *translator) char() (rune, int) { return utf8.DecodeRuneInString(t.p[t.i:]) }

// skipSpace skips white space and # comments in x mode.
func (t *translator) skipSpace() {
	if !t.fl.x {
		return
	}
	for !t.eof() {
		r, n := t.char()
		switch {
		case unicode.Is(unicode.White_Space, r):
			t.i += n
		case r == '#':
			for !t.eof() && t.p[t.i] != '\n' {
				t.i++
			}
		default:
			return
		}
	}
}

func (t *translator) lit(r rune) {
	t.literal = true
	if unicode.IsUpper(r) {
		t.upper = true
	}
}

// atom starts a new repeatable item in the output.
func (t *translator) atom(kind itemKind) {
	t.last, t.lastKind = len(t.out), kind
}

// group is an open parenthesis: where it is and what to restore at ')'.
type group struct {
	start int    // offset of '('
	out   int    // output offset of its text
	fl    rflags // flags outside it
}

// alternation translates the whole pattern.
func (t *translator) alternation() *ParseError {
	var stack []group
	t.last, t.lastKind = -1, itemNone
	for {
		t.skipSpace()
		if t.eof() {
			break
		}
		start := t.i
		r, n := t.char()
		switch r {
		case '|':
			t.out = append(t.out, '|')
			t.i++
			t.last, t.lastKind = -1, itemNone
		case '(':
			g := group{start: start, out: len(t.out), fl: t.fl}
			opened, err := t.openGroup()
			if err != nil {
				return err
			}
			if opened {
				stack = append(stack, g)
			}
		case ')':
			if len(stack) == 0 {
				return t.fail(start, start+1, "unopened group")
			}
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			t.fl = g.fl
			t.out = append(t.out, ')')
			t.i++
			t.last, t.lastKind = g.out, itemAtom
		case '*', '+', '?', '{':
			if err := t.repetition(); err != nil {
				return err
			}
		case '[':
			t.atom(itemAtom)
			if err := t.class(); err != nil {
				return err
			}
		case '\\':
			if err := t.escape(); err != nil {
				return err
			}
		case '.':
			t.atom(itemAtom)
			switch {
			case !t.fl.u:
				t.out = append(t.out, '.')
			case t.fl.s:
				// Not invalid UTF-8 (see emitClass).
				t.out = append(t.out, `[^\x{fffd}]`...)
			default:
				t.out = append(t.out, `[^\n\x{fffd}]`...)
			}
			t.i++
		case '^', '$':
			t.atom(itemAssertion)
			t.out = append(t.out, byte(r))
			t.i++
		default:
			if !t.fl.u && r >= utf8.RuneSelf {
				t.lateFail(start, start+n, "Unicode not allowed here")
			}
			t.atom(itemAtom)
			t.lit(r)
			t.newline = t.newline || r == '\n'
			t.out = appendRune(t.out, r, false)
			t.i += n
		}
	}
	if len(stack) > 0 {
		g := stack[len(stack)-1]
		return t.fail(g.start, g.start+1, "unclosed group")
	}
	return nil
}

// openGroup reads "(" and what follows up to the group's content. It
// reports false for a flag group "(?flags)", which opens nothing.
func (t *translator) openGroup() (bool, *ParseError) {
	start := t.i
	t.i++
	if !strings.HasPrefix(t.p[t.i:], "?") {
		t.out = append(t.out, '(')
		t.last, t.lastKind = -1, itemNone
		return true, nil
	}
	rest := t.p[t.i+1:]
	switch {
	case strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!"):
		return false, t.fail(start, start+3, "look-around, including look-ahead and look-behind, is not supported")
	case strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, "<!"):
		return false, t.fail(start, start+4, "look-around, including look-ahead and look-behind, is not supported")
	case strings.HasPrefix(rest, "P<"):
		return true, t.namedGroup()
	case rest == "":
		return false, t.fail(start, start+1, "unclosed group")
	case rest[0] == ')':
		return false, t.fail(t.i, t.i+1, "repetition operator missing expression")
	}
	t.i++ // the '?'
	return t.flagGroup()
}

// namedGroup reads "(?P<name>" with t.i at the '?'.
func (t *translator) namedGroup() *ParseError {
	nameStart := t.i + 3
	j := nameStart
	for {
		if j >= len(t.p) {
			return t.fail(j, j, "unclosed capture group name")
		}
		r, n := utf8.DecodeRuneInString(t.p[j:])
		if r == '>' {
			break
		}
		if !isNameChar(r, j == nameStart) {
			return t.fail(j, j+n, "invalid capture group character")
		}
		j += n
	}
	if j == nameStart {
		return t.fail(j, j+1, "empty capture group name")
	}
	name := t.p[nameStart:j]
	if prev, ok := t.names[name]; ok {
		err := t.fail(prev, prev+len(name), "duplicate capture group name")
		err.Spans = append(err.Spans, t.span(nameStart, j))
		return err
	}
	if t.names == nil {
		t.names = make(map[string]int)
	}
	t.names[name] = nameStart
	t.i = j + 1
	if strings.ContainsAny(name, ".[]") {
		// Valid in Rust, not in Go: the group still captures, unnamed.
		t.out = append(t.out, '(')
	} else {
		t.out = append(t.out, "(?P<"+name+">"...)
	}
	t.last, t.lastKind = -1, itemNone
	return nil
}

// isNameChar reports whether Rust accepts r in a group name.
func isNameChar(r rune, first bool) bool {
	switch {
	case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		return true
	case first:
		return false
	}
	return '0' <= r && r <= '9' || r == '.' || r == '[' || r == ']'
}

// flagGroup reads the flags after "(?" up to ')' or ':'.
func (t *translator) flagGroup() (bool, *ParseError) {
	fl := t.fl
	seen := map[rune]int{}
	negAt := -1
	lastNeg := false
	var on, off []byte
	for {
		if t.eof() {
			return false, t.fail(t.i, t.i, "expected flag but got end of regex")
		}
		r, n := t.char()
		switch r {
		case ':', ')':
			if lastNeg {
				return false, t.fail(negAt, negAt+1, "dangling flag negation operator")
			}
			t.i++
			t.fl = fl
			t.last, t.lastKind = -1, itemNone
			text := "(?" + string(on)
			if len(off) > 0 {
				text += "-" + string(off)
			}
			if r == ':' {
				t.out = append(t.out, text+":"...)
				return true, nil
			}
			if text != "(?" {
				t.out = append(t.out, text+")"...)
			}
			return false, nil
		case '-':
			if negAt >= 0 {
				err := t.fail(negAt, negAt+1, "flag negation operator repeated")
				err.Spans = append(err.Spans, t.span(t.i, t.i+1))
				return false, err
			}
			negAt, lastNeg = t.i, true
			t.i++
			continue
		}
		if prev, ok := seen[r]; ok {
			err := t.fail(prev, prev+n, "duplicate flag")
			err.Spans = append(err.Spans, t.span(t.i, t.i+n))
			return false, err
		}
		on1 := negAt < 0
		switch r {
		case 'i':
			fl.i = on1
		case 'm':
		case 's':
			fl.s = on1
		case 'U': // Go has it: passed on below
		case 'u':
			fl.u = on1
		case 'x':
			fl.x = on1
		default:
			return false, t.fail(t.i, t.i+n, "unrecognized flag")
		}
		seen[r] = t.i
		lastNeg = false
		if strings.ContainsRune("isU", r) {
			if on1 {
				on = append(on, byte(r))
			} else {
				off = append(off, byte(r))
			}
		}
		t.i += n
	}
}

// repetition reads a repetition operator and applies it to the last item.
func (t *translator) repetition() *ParseError {
	start := t.i
	op := t.p[t.i : t.i+1]
	var c count
	if t.p[t.i] == '{' {
		var err *ParseError
		if c, err = t.counted(); err != nil {
			return err
		}
	} else {
		t.i++
	}
	if t.last < 0 {
		return t.fail(start, start+1, "repetition operator missing expression")
	}
	t.skipSpace()
	lazy := ""
	if !t.eof() && t.p[t.i] == '?' {
		lazy = "?"
		t.i++
		t.skipSpace()
	}
	if c.set {
		if err := t.checkCount(c, start); err != nil {
			return err
		}
	}
	if t.lastKind == itemAssertion {
		// An assertion matches the empty string: repeated, it is itself,
		// or nothing when it may be skipped. (Kept, \b* would make the
		// relaxed match of boundary.go check a \b ripgrep skips.)
		if op == "*" || op == "?" || c.set && c.lo == 0 {
			t.out = append(t.out[:t.last], "(?:)"...)
		}
		return nil
	}
	operand := t.out[t.last:]
	if t.lastKind != itemAtom {
		// Go refuses a** and ^*: group the operand first.
		operand = append([]byte("(?:"), append(operand, ')')...)
	}
	var text string
	if c.set {
		text = c.apply(string(operand), lazy)
		if _, err := syntax.Parse(text, syntax.Perl); err != nil {
			// Go refuses nested counts whose product passes 1000, as in
			// (?:a{500}){3}: write the outer one out as copies.
			if c.lo+max(c.hi-c.lo, 0) > maxUnroll {
				return t.fail(start, t.i, "repetition count too large for this rg (install ripgrep for it)")
			}
			text = c.unroll(string(operand), lazy)
		}
	} else {
		text = string(operand) + op + lazy
	}
	t.out = append(t.out[:t.last], text...)
	t.lastKind = itemRepeat
	return nil
}

// count is a counted repetition {lo}, {lo,} or {lo,hi}.
type count struct {
	lo, hi int
	open   bool // {lo,}
	set    bool
}

// apply writes x repeated as c says. Go allows counts up to maxRepeat
// and refuses to nest counted repetitions past it, so a larger count is
// written as a run of repetitions of at most maxRepeat each.
func (c count) apply(x, lazy string) string {
	var b strings.Builder
	for n := c.lo; n > 0; n -= maxRepeat {
		b.WriteString("(?:" + x + "){" + strconv.Itoa(min(n, maxRepeat)) + "}" + lazy)
	}
	switch {
	case c.open:
		b.WriteString("(?:" + x + ")*" + lazy)
	case c.hi > c.lo:
		// Go's simplifier nests one group per optional copy, and the
		// matcher's compiler re-parses that, refusing nesting past 1000:
		// so runs of optionalRun.
		for n := c.hi - c.lo; n > 0; n -= optionalRun {
			b.WriteString("(?:" + x + "){0," + strconv.Itoa(min(n, optionalRun)) + "}" + lazy)
		}
	}
	return b.String()
}

// unroll writes x repeated as c says as a run of copies, for an operand
// that itself repeats.
func (c count) unroll(x, lazy string) string {
	var b strings.Builder
	for range c.lo {
		b.WriteString("(?:" + x + ")")
	}
	switch {
	case c.open:
		b.WriteString("(?:" + x + ")*" + lazy)
	case c.hi > c.lo:
		for range c.hi - c.lo {
			b.WriteString("(?:" + x + ")?" + lazy)
		}
	}
	return b.String()
}

// counted reads "{n}", "{n,}" or "{n,m}" as regex-syntax does: spaces
// are allowed around the numbers, and in x mode anywhere up to the '}'.
// The range is checked by checkCount, once the '?' of a lazy one is read.
func (t *translator) counted() (count, *ParseError) {
	start := t.i
	c := count{set: true}
	if t.last < 0 {
		return c, t.fail(start, start+1, "repetition operator missing expression")
	}
	unclosed := func() *ParseError { return t.fail(start, t.i, "unclosed counted repetition") }
	if !t.bump() {
		return c, unclosed()
	}
	var err *ParseError
	if c.lo, err = t.decimal(); err != nil {
		return c, err
	}
	c.hi = c.lo
	if t.eof() {
		return c, unclosed()
	}
	if t.p[t.i] == ',' {
		if !t.bump() {
			return c, unclosed()
		}
		if t.p[t.i] == '}' {
			c.open = true
		} else if c.hi, err = t.decimal(); err != nil {
			return c, err
		}
	}
	if t.eof() || t.p[t.i] != '}' {
		return c, unclosed()
	}
	t.i++
	return c, nil
}

// checkCount checks a counted repetition read by counted, whose text
// (lazy '?' included) is p[start:t.i].
func (t *translator) checkCount(c count, start int) *ParseError {
	if !c.open && c.hi < c.lo {
		return t.fail(start, t.i, "invalid repetition count range, the start must be <= the end")
	}
	if c.lo > maxCount || c.hi > maxCount {
		return t.fail(start, t.i, "repetition count too large for this rg (install ripgrep for it)")
	}
	return nil
}

// peekSpace returns the character after the current one, past spaces
// and comments in x mode, or -1 at the end.
func (t *translator) peekSpace() rune {
	save := t.i
	defer func() { t.i = save }()
	if !t.bump() {
		return -1
	}
	r, _ := t.char()
	return r
}

// bump steps over the current character and, in x mode, the spaces and
// comments after it; it reports whether anything is left.
func (t *translator) bump() bool {
	_, n := t.char()
	t.i += n
	t.skipSpace()
	return !t.eof()
}

// decimal reads a repetition count: spaces, digits (in x mode with
// spaces between them), spaces.
func (t *translator) decimal() (int, *ParseError) {
	t.skipWhite()
	ds := t.i
	var digits []byte
	for !t.eof() && '0' <= t.p[t.i] && t.p[t.i] <= '9' {
		digits = append(digits, t.p[t.i])
		t.bump()
	}
	de := t.i
	for !t.eof() {
		if r, _ := t.char(); !unicode.Is(unicode.White_Space, r) {
			break
		}
		t.bump()
	}
	if len(digits) == 0 {
		return 0, t.fail(ds, de, "repetition quantifier expects a valid decimal")
	}
	v, err := strconv.ParseUint(string(digits), 10, 32)
	if err != nil {
		return 0, t.fail(ds, de, "decimal literal invalid")
	}
	return int(v), nil
}

// skipWhite skips white space, in any mode.
func (t *translator) skipWhite() {
	for !t.eof() {
		r, n := t.char()
		if !unicode.Is(unicode.White_Space, r) {
			return
		}
		t.i += n
	}
}

// escape translates a backslash escape outside a bracket class.
func (t *translator) escape() *ParseError {
	start := t.i
	if t.i+1 >= len(t.p) {
		return t.fail(start, t.i+1, "incomplete escape sequence, reached end of pattern prematurely")
	}
	c, _ := utf8.DecodeRuneInString(t.p[t.i+1:])
	switch {
	case c >= '0' && c <= '9':
		return t.fail(start, t.i+2, "backreferences are not supported")
	case c == 'A':
		t.i += 2
		t.atom(itemAssertion)
		t.out = append(t.out, "(?m:^)"...)
		return nil
	case c == 'z':
		t.i += 2
		t.atom(itemAssertion)
		t.out = append(t.out, "(?m:$)"...)
		return nil
	case c == 'b' || c == 'B':
		t.i += 2
		t.atom(itemAssertion)
		if t.fl.u {
			// Go's \b is ASCII; ripgrep's knows Unicode word characters.
			if t.relax {
				t.out = append(t.out, "(?P<"+BoundaryName(t.boundaries, c == 'b')+">)"...)
			}
			t.boundaries++
			if t.relax {
				return nil
			}
		}
		t.out = append(t.out, '\\', byte(c))
		return nil
	}
	t.atom(itemAtom)
	if c < utf8.RuneSelf {
		if s, ok := perlClass(byte(c), t.fl.u, false); ok {
			t.i += 2
			t.out = append(t.out, s...)
			return nil
		}
	}
	if c == 'p' || c == 'P' {
		text, err := t.property(true)
		if err != nil {
			return err
		}
		rs, ok := t.ranges([]byte(text), false)
		t.emitClass([]byte(text), false, rs, true, ok)
		return nil
	}
	r, err := t.literalEscape(false)
	if err != nil {
		return err
	}
	if !t.fl.u && r >= utf8.RuneSelf && !t.byteEscape {
		t.lateFail(start, t.i, "Unicode not allowed here")
	}
	t.lit(r)
	t.newline = t.newline || r == '\n'
	t.out = t.appendLiteral(t.out, r, false)
	return nil
}

// appendLiteral writes a literal character; under (?-u) a code above
// 0x7F written as \xHH stands for a byte, which Go's regexp sees as
// U+FFFD when it is not part of valid UTF-8, so that is what it becomes.
func (t *translator) appendLiteral(b []byte, r rune, inClass bool) []byte {
	if !t.fl.u && r >= utf8.RuneSelf {
		r = utf8.RuneError
	}
	return appendRune(b, r, inClass)
}

// literalEscape reads an escape that stands for one character: meta
// characters, \a \f \t \n \r \v, \x \u \U codes. t.i is at the '\'.
func (t *translator) literalEscape(inClass bool) (rune, *ParseError) {
	start := t.i
	c, n := utf8.DecodeRuneInString(t.p[t.i+1:])
	t.i += 1 + n
	t.byteEscape = false
	switch c {
	case 'a':
		return '\a', nil
	case 'f':
		return '\f', nil
	case 't':
		return '\t', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 'v':
		return '\v', nil
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return 0, t.fail(start, t.i, "backreferences are not supported")
	case 'x':
		return t.hexCode(2)
	case 'u':
		return t.hexCode(4)
	case 'U':
		return t.hexCode(8)
	}
	if c < utf8.RuneSelf && strings.IndexByte(`\.+*?()|[]{}^$#&-~`, byte(c)) >= 0 {
		return c, nil
	}
	if c == ' ' && t.fl.x {
		return c, nil
	}
	msg := "unrecognized escape sequence"
	if inClass && (c == 'b' || c == 'B' || c == 'A' || c == 'z') {
		msg = classEscapeInvalid
	}
	return 0, t.fail(start, t.i, msg)
}

// classEscapeInvalid is the error for an assertion in a bracket class.
const classEscapeInvalid = "invalid escape sequence found in character class"

// hexCode reads the code after \x, \u or \U as regex-syntax does:
// exactly digits hex digits, or any number of them in braces (in x mode
// with spaces between). t.i is at the letter.
func (t *translator) hexCode(digits int) (rune, *ParseError) {
	const incomplete = "incomplete escape sequence, reached end of pattern prematurely"
	t.i-- // back to the letter
	if !t.bump() {
		return 0, t.fail(t.i, t.i, incomplete)
	}
	if t.p[t.i] == '{' {
		open := t.i
		var hex []byte
		for t.bump() && t.p[t.i] != '}' {
			if r, n := t.char(); !isHex(byte(r)) || r >= utf8.RuneSelf {
				return 0, t.fail(t.i, t.i+n, "invalid hexadecimal digit")
			}
			hex = append(hex, t.p[t.i])
		}
		if t.eof() {
			return 0, t.fail(open, t.i, incomplete)
		}
		end := t.i
		t.bump()
		if len(hex) == 0 {
			return 0, t.fail(open, t.i, "hexadecimal literal empty")
		}
		return t.scalar(string(hex), open+1, end)
	}
	ds := t.i
	var hex []byte
	for k := range digits {
		if k > 0 && !t.bump() {
			return 0, t.fail(t.i, t.i, incomplete)
		}
		if r, n := t.char(); !isHex(byte(r)) || r >= utf8.RuneSelf {
			return 0, t.fail(t.i, t.i+n, "invalid hexadecimal digit")
		}
		hex = append(hex, t.p[t.i])
	}
	t.bump()
	t.byteEscape = digits == 2
	return t.scalar(string(hex), ds, t.i)
}

// scalar reads hex digits, written at p[ds:de], as a character.
func (t *translator) scalar(hex string, ds, de int) (rune, *ParseError) {
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || v > unicode.MaxRune || 0xD800 <= v && v <= 0xDFFF {
		return 0, t.fail(ds, de, "hexadecimal literal is not a Unicode scalar value")
	}
	return rune(v), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// property reads \p or \P with its name and returns the text for it, as a
// class of its own or, inClass, as the inside of a bracket class.
func (t *translator) property(inClass bool) (string, *ParseError) {
	const incomplete = "incomplete escape sequence, reached end of pattern prematurely"
	start := t.i
	neg := t.p[t.i+1] == 'P'
	t.i++
	if !t.bump() {
		return "", t.fail(t.i, t.i, incomplete)
	}
	var name string
	if t.p[t.i] == '{' {
		// In x mode spaces inside the braces are not part of the name.
		var b []byte
		for t.bump() && t.p[t.i] != '}' {
			_, n := t.char()
			b = append(b, t.p[t.i:t.i+n]...)
		}
		if t.eof() {
			return "", t.fail(t.i, t.i, incomplete)
		}
		t.i++
		name = string(b)
	} else {
		r, n := t.char()
		if r == '\\' {
			return "", t.fail(t.i, t.i+n, "invalid Unicode character class")
		}
		name = t.p[t.i : t.i+n]
		t.bump()
	}
	if !t.fl.u {
		t.lateFail(start, t.i, "Unicode not allowed here")
		return "a", nil
	}
	text, msg := unicodeProperty(name, neg, inClass)
	if msg == "" && text == "" {
		msg = "empty character classes are not allowed" // \P{Any}
	}
	if msg != "" {
		t.lateFail(start, t.i, msg)
		return "a", nil
	}
	return text, nil
}

// appendRune writes r so that it means itself, in or out of a class.
func appendRune(b []byte, r rune, inClass bool) []byte {
	switch {
	case r < utf8.RuneSelf && ('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_'):
		return append(b, byte(r))
	case r < utf8.RuneSelf && r > ' ' && r < 0x7f:
		return append(b, '\\', byte(r))
	case r >= utf8.RuneSelf && unicode.IsPrint(r) && r != utf8.RuneError:
		return utf8.AppendRune(b, r)
	}
	b = append(b, `\x{`...)
	b = strconv.AppendInt(b, int64(r), 16)
	return append(b, '}')
}

// class translates a bracket class at t.i.
func (t *translator) class() *ParseError {
	start := t.i
	set, complex, err := t.classBody()
	if err != nil {
		return err
	}
	rs, textOK := set.rs, false
	switch {
	case !complex && len(set.text) == 0:
		// Only properties that are empty, as \P{Any}.
		rs, complex = emptyText(set.neg), true
	case !complex:
		rs, textOK = t.ranges(set.text, set.neg)
	}
	if len(rs) == 0 && (complex || textOK) {
		t.lateFail(start, t.i, "empty character classes are not allowed")
		t.out = append(t.out, 'a')
		return nil
	}
	t.emitClass(set.text, set.neg, rs, !complex, textOK || complex)
	return nil
}

// emitClass writes a class: as the Go text of its inside when that means
// the same, else as its ranges. In Unicode mode a class never matches
// invalid UTF-8, which Go's regexp reads as U+FFFD: a class holding
// U+FFFD is written without it (a real U+FFFD in the text is then missed,
// the rarer case).
func (t *translator) emitClass(text []byte, neg bool, rs []runeRange, useText, known bool) {
	if known && t.fl.u && inRanges(rs, utf8.RuneError) {
		if kept := withoutFFFD(rs); len(kept) > 0 {
			rs, useText = kept, false
		}
	}
	t.out = append(t.out, '[')
	if useText {
		if neg {
			t.out = append(t.out, '^')
		}
		t.out = append(t.out, text...)
	} else {
		t.out = append(t.out, classText(rs)...)
	}
	t.out = append(t.out, ']')
}

// inRanges reports whether r is in the sorted ranges rs.
func inRanges(rs []runeRange, r rune) bool {
	for _, x := range rs {
		if x.lo <= r && r <= x.hi {
			return true
		}
	}
	return false
}

// bracket is a parsed bracket class: either Go text (simple) or ranges.
type bracket struct {
	text []byte
	neg  bool
	rs   []runeRange
}

// ranges parses the inside of a Go class under the current case flag and
// returns its code points, negated when neg.
func (t *translator) ranges(text []byte, neg bool) ([]runeRange, bool) {
	src := "["
	if neg {
		src += "^"
	}
	src += string(text) + "]"
	flags := syntax.Perl
	if t.fl.i {
		flags |= syntax.FoldCase
	}
	re, err := syntax.Parse(src, flags)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	switch re.Op {
	case syntax.OpNoMatch:
		return nil, true
	case syntax.OpCharClass:
		rs := make([]runeRange, 0, len(re.Rune)/2)
		for k := 0; k+1 < len(re.Rune); k += 2 {
			rs = append(rs, runeRange{re.Rune[k], re.Rune[k+1]})
		}
		return rs, true
	case syntax.OpLiteral:
		var rs []runeRange
		for _, r := range re.Rune {
			rs = append(rs, runeRange{r, r})
		}
		if re.Flags&syntax.FoldCase != 0 {
			rs = foldRanges(rs)
		}
		return normalize(rs), true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return []runeRange{{0, unicode.MaxRune}}, true
	}
	return nil, false
}

// foldRanges adds the simple case folds of every code point in rs.
func foldRanges(rs []runeRange) []runeRange {
	out := append([]runeRange(nil), rs...)
	for _, r := range rs {
		for c := r.lo; c <= r.hi; c++ {
			for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
				out = append(out, runeRange{f, f})
			}
		}
	}
	return out
}

// classBody reads a bracket class, nested classes and set operations
// included, with t.i at its '['. complex reports that the result is in
// b.rs (nested classes or operators were used) rather than b.text.
func (t *translator) classBody() (b bracket, complex bool, err *ParseError) {
	start := t.i
	// The opening, as regex-syntax reads it: '[', '^', then a run of
	// '-' or else a ']', all literals that start no range. An unclosed
	// class is marked from its '[' through them.
	var union []byte
	if !t.bump() {
		return b, false, t.fail(start, t.i, "unclosed character class")
	}
	if t.p[t.i] == '^' {
		b.neg = true
		if !t.bump() {
			return b, false, t.fail(start, t.i, "unclosed character class")
		}
	}
	for t.p[t.i] == '-' {
		t.lit('-')
		union = append(union, `\-`...)
		if !t.bump() {
			return b, false, t.fail(start, t.i, "unclosed character class")
		}
	}
	if len(union) == 0 && t.p[t.i] == ']' {
		t.lit(']')
		union = append(union, `\]`...)
		if !t.bump() {
			return b, false, t.fail(start, t.i, "unclosed character class")
		}
	}
	openEnd := t.i
	// Operands of && -- ~~ and the operators between them.
	var operands [][]runeRange
	var ops []string
	var unionRanges []runeRange // nested classes joined to the union
	nested := false
	prevItem := -1         // offset where the last single-character item began
	var prevChar rune = -1 // its character, for a range
	prevPerl := -1         // offset of the last class item (\d, \pL), for errors
	prevPerlEnd := 0
	flush := func() ([]runeRange, bool) {
		if len(union) == 0 {
			return normalize(unionRanges), true
		}
		rs, ok := t.ranges(union, false)
		if !ok {
			return nil, false
		}
		rs = append(rs, unionRanges...)
		return normalize(rs), true
	}
	for {
		if t.fl.x {
			t.skipSpace()
		}
		if t.eof() {
			return b, false, t.fail(start, openEnd, "unclosed character class")
		}
		r, n := t.char()
		switch {
		case r == ']':
			t.i++
			if len(ops) == 0 && !nested {
				b.text = union
				return b, false, nil
			}
			rs, ok := flush()
			if !ok {
				t.lateFail(start, t.i, "empty character classes are not allowed")
			}
			operands = append(operands, rs)
			rs = operands[0]
			for k, op := range ops {
				rs = setOp(rs, operands[k+1], op)
			}
			if b.neg {
				rs = complement(rs)
			}
			b.rs = rs
			return b, true, nil
		case strings.HasPrefix(t.p[t.i:], "[:"):
			if end := strings.Index(t.p[t.i+2:], ":]"); end >= 0 && asciiClass(t.p[t.i+2:t.i+2+end]) {
				union = append(union, t.p[t.i:t.i+2+end+2]...)
				t.i += 2 + end + 2
				prevItem, prevChar, prevPerl = -1, -1, -1
				continue
			}
			fallthrough
		case r == '[':
			inner, cx, err := t.classBody()
			if err != nil {
				return b, false, err
			}
			rs := inner.rs
			if !cx && len(inner.text) == 0 {
				rs = emptyText(inner.neg)
			} else if !cx {
				var ok bool
				if rs, ok = t.ranges(inner.text, inner.neg); !ok {
					t.lateFail(start, t.i, "empty character classes are not allowed")
				}
			}
			unionRanges = append(unionRanges, rs...)
			nested = true
			prevItem, prevChar, prevPerl = -1, -1, -1
		case strings.HasPrefix(t.p[t.i:], "&&") || strings.HasPrefix(t.p[t.i:], "--") || strings.HasPrefix(t.p[t.i:], "~~"):
			rs, ok := flush()
			if !ok {
				rs = nil
			}
			operands = append(operands, rs)
			ops = append(ops, t.p[t.i:t.i+2])
			union, unionRanges = nil, nil
			t.i += 2
			prevItem, prevChar, prevPerl = -1, -1, -1
		case r == '-' && prevItem >= 0 && t.peekSpace() != ']' && t.peekSpace() != '-':
			// A range from prevChar.
			t.i++
			if t.fl.x {
				t.skipSpace()
			}
			if t.eof() {
				return b, false, t.fail(start, openEnd, "unclosed character class")
			}
			hiStart := t.i
			var hi rune
			if t.p[t.i] == '\\' {
				if t.i+1 < len(t.p) && (strings.IndexByte("dDwWsSpP", t.p[t.i+1]) >= 0) {
					end := t.i + 2
					if t.p[t.i+1] == 'p' || t.p[t.i+1] == 'P' {
						end = t.i + 3
						if strings.HasPrefix(t.p[t.i+2:], "{") {
							if k := strings.IndexByte(t.p[t.i:], '}'); k > 0 {
								end = t.i + k + 1
							}
						}
					}
					return b, false, t.fail(t.i, min(end, len(t.p)), "invalid range boundary, must be a literal")
				}
				if t.i+1 >= len(t.p) {
					return b, false, t.fail(t.i, t.i+1, "incomplete escape sequence, reached end of pattern prematurely")
				}
				var err *ParseError
				if hi, err = t.literalEscape(true); err != nil {
					return b, false, err
				}
			} else if t.p[t.i] == '[' {
				return b, false, t.fail(hiStart, hiStart+1, "invalid range boundary, must be a literal")
			} else {
				var hn int
				hi, hn = t.char()
				t.i += hn
			}
			if hi < prevChar {
				return b, false, t.fail(prevItem, t.i, "invalid character class range, the start must be <= the end")
			}
			if !t.fl.u && hi >= utf8.RuneSelf && (t.p[hiStart] != '\\' || !t.byteEscape) {
				t.lateFail(hiStart, t.i, "Unicode not allowed here")
			}
			t.lit(hi)
			switch {
			case t.fl.u || hi < utf8.RuneSelf:
				union = append(union, '-')
				union = appendRune(union, hi, true)
			case prevChar < utf8.RuneSelf:
				// Bytes up to and past 0x7F: the ASCII part, and U+FFFD
				// for the high bytes (see appendLiteral).
				union = append(union, '-')
				union = appendRune(union, unicode.MaxASCII, true)
				union = appendRune(union, utf8.RuneError, true)
			}
			prevItem, prevChar, prevPerl = -1, -1, -1
		case r == '-' && prevPerl >= 0 && !strings.HasPrefix(t.p[t.i:], "-]") && !strings.HasPrefix(t.p[t.i:], "--"):
			return b, false, t.fail(prevPerl, prevPerlEnd, "invalid range boundary, must be a literal")
		case r == '\\':
			if t.i+1 >= len(t.p) {
				return b, false, t.fail(t.i, t.i+1, "incomplete escape sequence, reached end of pattern prematurely")
			}
			c := t.p[t.i+1]
			if s, ok := perlClass(c, t.fl.u, true); ok {
				prevPerl, prevPerlEnd = t.i, t.i+2
				union = append(union, s...)
				t.i += 2
				prevItem, prevChar = -1, -1
				break
			}
			if c == 'p' || c == 'P' {
				ps := t.i
				s, err := t.property(true)
				if err != nil {
					return b, false, err
				}
				union = append(union, s...)
				prevPerl, prevPerlEnd = ps, t.i
				prevItem, prevChar = -1, -1
				break
			}
			item := t.i
			lr, err := t.literalEscape(true)
			if err != nil {
				if err.Msg == classEscapeInvalid {
					// \b \B \A \z parse as items: the end of the
					// pattern after one is reported first.
					t.skipSpace()
					if t.eof() {
						return b, false, t.fail(start, openEnd, "unclosed character class")
					}
				}
				return b, false, err
			}
			if !t.fl.u && lr >= utf8.RuneSelf && !t.byteEscape {
				t.lateFail(item, t.i, "Unicode not allowed here")
			}
			t.lit(lr)
			union = t.appendLiteral(union, lr, true)
			prevItem, prevChar, prevPerl = item, lr, -1
		default:
			if !t.fl.u && r >= utf8.RuneSelf {
				t.lateFail(t.i, t.i+n, "Unicode not allowed here")
			}
			t.lit(r)
			union = appendRune(union, r, true)
			prevItem, prevChar, prevPerl = t.i, r, -1
			t.i += n
		}
	}
}

// emptyText returns the code points of a class whose Go text is empty:
// none, or all when negated.
func emptyText(neg bool) []runeRange {
	if neg {
		return []runeRange{{0, unicode.MaxRune}}
	}
	return nil
}

// asciiClass reports whether name (after "[:", with an optional '^') is
// one of the ASCII classes Rust knows.
func asciiClass(name string) bool {
	name = strings.TrimPrefix(name, "^")
	switch name {
	case "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "word", "xdigit":
		return true
	}
	return false
}

// setOp applies a class set operation: && intersection, -- difference,
// ~~ symmetric difference.
func setOp(a, b []runeRange, op string) []runeRange {
	switch op {
	case "&&":
		return intersect(a, b)
	case "--":
		return intersect(a, complement(b))
	}
	return normalize(append(intersect(a, complement(b)), intersect(b, complement(a))...))
}

// intersect returns the code points in both sorted, merged range lists.
func intersect(a, b []runeRange) []runeRange {
	var out []runeRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, runeRange{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// normalize sorts ranges and merges overlapping or adjacent ones.
func normalize(rs []runeRange) []runeRange {
	if len(rs) == 0 {
		return rs
	}
	rs = append([]runeRange(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
