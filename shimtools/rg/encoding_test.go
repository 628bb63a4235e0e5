package rg_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRGIssueBOM: ripgrep drops a UTF-8 byte order mark and converts
// UTF-16 with one to UTF-8 (unpaired surrogates and an odd last byte
// become U+FFFD), whether it walks to the file or is given it; offsets
// and byte counts are those of the converted text.
func TestRGIssueBOM(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bom")
	write(t, filepath.Join(dir, "utf8.txt"), []byte("\xef\xbb\xbffoo bom\nbar\n"))
	write(t, filepath.Join(dir, "le.txt"), []byte("\xff\xfef\x00o\x00o\x00\x00\xd8\n\x00\x00\xdc\x00\xd8\x00\xdcx\x00\n\x00f\x00o\x00o"))
	write(t, filepath.Join(dir, "be.txt"), []byte("\xfe\xff\x00f\x00o\x00o\x00\n\x00b\x00a\x00r\x00\n"))
	write(t, filepath.Join(dir, "nul.txt"), []byte("\xff\xfef\x00o\x00o\x00\n\x00\x00\x00\n\x00"))
	write(t, filepath.Join(dir, "short.txt"), []byte("\xef\xbb"))
	compareExact(t, dir, "", "", []string{
		"foo --sort path", "-b bar --sort path", "-b -o o+ --sort path", "--json foo --sort path",
		"--json bar utf8.txt", "-n -a ^ le.txt", "-c ^ --sort path", "foo utf8.txt", "-j1 -b bar utf8.txt be.txt",
		"foo nul.txt", "-c foo --sort path", "--files --sort path", "-x foo be.txt",
	})
}

// TestRGIssueBOMPeek: without a byte order mark, the first read of
// ripgrep's decoder hands over only the three bytes it peeked at, so a
// walked file whose first line is shorter ends its first fill there, and
// a NUL just past 64 KiB falls into the first fill (nothing printed).
func TestRGIssueBOMPeek(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "peek")
	for _, pre := range []string{"a\n", "abcdef\n", "\n\n"} {
		for _, off := range []int{65536, 65537, 65538} {
			var b bytes.Buffer
			b.WriteString(pre)
			for i := 0; i < 7500; i++ {
				b.WriteString("foo line\n")
			}
			data := append(append(append([]byte(nil), b.Bytes()[:off]...), 0), b.Bytes()[off:]...)
			write(t, filepath.Join(dir, fmt.Sprintf("p%d_%d.bin", len(pre), off)), append(data, "foo end\n"...))
		}
	}
	compareExact(t, dir, "", "", []string{"-c foo --sort path", "--files-without-match foo --sort path", "-l foo --sort path"})
	for _, f := range []string{"p2_65536.bin", "p7_65537.bin"} {
		compareExact(t, dir, "", "", []string{"-c foo " + f, "-c foo -g " + f + " --sort path"})
		compareExact(t, dir, "", filepath.Join(dir, f), []string{"-c foo"})
	}
}

// TestRGIssueMappedBinaryFirstFill: a named file is searched whole, and
// ripgrep looks for a NUL in its first 64 KiB before printing any line,
// so a match before a NUL on a later line is not printed either.
func TestRGIssueMappedBinaryFirstFill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mid")
	write(t, filepath.Join(dir, "mid.bin"), []byte("foo one\nbar\nx\x00y foo\nfoo tail\n"))
	write(t, filepath.Join(dir, "a.txt"), []byte("foo a\n"))
	compareExact(t, dir, "", "", []string{
		"foo mid.bin", "-n -A1 foo mid.bin", "-c foo mid.bin", "--json foo mid.bin", "-j1 foo mid.bin a.txt",
		"-l foo mid.bin", "foo --sort path", "-a foo mid.bin",
	})
}

// TestRGIssueTypes: every file type of ripgrep 13 is known to -t and -T.
func TestRGIssueTypes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "types")
	for _, name := range []string{"Makefile", "x.mk", "CMakeLists.txt", "a.cmake", "Dockerfile", "b.ex", "c.hs", "d.lua", "e.rb", "f.swift", "g.zig", "h.tex", "i.vim", "j.proto"} {
		write(t, filepath.Join(dir, name), []byte("foo\n"))
	}
	var cases []string
	for _, ty := range []string{"make", "cmake", "docker", "elixir", "haskell", "lua", "ruby", "swift", "zig", "tex", "vim", "protobuf", "all"} {
		cases = append(cases, "-t "+ty+" foo --sort path", "-T "+ty+" --files --sort path")
	}
	compareExact(t, dir, "", "", cases)
}
