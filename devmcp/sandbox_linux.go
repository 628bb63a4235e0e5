package devmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"buzzbox/internal/proc"
)

// landlockABI returns the kernel's Landlock ABI version, 0 when it has
// none (too old, or Landlock not enabled at boot).
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// devices are the device files and dirs every shell may write.
func devices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}
}

// sandboxExec is the hidden entry: apply the policy in args to this
// process with Landlock, then exec the command after "--" in its place.
// Landlock stays with the process and every child it starts. It never
// returns on success.
func sandboxExec(args []string, env proc.Env) int {
	p, argv, err := parseSandboxArgs(args)
	if err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: %v\n", err)
		return exitSandboxFailed
	}
	// The capability bounding set is per thread, and execve keeps the
	// calling thread's: stay on one thread from the drop to the exec.
	runtime.LockOSThread()
	// Without CAP_SYS_PTRACE even root cannot read the memory or the
	// environment of a non-dumpable process (the server, the agent, the
	// harness): this kernel's Landlock alone does not stop a read of
	// /proc/PID/environ. EPERM (no CAP_SETPCAP: not root) leaves nothing
	// to drop.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: drop CAP_SYS_PTRACE: %v\n", err)
		return exitSandboxFailed
	}
	if p.ownProc {
		if err := mountOwnProc(); err != nil {
			fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: %v\n", err)
			return exitSandboxFailed
		}
	}
	abi := landlockABI()
	if abi == 0 {
		fmt.Fprintln(env.Err(), "buzz-dev-mcp: sandbox: this kernel has no Landlock; set BUZZ_SHELL_SANDBOX=off to run commands unsandboxed")
		return exitSandboxFailed
	}
	if err := landlock.V11.BestEffort().RestrictPaths(p.rules(abi)...); err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: apply landlock rules: %v\n", err)
		return exitSandboxFailed
	}
	err = syscall.Exec(argv[0], argv, env.Environ)
	fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: exec %s: %v\n", argv[0], err)
	return exitSandboxFailed
}

// grant is one path and whether write is allowed below it.
type grant struct {
	path  string
	write bool
	dir   bool
	// list allows only listing directories below path: the dirs that
	// hold hidden places are split into their entries, and listing keeps
	// `ls /` and `ls ~` working. Names below hidden places show; their
	// contents do not.
	list bool
}

// rules turns the policy into Landlock rules for the kernel's ABI.
func (p sandboxPolicy) rules(abi int) []landlock.Rule {
	h := newHider(p.hide, p.hidePrefix)
	var gs []grant
	h.grant(&gs, "/", false)
	for _, d := range p.read {
		h.grantExplicit(&gs, d, false)
	}
	for _, d := range p.write {
		h.grantExplicit(&gs, d, true)
	}
	for _, d := range devices() {
		if st, err := os.Stat(d); err == nil {
			gs = append(gs, grant{path: d, write: true, dir: st.IsDir()})
		}
	}
	var rules []landlock.Rule
	for _, g := range gs {
		var r landlock.FSRule
		switch {
		case g.list:
			r = landlock.PathAccess(ll.AccessFSReadDir, g.path)
		case g.write && g.dir:
			r = landlock.RWDirs(g.path).WithIoctlDev()
			if abi >= 2 {
				r = r.WithRefer()
			}
		case g.write:
			r = landlock.RWFiles(g.path).WithIoctlDev()
		case g.dir:
			r = landlock.RODirs(g.path).WithResolveUnix()
		default:
			r = landlock.ROFiles(g.path).WithResolveUnix()
		}
		rules = append(rules, r.IgnoreIfMissing())
	}
	return rules
}

// hider knows the hidden paths, resolved through symlinks, since Landlock
// rules attach to the files themselves.
type hider struct {
	hide       []string
	prefixDirs []string // parent dirs of hidePrefix entries
	prefixes   []string // their base-name prefixes, same index
}

func newHider(hide, hidePrefix []string) *hider {
	h := &hider{}
	for _, p := range hide {
		h.hide = append(h.hide, realPath(p))
	}
	for _, p := range hidePrefix {
		h.prefixDirs = append(h.prefixDirs, realPath(filepath.Dir(p)))
		h.prefixes = append(h.prefixes, filepath.Base(p))
	}
	return h
}

// realPath resolves symlinks in p where it exists; else p, cleaned.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// hidden reports whether p itself is hidden.
func (h *hider) hidden(p string) bool {
	if slices.Contains(h.hide, p) {
		return true
	}
	dir, base := filepath.Dir(p), filepath.Base(p)
	for i, d := range h.prefixDirs {
		if d == dir && strings.HasPrefix(base, h.prefixes[i]) {
			return true
		}
	}
	return false
}

// under reports whether p is hidden or lies below a hidden path.
func (h *hider) under(p string) bool {
	for q := p; ; q = filepath.Dir(q) {
		if h.hidden(q) {
			return true
		}
		if q == "/" || q == "." {
			return false
		}
	}
}

// holds reports whether a hidden path lies strictly below dir, so that dir
// cannot be granted whole.
func (h *hider) holds(dir string) bool {
	pre := dir + "/"
	if dir == "/" {
		pre = "/"
	}
	for _, p := range h.hide {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	for _, d := range h.prefixDirs {
		if d == dir || strings.HasPrefix(d, pre) {
			return true
		}
	}
	return false
}

// grant adds p with its subtree, minus what is hidden: p whole when
// nothing hidden lies below it, else each of its entries in turn.
// Entries that cannot be listed or inspected are left out (denied).
func (h *hider) grant(gs *[]grant, p string, write bool) {
	if h.hidden(p) {
		return
	}
	if !h.holds(p) {
		st, err := os.Stat(p)
		if err != nil {
			return
		}
		*gs = append(*gs, grant{path: p, write: write, dir: st.IsDir()})
		return
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return
	}
	*gs = append(*gs, grant{path: p, dir: true, list: true})
	for _, e := range entries {
		c := filepath.Join(p, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			t, err := filepath.EvalSymlinks(c)
			if err != nil || h.under(t) || h.holds(t) {
				continue // a link into (or over) a hidden place grants nothing
			}
			c = t
		}
		h.grant(gs, c, write)
	}
}

// grantExplicit adds a path the policy names, resolved; one below a
// hidden place is still granted (the session's own dirs sit among hidden
// siblings), one holding hidden places is split.
func (h *hider) grantExplicit(gs *[]grant, p string, write bool) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return
	}
	if h.holds(r) {
		h.grant(gs, r, write)
		return
	}
	if st, err := os.Stat(r); err == nil {
		*gs = append(*gs, grant{path: r, write: write, dir: st.IsDir()})
	}
}

// canOwnProc reports whether sandboxed shells get PID and mount
// namespaces of their own: only root needs them. For another user
// Landlock already refuses /proc/PID/environ and mem of every process
// outside the sandbox; root, on the kernels tried (6.18), still reads any
// process's environ, non-dumpable or not, under Landlock and without
// CAP_SYS_PTRACE. In its own PID namespace no process outside is named.
func canOwnProc() bool { return os.Geteuid() == 0 }

// setNamespaces starts cmd as the first process of new PID and mount
// namespaces. It must follow setGroup, which sets SysProcAttr.
func setNamespaces(cmd *exec.Cmd) {
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
}

// mountOwnProc, in a new mount namespace, stops mount events from
// spreading back to the host and mounts a /proc showing only this PID
// namespace. Landlock then forbids the sandbox to unmount it.
func mountOwnProc() error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}
