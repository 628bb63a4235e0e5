//go:build linux

package walk

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileTime returns the entry's modified, accessed or created (statx birth)
// time in nanoseconds, and whether the system recorded it.
func fileTime(path string, fi fs.FileInfo, which string) (int64, bool) {
	switch which {
	case "modified":
		return fi.ModTime().UnixNano(), true
	case "accessed":
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return st.Atim.Sec*1e9 + st.Atim.Nsec, true
		}
	case "created":
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx); err == nil && stx.Mask&unix.STATX_BTIME != 0 {
			return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec), true
		}
	}
	return 0, false
}
