// Package statedir names where buzzbox keeps workspace state and secrets:
// a directory of its own outside any working tree, so that an agent's
// shell, which may write and read the working tree, does not find the
// owner's key there. The root is $XDG_STATE_HOME/buzzbox, else
// $HOME/.local/state/buzzbox; each workspace (a working directory given to
// `buzzbox up`) gets a subdirectory named after it and a hash of its
// absolute path.
//
// It creates nothing and reads no files; callers make the directories
// (mode 0700) and files (0600).
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
