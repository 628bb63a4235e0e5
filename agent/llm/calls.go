package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// emptyObject is the arguments of a call that sent none.
var emptyObject = json.RawMessage("{}")

// parseArgs checks that raw (a JSON text) is an object; null or empty
// becomes {}.
func parseArgs(raw []byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return emptyObject, nil
	}
	if !json.Valid(raw) {
		return nil, errorf("tool_call arguments are not valid JSON")
	}
	if raw[0] != '{' {
		return nil, errorf("tool_call arguments must be a JSON object")
	}
	return json.RawMessage(bytes.Clone(raw)), nil
}

// fixCalls checks ids and names and makes duplicate ids unique by suffixing
// -2, -3, … on later duplicates (some gateways reuse the function name as id).
func fixCalls(calls []ToolCall) ([]ToolCall, error) {
	seen := make(map[string]int, len(calls))
	for i := range calls {
		c := &calls[i]
		if c.ID == "" || c.Name == "" {
			return nil, errorf("tool_call missing id or name")
		}
		if len(c.Args) == 0 {
			c.Args = emptyObject
		}
		n := seen[c.ID]
		seen[c.ID] = n + 1
		if n > 0 {
			id := c.ID + "-" + strconv.Itoa(n+1)
			for seen[id] > 0 {
				n++
				id = c.ID + "-" + strconv.Itoa(n+1)
			}
			seen[id] = 1
			c.ID = id
		}
	}
	return calls, nil
}

// resultText joins a tool result's text parts with "\n"; images become a
// sentence saying the image follows in the next user message.
func resultText(r *ToolResult) string {
	var b strings.Builder
	for i, p := range r.Parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Image != nil {
			fmt.Fprintf(&b, "[image: %s, %d base64 bytes; it follows in the next user message]", p.Image.MIME, len(p.Image.Data))
			continue
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

func u64(v *json.Number) *uint64 {
	if v == nil {
		return nil
	}
	n, err := strconv.ParseUint(v.String(), 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func addU64(a, b *uint64) *uint64 {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	s := *a + *b
	return &s
}
