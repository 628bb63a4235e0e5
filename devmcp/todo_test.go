package devmcp_test

import (
	"strings"
	"testing"
)

func todos(items ...any) map[string]any {
	var list []any
	for i := 0; i < len(items); i += 2 {
		list = append(list, map[string]any{"text": items[i], "done": items[i+1]})
	}
	if list == nil {
		list = []any{}
	}
	return map[string]any{"todos": list}
}

func TestTodo(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	if got := okText(t, p.tool("todo", map[string]any{})); got != "(todo list is empty)" {
		t.Errorf("fresh read = %q", got)
	}
	if got := okText(t, p.tool("_Stop", map[string]any{})); got != "" {
		t.Errorf("_Stop on an empty list = %q", got)
	}
	if got := okText(t, p.tool("_PostCompact", nil)); got != "" {
		t.Errorf("_PostCompact on an empty list = %q", got)
	}
	want := "[ ] 1. alpha  ← next\n[x] 2. beta\n"
	if got := okText(t, p.tool("todo", todos("alpha", false, "beta", true))); got != want {
		t.Errorf("write = %q; want %q", got, want)
	}
	if got := okText(t, p.tool("todo", map[string]any{"todos": nil})); got != want {
		t.Errorf("explicit null read = %q; want the list unchanged", got)
	}
	if got := okText(t, p.tool("_Stop", map[string]any{})); got != "You have open todo items. Keep working.\n\n"+want {
		t.Errorf("_Stop with open items = %q", got)
	}
	if got := okText(t, p.tool("_PostCompact", map[string]any{})); got != "# Todo List\n"+want {
		t.Errorf("_PostCompact = %q", got)
	}
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{todos(func() []any {
			var a []any
			for i := range 51 {
				a = append(a, strings.Repeat("i", i+1), false)
			}
			return a
		}()...), "Error: too many items (max 50)"},
		{todos("  ", false), "Error: item 1: text is empty"},
		{todos("ok", false, long+"y", false), "Error: item 2: text exceeds 200 characters"},
		{todos("a\nb", false), "Error: item 1: text contains invalid characters"},
		{todos("a\tb", false), "invalid characters"},
		{todos("a\u2028b", false), "invalid characters"},
		{todos("a\u202eb", false), "invalid characters"},
		{todos("a\u200bb", false), "invalid characters"},
		{todos("\ufeffab", false), "invalid characters"},
		{todos("same", false, " same ", true), "Error: item 2: duplicate text (matches item 1)"},
		{map[string]any{"todos": []any{map[string]any{"text": "a", "complete": true}}}, "unknown field"},
		{map[string]any{"todos": []any{}, "extra": 1}, "unknown field"},
	} {
		if got := errText(t, p.tool("todo", tc.args)); !strings.Contains(got, tc.want) {
			t.Errorf("todo(%.80v) = %q; want %q", tc.args, got, tc.want)
		}
	}
	if got := okText(t, p.tool("todo", map[string]any{})); got != want {
		t.Errorf("list after refused writes = %q; want unchanged", got)
	}
	if got := okText(t, p.tool("todo", todos(long, false))); !strings.Contains(got, long) {
		t.Errorf("200 characters refused: %q", got)
	}
}

func TestTodoRemovalWarnings(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	okText(t, p.tool("todo", todos("  task  ", false)))
	if got := okText(t, p.tool("todo", todos("task", false))); got != "[ ] 1. task  ← next\n" {
		t.Errorf("trimmed store then same text = %q; want no warning", got)
	}
	okText(t, p.tool("todo", todos("one", false, "two", false, "three", false)))
	got := okText(t, p.tool("todo", todos("one", false)))
	for _, want := range []string{"⚠️", "2 open items", `"two"`, `"three"`} {
		if !strings.Contains(got, want) {
			t.Errorf("silent removal warning %q lacks %q", got, want)
		}
	}
	okText(t, p.tool("todo", todos("one", true, "four", false)))
	if got := okText(t, p.tool("todo", todos("four", false))); strings.Contains(got, "⚠️") {
		t.Errorf("removing a done item warned: %q", got)
	}
	if got := okText(t, p.tool("todo", todos("four renamed", false))); !strings.Contains(got, "⚠️ 1 open item was removed") || !strings.Contains(got, `"four"`) {
		t.Errorf("renaming an open item: %q; want a warning", got)
	}
	okText(t, p.tool("todo", todos("four renamed", true)))
	if got := okText(t, p.tool("todo", todos("five", false))); strings.Contains(got, "⚠️") {
		t.Errorf("removing after marking done warned: %q", got)
	}
}
