package rg_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// binaryCorpus writes files whose first NUL lies well past ripgrep's first
// 64 KiB fill, so that how much of them is searched depends on where each
// fill ends: sparse matches (context lines then differ from matches), a
// first line longer than the buffer (which grows it), lines of varied
// length, and, sorted after a file with a long line, a file searched with
// the buffer that line grew.
func binaryCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	var sparse bytes.Buffer
	numbered(&sparse, 20000, 7, "foo line %d\n")
	sparse.WriteString("bin\x00ary\nfoo after\n")
	write(t, filepath.Join(dir, "walk/sparse.bin"), sparse.Bytes())

	var long bytes.Buffer
	long.WriteString(strings.Repeat("x", 100000) + " foo\n")
	numbered(&long, 20000, 5, "foo %d\n")
	long.WriteString("bin\x00ary\nfoo after\n")
	write(t, filepath.Join(dir, "walk/long.bin"), long.Bytes())

	var varied bytes.Buffer
	x := uint32(1)
	for i := 0; i < 30000; i++ {
		x = x*1664525 + 1013904223 // a fixed pseudo-random sequence
		if x>>28 == 0 {
			varied.WriteString("foo")
		}
		varied.WriteString(strings.Repeat("y", int(x>>8)%41) + "\n")
	}
	varied.WriteString("\x00\n")
	write(t, filepath.Join(dir, "walk/varied.bin"), varied.Bytes())

	write(t, filepath.Join(dir, "grown/a.txt"), []byte(strings.Repeat("x", 100000)+" foo\n"+strings.Repeat("foo\n", 10)))
	write(t, filepath.Join(dir, "grown/b.bin"), sparse.Bytes())
	return dir
}

// numbered writes n numbered lines: every every-th in match's format
// and the others "bar <i>".
func numbered(b *bytes.Buffer, n, every int, match string) {
	for i := 0; i < n; i++ {
		if i%every == 0 {
			fmt.Fprintf(b, match, i)
		} else {
			fmt.Fprintf(b, "bar %d\n", i)
		}
	}
}

// TestRGIssueBinaryCutOffWithContext: with context lines ripgrep keeps the
// last lines of each fill, so its next fill is shorter and a late NUL is
// noticed at another point than without context; after a converted file's
// NUL it still prints the "--" that precedes the line that stops it.
func TestRGIssueBinaryCutOffWithContext(t *testing.T) {
	dir := binaryCorpus(t)
	var cases []string
	for _, flags := range []string{
		"-B1", "-B2", "-B5", "-B30", "-A1", "-A3", "-A30", "-C2", "-A2 -B5", "-B1 -n",
		"-v -C3 -n", "-c -B5", "-m 50 -n -B2", "--json -B1", "--json -A3",
		"-B2 -uuu", "-A2 --binary", "-C3 --binary -n", "-B1 --binary", "-c -A30 --binary", "--vimgrep -B3",
	} {
		cases = append(cases, flags+" foo --sort path walk")
	}
	cases = append(cases,
		"foo --sort path grown", "-B2 foo --sort path grown", "-A5 -n foo --sort path grown",
		"foo --sort path walk", "-B2 foo walk/sparse.bin", "-B2 --binary foo walk/long.bin")
	compareExact(t, dir, "", "", cases)
}

// TestRGIssueBinaryCutOffStdin: ripgrep reads stdin through an 8 KiB
// buffer, so its first fill is that long and the later ones end elsewhere.
func TestRGIssueBinaryCutOffStdin(t *testing.T) {
	dir := binaryCorpus(t)
	for _, f := range []string{"walk/sparse.bin", "walk/long.bin", "walk/varied.bin"} {
		t.Run(f, func(t *testing.T) {
			compareExact(t, dir, "", filepath.Join(dir, f), []string{"foo", "-B2 foo", "-A3 -n foo", "-c foo"})
		})
	}
}
