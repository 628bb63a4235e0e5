package up

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"buzzbox/internal/proc"
	"buzzbox/internal/statedir"
	"buzzbox/shimtools/shim"
)

// upLegacyDir is where `buzzbox up` kept its state before it moved out of
// the working tree: the agent's shell works in that tree and could read
// the owner's key there.
const upLegacyDir = ".buzz"

// upMovedNote is the file left in the legacy dir saying where its
// contents went.
const upMovedNote = "MOVED.txt"

// upStateEntries are the names `buzzbox up` keeps in its state dir, the
// ones a migration moves.
func upStateEntries() []string {
	return []string{upOwnerKey, upAgentKey, upChannel, upRelayData}
}

// upStateDir resolves where `buzzbox up` keeps its keys and relay data:
// flagDir when given (relative to the working directory), else the
// workspace's directory under buzzbox's state root, with a ./.buzz of an
// earlier version moved there first.
func upStateDir(env proc.Env, log *slog.Logger, flagDir string) (string, error) {
	if flagDir != "" {
		if filepath.IsAbs(flagDir) {
			return flagDir, nil
		}
		return filepath.Join(env.Dir, flagDir), nil
	}
	wd, err := filepath.Abs(env.Dir)
	if err != nil {
		return "", fmt.Errorf("buzzbox up: working directory: %w", err)
	}
	base, err := statedir.ForWorkspace(env.Getenv, wd)
	if err != nil {
		return "", fmt.Errorf("buzzbox up: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
		return "", fmt.Errorf("buzzbox up: create state dir %s: %w", filepath.Dir(base), err)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("buzzbox up: create state dir %s: %w", base, err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		return "", fmt.Errorf("buzzbox up: state dir %s: %w", base, err)
	}
	if err := migrateUpState(filepath.Join(wd, upLegacyDir), base, log); err != nil {
		return "", err
	}
	return base, nil
}

// migrateUpState moves the state entries of an old ./.buzz to base and
// leaves a note there saying where they went. When base already has an
// owner key the old dir is left alone, with a warning: two owners cannot
// be merged.
func migrateUpState(old, base string, log *slog.Logger) error {
	var found []string
	for _, name := range upStateEntries() {
		if _, err := os.Lstat(filepath.Join(old, name)); err == nil {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(base, upOwnerKey)); err == nil {
		log.Warn("an old state dir is in the working tree, readable by the agent's shell; the state dir in use is elsewhere: delete the old one, or pass --dir to use it",
			"old", old, "state_dir", base)
		return nil
	}
	for _, name := range found {
		if err := moveEntry(filepath.Join(old, name), filepath.Join(base, name)); err != nil {
			return fmt.Errorf("buzzbox up: move %s to %s: %w (move it by hand, or pass --dir %s to keep using it)", filepath.Join(old, name), base, err, old)
		}
	}
	note := "buzzbox up moved " + strings.Join(found, ", ") + " from here to\n" + base + "\n" +
		"(outside the working tree, where the agent's shell cannot read the owner's key).\n" +
		"Pass --dir " + old + " to keep state here instead.\n"
	if err := os.WriteFile(filepath.Join(old, upMovedNote), []byte(note), 0o644); err != nil {
		log.Warn("could not leave a note in the old state dir", "err", err)
	}
	log.Warn("moved the workspace's keys and relay data out of the working tree", "from", old, "to", base, "moved", strings.Join(found, ","))
	return nil
}

// moveEntry renames src to dst, copying (then removing src) across file
// systems. dst must not exist.
func moveEntry(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s already exists", dst)
	}
	err := os.Rename(src, dst)
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		os.RemoveAll(dst)
		return err
	}
	return os.RemoveAll(src)
}

// copyTree copies a file or a directory tree, keeping permission bits;
// symlinks are refused (state holds none).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			return shim.CopyFile(p, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s is not a regular file or directory", p)
		}
	})
}
