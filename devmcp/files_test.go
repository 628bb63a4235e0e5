package devmcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line%d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	writeFile(t, filepath.Join(dir, "five.txt"), numbered(5))
	writeFile(t, filepath.Join(dir, "ten.txt"), numbered(10))
	writeFile(t, filepath.Join(dir, "many.txt"), numbered(2500))
	writeFile(t, filepath.Join(dir, "empty.txt"), "")
	writeFile(t, filepath.Join(dir, "crlf.txt"), "a\r\nb\r\nc")
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "far.txt"), "far away\n")

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"whole file", map[string]any{"path": "five.txt"},
			"five.txt (lines 1-5 of 5)\n1:line1\n2:line2\n3:line3\n4:line4\n5:line5\n"},
		{"window", map[string]any{"path": "ten.txt", "offset": 3, "limit": 2},
			"ten.txt (lines 4-5 of 10)\n4:line4\n5:line5\n[showing lines 4-5 of 10; use offset=5 to continue]\n"},
		{"empty", map[string]any{"path": "empty.txt"}, "empty.txt is empty (0 lines)"},
		{"offset past end", map[string]any{"path": "ten.txt", "offset": 10}, "ten.txt (no lines in range, file has 10 lines)"},
		{"limit zero", map[string]any{"path": "ten.txt", "limit": 0}, "ten.txt (no lines in range, file has 10 lines)"},
		{"crlf and no final newline", map[string]any{"path": "crlf.txt"}, "crlf.txt (lines 1-3 of 3)\n1:a\n2:b\n3:c\n"},
		{"absolute outside", map[string]any{"path": filepath.Join(outside, "far.txt")},
			filepath.Join(outside, "far.txt") + " (lines 1-1 of 1)\n1:far away\n"},
		{"relative escaping workdir", map[string]any{"path": "../" + filepath.Base(outside) + "/far.txt"},
			"../" + filepath.Base(outside) + "/far.txt (lines 1-1 of 1)\n1:far away\n"},
		{"workdir", map[string]any{"path": "far.txt", "workdir": outside}, "far.txt (lines 1-1 of 1)\n1:far away\n"},
	} {
		if got := okText(t, p.tool("read_file", tc.args)); got != tc.want {
			t.Errorf("%s: read_file(%v) =\n%q\nwant\n%q", tc.name, tc.args, got, tc.want)
		}
	}
	got := okText(t, p.tool("read_file", map[string]any{"path": "many.txt"}))
	if n := strings.Count(got, "\n"); n != 2002 || !strings.HasSuffix(got, "[showing lines 1-2000 of 2500; use offset=2000 to continue]\n") {
		t.Errorf("default window of 2500 lines: %d lines, tail %q", n, got[max(0, len(got)-80):])
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, make([]byte, 10<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "latin1.txt"), "caf\xe9\n")
	writeFile(t, filepath.Join(dir, "bin.dat"), "ab\x00cd")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"big.txt", "too large"},
		{"sub", "not a regular file"},
		{"latin1.txt", "not valid UTF-8"},
		{"bin.dat", "binary file"},
		{"missing.txt", "path not accessible"},
	} {
		got := errText(t, p.tool("read_file", map[string]any{"path": tc.path}))
		if !strings.Contains(got, tc.want) {
			t.Errorf("read_file(%s) error = %q; want it to contain %q", tc.path, got, tc.want)
		}
	}
}

// TestPermissionDenied runs the server as an unprivileged user when the
// tests run as root, since root reads any file.
func TestPermissionDenied(t *testing.T) {
	p, dir := startUnprivileged(t)
	secret := writeFile(t, filepath.Join(dir, "secret.txt"), "x\n")
	if err := os.Chmod(secret, 0o000); err != nil {
		t.Fatal(err)
	}
	got := errText(t, p.tool("read_file", map[string]any{"path": secret}))
	if !strings.Contains(got, "permission denied") {
		t.Errorf("read_file on a mode-000 file = %q; want permission denied", got)
	}
	got = errText(t, p.tool("str_replace", map[string]any{"path": secret, "old_str": "x", "new_str": "y"}))
	if !strings.Contains(got, "permission denied") {
		t.Errorf("str_replace on a mode-000 file = %q; want permission denied", got)
	}
}

