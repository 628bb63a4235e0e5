// Package passthru runs the real program behind a shim name (rg, tree)
// when one is installed, so that agents get the genuine tool whenever it
// exists. It follows devmcp.md §10.1: PATH is cleaned of every directory
// whose entry for the name resolves to this executable (the shim dir, any
// other link to buzzbox), the first executable regular file left is run
// with the same arguments and stdio, and its exit status is returned.
//
// It never runs a shell and never falls back by itself: the caller gets
// ok=false and runs its own implementation.
package passthru

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"buzzbox/internal/proc"
)

// EnvSwitch names the environment variable that turns pass-through off
// when set to "0" (tests use it to force the built-in implementation).
const EnvSwitch = "BUZZBOX_SHIM_PASSTHROUGH"

// Enabled reports whether pass-through is allowed by env.
func Enabled(env proc.Env) bool {
	v, ok := env.LookupEnv(EnvSwitch)
	return !ok || (v != "0" && v != "false" && v != "off")
}

// CleanPath returns path without empty entries and without directories
// whose name entry canonicalises to self (already canonical), and the
// first remaining directory holding an executable regular file called name.
func CleanPath(path, name, self string) (cleaned []string, found string) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		cand := filepath.Join(dir, name)
		if real, err := filepath.EvalSymlinks(cand); err == nil && self != "" && sameFile(real, self) {
			continue
		}
		cleaned = append(cleaned, dir)
		if found == "" {
			if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				found = cand
			}
		}
	}
	return cleaned, found
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// Run runs the real name with args if one is on PATH. ok is false when
// there is none, pass-through is switched off, or it could not be started;
// the caller then uses its own implementation.
func Run(ctx context.Context, name string, args []string, env proc.Env) (code int, ok bool) {
	if !Enabled(env) || env.Exe == "" {
		return 0, false
	}
	self, err := filepath.EvalSymlinks(env.Exe)
	if err != nil {
		return 0, false
	}
	cleaned, found := CleanPath(env.Getenv("PATH"), name, self)
	if found == "" {
		return 0, false
	}
	cmd := exec.CommandContext(ctx, found, args...)
	cmd.Args[0] = name
	cmd.Env = proc.WithEnv(env.Environ, "PATH", strings.Join(cleaned, string(os.PathListSeparator)))
	cmd.Dir = env.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	if err := cmd.Start(); err != nil {
		return 0, false
	}
	err = cmd.Wait()
	if err == nil {
		return 0, true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if c := ee.ExitCode(); c >= 0 {
			return c, true
		}
		return 2, true // killed by a signal
	}
	return 2, true
}
