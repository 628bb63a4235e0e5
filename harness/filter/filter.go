// Package filter is the expression language of buzz-acp's rules files
// (harness spec §5.4): a small, read-only subset of evalexpr 11.
//
// Variables: content, author, kind, channel_id, timestamp. Functions:
// str_contains, str_starts_with, str_ends_with (→ bool) and str_len (→ int,
// bytes). Operators, lowest precedence first: ";" chain, "," tuple,
// assignment (parsed, always an error: the context is read-only), "||",
// "&&", comparisons, "+ -", "* / %", unary "- !", "^". Binary operators are
// left-associative. Comparing values of different types is an error, not
// false; int / int is integer division.
//
// It does not implement evalexpr's other built-ins, regular expressions or
// variable assignment.
package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxBytes bounds one expression; longer ones are refused at compile and
// at evaluation.
const MaxBytes = 4096

// maxDepth bounds nesting so that a hostile expression cannot exhaust the
// stack; 4096 bytes of "(" would otherwise recurse 4096 deep.
const maxDepth = 200

// Event is what an expression can see.
type Event struct {
	Content   string
	Author    string // lowercase hex pubkey
	Kind      int
	ChannelID string // lowercase UUID
	Timestamp int64  // created_at, seconds
}

// Expr is a compiled expression.
type Expr struct {
	src  string
	root node
}

// String returns the source text.
func (e *Expr) String() string { return e.src }

// ErrTimeout is returned when an evaluation runs past its deadline.
var ErrTimeout = errors.New("filter: evaluation timed out")

// Compile parses src.
func Compile(src string) (*Expr, error) {
	if len(src) > MaxBytes {
		return nil, fmt.Errorf("filter: expression is %d bytes, over the %d-byte limit", len(src), MaxBytes)
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	n, err := p.chain(0)
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, fmt.Errorf("filter: unexpected %q at offset %d", p.peek().text, p.peek().pos)
	}
	return &Expr{src: src, root: n}, nil
}

// Match evaluates the expression against ev; the result must be a
// boolean. deadline zero means none.
func (e *Expr) Match(ev *Event, deadline time.Time) (bool, error) {
	if len(e.src) > MaxBytes {
		return false, fmt.Errorf("filter: expression over the %d-byte limit", MaxBytes)
	}
	st := &evalState{ev: ev, deadline: deadline}
	v, err := st.eval(e.root)
	if err != nil {
		return false, err
	}
	if v.kind != vBool {
		return false, fmt.Errorf("filter: expression gave %s, want a boolean", v.typeName())
	}
	return v.b, nil
}

// ---- lexer ----

type tokKind int

const (
	tEOF tokKind = iota
	tInt
	tFloat
	tString
	tIdent
	tOp
	tLParen
	tRParen
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == ':' }

// operators, longest first.
var operators = []string{"&&", "||", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "^=",
	"<", ">", "+", "-", "*", "/", "%", "^", "!", "=", ",", ";"}

func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			out = append(out, token{tLParen, "(", i})
			i++
		case c == ')':
			out = append(out, token{tRParen, ")", i})
			i++
		case c == '"':
			start := i
			i++
			var b strings.Builder
			closed := false
			for i < len(src) {
				ch := src[i]
				if ch == '\\' {
					if i+1 >= len(src) {
						break
					}
					switch src[i+1] {
					case '"', '\\':
						b.WriteByte(src[i+1])
					default:
						return nil, fmt.Errorf("filter: unknown escape \\%c at offset %d", src[i+1], i)
					}
					i += 2
					continue
				}
				if ch == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(ch)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("filter: unterminated string at offset %d", start)
			}
			out = append(out, token{tString, b.String(), start})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			start := i
			float := false
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				if src[i] == '.' {
					float = true
				}
				i++
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && src[j] >= '0' && src[j] <= '9' {
					float = true
					i = j
					for i < len(src) && src[i] >= '0' && src[i] <= '9' {
						i++
					}
				}
			}
			k := tInt
			if float {
				k = tFloat
			}
			out = append(out, token{k, src[start:i], start})
		case isIdentStart(c):
			start := i
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			out = append(out, token{tIdent, src[start:i], start})
		default:
			matched := false
			for _, op := range operators {
				if strings.HasPrefix(src[i:], op) {
					out = append(out, token{tOp, op, i})
					i += len(op)
					matched = true
					break
				}
			}
			if !matched {
				return nil, fmt.Errorf("filter: unexpected character %q at offset %d", c, i)
			}
		}
	}
	return append(out, token{tEOF, "", len(src)}), nil
}

