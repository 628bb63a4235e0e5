//go:build unix && !linux

package devmcp

import "golang.org/x/sys/unix"

// oSearch opens a directory to resolve names in it; oLook opens an entry
// to stat it. Without O_PATH both are read-only opens; a FIFO does not
// block one.
const (
	oSearch = unix.O_RDONLY
	oLook   = unix.O_RDONLY | unix.O_NONBLOCK
)

// openat2NoSymlinks: there is no openat2 here; the caller walks.
func openat2NoSymlinks(string, int) (int, error) { return -1, errNoOpenat2 }
