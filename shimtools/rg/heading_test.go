package rg_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRGIssueHeadingOnce: a file whose output outgrows the printer's
// buffer and is streamed still gets its --heading path line once.
func TestRGIssueHeadingOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heading")
	var big bytes.Buffer
	for i := 0; big.Len() < 10<<20; i++ { // past the 8 MiB streaming threshold
		fmt.Fprintf(&big, "foo line %d %s\n", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	}
	write(t, filepath.Join(dir, "big.txt"), big.Bytes())
	write(t, filepath.Join(dir, "small.txt"), []byte("foo\n"))
	compareExact(t, dir, "", "", []string{
		"--heading -n foo --sort path",
		"--heading -C1 foo --sort path",
		"--heading -0 foo --sort path",
	})
}

// TestRGIssueIgnoreFileWarnings: an ignore file line that is not a glob is
// reported with its file and line, in ripgrep's words, and skipped; the
// exit status stays what the search makes it. A bad -g glob is an error.
func TestRGIssueIgnoreFileWarnings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "warn")
	write(t, filepath.Join(dir, ".ignore"), []byte("x\n[\nfoo{\n!bar{\n  \\ y{ \n"))
	write(t, filepath.Join(dir, "sub/.rgignore"), []byte("[z-a]\n"))
	write(t, filepath.Join(dir, "sub/a.txt"), []byte("foo\n"))
	write(t, filepath.Join(dir, "x"), []byte("foo\n"))
	write(t, filepath.Join(dir, "b.txt"), []byte("foo\n"))
	compareExact(t, dir, "", "", []string{
		"foo --sort path",
		"foo -j1",
		"zzzz --sort path",
		"--no-ignore-messages foo --sort path",
		"--no-messages foo --sort path",
		"--no-ignore foo --sort path",
		"-g [ foo",
		"-g {a,{b}} foo",
		"-g [z-a] foo",
		"-g a{b foo",
		"-g a} foo --sort path",
		"-g !x\\ foo",
	})
}

// TestRGIssueIglobClasses: --iglob folds a class by the path character's
// case, not by lowering the class: [0-a] takes B, and [Z-a] is a valid
// range whichever case is asked.
func TestRGIssueIglobClasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "iglob")
	for _, name := range []string{"B.txt", "b.txt", "0.txt", "Z.txt", "z.txt", "_.txt", "a.TXT", "Ab.md"} {
		write(t, filepath.Join(dir, name), []byte("foo\n"))
	}
	compareExact(t, dir, "", "", []string{
		"--iglob [0-a].txt --files --sort path",
		"--iglob [Z-a].txt --files --sort path",
		"--iglob [!a-z].txt --files --sort path",
		"--iglob {a,B}* --files --sort path",
		"-g [Z-a].txt --files --sort path",
	})
}

// TestRGIssueInvalidUTF8Pattern: a pattern that is not UTF-8, from the
// command line or a -f file, is refused with ripgrep's message naming the
// first bad byte.
func TestRGIssueInvalidUTF8Pattern(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "badpat")
	write(t, filepath.Join(dir, "e.txt"), []byte("\xd8\n0\n"))
	write(t, filepath.Join(dir, "pats.txt"), []byte("ok\n\xffz\n"))
	compareArgv(t, dir, [][]string{
		{"0|\xce", "e.txt"},
		{"a\tb\xce", "e.txt"},
		{"é\xce\n", "e.txt"},
		{"a\\d\x01\x7f\xff", "e.txt"},
		{"-F", "-e", "foo", "-e", "\xff", "e.txt"},
		{"-f", "pats.txt", "e.txt"},
		{"(?-u)\\xD8", "e.txt"},
	})
}
