package rg_test

import (
	"path/filepath"
	"testing"
)

// TestRGIssueRustRejectsPattern: patterns ripgrep's regex parser refuses
// and Go's accepts exit 2 with ripgrep's error text; close relatives it
// accepts still search.
func TestRGIssueRustRejectsPattern(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rej")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nxxab\n\naxa\nfoo x-1\n"))
	compareExact(t, dir, "", "", []string{
		`-e [\d-x] e.txt`, `-e [\w-z] e.txt`, `-e [\p{L}-x] e.txt`, `-e (?<n>x) e.txt`,
		`-e [^\w\W] e.txt`, `-e [^\s\S] e.txt`, `-e (?i)[^\d\D] e.txt`, `-e [^\x00-\x{10FFFF}] e.txt`,
		`-e (?-u)[^\w\W] e.txt`, `-e foo -e [\d-x] e.txt`, `-w [\d-x] e.txt`, `-e é[\d-x] e.txt`,
		`-F [\d-x] e.txt`, `-e [\s-] e.txt`, `-e [-\d] e.txt`, `-e [\d-] e.txt`, `-e \[\d-x] e.txt`,
		`-e [[:alpha:]-x] e.txt`, `-e (?P<n>x) e.txt`, `-e [a-z\d-] e.txt`, `-e [^\W] e.txt`, `-e [\d\D] e.txt`,
	})
}
