package devmcp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"buzzbox/internal/proc"
	"buzzbox/internal/procgroup"
	"buzzbox/internal/statedir"
	"buzzbox/internal/workspace"
)

// Shell sandbox settings.
const (
	// sandboxArg is buzz-dev-mcp's hidden first argument: the rest of the
	// command line is a sandbox policy, "--", and the command to exec
	// under it. It is how the server starts a sandboxed shell, since Go
	// runs no code between fork and exec.
	sandboxArg = "--sandbox-exec"
	// ownProcArg, right after sandboxArg, says the sandbox entry runs in
	// new PID and mount namespaces and mounts its own /proc.
	ownProcArg = "--own-proc"
	// userNSArg, right after sandboxArg, says the sandbox entry starts the
	// command as the first process of new user, PID, mount and UTS
	// namespaces (with ownProcArg) and stays its parent: how a user other
	// than root gets them (see sandboxOuter).
	userNSArg = "--user-ns"
	// reapArg, right after sandboxArg, says the sandbox entry stays the
	// command's parent as a child subreaper and stops every process the
	// command leaves (see sandboxReaper): where the namespaces are refused.
	reapArg = "--reap"
)

const (
	sandboxOff      = "off"
	sandboxLandlock = "landlock"
)

// exitSandboxFailed is the exit status when the sandbox cannot be applied
// or the shell not started under it, as a shell reports a command it
// found but could not run.
const exitSandboxFailed = 126

// hiddenHomeEntries are the owner's credentials under $HOME that a shell
// command may not read even where reading is otherwise allowed: ssh and
// gpg keys, cloud and registry credentials.
func hiddenHomeEntries() []string {
	return []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube",
		".netrc", ".git-credentials", ".npmrc", ".pypirc", ".password-store", ".local/share/keyrings"}
}

// hiddenTempPrefixes name other processes' private dirs in the temp dir:
// other buzz-dev-mcp sessions and shims (with their keys).
func hiddenTempPrefixes() []string {
	return []string{"buzz-dev-mcp-"}
}

// sandboxPolicy is what a sandboxed shell may touch. Reading is allowed
// everywhere except under hide and in entries of a directory whose names
// start with one of hidePrefix's base names (hidePrefix holds dir/prefix);
// read grants read below hidden places; write grants read and write.
type sandboxPolicy struct {
	read, write, hide, hidePrefix []string
	// ownProc: the process is the first of new PID and mount namespaces
	// and mounts a /proc of its own, showing only the sandbox's processes.
	ownProc bool
	// userNS: the process starts the command's first process in new user,
	// PID, mount and UTS namespaces (where it runs with ownProc) and
	// waits for it.
	userNS bool
	// reap: the process stays the command's parent as a child subreaper.
	reap bool
}

// args renders p as the sandbox entry's command line, "--" included.
func (p sandboxPolicy) args() []string {
	var a []string
	for _, s := range []struct {
		flag  string
		paths []string
	}{{"--ro", p.read}, {"--rw", p.write}, {"--hide", p.hide}, {"--hide-prefix", p.hidePrefix}} {
		for _, path := range s.paths {
			a = append(a, s.flag, path)
		}
	}
	return append(a, "--")
}

// parseSandboxArgs reads what args renders: the policy and the command.
func parseSandboxArgs(args []string) (sandboxPolicy, []string, error) {
	var p sandboxPolicy
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			if i+1 >= len(args) {
				return p, nil, errors.New("no command after --")
			}
			return p, args[i+1:], nil
		}
		if args[i] == ownProcArg {
			p.ownProc = true
			continue
		}
		if args[i] == userNSArg {
			p.userNS = true
			continue
		}
		if args[i] == reapArg {
			p.reap = true
			continue
		}
		if i+1 >= len(args) {
			return p, nil, fmt.Errorf("%s needs a path", args[i])
		}
		path := args[i+1]
		if !filepath.IsAbs(path) {
			return p, nil, fmt.Errorf("%s %q: path is not absolute", args[i], path)
		}
		switch args[i] {
		case "--ro":
			p.read = append(p.read, path)
		case "--rw":
			p.write = append(p.write, path)
		case "--hide":
			p.hide = append(p.hide, path)
		case "--hide-prefix":
			p.hidePrefix = append(p.hidePrefix, path)
		default:
			return p, nil, fmt.Errorf("unknown option %q", args[i])
		}
		i++
	}
	return p, nil, errors.New("no -- before the command")
}

