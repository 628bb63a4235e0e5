// Package testexe builds the real buzzbox executable for tests that must run
// it as a separate process, and lays links to it under identity names, which
// is what proves argv[0] dispatch works. Only test code imports it.
package testexe

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "buzzbox-testexe-")
	if err != nil {
		return "", err
	}
	// The directory lives until the test process ends; each package's test
	// binary builds once.
	exe := filepath.Join(dir, "buzzbox")
	cmd := exec.Command("go", "build", "-trimpath", "-o", exe, "buzzbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return exe, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "go build buzzbox: " + e.err.Error() + "\n" + e.out }

// moduleRoot returns the directory holding go.mod, found from this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path returns the path of the buzzbox executable built for this test
// process, building it on first use.
func Path(t testing.TB) string {
	t.Helper()
	exe, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// Link returns the path of a symlink called name, in a fresh temp dir, that
// points at the built executable.
func Link(t testing.TB, name string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(Path(t), link); err != nil {
		t.Fatal(err)
	}
	return link
}