// ---- parser ----

type nodeKind int

const (
	nLit nodeKind = iota
	nVar
	nCall
	nUnary
	nBinary
	nTuple
	nChain
	nAssign
	nEmpty
)

type node struct {
	kind nodeKind
	op   string
	val  value
	name string
	kids []node
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) isOp(ops ...string) (string, bool) {
	t := p.peek()
	if t.kind != tOp {
		return "", false
	}
	for _, o := range ops {
		if t.text == o {
			return o, true
		}
	}
	return "", false
}

func depthErr() error { return fmt.Errorf("filter: expression nests deeper than %d", maxDepth) }

// chain: tuple (";" tuple?)*
func (p *parser) chain(d int) (node, error) {
	if d > maxDepth {
		return node{}, depthErr()
	}
	first, err := p.tuple(d + 1)
	if err != nil {
		return node{}, err
	}
	if _, ok := p.isOp(";"); !ok {
		return first, nil
	}
	kids := []node{first}
	for {
		if _, ok := p.isOp(";"); !ok {
			break
		}
		p.next()
		if t := p.peek(); t.kind == tEOF || t.kind == tRParen {
			kids = append(kids, node{kind: nEmpty})
			break
		}
		n, err := p.tuple(d + 1)
		if err != nil {
			return node{}, err
		}
		kids = append(kids, n)
	}
	return node{kind: nChain, kids: kids}, nil
}

func (p *parser) tuple(d int) (node, error) {
	first, err := p.assign(d + 1)
	if err != nil {
		return node{}, err
	}
	if _, ok := p.isOp(","); !ok {
		return first, nil
	}
	kids := []node{first}
	for {
		if _, ok := p.isOp(","); !ok {
			break
		}
		p.next()
		n, err := p.assign(d + 1)
		if err != nil {
			return node{}, err
		}
		kids = append(kids, n)
	}
	return node{kind: nTuple, kids: kids}, nil
}

func (p *parser) assign(d int) (node, error) {
	if d > maxDepth {
		return node{}, depthErr()
	}
	lhs, err := p.or(d + 1)
	if err != nil {
		return node{}, err
	}
	if op, ok := p.isOp("=", "+=", "-=", "*=", "/=", "%=", "^="); ok {
		p.next()
		rhs, err := p.assign(d + 1)
		if err != nil {
			return node{}, err
		}
		return node{kind: nAssign, op: op, kids: []node{lhs, rhs}}, nil
	}
	return lhs, nil
}

func (p *parser) binaryLevel(d int, ops []string, sub func(int) (node, error)) (node, error) {
	if d > maxDepth {
		return node{}, depthErr()
	}
	lhs, err := sub(d + 1)
	if err != nil {
		return node{}, err
	}
	for {
		op, ok := p.isOp(ops...)
		if !ok {
			return lhs, nil
		}
		p.next()
		rhs, err := sub(d + 1)
		if err != nil {
			return node{}, err
		}
		lhs = node{kind: nBinary, op: op, kids: []node{lhs, rhs}}
	}
}

