package devmcp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", []string{""}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\r", []string{"a\r"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
		{"a\rb\n", []string{"a\rb"}},
	} {
		if got := splitLines(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitLines(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestSimilarity(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"abc", "abc", 1},
		{"", "abc", 0},
		{"abcd", "abce", 0.75},
		{"fmt.Println(\"hello, world\")", "fmt.Println(\"hello world\")", 26.0 / 27},
	} {
		if got := similarity(tc.a, tc.b); got != tc.want {
			t.Errorf("similarity(%q, %q) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearestLineHintTies(t *testing.T) {
	// Equal similarity: the later line wins.
	got := nearestLineHint("abcx\nabcy\n", "abcz")
	if !strings.Contains(got, "around line 2") {
		t.Errorf("tie hint = %q; want line 2", got)
	}
	if got := nearestLineHint("abcx\n", "zzzz"); got != "" {
		t.Errorf("dissimilar hint = %q; want none", got)
	}
	if got := nearestLineHint("abcx\n", "  \nabcx"); got != "" {
		t.Errorf("blank first line hint = %q; want none", got)
	}
}

func TestFindAll(t *testing.T) {
	if got := findAll("aaaa", "aa", -1); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("findAll non-overlapping = %v", got)
	}
	if got := findAll("foo bar foo baz foo", "foo", 2); !slices.Equal(got, []int{0, 8}) {
		t.Errorf("findAll capped = %v", got)
	}
}

func TestUnifiedDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, oldStr, newStr string
		all                       bool
		want                      string
	}{
		{"middle", "a\nb\nc\nd\ne\nf\ng\nh\n", "d\n", "D\n", false,
			"@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n"},
		{"first line, one-line file", "x", "x", "y", false,
			"@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n"},
		{"delete a line", "a\nb\nc\n", "b\n", "", false,
			"@@ -1,3 +1,2 @@\n a\n-b\n c\n"},
		{"insert lines", "a\nb\n", "a\n", "a\nx\ny\n", false,
			"@@ -1,2 +1,4 @@\n a\n+x\n+y\n b\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n", "one\n", true, ""},
		{"far apart", "k\n1\n2\n3\n4\n5\n6\n7\n8\n9\nk\n", "k", "K", true,
			"@@ -1,4 +1,4 @@\n-k\n+K\n 1\n 2\n 3\n@@ -8,4 +8,4 @@\n 7\n 8\n 9\n-k\n+K\n"},
		{"near merge", "k\n1\n2\n3\n4\n5\n6\nk\n", "k", "K", true,
			"@@ -1,8 +1,8 @@\n-k\n+K\n 1\n 2\n 3\n 4\n 5\n 6\n-k\n+K\n"},
	} {
		limit := 2
		if tc.all {
			limit = -1
		}
		m := findAll(tc.old, tc.oldStr, limit)
		updated := replaceAt(tc.old, m, len(tc.oldStr), tc.newStr)
		got := unifiedDiff("/f", tc.old, updated, editRegions(tc.old, m, len(tc.oldStr), len(tc.newStr)))
		if !strings.HasPrefix(got, "--- a/f\n+++ b/f\n") {
			t.Errorf("%s: header %q", tc.name, got)
		}
		got = strings.TrimPrefix(got, "--- a/f\n+++ b/f\n")
		if tc.want != "" && got != tc.want {
			t.Errorf("%s: diff =\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		checkDiffApplies(t, tc.old, updated, got)
	}
}

// checkDiffApplies applies a unified diff body (hunks only) to old and
// compares with want: the diff must describe the edit exactly.
func checkDiffApplies(t *testing.T, old, want, diff string) {
	t.Helper()
	oldLines := splitAfterLines(old)
	var out []string
	pos := 0
	lines := strings.SplitAfter(diff, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		noNL := i+1 < len(lines) && lines[i+1] == "\\ No newline at end of file\n"
		body := l[1:]
		if noNL {
			body = strings.TrimSuffix(body, "\n")
			i++
		}
		switch l[0] {
		case '@':
			var a, b, c, d int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &a, &b, &c, &d); err != nil {
				if _, err := fmt.Sscanf(l, "@@ -%d +%d", &a, &c); err != nil {
					fmt.Sscanf(l, "@@ -%d,%d +%d", &a, &b, &c)
				}
			}
			start := a - 1
			if b == 0 && strings.Contains(l, fmt.Sprintf("-%d,0", a)) {
				start = a
			}
			out = append(out, oldLines[pos:start]...)
			pos = start
		case ' ':
			out = append(out, oldLines[pos])
			pos++
		case '-':
			if oldLines[pos] != body {
				t.Fatalf("diff deletes %q but the old line is %q", body, oldLines[pos])
			}
			pos++
		case '+':
			out = append(out, body)
		case '\n', '[':
		default:
			t.Fatalf("unexpected diff line %q", l)
		}
	}
	out = append(out, oldLines[pos:]...)
	if got := strings.Join(out, ""); got != want {
		t.Errorf("applying the diff gives %q; want %q", got, want)
	}
}

func TestCreateFileDiff(t *testing.T) {
	got := unifiedDiff("/n", "", "a\nb", []region{{0, 0, 0, 3}})
	want := "--- a/n\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("create diff = %q; want %q", got, want)
	}
}

func TestTailRing(t *testing.T) {
	var r tailRing
	r.write([]byte("abc"))
	if string(r.bytes()) != "abc" {
		t.Fatalf("short ring = %q", r.bytes())
	}
	big := strings.Repeat("0123456789", tailBytes/10+7)
	for i := 0; i < len(big); i += 333 {
		r.write([]byte(big[i:min(len(big), i+333)]))
	}
	want := ("abc" + big)[len("abc"+big)-tailBytes:]
	if string(r.bytes()) != want {
		t.Errorf("ring keeps the wrong tail")
	}
}

func TestCaptureUTF8Tail(t *testing.T) {
	s := &session{dir: t.TempDir()}
	c := newCapture("stdout", s.artifactsDir)
	c.add([]byte(strings.Repeat("é", 40000)))
	var notes []string
	txt, art := c.finish(s, 1, &notes)
	tail := txt[strings.Index(txt, "]\n")+2:]
	if !strings.HasPrefix(tail, "é") || !utf8.ValidString(tail) {
		t.Errorf("tail starts %q", tail[:4])
	}
	if b, err := os.ReadFile(art); err != nil || len(b) != 80000 || filepath.Base(art) != "000001.stdout.txt" {
		t.Errorf("artifact %s: %d bytes, %v", art, len(b), err)
	}
}

func FuzzRenderWindow(f *testing.F) {
	f.Add("line1\nline2\nline3\n", int64(0), int64(2))
	f.Add("a\r\nb\rc", int64(1), int64(5))
	f.Add("", int64(3), int64(0))
	f.Add("\n\n\n", int64(2), int64(1))
	f.Fuzz(func(t *testing.T, content string, offset, limit int64) {
		if offset < 0 || limit < 0 {
			return
		}
		out := renderWindow("f", content, offset, limit)
		lines := splitLines(content)
		total := int64(len(lines))
		switch {
		case total == 0:
			if out != "f is empty (0 lines)" {
				t.Fatalf("empty: %q", out)
			}
			return
		case offset >= total || limit == 0:
			if out != fmt.Sprintf("f (no lines in range, file has %d lines)", total) {
				t.Fatalf("no lines: %q", out)
			}
			return
		}
		n := min(limit, total-offset)
		header := fmt.Sprintf("f (lines %d-%d of %d)\n", offset+1, offset+n, total)
		if !strings.HasPrefix(out, header) {
			t.Fatalf("header of %q", out)
		}
		body := out[len(header):]
		for i := offset; i < offset+n; i++ {
			want := fmt.Sprintf("%d:%s\n", i+1, lines[i])
			if !strings.HasPrefix(body, want) {
				t.Fatalf("line %d: %q does not start with %q", i+1, body, want)
			}
			body = body[len(want):]
		}
		if offset+n < total {
			if body != fmt.Sprintf("[showing lines %d-%d of %d; use offset=%d to continue]\n", offset+1, offset+n, total, offset+n) {
				t.Fatalf("footer %q", body)
			}
		} else if body != "" {
			t.Fatalf("trailing %q", body)
		}
	})
}

// FuzzStrReplace checks the matching and the diff: replacing every match
// of old in content gives what strings.ReplaceAll gives, and the diff,
// applied to content, gives the new text.
func FuzzStrReplace(f *testing.F) {
	f.Add("foo bar foo baz foo", "foo", "qux")
	f.Add("a\nb\nc\n", "b\n", "")
	f.Add("x", "x", "y\nz\n")
	f.Add("aaaa", "aa", "a")
	f.Add("é\r\né", "\r\n", "\n")
	f.Fuzz(func(t *testing.T, content, old, repl string) {
		if old == "" || len(content) > 4096 {
			return
		}
		m := findAll(content, old, -1)
		got := replaceAt(content, m, len(old), repl)
		if want := strings.ReplaceAll(content, old, repl); got != want {
			t.Fatalf("replaceAt = %q; want %q", got, want)
		}
		if first := findAll(content, old, 2); len(first) > 2 || (len(m) > 0 && first[0] != m[0]) {
			t.Fatalf("capped count %v vs %v", first, m)
		}
		diff := unifiedDiff("/f", content, got, editRegions(content, m, len(old), len(repl)))
		body := strings.TrimPrefix(diff, "--- a/f\n+++ b/f\n")
		if strings.Contains(body, "[diff truncated]") {
			return
		}
		checkDiffApplies(t, content, got, body)
		if len(m) > 0 && content == got && body != "" {
			t.Fatalf("identical replacement gave hunks %q", body)
		}
		_ = nearestLineHint(content, old) // must not panic
	})
}
