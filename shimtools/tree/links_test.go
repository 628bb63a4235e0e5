package tree_test

import (
	"os"
	"path/filepath"
	"testing"
)

// linkCorpus holds symbolic links that loop back to an ancestor ("..",
// "../..", "."), an absolute link to the root, links to siblings, chains,
// dangling links and links to files, plus a directory whose several links
// to one target are made in an order that is not their name order.
func linkCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "links")
	mk(t, dir, map[string]string{
		"a/f":        "",
		"a/b/g":      "",
		"a/b/c/h":    "",
		"c/i":        "",
		"empty/":     "",
		"many/d/f":   "",
		".hid/j":     "",
		"a/.hidden/": "",
	})
	for _, l := range [][2]string{
		{"..", "a/b/up"}, {"../..", "a/b/top"}, {"../../..", "a/b/c/root"},
		{".", "self"}, {"../a", "c/toa"}, {dir, "a/abs"}, {"../c", "a/b/c/toc"},
		{"toa", "c/chain"}, {"nowhere", "c/dang"}, {"../a/f", "c/tofile"},
		{"../empty", "a/toempty"}, {"a/b", "tob"},
		{"d", "many/zl"}, {"d", "many/ml"}, {"d", "many/al"}, {"d", "many/ql"}, {"d", "many/bl"},
	} {
		must(t, os.Symlink(l[0], filepath.Join(dir, l[1])))
	}
	return dir
}

// TestTreeIssueLinkLoopFullPath: with -l tree builds a followed link's path
// from its target in the buffer -f prints from, so "a/b/up -> .." shows as
// "a/b/..", and entries below it as "a/b/../x"; it notes every directory it
// lists, even past -L, so a link to one is "recursive" at any depth; and
// with --prune it reads the tree in directory order before printing it.
func TestTreeIssueLinkLoopFullPath(t *testing.T) {
	dir := linkCorpus(t)
	var cases []string
	for _, flags := range []string{
		"-f -l", "-l", "-f -l -a", "-f -l -F", "-f -l -i", "-f -l -d", "-f -l -L 1", "-f -l -L 2",
		"-l -L 2", "-f -l -L 3", "-f -l --dirsfirst", "-f -l -P f*", "-f -l -I c", "-f -l -s",
		"-f -l --prune", "-l --prune", "-f -l --prune -L 3", "-l --prune -P f*", "-f", "-f -a",
	} {
		cases = append(cases, flags, flags+" a", flags+" ./", flags+" c many", flags+" a/b/", flags+" "+dir)
	}
	cases = append(cases, "-f ./", "-f a//", "-f -l a//", "-f . a/")
	compareWithGNUTree(t, dir, cases, true)
}