func TestStrReplace(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	f := writeFile(t, filepath.Join(dir, "a.txt"), numbered(10))
	got := okText(t, p.tool("str_replace", map[string]any{"path": "a.txt", "old_str": "line5\n", "new_str": "five\n"}))
	want := "Replaced 1 occurrence in " + f + ".\n\n" +
		"--- a" + f + "\n+++ b" + f + "\n" +
		"@@ -2,7 +2,7 @@\n line2\n line3\n line4\n-line5\n+five\n line6\n line7\n line8\n"
	if got != want {
		t.Errorf("str_replace =\n%s\nwant\n%s", got, want)
	}
	if b, _ := os.ReadFile(f); !strings.Contains(string(b), "line4\nfive\nline6\n") {
		t.Errorf("file after edit = %q", b)
	}

	writeFile(t, filepath.Join(dir, "multi.txt"), "foo bar foo baz foo")
	got = errText(t, p.tool("str_replace", map[string]any{"path": "multi.txt", "old_str": "foo", "new_str": "qux"}))
	if !strings.Contains(got, "matched multiple locations") {
		t.Errorf("two matches: %q; want matched multiple locations", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "multi.txt")); string(b) != "foo bar foo baz foo" {
		t.Errorf("file changed after a refused edit: %q", b)
	}
	got = okText(t, p.tool("str_replace", map[string]any{"path": "multi.txt", "old_str": "foo", "new_str": "qux", "replace_all": true}))
	if !strings.HasPrefix(got, "Replaced 3 occurrence(s) in ") || !strings.Contains(got, "\\ No newline at end of file") {
		t.Errorf("replace_all = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "multi.txt")); string(b) != "qux bar qux baz qux" {
		t.Errorf("after replace_all = %q", b)
	}
	got = errText(t, p.tool("str_replace", map[string]any{"path": "multi.txt", "old_str": "zzz", "new_str": "y", "replace_all": true}))
	if !strings.Contains(got, "old_str not found") {
		t.Errorf("replace_all with no match = %q", got)
	}
}

func TestStrReplaceNotFoundHint(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	src := "package main\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"
	f := writeFile(t, filepath.Join(dir, "main.go"), src)
	got := errText(t, p.tool("str_replace", map[string]any{"path": "main.go", "old_str": "fmt.Println(\"hello world\")\nmore", "new_str": "x"}))
	for _, want := range []string{
		"old_str not found in " + f + ".",
		"old_str (truncated): \"fmt.Println(\\\"hello world\\\")\\nmore\"",
		"Hint: nearest match around line 4 (similarity 0.96):",
		"  found:    \"fmt.Println(\\\"hello, world\\\")\"",
		"  expected: \"fmt.Println(\\\"hello world\\\")\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("not-found error lacks %q:\n%s", want, got)
		}
	}
	long := strings.Repeat("y", 100)
	got = errText(t, p.tool("str_replace", map[string]any{"path": "main.go", "old_str": long, "new_str": "x"}))
	if !strings.Contains(got, `"`+strings.Repeat("y", 80)+`…"`) || strings.Contains(got, "Hint:") {
		t.Errorf("long old_str: %q; want 80 characters quoted with an ellipsis and no hint", got)
	}
	// A similar line past the first 200 lines gets no hint.
	far := writeFile(t, filepath.Join(dir, "far.txt"), strings.Repeat("filler\n", 200)+"the quick brown fox\n")
	got = errText(t, p.tool("str_replace", map[string]any{"path": far, "old_str": "the quick brown fax", "new_str": "x"}))
	if strings.Contains(got, "Hint:") {
		t.Errorf("hint for a line beyond 200: %q", got)
	}
}

func TestStrReplaceLimitsAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	f := writeFile(t, filepath.Join(dir, "a.txt"), "abc\n")
	got := errText(t, p.tool("str_replace", map[string]any{"path": f, "old_str": "", "new_str": "x"}))
	if !strings.Contains(got, "old_str must not be empty") {
		t.Errorf("empty old_str on an existing file = %q", got)
	}
	big := strings.Repeat("a", 1<<20+1)
	for _, args := range []map[string]any{
		{"path": f, "old_str": big, "new_str": "x"},
		{"path": f, "old_str": "abc", "new_str": big},
	} {
		if got := errText(t, p.tool("str_replace", args)); !strings.Contains(got, "1048576 byte limit") {
			t.Errorf("1 MiB + 1 argument: %q; want the byte limit named", got[:min(len(got), 200)])
		}
	}
	nine := writeFile(t, filepath.Join(dir, "nine.txt"), strings.Repeat("ab\n", 3<<20)) // 9 MiB
	got = errText(t, p.tool("str_replace", map[string]any{"path": nine, "old_str": "ab", "new_str": "abcd", "replace_all": true}))
	if !strings.Contains(got, "result would exceed 10485760 byte limit") {
		t.Errorf("growing past 10 MiB: %q", got)
	}
	if b, _ := os.ReadFile(f); string(b) != "abc\n" {
		t.Errorf("file changed by refused edits: %q", b)
	}
	got = errText(t, p.tool("str_replace", map[string]any{"path": "nope.txt", "old_str": "a", "new_str": "b"}))
	if !strings.Contains(got, "path not accessible") {
		t.Errorf("missing file = %q; want path not accessible", got)
	}
	if got := errText(t, p.tool("str_replace", map[string]any{"path": dir, "old_str": "a", "new_str": "b"})); !strings.Contains(got, "not a regular file") {
		t.Errorf("directory = %q", got)
	}
}

func TestStrReplaceKeepsModeAndSymlink(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	script := writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho old\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	okText(t, p.tool("str_replace", map[string]any{"path": "run.sh", "old_str": "old", "new_str": "new"}))
	st, err := os.Stat(script)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("mode after edit = %v, %v; want 0755", st.Mode(), err)
	}
	target := writeFile(t, filepath.Join(dir, "target.txt"), "one\n")
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	got := okText(t, p.tool("str_replace", map[string]any{"path": "link.txt", "old_str": "one", "new_str": "two"}))
	if !strings.Contains(got, "in "+target+".") {
		t.Errorf("edit through a symlink names %q; want the target %s", got, target)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "two\n" {
		t.Errorf("target after edit = %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestStrReplaceCreates(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	got := okText(t, p.tool("str_replace", map[string]any{"path": "new.txt", "old_str": "", "new_str": "a\nb\n"}))
	f := filepath.Join(dir, "new.txt")
	want := "Created " + f + " (4 bytes).\n\n--- a" + f + "\n+++ b" + f + "\n@@ -0,0 +1,2 @@\n+a\n+b\n"
	if got != want {
		t.Errorf("create =\n%q\nwant\n%q", got, want)
	}
	if b, _ := os.ReadFile(f); string(b) != "a\nb\n" {
		t.Errorf("created file = %q", b)
	}
	got = errText(t, p.tool("str_replace", map[string]any{"path": "no/such/dir/x.txt", "old_str": "", "new_str": "x"}))
	if !strings.Contains(got, "parent directory not accessible") {
		t.Errorf("create with missing parents = %q", got)
	}
	got = errText(t, p.tool("str_replace", map[string]any{"path": "new.txt", "old_str": "", "new_str": "again"}))
	if !strings.Contains(got, "old_str must not be empty") {
		t.Errorf("create over an existing file = %q", got)
	}
}

func TestStrReplaceDiffTruncated(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	p.initialize("2025-11-25")
	var b strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&b, "value %d = old\n", i)
		b.WriteString("spacer\nspacer\nspacer\nspacer\nspacer\nspacer\nspacer\n")
	}
	writeFile(t, filepath.Join(dir, "big.txt"), b.String())
	got := okText(t, p.tool("str_replace", map[string]any{"path": "big.txt", "old_str": "= old", "new_str": "= new", "replace_all": true}))
	if !strings.HasSuffix(got, "\n[diff truncated]\n") || len(got) > 64<<10+200 {
		t.Errorf("big diff: %d bytes ending %q; want at most 64 KiB ending [diff truncated]", len(got), got[len(got)-40:])
	}
}
