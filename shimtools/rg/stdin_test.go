package rg_test

import (
	"path/filepath"
	"testing"
)

// TestRGIssueStdinColumn: --column turns line numbers on when ripgrep reads
// stdin, as it does for files.
func TestRGIssueStdinColumn(t *testing.T) {
	dir, _ := corpus(t)
	compareExact(t, dir, "", filepath.Join(dir, "ctx.txt"), []string{
		"--column foo", "--column -N foo", "--column -o foo", "--column -b -C1 foo", "-n foo", "foo",
	})
}
