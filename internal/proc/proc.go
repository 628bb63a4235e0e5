// Package proc describes the process environment an identity runs with.
//
// Identities never read os.Args, os.Stdin, os.Stdout, os.Stderr or the
// process environment directly, and never call os.Exit: package dispatch
// builds an Env from the real process and hands it to the identity's Main,
// and tests build one from buffers and temp dirs. That keeps every identity
// runnable in-process.
package proc

import (
	"io"
	"os"
	"strings"
)

// Env is what an identity may know about its process.
type Env struct {
	// Stdin is the identity's standard input. Nil reads as empty.
	Stdin io.Reader
	// Stdout receives protocol frames or the asked-for output, nothing else.
	// Nil discards.
	Stdout io.Writer
	// Stderr receives diagnostics and logs. Nil discards.
	Stderr io.Writer
	// Environ holds KEY=VALUE pairs as os.Environ returns them. Nil means an
	// empty environment, not the process's.
	Environ []string
	// Dir is the working directory. Empty means the process's own.
	Dir string
	// Exe is the absolute path of the running executable, used to lay links
	// and to start other identities. Empty when it could not be found.
	Exe string
}

// OS returns the Env of the running process.
func OS() Env {
	exe, _ := os.Executable() // empty on failure, as documented on Exe
	dir, _ := os.Getwd()
	return Env{
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Environ: os.Environ(),
		Dir:     dir,
		Exe:     exe,
	}
}

// LookupEnv returns the value of key in e.Environ and whether it was set.
// When a key appears more than once the last one wins, as in os/exec.
func (e Env) LookupEnv(key string) (string, bool) {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(e.Environ[i], "=")
		if ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Getenv returns the value of key in e.Environ, or "" when unset.
func (e Env) Getenv(key string) string {
	v, _ := e.LookupEnv(key)
	return v
}

// WithEnv returns a copy of environ with key set to value, replacing every
// earlier entry for key. The input slice is not modified.
func WithEnv(environ []string, key, value string) []string {
	out := Without(environ, key)
	return append(out, key+"="+value)
}

// Without returns a copy of environ with every entry for the given keys removed.
func Without(environ []string, keys ...string) []string {
	out := make([]string, 0, len(environ))
next:
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		for _, drop := range keys {
			if k == drop {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// In returns e.Stdin, or an empty reader when it is nil.
func (e Env) In() io.Reader {
	if e.Stdin == nil {
		return strings.NewReader("")
	}
	return e.Stdin
}

// Out returns e.Stdout, or io.Discard when it is nil.
func (e Env) Out() io.Writer {
	if e.Stdout == nil {
		return io.Discard
	}
	return e.Stdout
}

// Err returns e.Stderr, or io.Discard when it is nil.
func (e Env) Err() io.Writer {
	if e.Stderr == nil {
		return io.Discard
	}
	return e.Stderr
}

// TempDir returns a directory where temporary files can be made: $TMPDIR,
// then /tmp, then the working directory, the first that exists and accepts a
// file. A scratch container has no /tmp, so the fallback matters. The error
// names every place tried and what to set.
func (e Env) TempDir() (string, error) {
	return firstWritable([]place{
		{"$TMPDIR", e.Getenv("TMPDIR")},
		{"/tmp", "/tmp"},
		{"working directory", e.Dir},
	})
}

// place is a candidate temp dir and how the error message names it.
type place struct{ label, dir string }

func firstWritable(candidates []place) (string, error) {
	var tried []string
	for _, c := range candidates {
		if c.dir == "" {
			tried = append(tried, c.label+" (unset)")
			continue
		}
		f, err := os.CreateTemp(c.dir, ".buzzbox-probe-*")
		if err != nil {
			tried = append(tried, c.label+" "+c.dir+" ("+errorsCause(err)+")")
			continue
		}
		name := f.Name()
		f.Close()
		os.Remove(name)
		return c.dir, nil
	}
	return "", &TempDirError{Tried: tried}
}

// TempDirError reports that no writable temporary directory was found.
type TempDirError struct {
	Tried []string // each place tried, with why it failed
}

func (e *TempDirError) Error() string {
	return "no writable temp dir: tried " + strings.Join(e.Tried, ", ") + "; set TMPDIR to a writable directory"
}

// errorsCause returns the innermost message of a *os.PathError, which already
// names the path the caller prints.
func errorsCause(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
