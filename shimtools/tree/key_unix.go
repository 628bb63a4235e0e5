//go:build unix

package tree

import (
	"io/fs"
	"syscall"
)

type fileKey struct{ dev, ino uint64 }

func keyOf(fi fs.FileInfo) fileKey {
	if fi == nil {
		return fileKey{}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return fileKey{}
}
