package devmcp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	// A root shell gives up CAP_SYS_PTRACE: it has no business tracing
	// processes it did not start. (It is not what hides other processes'
	// environments from root: on 6.18 root reads a non-dumpable process's
	// /proc/PID/environ without it; the PID namespace does that.) EPERM
	// (no CAP_SETPCAP: not root) leaves nothing to drop.
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
	// The file system, and signals and abstract Unix sockets to processes
	// outside the sandbox (no killing or stopping the server, the agent or
	// the harness); the network is left alone, the buzz CLI needs it.
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}.BestEffort()
	if err := cfg.Restrict(p.rules(abi)...); err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: apply landlock rules: %v\n", err)
		return exitSandboxFailed
	}
	err = syscall.Exec(argv[0], argv, env.Environ)
	fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: exec %s: %v\n", argv[0], err)
	return exitSandboxFailed
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

// canOwnProc reports whether sandboxed shells get PID and mount
// namespaces of their own: only root needs them. For another user
// Landlock already refuses /proc/PID/environ and mem of every process
// outside the sandbox; root, on the kernels tried (6.18), still reads any
// process's environ, non-dumpable or not, under Landlock and without
// CAP_SYS_PTRACE. In its own PID namespace no process outside is named.
func canOwnProc() bool { return os.Geteuid() == 0 }

// setNamespaces starts cmd as the first process of new PID and mount
// namespaces. It must follow procgroup.Set, which sets SysProcAttr.
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
