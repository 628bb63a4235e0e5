package devmcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"buzzbox/internal/proc"
	"buzzbox/internal/statedir"
)

// Shell sandbox settings.
const (
	// envShellSandbox picks the shell tool's sandbox: landlock (the
	// default where the kernel has it) or off.
	envShellSandbox = "BUZZ_SHELL_SANDBOX"
	// envShellWriteDirs lists, with the platform's list separator, more
	// directories shell commands may write.
	envShellWriteDirs = "BUZZ_SHELL_WRITE_DIRS"
	// sandboxArg is buzz-dev-mcp's hidden first argument: the rest of the
	// command line is a sandbox policy, "--", and the command to exec
	// under it. It is how the server starts a sandboxed shell, since Go
	// runs no code between fork and exec.
	sandboxArg = "--sandbox-exec"
	// ownProcArg, right after sandboxArg, says the sandbox entry runs in
	// new PID and mount namespaces and mounts its own /proc.
	ownProcArg = "--own-proc"
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
// other buzz-dev-mcp sessions and shims (with their keys) and buzz-acp
// key dirs.
func hiddenTempPrefixes() []string {
	return []string{"buzz-dev-mcp-", "buzz-acp-"}
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
	switch v := strings.ToLower(strings.TrimSpace(env.Getenv(envShellSandbox))); v {
	case "", sandboxLandlock, sandboxOff:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: use landlock or off", envShellSandbox, v)
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
	for _, d := range filepath.SplitList(env.Getenv(envShellWriteDirs)) {
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
		"they may read the rest of the file system except buzzbox's state, the owner's credentials (~/.ssh, ~/.aws, ~/.gnupg and the like) and other sessions; they cannot read other processes' memory or environment. " +
		"A 'Permission denied' on such a path is the sandbox, not a bug to work around."
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
		s.log.Info("shell sandbox off (" + envShellSandbox + "=off)")
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
			return fmt.Errorf("%s=landlock: %s; set %s=off to run shell commands unsandboxed", envShellSandbox, why, envShellSandbox)
		}
		s.log.Warn("shell commands run unsandboxed: "+why, "hint", "set "+envShellSandbox+"=off to silence this")
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
			s.log.Warn("the working directory holds a place the shell sandbox hides; commands cannot create files at its top level: run in a project directory, or set "+envShellSandbox+"=off", "cwd", s.cwd, "hidden", h)
			break
		}
	}
	s.sandbox = append([]string{env.Exe, sandboxArg}, p.args()...)
	s.ownProc.Store(canOwnProc())
	s.log.Debug("shell sandbox", "write", strings.Join(p.write, ":"), "hide", strings.Join(p.hide, ":"))
	return nil
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