func (p *parser) or(d int) (node, error)  { return p.binaryLevel(d, []string{"||"}, p.and) }
func (p *parser) and(d int) (node, error) { return p.binaryLevel(d, []string{"&&"}, p.cmp) }
func (p *parser) cmp(d int) (node, error) {
	return p.binaryLevel(d, []string{"==", "!=", "<=", ">=", "<", ">"}, p.add)
}
func (p *parser) add(d int) (node, error) { return p.binaryLevel(d, []string{"+", "-"}, p.mul) }
func (p *parser) mul(d int) (node, error) { return p.binaryLevel(d, []string{"*", "/", "%"}, p.unary) }

func (p *parser) unary(d int) (node, error) {
	if d > maxDepth {
		return node{}, depthErr()
	}
	if op, ok := p.isOp("-", "!"); ok {
		p.next()
		n, err := p.unary(d + 1)
		if err != nil {
			return node{}, err
		}
		return node{kind: nUnary, op: op, kids: []node{n}}, nil
	}
	return p.binaryLevel(d, []string{"^"}, p.atom)
}

func (p *parser) atom(d int) (node, error) {
	if d > maxDepth {
		return node{}, depthErr()
	}
	t := p.next()
	switch t.kind {
	case tInt:
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return node{}, fmt.Errorf("filter: integer %s out of range", t.text)
		}
		return node{kind: nLit, val: value{kind: vInt, i: n}}, nil
	case tFloat:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return node{}, fmt.Errorf("filter: bad number %s", t.text)
		}
		return node{kind: nLit, val: value{kind: vFloat, f: f}}, nil
	case tString:
		return node{kind: nLit, val: value{kind: vString, s: t.text}}, nil
	case tIdent:
		switch t.text {
		case "true":
			return node{kind: nLit, val: value{kind: vBool, b: true}}, nil
		case "false":
			return node{kind: nLit, val: value{kind: vBool, b: false}}, nil
		}
		if p.peek().kind == tLParen {
			p.next()
			var args []node
			if p.peek().kind != tRParen {
				inner, err := p.chain(d + 1)
				if err != nil {
					return node{}, err
				}
				if inner.kind == nTuple {
					args = inner.kids
				} else {
					args = []node{inner}
				}
			}
			if p.next().kind != tRParen {
				return node{}, fmt.Errorf("filter: missing ) after arguments of %s", t.text)
			}
			return node{kind: nCall, name: t.text, kids: args}, nil
		}
		return node{kind: nVar, name: t.text}, nil
	case tLParen:
		if p.peek().kind == tRParen {
			p.next()
			return node{kind: nEmpty}, nil
		}
		n, err := p.chain(d + 1)
		if err != nil {
			return node{}, err
		}
		if p.next().kind != tRParen {
			return node{}, errors.New("filter: missing )")
		}
		return n, nil
	case tEOF:
		return node{}, errors.New("filter: unexpected end of expression")
	}
	return node{}, fmt.Errorf("filter: unexpected %q at offset %d", t.text, t.pos)
}

// ---- values and evaluation ----

type valueKind int

const (
	vEmpty valueKind = iota
	vInt
	vFloat
	vBool
	vString
	vTuple
)

type value struct {
	kind valueKind
	i    int64
	f    float64
	b    bool
	s    string
	t    []value
}

func (v value) typeName() string {
	return [...]string{"empty", "int", "float", "boolean", "string", "tuple"}[v.kind]
}

func (v value) num() (float64, bool) {
	switch v.kind {
	case vInt:
		return float64(v.i), true
	case vFloat:
		return v.f, true
	}
	return 0, false
}

type evalState struct {
	ev       *Event
	deadline time.Time
	steps    int
}

// maxStringBytes bounds a string built by "+" during one evaluation.
const maxStringBytes = 1 << 20

