package devmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"buzzbox/internal/mcp"
)

// todoItem is one entry of the todo list.
type todoItem struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

// todoList is the session's todo list, kept in memory only. Validation,
// replacement and rendering of a write happen under one lock hold.
type todoList struct {
	mu    sync.Mutex
	items []todoItem
}

type todoArgs struct {
	// Todos is nil to read the list; otherwise the complete new list.
	Todos *[]todoItemArgs `json:"todos"`
}

type todoItemArgs struct {
	Text *string `json:"text"`
	Done bool    `json:"done"`
}

// todo is the todo tool: read the list, or replace it with a new one.
func (s *Server) todo(_ context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a todoArgs
	if err := decodeArgs(raw, &a, true); err != nil {
		return nil, err
	}
	if a.Todos == nil {
		return textResult(s.todos.render()), nil
	}
	items := make([]todoItem, len(*a.Todos))
	for i, it := range *a.Todos {
		if it.Text == nil {
			return nil, toolErrorf("invalid arguments: item %d: missing required field \"text\"", i+1)
		}
		items[i] = todoItem{Text: *it.Text, Done: it.Done}
	}
	text, err := s.todos.replace(items)
	if err != nil {
		return nil, err
	}
	return textResult(text), nil
}

// stopHook is the hidden _Stop tool: an objection while open items remain.
func (s *Server) stopHook(_ context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	if err := decodeArgs(raw, &struct{}{}, true); err != nil {
		return nil, err
	}
	s.todos.mu.Lock()
	defer s.todos.mu.Unlock()
	for _, it := range s.todos.items {
		if !it.Done {
			return textResult("You have open todo items. Keep working.\n\n" + s.todos.renderLocked()), nil
		}
	}
	return textResult(""), nil
}

// postCompactHook is the hidden _PostCompact tool: the list, to be put back
// into a fresh context after a handoff.
func (s *Server) postCompactHook(_ context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	if err := decodeArgs(raw, &struct{}{}, true); err != nil {
		return nil, err
	}
	s.todos.mu.Lock()
	defer s.todos.mu.Unlock()
	if len(s.todos.items) == 0 {
		return textResult(""), nil
	}
	return textResult("# Todo List\n" + s.todos.renderLocked()), nil
}

// replace validates items and, if they pass, makes them the list. The answer
// is the rendered list, plus a warning naming open items that vanished.
func (l *todoList) replace(items []todoItem) (string, error) {
	if len(items) > maxTodoItems {
		return "", toolErrorf("Error: too many items (max %d)", maxTodoItems)
	}
	seen := make(map[string]int, len(items))
	for i := range items {
		raw := items[i].Text
		t := strings.TrimSpace(raw)
		switch {
		case t == "":
			return "", toolErrorf("Error: item %d: text is empty", i+1)
		case utf8.RuneCountInString(t) > maxTodoTextChars:
			return "", toolErrorf("Error: item %d: text exceeds %d characters", i+1, maxTodoTextChars)
		case strings.ContainsFunc(raw, invalidTodoRune):
			return "", toolErrorf("Error: item %d: text contains invalid characters", i+1)
		}
		if j, dup := seen[t]; dup {
			return "", toolErrorf("Error: item %d: duplicate text (matches item %d)", i+1, j)
		}
		seen[t] = i + 1
		items[i].Text = t
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var removed []string
	for _, old := range l.items {
		if _, kept := seen[old.Text]; !old.Done && !kept {
			removed = append(removed, old.Text)
		}
	}
	l.items = items
	out := l.renderLocked()
	if len(removed) > 0 {
		var b strings.Builder
		b.WriteString(out + "\n")
		if len(removed) == 1 {
			b.WriteString("⚠️ 1 open item was removed from the list:\n")
		} else {
			fmt.Fprintf(&b, "⚠️ %d open items were removed from the list:\n", len(removed))
		}
		for _, t := range removed {
			fmt.Fprintf(&b, "  - %q\n", t)
		}
		b.WriteString("If that was a mistake, add them back; to finish an item, mark it done before removing it.\n")
		out = b.String()
	}
	return out, nil
}

func (l *todoList) render() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renderLocked()
}

// renderLocked formats the list, one "[ ] k. text" or "[x] k. text" line per
// item, marking the first open item as next. l.mu must be held.
func (l *todoList) renderLocked() string {
	if len(l.items) == 0 {
		return "(todo list is empty)"
	}
	var b strings.Builder
	next := true
	for i, it := range l.items {
		mark := "[ ]"
		if it.Done {
			mark = "[x]"
		}
		fmt.Fprintf(&b, "%s %d. %s", mark, i+1, it.Text)
		if !it.Done && next {
			b.WriteString("  ← next")
			next = false
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// invalidTodoRune reports characters that could forge or hide lines in the
// rendered list: controls, every Unicode space but the ASCII one, zero-width
// and direction marks, bidi embeddings and overrides, invisible operators
// and the byte-order mark.
func invalidTodoRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x85, r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200a,
		r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2060 && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
