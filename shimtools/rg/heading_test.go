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