func (st *evalState) eval(n node) (value, error) {
	st.steps++
	if !st.deadline.IsZero() && st.steps%64 == 0 && time.Now().After(st.deadline) {
		return value{}, ErrTimeout
	}
	switch n.kind {
	case nLit:
		return n.val, nil
	case nEmpty:
		return value{}, nil
	case nVar:
		switch n.name {
		case "content":
			return value{kind: vString, s: st.ev.Content}, nil
		case "author":
			return value{kind: vString, s: st.ev.Author}, nil
		case "kind":
			return value{kind: vInt, i: int64(st.ev.Kind)}, nil
		case "channel_id":
			return value{kind: vString, s: st.ev.ChannelID}, nil
		case "timestamp":
			return value{kind: vInt, i: st.ev.Timestamp}, nil
		}
		return value{}, fmt.Errorf("filter: unknown variable %s", n.name)
	case nAssign:
		return value{}, fmt.Errorf("filter: assignment %s is not allowed: the context is read-only", n.op)
	case nChain:
		var last value
		for _, k := range n.kids {
			v, err := st.eval(k)
			if err != nil {
				return value{}, err
			}
			last = v
		}
		return last, nil
	case nTuple:
		vals := make([]value, len(n.kids))
		for i, k := range n.kids {
			v, err := st.eval(k)
			if err != nil {
				return value{}, err
			}
			vals[i] = v
		}
		return value{kind: vTuple, t: vals}, nil
	case nCall:
		return st.call(n)
	case nUnary:
		v, err := st.eval(n.kids[0])
		if err != nil {
			return value{}, err
		}
		switch {
		case n.op == "!" && v.kind == vBool:
			return value{kind: vBool, b: !v.b}, nil
		case n.op == "-" && v.kind == vInt:
			if v.i == math.MinInt64 {
				return value{}, errors.New("filter: integer overflow")
			}
			return value{kind: vInt, i: -v.i}, nil
		case n.op == "-" && v.kind == vFloat:
			return value{kind: vFloat, f: -v.f}, nil
		}
		return value{}, fmt.Errorf("filter: %s cannot apply to %s", n.op, v.typeName())
	case nBinary:
		return st.binary(n)
	}
	return value{}, errors.New("filter: bad node")
}

func (st *evalState) binary(n node) (value, error) {
	l, err := st.eval(n.kids[0])
	if err != nil {
		return value{}, err
	}
	if n.op == "&&" || n.op == "||" {
		if l.kind != vBool {
			return value{}, fmt.Errorf("filter: %s needs booleans, got %s", n.op, l.typeName())
		}
		if n.op == "&&" && !l.b || n.op == "||" && l.b {
			return l, nil
		}
		r, err := st.eval(n.kids[1])
		if err != nil {
			return value{}, err
		}
		if r.kind != vBool {
			return value{}, fmt.Errorf("filter: %s needs booleans, got %s", n.op, r.typeName())
		}
		return r, nil
	}
	r, err := st.eval(n.kids[1])
	if err != nil {
		return value{}, err
	}
	switch n.op {
	case "==", "!=":
		eq, err := equal(l, r)
		if err != nil {
			return value{}, err
		}
		return value{kind: vBool, b: eq == (n.op == "==")}, nil
	case "<", ">", "<=", ">=":
		c, err := compare(l, r)
		if err != nil {
			return value{}, err
		}
		var b bool
		switch n.op {
		case "<":
			b = c < 0
		case ">":
			b = c > 0
		case "<=":
			b = c <= 0
		case ">=":
			b = c >= 0
		}
		return value{kind: vBool, b: b}, nil
	case "+":
		if l.kind == vString && r.kind == vString {
			if len(l.s)+len(r.s) > maxStringBytes {
				return value{}, errors.New("filter: string too long")
			}
			return value{kind: vString, s: l.s + r.s}, nil
		}
	}
	return arith(n.op, l, r)
}

