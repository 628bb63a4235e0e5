package dispatch

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"buzzbox/internal/proc"
	"buzzbox/internal/usage"
)

// installPage is `buzzbox install --help`.
func installPage(fs *flag.FlagSet) *usage.Page {
	return &usage.Page{Name: "buzzbox install", Synopsis: "[--force] [--copy] DIR", Flags: fs,
		About: `Lays one symbolic link per tool in DIR, each named after the tool and
pointing at this executable, so that rg, tree, buzz, buzz-relay and the
others run by name once DIR is on PATH. DIR is made if missing; links that
already point here are left alone. Reads no environment variables.`,
		Examples: []string{
			"buzzbox install ~/.local/bin",
			"buzzbox install --copy /usr/local/bin   # a file system without symlinks",
		}}
}

// install is `buzzbox install`: one link (or copy) per identity in a
// directory, and none for the subcommands.
func install(_ context.Context, args []string, env proc.Env) int {
	fset := flag.NewFlagSet("install", flag.ContinueOnError)
	force := fset.Bool("force", false, "replace existing files that are not links to this executable")
	copyExe := fset.Bool("copy", false, "copy the executable instead of linking (for file systems without symlinks)")
	page := installPage(fset)
	if code, done := page.Parse(args, false, env.Out(), env.Err()); done {
		return code
	}
	if fset.NArg() != 1 {
		page.Fail(env.Err(), fmt.Sprintf("want exactly one directory, got %d arguments", fset.NArg()))
		return ExitUsage
	}
	if env.Exe == "" {
		fmt.Fprintln(env.Err(), "buzzbox install: cannot find the path of this executable; run it by an absolute path")
		return ExitUsage
	}
	dir := fset.Arg(0)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(env.Dir, dir)
	}
	inst := installer{exe: env.Exe, dir: dir, force: *force, copy: *copyExe, out: env.Out()}
	if err := inst.run(); err != nil {
		fmt.Fprintf(env.Err(), "buzzbox install: %v\n", err)
		var fe *existsError
		if errors.As(err, &fe) {
			fmt.Fprintln(env.Err(), "hint: pass --force to replace it")
		}
		return ExitUsage
	}
	return ExitOK
}

type installer struct {
	exe, dir    string
	force, copy bool
	out         io.Writer
}

// existsError reports a file in the way of a link that --force would replace.
type existsError struct{ path, what string }

func (e *existsError) Error() string {
	return fmt.Sprintf("%s exists and is %s, not this executable", e.path, e.what)
}

func (in installer) run() error {
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", in.dir, err)
	}
	var body []byte
	if in.copy {
		var err error
		if body, err = os.ReadFile(in.exe); err != nil {
			return fmt.Errorf("read executable: %w", err)
		}
	}
	// Check every target before changing any, so a refusal leaves DIR as it was.
	plans := make(map[string]string) // target path -> action
	for _, id := range Identities() {
		target := filepath.Join(in.dir, id.Name)
		action, err := in.plan(target, body)
		if err != nil {
			return err
		}
		plans[target] = action
	}
	for _, id := range Identities() {
		target := filepath.Join(in.dir, id.Name)
		action := plans[target]
		if action == "unchanged" {
			fmt.Fprintf(in.out, "%s: unchanged\n", target)
			continue
		}
		if action == "replace" {
			if err := os.Remove(target); err != nil {
				return fmt.Errorf("replace %s: %w", target, err)
			}
		}
		if in.copy {
			if err := writeExecutable(target, body); err != nil {
				return err
			}
			fmt.Fprintf(in.out, "%s: copied from %s\n", target, in.exe)
			continue
		}
		if err := os.Symlink(in.exe, target); err != nil {
			return fmt.Errorf("link %s: %w", target, err)
		}
		fmt.Fprintf(in.out, "%s -> %s\n", target, in.exe)
	}
	return nil
}

// plan says what to do at target: "create", "unchanged" or "replace".
func (in installer) plan(target string, body []byte) (string, error) {
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return "create", nil
	}
	if err != nil {
		return "", fmt.Errorf("inspect %s: %w", target, err)
	}
	switch {
	case fi.IsDir():
		return "", fmt.Errorf("%s is a directory; remove it first", target)
	case fi.Mode()&fs.ModeSymlink != 0:
		dest, err := os.Readlink(target)
		if err != nil {
			return "", fmt.Errorf("read link %s: %w", target, err)
		}
		if !in.copy && dest == in.exe {
			return "unchanged", nil
		}
		if in.force {
			return "replace", nil
		}
		return "", &existsError{target, "a link to " + dest}
	default:
		if in.copy {
			if have, err := os.ReadFile(target); err == nil && bytes.Equal(have, body) {
				return "unchanged", nil
			}
		}
		if in.force {
			return "replace", nil
		}
		return "", &existsError{target, "a regular file"}
	}
}

// writeExecutable writes body to path through a temporary file and rename,
// so a half-written copy never carries the final name.
func writeExecutable(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".buzzbox-install-*")
	if err != nil {
		return fmt.Errorf("copy to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return fmt.Errorf("copy to %s: %w", path, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("copy to %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("copy to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("copy to %s: %w", path, err)
	}
	return nil
}
