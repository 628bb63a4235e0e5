//go:build !unix

package nostrkey

import (
	"fmt"
	"io/fs"
	"os"
)

func openKeyFile(path string, _ FileRules) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{Path: path, Problem: "cannot be opened", Err: err}
	}
	return f, nil
}

// checkOwnerAndMode cannot check Unix permission bits here; the spec asks
// for a warning instead.
func checkOwnerAndMode(path string, _ fs.FileInfo, rules FileRules) error {
	if rules.Warn != nil {
		fmt.Fprintf(rules.Warn, "warning: cannot check permissions of keyfile %s on this platform\n", path)
	}
	return nil
}