func equal(l, r value) (bool, error) {
	if ln, ok := l.num(); ok {
		if rn, ok := r.num(); ok {
			if l.kind == vInt && r.kind == vInt {
				return l.i == r.i, nil
			}
			return ln == rn, nil
		}
	}
	if l.kind != r.kind {
		return false, fmt.Errorf("filter: cannot compare %s with %s", l.typeName(), r.typeName())
	}
	switch l.kind {
	case vBool:
		return l.b == r.b, nil
	case vString:
		return l.s == r.s, nil
	case vEmpty:
		return true, nil
	case vTuple:
		if len(l.t) != len(r.t) {
			return false, nil
		}
		for i := range l.t {
			eq, err := equal(l.t[i], r.t[i])
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	return false, nil
}

func compare(l, r value) (int, error) {
	if l.kind == vInt && r.kind == vInt {
		switch {
		case l.i < r.i:
			return -1, nil
		case l.i > r.i:
			return 1, nil
		}
		return 0, nil
	}
	if ln, ok := l.num(); ok {
		if rn, ok := r.num(); ok {
			switch {
			case ln < rn:
				return -1, nil
			case ln > rn:
				return 1, nil
			}
			return 0, nil
		}
	}
	if l.kind == vString && r.kind == vString {
		return strings.Compare(l.s, r.s), nil
	}
	return 0, fmt.Errorf("filter: cannot order %s and %s", l.typeName(), r.typeName())
}

func arith(op string, l, r value) (value, error) {
	if l.kind == vInt && r.kind == vInt && op != "^" {
		a, b := l.i, r.i
		var out int64
		switch op {
		case "+":
			out = a + b
			if (out > a) != (b > 0) {
				return value{}, errors.New("filter: integer overflow")
			}
		case "-":
			out = a - b
			if (out < a) != (b > 0) {
				return value{}, errors.New("filter: integer overflow")
			}
		case "*":
			if a != 0 && b != 0 {
				out = a * b
				if out/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
					return value{}, errors.New("filter: integer overflow")
				}
			}
		case "/", "%":
			if b == 0 {
				return value{}, errors.New("filter: division by zero")
			}
			if a == math.MinInt64 && b == -1 {
				return value{}, errors.New("filter: integer overflow")
			}
			if op == "/" {
				out = a / b
			} else {
				out = a % b
			}
		}
		return value{kind: vInt, i: out}, nil
	}
	a, ok1 := l.num()
	b, ok2 := r.num()
	if !ok1 || !ok2 {
		return value{}, fmt.Errorf("filter: %s cannot apply to %s and %s", op, l.typeName(), r.typeName())
	}
	var f float64
	switch op {
	case "+":
		f = a + b
	case "-":
		f = a - b
	case "*":
		f = a * b
	case "/":
		f = a / b
	case "%":
		f = math.Mod(a, b)
	case "^":
		f = math.Pow(a, b)
	}
	return value{kind: vFloat, f: f}, nil
}

func (st *evalState) call(n node) (value, error) {
	args := make([]value, len(n.kids))
	for i, k := range n.kids {
		v, err := st.eval(k)
		if err != nil {
			return value{}, err
		}
		args[i] = v
	}
	strs := func(want int) ([]string, error) {
		if len(args) != want {
			return nil, fmt.Errorf("filter: %s takes %d arguments, got %d", n.name, want, len(args))
		}
		out := make([]string, want)
		for i, a := range args {
			if a.kind != vString {
				return nil, fmt.Errorf("filter: %s argument %d is %s, want a string", n.name, i+1, a.typeName())
			}
			out[i] = a.s
		}
		return out, nil
	}
	switch n.name {
	case "str_contains", "str_starts_with", "str_ends_with":
		s, err := strs(2)
		if err != nil {
			return value{}, err
		}
		var b bool
		switch n.name {
		case "str_contains":
			b = strings.Contains(s[0], s[1])
		case "str_starts_with":
			b = strings.HasPrefix(s[0], s[1])
		default:
			b = strings.HasSuffix(s[0], s[1])
		}
		return value{kind: vBool, b: b}, nil
	case "str_len":
		s, err := strs(1)
		if err != nil {
			return value{}, err
		}
		return value{kind: vInt, i: int64(len(s[0]))}, nil
	}
	return value{}, fmt.Errorf("filter: unknown function %s", n.name)
}
