//go:build !unix

package tree

import "io/fs"

type fileKey struct{ name string }

func keyOf(fi fs.FileInfo) fileKey {
	if fi == nil {
		return fileKey{}
	}
	return fileKey{name: fi.Name()}
}
