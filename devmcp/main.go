package devmcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// Environment knobs of the server itself.
const (
	envLogLevel  = "BUZZ_DEV_MCP_LOG"        // debug, info, warn (default), error
	envLogFormat = "BUZZ_DEV_MCP_LOG_FORMAT" // text (default) or json
)

const usage = `usage: buzz-dev-mcp

Serves the developer-tools MCP server on stdin/stdout until stdin closes.
Tools: shell, read_file, str_replace, view_image, todo (+ hooks _Stop, _PostCompact).

Environment:
  BUZZ_SHELL               shell for the shell tool (default: bash, else sh)
  BUZZ_DEV_MCP_LOG         log level on stderr: debug, info, warn, error
  BUZZ_DEV_MCP_LOG_FORMAT  text or json
  BUZZ_RELAY_URL, BUZZ_PRIVATE_KEY  relay for the buzz CLI and media reads
  BUZZ_AUTH_TAG            NIP-OA attestation the messaging tools sign with
  BUZZ_TIMEOUT_SECS, BUZZ_CONNECT_TIMEOUT_SECS  the messaging tools' relay timeouts
  NOSTR_PRIVATE_KEY_FILE   0600 file with the agent's key (git, buzz CLI, media
                           reads); preferred over NOSTR_PRIVATE_KEY, which /proc shows
  BUZZ_SHELL_PASS_ENV      NAME,... secret-looking variables shell commands may see
  BUZZ_SHELL_SANDBOX       landlock (default where the kernel has it) or off
  BUZZ_SHELL_WRITE_DIRS    more directories sandboxed commands may write (PATH-style list)

Flags:
  --help                   print this help and exit

Example:
  # started by an MCP client (buzz-agent, an editor) that speaks MCP on its stdio
  BUZZ_ACP_MCP_COMMAND=buzz-dev-mcp buzz-acp
  echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | buzz-dev-mcp
`

// terminatingSignals are the signals whose default action ends the
// process. Each one is caught, so that the server removes its shim dir
// (with the key file) and its session dir before it exits.
func terminatingSignals() []os.Signal {
	return []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}
}

// Main runs buzz-dev-mcp. It returns when stdin reaches EOF or on SIGHUP,
// SIGINT, SIGTERM or SIGQUIT, after removing its temp dirs.
func Main(ctx context.Context, args []string, env proc.Env) int {
	if len(args) > 0 && args[0] == sandboxArg {
		return sandboxExec(args[1:], env)
	}
	_ = proc.NoDump() // the agent key is in this environment; best effort
	for _, a := range args {
		switch a {
		case "-h", "--help", "help":
			io.WriteString(env.Out(), usage)
			return 0
		default:
			fmt.Fprintf(env.Err(), "buzz-dev-mcp: unexpected argument %q; the server takes no arguments\nhint: run 'buzz-dev-mcp --help' for the environment and an example\n", a)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(ctx, terminatingSignals()...)
	defer stop()
	// A closed stdout must not kill the process (SIGPIPE on fd 1) before it
	// cleans up; writes then fail instead. Notify, unlike Ignore, is not
	// inherited by shell children, whose pipelines need the default.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	if _, set := env.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	log := newLogger(env)
	env, keyDir, err := takeKeyFile(env, log)
	if err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: start: %v\n", err)
		return 2
	}
	s, err := newServer(env, log, options{keyDir: keyDir})
	if err != nil {
		fmt.Fprintf(env.Err(), "buzz-dev-mcp: start: %v\n", err)
		return 2
	}
	defer s.close()
	if err := s.serve(ctx, env.In(), env.Out()); err != nil && ctx.Err() == nil {
		log.Error("serve ended", "err", err)
		return 1
	}
	return 0
}

// newLogger builds the stderr logger from the environment. The default
// level is warn: MCP hosts (Claude Code, Codex, the Inspector) show or file
// whatever a server writes to stderr as errors, so routine lines (start-up,
// each client, each cancelled call) wait for BUZZ_DEV_MCP_LOG=info.
func newLogger(env proc.Env) *slog.Logger {
	level := slog.LevelWarn
	switch strings.ToLower(env.Getenv(envLogLevel)) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(env.Err(), opts)
	if strings.EqualFold(env.Getenv(envLogFormat), "json") {
		h = slog.NewJSONHandler(env.Err(), opts)
	}
	return slog.New(h).With("identity", serverName)
}

// newServer runs the start-up steps: record the working directory, install
// the session shim, make the session dir, resolve the shell, build the
// instructions. A failure aborts start-up.
func newServer(env proc.Env, log *slog.Logger, opts options) (*Server, error) {
	cwd := env.Dir
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		cwd = wd
	}
	s := &Server{log: log, cwd: cwd, version: buildVersion(), opts: opts.withDefaults()}

	sh, err := installShim(env, log)
	if err != nil {
		return nil, err
	}
	var dropped []string
	s.childEnv, dropped = scrubEnv(sh.environ, env.Getenv(envShellPassEnv))
	if len(dropped) > 0 {
		log.Info("secret-looking variables kept from shell commands; name them in "+envShellPassEnv+" to pass them", "vars", strings.Join(dropped, ","))
	}
	s.closers = append(s.closers, sh.close)

	tmp, err := env.TempDir()
	if err != nil {
		s.close()
		return nil, err
	}
	s.sess, err = newSession(tmp)
	if err != nil {
		s.close()
		return nil, err
	}
	s.closers = append(s.closers, s.sess.close)

	if err := s.setSandbox(env, sh.dir, tmp); err != nil {
		s.close()
		return nil, err
	}

	buzzShell, _ := env.LookupEnv(envShell)
	s.sh = resolveShell(buzzShell, proc.Env{Environ: s.childEnv}.Getenv("PATH"), cwd)
	if s.sh.err != nil {
		log.Warn("shell tool unavailable", "err", s.sh.err)
	}
	_, hasRelay := env.LookupEnv(workspace.EnvRelayURL)
	_, hasKey := env.LookupEnv(workspace.EnvPrivateKey)
	if _, ok := env.LookupEnv(workspace.EnvNostrPrivateKey); ok && !hasKey {
		hasKey = true // the buzz CLI gets it as BUZZ_KEYFILE, the shim's key file
	}
	s.bootstrap = bootstrapText(cwd, s.sh, hasRelay && hasKey)
	s.ws = newWorkspace(env, tmp, log)
	s.closers = append(s.closers, s.ws.close)
	if s.ws.configured() {
		s.bootstrap += workspaceNote + "\n"
	}
	if s.sandbox != nil {
		s.bootstrap += "\n" + sandboxNote(sandboxLandlock) + "\n"
	}
	s.media = newMediaAuth(env)
	s.indexTools()
	log.Info("started", "cwd", cwd, "shell", s.sh.path, "session", s.sess.dir, "sandbox", s.sandboxName())
	return s, nil
}

// serve speaks MCP on r and w until r reaches EOF or ctx ends. Malformed or
// over-long frames are answered and skipped; the server keeps serving.
func (s *Server) serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.conn = jsonrpc.NewConn(r, w, jsonrpc.Options{MaxLineBytes: maxLineBytes, OversizeFatal: false, Logger: s.log})
	return s.conn.Serve(ctx, s.handle)
}

// close removes what start-up created, newest first.
func (s *Server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			s.log.Warn("cleanup failed", "err", err)
		}
	}
	s.closers = nil
}
