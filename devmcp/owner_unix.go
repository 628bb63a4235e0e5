//go:build unix

package devmcp

import (
	"io/fs"
	"os"
	"syscall"
)

// copyOwner gives f the owner of old, when allowed (root, or the owner
// itself keeping its group); failure is ignored, as for cp -p.
func copyOwner(f *os.File, old fs.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}
