package devmcp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

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
	if p.reap {
		return sandboxReaper(p, argv, env)
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

// Subreaper settings.
const (
	// reapGrace is how long what a finished command left running gets
	// between SIGTERM and SIGKILL: the server's killGrace.
	reapGrace = killGrace
	// reapPoll is how often the subreaper looks whether the processes it
	// signalled are gone.
	reapPoll = 5 * time.Millisecond
	// reapRounds bounds the subreaper's SIGKILL sweeps of a tree that
	// keeps forking; each sweep kills every descendant it finds.
	reapRounds = 1000
)

// canReap reports whether the sandbox entry can stay the command's parent
// as a child subreaper (Linux 3.4 and later): here, yes; the start-up
// probe finds out.
func canReap() bool { return true }

// sandboxReaper runs the sandbox entry where the namespaces are refused
// (user namespaces to a user other than root; any, in some containers):
// it makes itself a child subreaper, so every process
// the command orphans (a double fork, a setsid daemon) becomes its child,
// starts the plain entry (Landlock, then the shell) in the same process
// group, and stops every descendant it has when
//
//   - the command exits: SIGTERM, reapGrace, SIGKILL, then it exits as
//     the command did;
//   - the server signals the group (a timeout, a cancellation): SIGKILL to
//     each descendant that left the group, at once and again until the
//     command exits; the group itself gets the server's SIGTERM, and
//     after its grace SIGKILL from here with the rest (the server waits
//     reapSlack longer before its own SIGKILL, which would end this
//     process too);
//   - the server dies (its parent-death signal, SIGTERM here): SIGKILL to
//     all of them.
//
// Itself outside Landlock, it cannot be signalled by the command where
// Landlock scopes signals (ABI 6, Linux 6.12). What it cannot cover: its
// own SIGKILL (the server's group SIGKILL, should this process not empty
// the group within reapSlack; the OOM killer; a user), after which what
// is left is orphaned.
func sandboxReaper(p sandboxPolicy, argv []string, env proc.Env) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: become a child subreaper: %v\n", err)
		return exitSandboxFailed
	}
	parent := os.Getppid()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	// Until now the server's Pdeathsig (SIGKILL) held; from now on its
	// death is a signal to stop the tree. The setting is per thread (the
	// one the server's was set on is the first, which this goroutine need
	// not be on): all of them.
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: set the parent-death signal: %v\n", errno)
		return exitSandboxFailed
	}
	if os.Getppid() != parent {
		return exitSandboxFailed // the server is already gone
	}
	p.reap = false
	cmd := exec.Command(env.Exe, append(append([]string{sandboxArg}, p.args()...), argv...)...)
	cmd.Args[0] = serverName
	cmd.Env = env.Environ
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := proc.Start(cmd); err != nil { // the command's shell dies with this process
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: sandbox: start the command: %v\n", err)
		return exitSandboxFailed
	}
	exited := make(chan struct{})
	go func() { // ends when the command's shell exits
		cmd.Wait()
		close(exited)
	}()
	self, group := os.Getpid(), syscall.Getpgrp()
	var sweep <-chan time.Time // ticks once the server has begun to stop the group
	var last <-chan time.Time  // fires at the end of the server's grace
	for {
		select {
		case <-exited:
			if sweep == nil { // not while the server is stopping the group
				stopTree(self, syscall.SIGTERM, reapGrace)
			}
			stopTree(self, syscall.SIGKILL, 0)
			return exitAs(cmd.ProcessState)
		case sig := <-sigs:
			if sig != syscall.SIGTERM {
				continue // the group's; the command's to handle
			}
			if sweep == nil {
				t := time.NewTicker(reapPoll)
				defer t.Stop()
				sweep = t.C
				last = time.After(reapGrace)
			}
		case <-sweep:
		case <-last:
			// Kill the whole tree, the group too, as the server would
			// at this point: its own SIGKILL comes reapSlack later, so
			// that it does not end this process with the group and
			// orphan what was detached meanwhile.
			killTree(self, -1)
			continue
		}
		// The server's death signals this process as each of its threads
		// exits, the first while the process may still be its parent: so
		// each sweep looks again.
		if os.Getppid() != parent {
			killTree(self, -1)
			<-exited
			stopTree(self, syscall.SIGKILL, 0)
			return exitAs(cmd.ProcessState)
		}
		killTree(self, group)
	}
}

// exitAs returns the command's exit status, or dies of the signal that
// killed it (without a core file), so the server reports it as before.
func exitAs(st *os.ProcessState) int {
	ws, _ := st.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	signal.Reset(ws.Signal())
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	_ = syscall.Kill(os.Getpid(), ws.Signal())
	return 128 + int(ws.Signal())
}

// stopTree sends sig to every live descendant of self, then waits up to
// grace (zero: SIGKILL sweeps until none is left, bounded by reapRounds)
// for them to be gone, collecting the orphans handed to self.
func stopTree(self int, sig syscall.Signal, grace time.Duration) {
	if grace == 0 {
		for range reapRounds {
			reapOrphans()
			if len(descendants(self, -1)) == 0 {
				return
			}
			killTree(self, -1)
			time.Sleep(reapPoll)
		}
		return
	}
	for _, pid := range descendants(self, -1) {
		_ = syscall.Kill(pid, sig)
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(reapPoll) {
		reapOrphans()
		if len(descendants(self, -1)) == 0 {
			return
		}
	}
}

// killTree sends SIGKILL to every live descendant of self outside process
// group skip (-1: to all of them).
func killTree(self, skip int) {
	for _, pid := range descendants(self, skip) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// reapOrphans collects every exited child of this process, without
// blocking. Called only once the command's shell has been waited for, or
// it would take that status.
func reapOrphans() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}

// descendants lists the live (not zombie) processes below self in /proc,
// leaving out those of process group skip.
func descendants(self, skip int) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	type entry struct{ ppid, pgrp int }
	procs := map[int]entry{}
	children := map[int][]int{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(string(b[:i]))[0])
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		procs[pid] = entry{ppid, pgrp}
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := children[self]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		queue = append(queue, children[pid]...)
		if procs[pid].pgrp != skip {
			out = append(out, pid)
		}
	}
	return out
}
