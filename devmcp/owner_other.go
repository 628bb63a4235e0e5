//go:build !unix

package devmcp

import (
	"io/fs"
	"os"
)

// copyOwner does nothing where files have no POSIX owner.
func copyOwner(*os.File, fs.FileInfo) {}
