package devmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// How the file tools open what they checked.
//
// A tool resolves its path argument to the canonical path (symlinks
// followed in user space, as before), the fence judges that path, and
// then the kernel opens exactly that path with no symlink followed
// anywhere on it (openat2 RESOLVE_NO_SYMLINKS, or a walk of O_NOFOLLOW
// opens): the directory first, held open, then the entry in it by name.
// A name on the path swapped for a symlink after the check makes the open
// fail instead of leading elsewhere, and writes create their temporary
// file in the held directory and rename it there. With no symlink on it,
// the path opened is the path checked; the only way to make it reach
// something else is to move real directories around, and the shell sandbox
// cannot move hidden places, nor anything into or out of the places it may
// write.
//
// Symlinks keep working wherever they point, since they are resolved
// before the check: RESOLVE_BENEATH from each root's directory would only
// allow those that stay below one root, and reads are allowed outside
// every root (all but the hidden places).

// maxOpenAttempts bounds how often a tool resolves and opens a path again
// when its path changed between the two: a tree that a checkout or a build
// is rewriting settles within a retry or two, a loop swapping names on
// purpose gets an error.
const maxOpenAttempts = 3

// errPathChanged says a name on a checked path was replaced (by a symlink
// or another file) before the path was opened.
var errPathChanged = errors.New("path changed while being opened")

// changedError is the tool error once every attempt met a changed path.
func changedError(path string) error {
	return toolErrorf("path changed while being opened: %s (a directory or the file on it was replaced, by a symlink or otherwise, between resolving and opening it, %d times); try again once it settles", path, maxOpenAttempts)
}

// splitCanonical splits a canonical absolute path into its directory and
// its name there ("." for /).
func splitCanonical(path string) (dir, name string) {
	if path == "/" {
		return "/", "."
	}
	return filepath.Dir(path), filepath.Base(path)
}

// openedFile is a regular file opened after the fence check, with the
// directory that holds it.
type openedFile struct {
	path string   // canonical absolute path
	dir  *heldDir // its directory, held open
	name string   // its name in dir
	f    *os.File // open for reading
	info fs.FileInfo
}

func (o *openedFile) close() {
	o.f.Close()
	o.dir.close()
}

// openChecked resolves p against root, checks the canonical path against
// the fence (for writing when write is set) and opens it for reading,
// refusing anything but a regular file.
func openChecked(root, p string, fc *fence, write bool) (*openedFile, error) {
	for attempt := 1; ; attempt++ {
		path, err := resolvePath(root, p)
		if err != nil {
			return nil, err
		}
		if err := fc.check(path, write); err != nil {
			return nil, err
		}
		o, err := openCanonical(path)
		if errors.Is(err, errPathChanged) {
			if attempt < maxOpenAttempts {
				continue
			}
			return nil, changedError(path)
		}
		return o, err
	}
}

// openCanonical opens the regular file at the canonical path with no
// symlink followed; errPathChanged when one appeared on the path.
func openCanonical(path string) (*openedFile, error) {
	dirPath, name := splitCanonical(path)
	d, err := openHeldDir(dirPath)
	if err != nil {
		if isSymlinkOnPath(err) {
			return nil, errPathChanged
		}
		return nil, toolErrorf("path not accessible: %s (%s)", path, causeOf(err))
	}
	st, err := d.lstat(name)
	if err != nil {
		d.close()
		if isSymlinkOnPath(err) {
			return nil, errPathChanged
		}
		return nil, toolErrorf("cannot stat %s: %s", path, causeOf(err))
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		d.close()
		return nil, errPathChanged
	}
	if !st.Mode().IsRegular() {
		d.close()
		return nil, toolErrorf("not a regular file: %s (%s)", path, kindOf(st.Mode()))
	}
	f, err := d.open(name, os.O_RDONLY, 0)
	if err != nil {
		d.close()
		if isSymlinkOnPath(err) {
			return nil, errPathChanged
		}
		return nil, toolErrorf("cannot open %s: %s", path, causeOf(err))
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		d.close()
		return nil, toolErrorf("cannot stat %s: %s", path, causeOf(err))
	}
	if !os.SameFile(st, info) {
		f.Close()
		d.close()
		return nil, errPathChanged
	}
	return &openedFile{path: path, dir: d, name: name, f: f, info: info}, nil
}

// openParentChecked resolves the directory of the path p names (p itself
// need not exist), checks the path of the entry in it against the fence
// for writing and opens the directory with no symlink followed. It
// returns the directory and the entry's name in it.
func openParentChecked(root, p string, fc *fence) (*heldDir, string, error) {
	cand := p
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(root, cand)
	}
	name := filepath.Base(cand)
	for attempt := 1; ; attempt++ {
		dir, err := filepath.EvalSymlinks(filepath.Dir(cand))
		if err != nil {
			return nil, "", toolErrorf("cannot create %s: parent directory not accessible (%s); create it first (shell: mkdir -p)", cand, causeOf(err))
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, "", toolErrorf("cannot create %s: %s", cand, causeOf(err))
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, "", toolErrorf("cannot create %s: parent %s is not a directory", cand, dir)
		}
		path := filepath.Join(dir, name)
		if err := fc.check(path, true); err != nil {
			return nil, "", err
		}
		d, err := openHeldDir(dir)
		switch {
		case err == nil:
			return d, name, nil
		case isSymlinkOnPath(err) && attempt < maxOpenAttempts:
			continue
		case isSymlinkOnPath(err):
			return nil, "", changedError(path)
		}
		return nil, "", toolErrorf("cannot create %s: parent %s is not an accessible directory (%s)", cand, dir, causeOf(err))
	}
}

// tempAttempts bounds the names tried for a temporary file.
const tempAttempts = 100

// createTemp creates a new file for writing in d, named prefix plus a
// random number, mode 0600.
func (d *heldDir) createTemp(prefix string) (*os.File, string, error) {
	var err error
	for range tempAttempts {
		name := fmt.Sprintf("%s%d", prefix, rand.Uint32())
		var f *os.File
		f, err = d.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
	}
	return nil, "", err
}