// sandboxMode reads BUZZ_SHELL_SANDBOX: "" (the default), off or landlock.
func sandboxMode(env proc.Env) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(env.Getenv(workspace.EnvShellSandbox))); v {
	case "", sandboxLandlock, sandboxOff:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: use landlock or off", workspace.EnvShellSandbox, v)
	}
}

// newSandboxPolicy builds the shell's policy: write to the working tree,
// the session dir (the shell's TMPDIR is inside it), the user's cache dir
// and the Go module cache, and BUZZ_SHELL_WRITE_DIRS; read the shim dir;
// hide buzzbox's state root, the dir of the handed-over key file, the
// owner's credentials under $HOME and other sessions in the temp dir.
func newSandboxPolicy(env proc.Env, cwd, sessionDir, shimDir, keyDir, tempRoot string) sandboxPolicy {
	p := sandboxPolicy{write: []string{cwd, sessionDir}}
	if shimDir != "" {
		p.read = append(p.read, shimDir)
	}
	home := env.Getenv("HOME")
	if d := env.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		p.write = append(p.write, d)
	} else if filepath.IsAbs(home) {
		p.write = append(p.write, filepath.Join(home, ".cache"))
	}
	if d := env.Getenv("GOMODCACHE"); filepath.IsAbs(d) {
		p.write = append(p.write, d)
	} else if d := firstPath(env.Getenv("GOPATH")); filepath.IsAbs(d) {
		p.write = append(p.write, filepath.Join(d, "pkg", "mod"))
	} else if filepath.IsAbs(home) {
		p.write = append(p.write, filepath.Join(home, "go", "pkg", "mod"))
	}
	for _, d := range filepath.SplitList(env.Getenv(workspace.EnvShellWriteDirs)) {
		if filepath.IsAbs(d) {
			p.write = append(p.write, d)
		}
	}
	if root, err := statedir.Root(env.Getenv); err == nil {
		p.hide = append(p.hide, root)
	}
	if keyDir != "" {
		p.hide = append(p.hide, keyDir)
	}
	if filepath.IsAbs(home) {
		for _, e := range hiddenHomeEntries() {
			p.hide = append(p.hide, filepath.Join(home, e))
		}
	}
	for _, pre := range hiddenTempPrefixes() {
		p.hidePrefix = append(p.hidePrefix, filepath.Join(tempRoot, pre))
	}
	return p
}

func firstPath(list string) string {
	if l := filepath.SplitList(list); len(l) > 0 {
		return l[0]
	}
	return ""
}

// sandboxNote is what the shell tool's description and the instructions
// say about the sandbox, or "" when it is off.
func sandboxNote(mode string) string {
	if mode != sandboxLandlock {
		return ""
	}
	return "Commands run in a Landlock sandbox: they may write only the working directory, $TMPDIR (private to this session; /tmp itself is not writable), the cache dirs (~/.cache, the Go module cache) and /dev/null-like devices; " +
		"they may read the rest of the file system except buzzbox's state, the owner's credentials (~/.ssh, ~/.aws, ~/.gnupg and the like) and other sessions; they cannot read other processes' memory or environment, nor signal processes outside the sandbox. " +
		"No process a command starts outlives the call (background jobs, nohup and setsid included), and commands have no root powers (no raw sockets, mounts or device nodes). " +
		"read_file, str_replace and view_image keep to the same places. A 'Permission denied' on such a path is the sandbox, not a bug to work around."
}

