//go:build unix

package nostrkey

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openKeyFile opens path without blocking, so a FIFO cannot hang the caller,
// and without following a final symlink when rules ask.
func openKeyFile(path string, rules FileRules) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if rules.NoSymlink {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if rules.NoSymlink && errors.Is(err, syscall.ELOOP) {
			return nil, &FileError{Path: path, Problem: "is a symlink; point nostr.keyfile at the file itself"}
		}
		return nil, &FileError{Path: path, Problem: "cannot be opened", Err: err}
	}
	return f, nil
}

// checkOwnerAndMode applies the spec's rule `mode & 0o177 != 0 ⇒ reject`
// and, when asked, the owner rule.
func checkOwnerAndMode(path string, fi fs.FileInfo, rules FileRules) error {
	if rules.OwnerOnly {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
			return &FileError{Path: path, Problem: fmt.Sprintf("is owned by uid %d, not by the current user (uid %d)", st.Uid, os.Getuid()),
				Fix: fmt.Sprintf("chown %d %s", os.Getuid(), path)}
		}
	}
	if perm := fi.Mode().Perm(); perm&0o177 != 0 {
		return &FileError{Path: path, Problem: fmt.Sprintf("has insecure permissions %04o (expected 0600)", perm),
			Fix: "chmod 600 " + path}
	}
	return nil
}
