package rg_test

import (
	"path/filepath"
	"testing"
)

// TestRGIssueEmptyMatches: patterns that match the empty string report
// their empty matches as ripgrep does with -o, --vimgrep, --count-matches,
// --json and colours: one byte on after each empty match, so inside
// characters of several bytes too, and none right after a match.
func TestRGIssueEmptyMatches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty")
	write(t, filepath.Join(dir, "e.txt"), []byte("abc\nxxab\n\naxa\nfoo x\né x\n\xff\xfex\nü\nπaπ\naé€b x\n\xc3\n€€\n"))
	write(t, filepath.Join(dir, "empty.lst"), []byte("\n"))
	var cases []string
	for _, p := range []string{"-e x*", "-e x*?", "-e a?", "-e a{0,2}", "-e ^", "-e $", "-e x*|é", "-e (?:)", "-e (?i)x*", "-f empty.lst", "-F -f empty.lst"} {
		for _, f := range []string{"-o", "-o -b -n --column", "--vimgrep", "--count-matches", "-c", "--json", "--color always", "-o -a"} {
			cases = append(cases, f+" "+p+" e.txt")
		}
	}
	compareExact(t, dir, "", "", cases)
}
