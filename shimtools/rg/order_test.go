package rg_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// orderCorpus makes directories and files in an order that is neither
// alphabetical nor its reverse, nested three deep, with an ignore file and
// a hidden directory, so that the order a directory lists its entries in
// differs from name order.
func orderCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "order")
	for _, d := range []string{"zeta", "alpha", "mid", "beta/deep/er", "beta/aa", ".hid"} {
		for _, f := range []string{"q.txt", "b.go", "x.txt", "a.md", "m.txt", "zz.txt", "c.rs"} {
			write(t, filepath.Join(dir, d, f), []byte("foo "+d+"/"+f+"\nbar\nfoo again\n"))
		}
	}
	for _, f := range []string{"y.txt", "c.txt", "k.go", "ignored.txt"} {
		write(t, filepath.Join(dir, f), []byte("foo top\n"))
	}
	write(t, filepath.Join(dir, ".ignore"), []byte("ignored.txt\nmid/m.txt\n"))
	return dir
}

// TestRGIssueJ1Order: with one thread ripgrep walks depth first in the
// order each directory lists its entries (readdir order, not sorted),
// descending into a subdirectory where it stands among its siblings.
func TestRGIssueJ1Order(t *testing.T) {
	t.Run("fixture", func(t *testing.T) {
		compareExact(t, orderCorpus(t), "", "", []string{
			"--files -j1", "foo -j1", "-j1 -n -C1 foo", "-j1 -l foo", "-j1 -c foo",
			"-j1 --files zeta beta", "-j1 --json foo", "-j1 --hidden --files",
			"-j1 --max-depth 2 --files", "-j1 -g *.txt foo", "-j1 -t go -t rust foo",
			"-j1 --files-without-match again", "-j1 -u --files", "--threads=1 foo",
		})
	})
	t.Run("corpus", func(t *testing.T) {
		// Every sorted case of the main comparison, with -j1 for --sort path.
		dir, home := corpus(t)
		var cases []string
		for _, c := range compareCases {
			if strings.Contains(c, "--sort path") {
				cases = append(cases, strings.Replace(c, "--sort path", "-j1", 1))
			}
		}
		compareExact(t, dir, home, "", cases)
	})
}
