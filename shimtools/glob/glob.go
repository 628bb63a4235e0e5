// Package glob matches slash-separated paths against shell globs in the
// dialect ripgrep uses for -g, file types and ignore files: '*', '?',
// '[...]' classes ('!' or '^' negates), '{a,b}' alternation, backslash
// escapes, and '**' as a whole path component ("**/x", "x/**", "a/**/b").
//
// It does not touch the file system and knows nothing about gitignore
// anchoring; package ignore turns gitignore lines into globs.
package glob

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Options change how a pattern is compiled. The zero value gives '*' and '?'
// that cross '/', case-sensitive matching and backslash escapes.
type Options struct {
	// LiteralSeparator stops '*', '?' and classes from matching '/'.
	LiteralSeparator bool
	// CaseFold matches regardless of case (simple Unicode folding).
	CaseFold bool
	// NoEscape makes '\' an ordinary character.
	NoEscape bool
}

// ErrSyntax is what every compile error is (errors.Is).
var ErrSyntax = errors.New("invalid glob")

// SyntaxError is a glob that does not compile, in ripgrep's words.
type SyntaxError struct {
	Glob string // as the user wrote it
	Msg  string // what is wrong
}

func (e *SyntaxError) Error() string { return "error parsing glob '" + e.Glob + "': " + e.Msg }

// Is makes a SyntaxError match ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

type kind uint8

const (
	kLit       kind = iota // lit
	kAny                   // '*'
	kOne                   // '?'
	kClass                 // [...]
	kRecPrefix             // leading "**/": empty or anything ending in '/'
	kRecSuffix             // trailing "/**": '/' then anything
	kRecMid                // "/**/": '/' or '/' anything '/'
	kRecAll                // a pattern of just "**"
	kAlt                   // {a,b}
)

type token struct {
	kind   kind
	lit    string
	neg    bool
	ranges []rune // pairs lo, hi
	alts   [][]token
}

// Glob is a compiled pattern. It is safe for concurrent use.
type Glob struct {
	pattern string
	toks    []token
	opts    Options
	// fast paths, set when the whole pattern has one of these shapes
	fast     fastKind
	fastLit  string
	hasStars bool
}

type fastKind uint8

const (
	fastNone     fastKind = iota
	fastExact             // the literal itself
	fastBaseName          // **/lit: base name equals lit
	fastBaseExt           // **/*lit: base name ends in lit
	fastExt               // *lit with '*' crossing '/': path ends in lit
)

// String returns the pattern the glob was compiled from.
func (g *Glob) String() string { return g.pattern }

// Compile parses pattern.
func Compile(pattern string, opts Options) (*Glob, error) {
	toks, err := parse(pattern, opts, 0)
	if err != nil {
		return nil, &SyntaxError{Glob: pattern, Msg: err.Error()}
	}
	g := &Glob{pattern: pattern, toks: toks, opts: opts}
	g.classify()
	return g, nil
}

func (g *Glob) classify() {
	t := g.toks
	for _, tk := range t {
		if tk.kind == kAny || tk.kind == kAlt || tk.kind >= kRecPrefix {
			g.hasStars = true
		}
	}
	switch {
	case len(t) == 1 && t[0].kind == kLit:
		g.fast, g.fastLit = fastExact, t[0].lit
	case len(t) == 2 && t[0].kind == kRecPrefix && t[1].kind == kLit && !strings.Contains(t[1].lit, "/"):
		g.fast, g.fastLit = fastBaseName, t[1].lit
	case len(t) == 3 && t[0].kind == kRecPrefix && t[1].kind == kAny && t[2].kind == kLit &&
		!strings.Contains(t[2].lit, "/") && g.opts.LiteralSeparator:
		g.fast, g.fastLit = fastBaseExt, t[2].lit
	case len(t) == 2 && t[0].kind == kAny && t[1].kind == kLit && !g.opts.LiteralSeparator:
		g.fast, g.fastLit = fastExt, t[1].lit
	}
}

