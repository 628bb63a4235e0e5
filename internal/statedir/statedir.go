// Package statedir names where buzzbox keeps workspace state and secrets:
// a directory of its own outside any working tree, so that an agent's
// shell, which may write and read the working tree, does not find the
// owner's key there. The root is $XDG_STATE_HOME/buzzbox, else
// $HOME/.local/state/buzzbox; each workspace (a working directory given to
// `buzzbox up`) gets a subdirectory named after it and a hash of its
// absolute path.
//
// It reads no files; WriteFile writes one state file atomically (the
// directory 0700, the file 0600), and callers make other directories with
// the same modes.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Environment names read, spelled as the XDG base directory spec does.
const (
	envStateHome = "XDG_STATE_HOME"
	envHome      = "HOME"
)

// appName is the root's last element.
const appName = "buzzbox"

// hashChars is how many hex digits of the path's SHA-256 name a workspace:
// 64 bits keep two workspaces of one user apart.
const hashChars = 16

// maxLabelBytes bounds the readable part of a workspace directory's name.
const maxLabelBytes = 40

// ErrNoHome means neither XDG_STATE_HOME nor HOME names an absolute path.
var ErrNoHome = errors.New("state dir: neither XDG_STATE_HOME nor HOME is an absolute path; set XDG_STATE_HOME or pass --dir")

// Root returns buzzbox's state root from getenv. A relative
// XDG_STATE_HOME is ignored, as the spec says.
func Root(getenv func(string) string) (string, error) {
	if d := getenv(envStateHome); filepath.IsAbs(d) {
		return filepath.Join(d, appName), nil
	}
	if h := getenv(envHome); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", appName), nil
	}
	return "", ErrNoHome
}

// ForWorkspace returns the state directory of the workspace whose
// absolute working directory is dir: Root/<base of dir>-<hash of dir>.
func ForWorkspace(getenv func(string) string, dir string) (string, error) {
	root, err := Root(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, Name(dir)), nil
}

// Name is the workspace directory's name for the absolute path dir: its
// base name, reduced to letters, digits, '.', '_' and '-', then '-' and
// the first hex digits of the SHA-256 of the cleaned path.
func Name(dir string) string {
	dir = filepath.Clean(dir)
	sum := sha256.Sum256([]byte(dir))
	label := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, filepath.Base(dir))
	label = strings.TrimLeft(label, ".")
	if len(label) > maxLabelBytes {
		label = label[:maxLabelBytes]
	}
	if label == "" {
		label = "root"
	}
	return label + "-" + hex.EncodeToString(sum[:])[:hashChars]
}

// WriteFile writes b to path through a synced temporary file in the same
// directory, renamed over path, so a crash leaves the old file or the new
// one, never half of either. The directory is made 0700 and the file is
// 0600.
func WriteFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