// ensureDir makes dir (0700) when missing.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// setSandbox decides, from BUZZ_SHELL_SANDBOX and the kernel, whether
// shells run under Landlock and, if so, builds the command line that
// does it and gives shells a private TMPDIR in the session dir.
func (s *Server) setSandbox(env proc.Env, shimDir, tempRoot string) error {
	mode, err := sandboxMode(env)
	if err != nil {
		return err
	}
	if mode == sandboxOff {
		s.log.Info("shell sandbox off (" + workspace.EnvShellSandbox + "=off)")
		return nil
	}
	why := ""
	switch {
	case landlockABI() == 0:
		why = "this kernel has no Landlock"
	case env.Exe == "":
		why = "the path of this executable is unknown"
	}
	if why != "" {
		if mode == sandboxLandlock {
			return fmt.Errorf("%s=landlock: %s; set %s=off to run shell commands unsandboxed", workspace.EnvShellSandbox, why, workspace.EnvShellSandbox)
		}
		s.log.Warn("shell commands run unsandboxed: "+why, "hint", "set "+workspace.EnvShellSandbox+"=off to silence this")
		return nil
	}
	tmp := filepath.Join(s.sess.dir, "tmp")
	if err := ensureDir(tmp); err != nil {
		return err
	}
	s.childEnv = proc.WithEnv(s.childEnv, "TMPDIR", tmp)
	p := newSandboxPolicy(env, s.cwd, s.sess.dir, shimDir, s.opts.keyDir, tempRoot)
	for _, h := range p.hide {
		if strings.HasPrefix(h, s.cwd+string(filepath.Separator)) {
			s.log.Warn("the working directory holds a place the shell sandbox hides; commands cannot create files at its top level: run in a project directory, or set "+workspace.EnvShellSandbox+"=off", "cwd", s.cwd, "hidden", h)
			break
		}
	}
	s.sandbox = append([]string{env.Exe, sandboxArg}, p.args()...)
	s.fence = newFence(p)
	// Try it once, so that a kernel or container that refuses a part is
	// found now and not by every command.
	root := os.Geteuid() == 0
	if canOwnProc() {
		switch err := s.probeSandbox(nsArg()); {
		case err == nil:
			s.ownProc = true
		case root:
			s.log.Warn("shell sandbox: no namespaces of its own here (PID, mount, UTS): root's commands can read other processes' /proc/PID/environ; a child subreaper stops what a command detaches from its group instead", "err", err)
		default:
			s.log.Warn("shell sandbox: no user namespace of its own here; a child subreaper stops what a command detaches from its group instead", "err", err)
		}
	}
	if !s.ownProc && canReap() {
		if err := s.probeSandbox(reapArg); err != nil {
			s.log.Warn("shell sandbox: no child subreaper either; a process a command detaches from its group (setsid) can outlive the call", "err", err)
		} else {
			s.reaper = true
		}
	}
	if !s.ownProc && !s.reaper {
		if err := s.probeSandbox(""); err != nil {
			if mode == sandboxLandlock {
				return fmt.Errorf("%s=landlock: %w; set %s=off to run shell commands unsandboxed", workspace.EnvShellSandbox, err, workspace.EnvShellSandbox)
			}
			s.log.Warn("shell commands run unsandboxed: the Landlock sandbox failed its start-up check", "err", err, "hint", "set "+workspace.EnvShellSandbox+"=off to silence this")
			s.sandbox, s.fence = nil, nil
			return nil
		}
	}
	s.log.Debug("shell sandbox", "write", strings.Join(p.write, ":"), "hide", strings.Join(p.hide, ":"))
	return nil
}

// sandboxArgv is the sandbox entry's arguments, "--" last: the hidden
// entry, how the command's processes are kept together, and the policy.
func (s *Server) sandboxArgv() []string {
	argv := []string{sandboxArg}
	switch {
	case s.ownProc:
		argv = append(argv, nsArg())
	case s.reaper:
		argv = append(argv, reapArg)
	}
	return append(argv, s.sandbox[2:]...)
}

// reapSlack is how much longer than killGrace the server waits for a
// subreaper entry to empty the group before its own SIGKILL of the group
// would end the subreaper too, orphaning what it had not killed yet: the
// subreaper kills the group itself after killGrace, then sweeps until
// nothing is left, which a command forking as fast as it can may make
// last.
const reapSlack = 5 * time.Second

