package devmcp

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oSearch opens a directory only to resolve names in it (no read
// permission needed); oLook opens an entry only to stat it, a symlink
// included, without the side effects opening a device for reading has.
const (
	oSearch = unix.O_PATH
	oLook   = unix.O_PATH
)

// noOpenat2 is set once openat2 was found missing (before Linux 5.6, or
// refused by a seccomp filter), so later opens walk at once.
var noOpenat2 atomic.Bool

// openat2NoSymlinks opens the absolute path with openat2, the kernel
// refusing any symlink (magic links of /proc included) on it. ok is false
// errNoOpenat2 is returned when openat2 is not available here, and the
// caller walks instead.
func openat2NoSymlinks(path string, flags int) (int, error) {
	if noOpenat2.Load() {
		return -1, errNoOpenat2
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	// ENOSYS: no openat2; EPERM: a seccomp filter refusing it (openat2 with
	// these flags never fails EPERM itself); E2BIG: a kernel that does not
	// know the struct. The walk is as strict.
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.E2BIG) {
		noOpenat2.Store(true)
		return -1, errNoOpenat2
	}
	return fd, err
}