// Match reports whether path matches the whole pattern.
func (g *Glob) Match(path string) bool {
	if g.opts.CaseFold {
		path = lower(path)
	}
	switch g.fast {
	case fastExact:
		return path == g.fastLit
	case fastBaseName:
		return baseName(path) == g.fastLit
	case fastBaseExt:
		return strings.HasSuffix(baseName(path), g.fastLit)
	case fastExt:
		return strings.HasSuffix(path, g.fastLit)
	}
	m := matcher{sep: g.opts.LiteralSeparator, fold: g.opts.CaseFold}
	return m.match(g.toks, path)
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// parse turns a pattern into tokens. depth > 0 means inside braces, where
// ',' and '}' end the token list.
func parse(p string, opts Options, depth int) ([]token, error) {
	var toks []token
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			text := lit.String()
			if opts.CaseFold {
				// Matched against the path lowered (see Match); classes
				// keep their ranges and fold at match time.
				text = lower(text)
			}
			toks = append(toks, token{kind: kLit, lit: text})
			lit.Reset()
		}
	}
	i := 0
	for i < len(p) {
		c := p[i]
		switch {
		case c == '\\' && !opts.NoEscape:
			if i+1 >= len(p) {
				return nil, errors.New("dangling '\\'")
			}
			_, n := utf8.DecodeRuneInString(p[i+1:])
			lit.WriteString(p[i+1 : i+1+n])
			i += 1 + n
		case c == '?':
			flush()
			toks = append(toks, token{kind: kOne})
			i++
		case c == '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			if j-i >= 2 {
				startOK := i == 0 || p[i-1] == '/'
				endOK := j == len(p) || p[j] == '/'
				if depth == 0 && startOK && endOK {
					flush()
					switch {
					case i == 0 && j == len(p):
						toks = append(toks, token{kind: kRecAll})
					case i == 0:
						toks = append(toks, token{kind: kRecPrefix})
						j++ // eat '/'
					case j == len(p):
						// the '/' before "**" belongs to the token
						trimSlash(&toks)
						toks = append(toks, token{kind: kRecSuffix})
					default:
						trimSlash(&toks)
						toks = append(toks, token{kind: kRecMid})
						j++
					}
					i = j
					continue
				}
			}
			flush()
			toks = append(toks, token{kind: kAny})
			i = j
		case c == '[':
			flush()
			tk, n, err := parseClass(p[i:], opts)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tk)
			i += n
		case c == '{' && depth > 0:
			return nil, errors.New("nested alternate groups are not allowed")
		case c == '{':
			flush()
			var alts [][]token
			j := i + 1
			for {
				end := altEnd(p, j, opts)
				if end < 0 {
					return nil, errors.New("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
				}
				sub, err := parse(p[j:end], opts, depth+1)
				if err != nil {
					return nil, err
				}
				alts = append(alts, sub)
				j = end + 1
				if p[end] == '}' {
					break
				}
			}
			toks = append(toks, token{kind: kAlt, alts: alts})
			i = j
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	return toks, nil
}

// trimSlash removes the trailing '/' of the last literal token, which a
// recursive "/**" token absorbs.
func trimSlash(toks *[]token) {
	t := *toks
	if n := len(t); n > 0 && t[n-1].kind == kLit {
		t[n-1].lit = strings.TrimSuffix(t[n-1].lit, "/")
		if t[n-1].lit == "" {
			*toks = t[:n-1]
		}
	}
}

// altEnd finds the ',' or '}' that ends the alternative starting at j,
// skipping nested braces, classes and escapes. It returns -1 if none.
func altEnd(p string, j int, opts Options) int {
	nest := 0
	for j < len(p) {
		switch p[j] {
		case '\\':
			if !opts.NoEscape {
				j += 2
				continue
			}
		case '[':
			if _, n, err := parseClass(p[j:], opts); err == nil {
				j += n
				continue
			}
		case '{':
			nest++
		case '}':
			if nest == 0 {
				return j
			}
			nest--
		case ',':
			if nest == 0 {
				return j
			}
		}
		j++
	}
	return -1
}

