//go:build !unix

package devmcp

import (
	"io/fs"
	"os"
	"path/filepath"
)

// heldDir names a directory. Without openat there is no handle to hold:
// entries are reached by path. No fence exists here (it comes with the
// Landlock sandbox, Linux only), so nothing is kept out that a swapped
// name could let in.
type heldDir struct{ path string }

func openHeldDir(path string) (*heldDir, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	return &heldDir{path: path}, nil
}

func (d *heldDir) join(name string) string { return filepath.Join(d.path, name) }

func (d *heldDir) lstat(name string) (fs.FileInfo, error) { return os.Lstat(d.join(name)) }

func (d *heldDir) open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(d.join(name), flag, perm)
}

func (d *heldDir) rename(from, to string) error { return os.Rename(d.join(from), d.join(to)) }

func (d *heldDir) remove(name string) error { return os.Remove(d.join(name)) }

func (d *heldDir) close() error { return nil }

// isSymlinkOnPath: paths are followed here, so no open meets one.
func isSymlinkOnPath(error) bool { return false }
