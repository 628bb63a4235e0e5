//go:build unix

package devmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// heldDir is a directory opened with no symlink followed anywhere on its
// path. The file tools look up, create and rename its entries by name
// relative to it, so a name on the path swapped for a symlink after the
// fence checked the path cannot send them elsewhere.
type heldDir struct {
	fd   int
	path string // the canonical path it was opened by, for messages
}

// openHeldDir opens the directory at the canonical absolute path, every
// component a real directory: a symlink anywhere on it fails with ELOOP
// (or ENOTDIR).
func openHeldDir(path string) (*heldDir, error) {
	fd, err := openNoSymlinks(path, unix.O_DIRECTORY|oSearch)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &heldDir{fd: fd, path: path}, nil
}

// openNoSymlinks opens the absolute path refusing every symlink on it:
// with openat2 RESOLVE_NO_SYMLINKS where the kernel has it, else by a walk
// from / opening one component at a time with O_NOFOLLOW.
func openNoSymlinks(path string, flags int) (int, error) {
	fd, err := openat2NoSymlinks(path, flags)
	if err == errNoOpenat2 {
		return walkNoFollow(path, flags)
	}
	return fd, err
}

// errNoOpenat2 says openat2 is not available here.
var errNoOpenat2 = errors.New("openat2 not available")

// walkNoFollow is openNoSymlinks without openat2.
func walkNoFollow(path string, flags int) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, unix.EINVAL
	}
	cur, err := unix.Open("/", unix.O_DIRECTORY|oSearch|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	names := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	for i, name := range names {
		if name == "." || name == ".." {
			unix.Close(cur)
			return -1, unix.EINVAL // canonical paths have neither
		}
		f := unix.O_DIRECTORY | oSearch
		if i == len(names)-1 {
			f = flags
		}
		fd, err := unix.Openat(cur, name, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// checkName refuses what is not one plain entry name.
func checkName(name string) error {
	if name == "" || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not a name in a directory", name)
	}
	return nil
}

// lstat describes the entry name without following it when it is a
// symlink, and without opening it for reading (a device or FIFO is not
// opened just to be refused).
func (d *heldDir) lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	full := d.join(name)
	fd, err := unix.Openat(d.fd, name, oLook|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Where oLook is not O_PATH, a symlink fails here with ELOOP.
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	return f.Stat()
}

// open opens the entry name in d, never following a symlink there: a
// symlink fails with ELOOP. Reads do not block on a FIFO put in place of
// the file, nor take a terminal as controlling terminal.
func (d *heldDir) open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	full := d.join(name)
	fd, err := unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	// Regular files ignore O_NONBLOCK; clear it so writes are plain.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// rename renames the entry from to to, both in d; to is replaced if it
// exists (a symlink named to is replaced, not followed).
func (d *heldDir) rename(from, to string) error {
	if err := errors.Join(checkName(from), checkName(to)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// remove removes the entry name (not a directory) from d.
func (d *heldDir) remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// join is the path of the entry name, for messages.
func (d *heldDir) join(name string) string { return filepath.Join(d.path, name) }

func (d *heldDir) close() error { return unix.Close(d.fd) }

// isSymlinkOnPath reports whether err is what an open refusing symlinks
// returns on meeting one: ELOOP, or ENOTDIR where a component expected to
// be a directory is a symlink opened without following it.
func isSymlinkOnPath(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)
}