// parseClass parses "[...]" at the start of p and returns the token and the
// bytes consumed.
func parseClass(p string, opts Options) (token, int, error) {
	tk := token{kind: kClass}
	i := 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		tk.neg = true
		i++
	}
	first := true
	for {
		if i >= len(p) {
			return tk, 0, errors.New("unclosed character class; missing ']'")
		}
		if p[i] == ']' && !first {
			i++
			break
		}
		first = false
		lo, n := utf8.DecodeRuneInString(p[i:])
		i += n
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			r, n := utf8.DecodeRuneInString(p[i+1:])
			hi = r
			i += 1 + n
			if hi < lo {
				return tk, 0, fmt.Errorf("invalid range; '%c' > '%c'", lo, hi)
			}
		}
		tk.ranges = append(tk.ranges, lo, hi)
	}
	return tk, i, nil
}

// matcher walks tokens over a path with backtracking. Patterns are short,
// so the recursion stays shallow; a step budget bounds pathological cases.
type matcher struct {
	sep   bool
	fold  bool // classes match any case of the (lowered) path character
	steps int
}

func (m *matcher) match(toks []token, s string) bool {
	for len(toks) > 0 {
		m.steps++
		if m.steps > maxSteps {
			return false
		}
		tk := toks[0]
		switch tk.kind {
		case kLit:
			if !strings.HasPrefix(s, tk.lit) {
				return false
			}
			s = s[len(tk.lit):]
			toks = toks[1:]
		case kOne, kClass:
			if s == "" {
				return false
			}
			r, n := utf8.DecodeRuneInString(s)
			if m.sep && r == '/' {
				return false
			}
			if tk.kind == kClass && !classMatch(tk, r, m.fold) {
				return false
			}
			s = s[n:]
			toks = toks[1:]
		case kAny:
			rest := toks[1:]
			if len(rest) == 0 {
				return !m.sep || !strings.Contains(s, "/")
			}
			for i := 0; i <= len(s); i++ {
				if m.match(rest, s[i:]) {
					return true
				}
				if i < len(s) && m.sep && s[i] == '/' {
					return false
				}
			}
			return false
		case kRecAll:
			return true
		case kRecPrefix:
			rest := toks[1:]
			if m.match(rest, s) {
				return true
			}
			for i := 0; i < len(s); i++ {
				if s[i] == '/' && m.match(rest, s[i+1:]) {
					return true
				}
			}
			return false
		case kRecSuffix:
			return strings.HasPrefix(s, "/")
		case kRecMid:
			rest := toks[1:]
			if !strings.HasPrefix(s, "/") {
				return false
			}
			for i := 0; i < len(s); i++ {
				if s[i] == '/' && m.match(rest, s[i+1:]) {
					return true
				}
			}
			return false
		case kAlt:
			rest := toks[1:]
			for _, alt := range tk.alts {
				joined := make([]token, 0, len(alt)+len(rest))
				joined = append(append(joined, alt...), rest...)
				if m.match(joined, s) {
					return true
				}
			}
			return false
		}
	}
	return s == ""
}

func classMatch(tk token, r rune, fold bool) bool {
	in := inRanges(tk.ranges, r)
	if fold {
		for f := unicode.SimpleFold(r); f != r && !in; f = unicode.SimpleFold(f) {
			in = inRanges(tk.ranges, f)
		}
	}
	return in != tk.neg
}

// lower lowers s as strings.ToLower does but keeps bytes that are not
// UTF-8 as they are (ToLower would turn each into U+FFFD).
func lower(s string) string {
	if utf8.ValidString(s) {
		return strings.ToLower(s)
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[i])
		} else {
			b = utf8.AppendRune(b, unicode.ToLower(r))
		}
		i += n
	}
	return string(b)
}

// inRanges reports whether r is in one of the lo, hi pairs of ranges.
func inRanges(ranges []rune, r rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= r && r <= ranges[i+1] {
			return true
		}
	}
	return false
}
