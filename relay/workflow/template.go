package workflow

import (
	"errors"
	"regexp"
	"strings"
	"sync"
)

// placeholder is {{ name.path }} in a step's text.
var placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`) })

// maxRendered bounds one rendered template, so that a step's output
// quoted by later steps cannot grow past an event.
const maxRendered = 32 << 10

// Values are what templates and conditions may read: "trigger.text",
// "steps.gate.status", "workflow.name" …
type Values map[string]string

// Render replaces each placeholder with its value ("" when unset).
func Render(text string, v Values) string {
	out := placeholder().ReplaceAllStringFunc(text, func(m string) string {
		return v[placeholder().FindStringSubmatch(m)[1]]
	})
	if len(out) > maxRendered {
		out = out[:maxRendered]
	}
	return out
}

// Condition is a step's "if": two templated sides and an operator.
type Condition struct {
	left, op, right string
}

var condOps = []string{"==", "!=", " contains "}

// ParseCondition reads `A == B`, `A != B` or `A contains B`; each side is
// template text, quotes around it are dropped.
func ParseCondition(src string) (*Condition, error) {
	for _, op := range condOps {
		if l, r, ok := strings.Cut(src, op); ok {
			return &Condition{unquote(l), strings.TrimSpace(op), unquote(r)}, nil
		}
	}
	return nil, errors.New(`want "A == B", "A != B" or "A contains B" (e.g. "{{steps.gate.status}} == approved")`)
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// Holds evaluates the condition against v.
func (c *Condition) Holds(v Values) bool {
	l, r := Render(c.left, v), Render(c.right, v)
	switch c.op {
	case "==":
		return strings.TrimSpace(l) == strings.TrimSpace(r)
	case "!=":
		return strings.TrimSpace(l) != strings.TrimSpace(r)
	default:
		return strings.Contains(strings.ToLower(l), strings.ToLower(r))
	}
}
