//go:build linux

package tree_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"buzzbox/internal/testexe"
)

// nobody is the user both trees run as when the test runs as root, who
// may read every directory.
const nobody = 65534

// TestTreeIssueUnreadableDirs: tree counts a root directory it cannot
// open as a file, exits 2 for one below a root (but not with --prune or
// --matchdirs, which read the tree first), and leaves out every entry of
// a directory it may read but not search, since lstat(2) of each fails.
func TestTreeIssueUnreadableDirs(t *testing.T) {
	real := realTree(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	top := t.TempDir()
	// Both temporary directories are the test's own; nobody must pass.
	must(t, os.Chmod(filepath.Dir(top), 0o755))
	must(t, os.Chmod(top, 0o755))
	ours := filepath.Join(top, "bin", "tree")
	copyExe(t, testexe.Path(t), filepath.Join(top, "bin", "buzzbox"))
	must(t, os.Symlink("buzzbox", ours))

	dir := filepath.Join(top, "c")
	mk(t, dir, map[string]string{"ok/f": "", "no/g": "", "no/sub/": "", "xonly/h": "", "ronly/k": "", "ronly/sd/": ""})
	for name, mode := range map[string]os.FileMode{"no": 0, "xonly": 0o111, "ronly": 0o444} {
		p := filepath.Join(dir, name)
		must(t, os.Chmod(p, mode))
		t.Cleanup(func() { os.Chmod(p, 0o755) })
	}
	env := []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH"), "BUZZBOX_SHIM_PASSTHROUGH=0"}
	run := func(t *testing.T, exe string, args []string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return testexe.Run(t, cmd)
	}
	for _, c := range []string{"", "no", "xonly", "ronly", "-s", "-F", "-d", "--prune", "--matchdirs",
		"-l", "no ronly xonly ok", "-f -a", "-L 1", "--prune no", "--gitignore"} {
		args := strings.Fields(c)
		t.Run(c, func(t *testing.T) {
			wantOut, wantErr, wantCode := run(t, real, args)
			gotOut, gotErr, gotCode := run(t, ours, args)
			if gotOut != wantOut || gotCode != wantCode || gotErr != wantErr {
				t.Errorf("tree %s:\n--- GNU tree (exit %d) ---\n%s%s--- ours (exit %d) ---\n%s%s", c, wantCode, wantOut, wantErr, gotCode, gotOut, gotErr)
			}
		})
	}
}

// copyExe copies the executable src to dst, runnable by anyone.
func copyExe(t *testing.T, src, dst string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	must(t, out.Close())
}
