package devmcp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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
	if p.userNS {
		return sandboxOuter(p, argv, env)
	}
	// Capabilities and no_new_privs are per thread, and execve keeps the
	// calling thread's: stay on one thread from the drop to the exec.
	runtime.LockOSThread()
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
	// Last, since mounting /proc above needs them: no capability is left
	// to the command (a root shell would otherwise sniff loopback traffic
	// with a raw socket, rename the host or make device nodes).
	if err := dropPrivileges(); err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: %v\n", err)
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

// maxCaps bounds the capability numbers dropPrivileges tries: the
// kernel's sets are 64 bits wide (_LINUX_CAPABILITY_VERSION_3).
const maxCaps = 64

// dropPrivileges leaves the calling thread, and what it execs, no
// capability in any set (bounding, ambient, effective, permitted,
// inheritable) and sets no_new_privs, so no setuid or file-capability
// program gives one back. Without CAP_SETPCAP (a user other than root
// outside a user namespace of its own) the bounding set cannot be cut,
// and need not be: such a process has no capability, and no_new_privs
// keeps exec from granting one.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	for c := 0; c < maxCaps; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil {
			break // EINVAL: past the kernel's last capability
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EPERM) && !hasCap(unix.CAP_SETPCAP) {
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}

// hasCap reports whether the calling thread has capability c effective.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// canOwnProc reports whether sandboxed shells try namespaces of their
// own: always, here; the start-up probe finds out whether the kernel
// allows them. In its own PID namespace a command names no process
// outside (root, on the kernels tried (6.18), still reads any process's
// environ under Landlock and without CAP_SYS_PTRACE), and every process
// it starts dies with it, however it detached: the kernel kills a PID
// namespace whole when its first process exits.
func canOwnProc() bool { return true }

// nsArg is the sandbox entry's flag for namespaces of its own: root
// creates them as it starts the entry (ownProcArg); another user has the
// entry create them in a user namespace (userNSArg).
func nsArg() string {
	if os.Geteuid() == 0 {
		return ownProcArg
	}
	return userNSArg
}

// setNamespaces starts cmd, run as root, as the first process of new PID,
// mount and UTS namespaces. Another user's entry makes its own
// (sandboxOuter), so it adds nothing then. It must follow procgroup.Set,
// which sets SysProcAttr.
func setNamespaces(cmd *exec.Cmd) {
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS
	}
}

// sandboxOuter runs the sandbox entry of a user other than root: it
// starts the entry again with ownProcArg as the first process of new
// user, PID, mount and UTS namespaces (in the user namespace the user
// keeps its uid and gid, and CAP_SYS_ADMIN across the exec, ambient, to
// mount its /proc), waits for it and exits as it did. The server cannot
// start that process itself: it is non-dumpable, so the child it forks
// is too until it execs, and the server's user may not write a
// non-dumpable child's uid_map; this process, fresh from exec, may.
//
// This process stays outside the sandbox, where the command can neither
// see nor signal it. It dies with the server (Pdeathsig), and the
// command's first process with it, which makes the kernel kill the
// whole PID namespace: every process the command started, in whatever
// session or group, ends with the call or the server. It is in the
// server's process group for the call, so the server's signals to the
// group reach the command as before; it lets them pass (a caught signal
// is not inherited, an ignored one would be).
func sandboxOuter(p sandboxPolicy, argv []string, env proc.Env) int {
	p.userNS = false
	inner := append(append([]string{sandboxArg, ownProcArg}, p.args()...), argv...)
	cmd := exec.Command(env.Exe, inner...)
	cmd.Args[0] = serverName
	cmd.Env = env.Environ
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	uid, gid := os.Geteuid(), os.Getegid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP},
	}
	passed := make(chan os.Signal, 1)
	signal.Notify(passed, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() { // drops them; ends with the process
		for range passed {
		}
	}()
	if err := proc.Start(cmd); err != nil { // the inner entry dies with this process
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: start in a user namespace: %v\n", err)
		return exitSandboxFailed
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: %v\n", err)
		return exitSandboxFailed
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		// Die of the same signal, so the server reports it as before;
		// without a core file.
		signal.Reset(ws.Signal())
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
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