// termGrace is how long the group gets between the server's SIGTERM and
// its SIGKILL: killGrace, and reapSlack more under a subreaper entry,
// which does the killing itself.
func (s *Server) termGrace() time.Duration {
	if s.reaper {
		return s.opts.killGrace + reapSlack
	}
	return s.opts.killGrace
}

// cancelTerm is the SIGTERM step of a cancelled call's stop: none (the
// group is killed at once), except where a subreaper entry must be given
// the time to stop what the command detached before the group's SIGKILL
// ends it too.
func (s *Server) cancelTerm() time.Duration {
	if s.reaper {
		return s.termGrace()
	}
	return 0
}

// sandboxName is the sandbox in use, for the logs.
func (s *Server) sandboxName() string {
	if s.sandbox != nil {
		return sandboxLandlock
	}
	return sandboxOff
}

// sandboxDescription is the sandbox sentence of the shell tool's
// description, with a leading space, or "".
func (s *Server) sandboxDescription() string {
	if s.sandbox == nil {
		return ""
	}
	return " " + sandboxNote(sandboxLandlock)
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

// fence keeps the file tools (read_file, str_replace, view_image), which
// run in the server itself and not in the sandbox, to what the sandboxed
// shell may reach: nothing hidden, no other process's /proc files, and
// writes only below the sandbox's write dirs.
type fence struct {
	h     *hider
	own   []string // the session's own dirs among hidden siblings
	write []string
}

func newFence(p sandboxPolicy) *fence {
	f := &fence{h: newHider(p.hide, p.hidePrefix)}
	for _, d := range p.write {
		f.write = append(f.write, realPath(d))
	}
	// Granted dirs that sit in a hidden place (the session's shim and
	// session dirs among the temp dir's hidden siblings) stay reachable.
	for _, d := range append(slices.Clip(p.read), p.write...) {
		if r := realPath(d); f.h.under(r) {
			f.own = append(f.own, r)
		}
	}
	return f
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// check refuses a canonical path the sandboxed shell could not reach in
// the same way. A nil fence allows everything (the sandbox is off).
func (f *fence) check(path string, write bool) error {
	if f == nil {
		return nil
	}
	if write && !slices.ContainsFunc(f.write, func(d string) bool { return within(path, d) }) {
		return toolErrorf("%s is outside the places this session may write (the working directory, $TMPDIR, the cache dirs); the shell sandbox allows the same", path)
	}
	if rest, ok := strings.CutPrefix(path, "/proc/"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		return toolErrorf("%s: other processes' /proc files are out of this session's reach", path)
	}
	if slices.ContainsFunc(f.own, func(d string) bool { return within(path, d) }) {
		return nil
	}
	if f.h.under(path) {
		return toolErrorf("%s is hidden from this session (buzzbox's state, the owner's credentials or another session's files)", path)
	}
	return nil
}

// maxProbeOutput bounds what the sandbox's start-up check keeps of its
// output for the log: the executable's one version line, or an error.
const maxProbeOutput = 4 << 10

// probeSandbox runs this executable's --version under the sandbox with
// the entry's flag for keeping the command's processes together (none
// when ""), and reports why that failed.
func (s *Server) probeSandbox(flag string) error {
	exe := s.sandbox[0]
	argv := []string{sandboxArg}
	if flag != "" {
		argv = append(argv, flag)
	}
	argv = append(append(argv, s.sandbox[2:]...), exe, "--version")
	cmd := exec.Command(exe, argv...)
	cmd.Args[0] = serverName
	cmd.Env = s.childEnv
	cmd.Dir = s.cwd
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	procgroup.Set(cmd)
	if flag == ownProcArg {
		setNamespaces(cmd)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sandbox check: %w: %s", err, strings.TrimSpace(out.b.String()))
	}
	return nil
}

// limitedBuffer keeps the first maxProbeOutput bytes written to it.
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxProbeOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
