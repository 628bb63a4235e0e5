package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"buzzbox/internal/acp"
)

func FuzzTruncateMiddle(f *testing.F) {
	f.Add("héllo wörld", 5)
	f.Add(strings.Repeat("日本語", 100), 140)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 || !utf8.ValidString(s) {
			return
		}
		got := truncateMiddle(s, n)
		if len(got) > n && len(s) > n {
			t.Fatalf("truncateMiddle(%d) = %d bytes", n, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("truncateMiddle produced invalid UTF-8")
		}
	})
}

func FuzzFrontmatter(f *testing.F) {
	f.Add("---\nname: x\ndescription: \"y\"\n---\nbody")
	f.Add("---\n---")
	f.Add("---\nname: 'it''s'\n  nested: 1\n- item\n---\n")
	f.Fuzz(func(t *testing.T, s string) {
		meta, body, ok := frontmatter(s)
		if ok && meta == nil {
			t.Fatal("ok with nil meta")
		}
		if len(body) > len(s) {
			t.Fatal("body longer than input")
		}
	})
}

func FuzzJoinPrompt(f *testing.F) {
	f.Add("text", "hello", "uri")
	f.Add("resource_link", "", "file:///x")
	f.Add("image", "", "")
	f.Fuzz(func(t *testing.T, typ, text, uri string) {
		out, _, err := joinPrompt([]acp.ContentBlock{{Type: typ, Text: text, URI: uri}})
		if err == nil && typ != "text" && typ != "resource_link" {
			t.Fatalf("accepted block type %q", typ)
		}
		if err == nil && typ == "text" && out != text {
			t.Fatalf("text %q -> %q", text, out)
		}
	})
}
