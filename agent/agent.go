// Package agent is buzz-agent: an Agent Client Protocol (ACP v1) agent on
// stdio that loops between a language model and MCP tools.
//
// Synopsis:
//
//	buzz-agent
//
// Description:
//
// The agent reads newline-delimited JSON-RPC from stdin and writes only
// JSON-RPC to stdout; logs go to stderr. A client opens sessions
// (session/new, with a working directory and the MCP servers to attach,
// stdio or Streamable HTTP) and sends prompts (session/prompt). For each
// prompt the agent calls the model, streams its text back as
// agent_message_chunk (reasoning as agent_thought_chunk), runs the tool
// calls it asks for through MCP (tool_call / tool_call_update), feeds the
// results back, and repeats until the model stops asking for tools, a round
// cap is hit or the client cancels (session/cancel).
//
// Everything that comes from a model, a tool or a client is size-bounded:
// frames, prompts, tool results (middle-elided), history (whole oldest turns
// evicted, or the session summarised and restarted near the context
// window). Hooks (_Stop, _PostCompact) and the reply guard are advisory and
// bounded: they never trap a turn.
//
// Configuration is environment only, read once at start (see Options and
// the BUZZ_AGENT_* names in options.go). A configuration error exits 2
// before reading stdin.
//
// Sessions persist in BUZZ_AGENT_STATE_DIR (state.go), one file each,
// saved before every turn's answer, and come back through session/load,
// session/resume and session/list (load.go).
//
// It does not ask the client for permissions, use client file-system or
// terminal methods, or run a browser OAuth login (Databricks: set
// DATABRICKS_TOKEN; remote MCP servers: client credentials only).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"buzzbox/internal/acp"
	"buzzbox/internal/caroots"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
)

// Main runs buzz-agent and returns its exit status: 0 after stdin EOF or a
// signal, 1 when the connection broke (a read error), 2 for a configuration
// error. An oversize or non-UTF-8 frame is answered (id null) and skipped:
// one bad line must not end every session on the connection.
func Main(ctx context.Context, args []string, env proc.Env) int {
	_ = proc.NoDump() // the provider key is in this environment; best effort
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := newLogger(env)
	if len(args) > 0 {
		if args[0] == "--help" || args[0] == "-h" {
			fmt.Fprint(env.Out(), usage)
			return 0
		}
		if args[0] == "auth" {
			fmt.Fprintln(env.Err(), "buzz-agent: auth: browser OAuth login is not part of this build; set DATABRICKS_TOKEN to a personal access token")
			return 2
		}
		fmt.Fprintf(env.Err(), "buzz-agent: unexpected argument %q; the agent takes no arguments and is configured through BUZZ_AGENT_* variables\nhint: run 'buzz-agent --help' for the variables and an example\n", args[0])
		return 2
	}
	opts, err := parseOptions(env)
	if err != nil {
		fmt.Fprintf(env.Err(), "buzz-agent: %v\n", err)
		return 2
	}
	if err := caroots.Install(env.Getenv); err != nil {
		log.Warn("embedded CA roots unavailable; HTTPS relies on the system's roots", "err", err)
	}
	a := newAgent(opts, env, log, version())
	conn := jsonrpc.NewConn(env.In(), env.Out(), jsonrpc.Options{MaxLineBytes: opts.MaxLineBytes, Logger: log,
		LineHint: fmt.Sprintf("set %s (now %d) or send smaller frames", envMaxLineBytes, opts.MaxLineBytes),
		BeforeRequest: func(req *jsonrpc.Request) {
			if req.Method == acp.MethodSessionPrompt {
				a.notePrompt(req.Params)
			}
		}})
	log.Info("buzz-agent ready", "provider", string(opts.Provider), "model", opts.Model, "stream", opts.Stream)
	err = a.serve(ctx, conn)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	}
	log.Error("connection ended", "err", err)
	return 1
}

// usage is the --help text.
const usage = `usage: buzz-agent

Serves the Agent Client Protocol (v1) on stdin/stdout. Configuration is
environment only:

  BUZZ_AGENT_PROVIDER       anthropic | openai | openrouter | databricks | databricks_v2 (required)
  ANTHROPIC_API_KEY, ANTHROPIC_MODEL, ANTHROPIC_BASE_URL, ANTHROPIC_API_VERSION
  OPENAI_COMPAT_API_KEY, OPENAI_COMPAT_MODEL, OPENAI_COMPAT_BASE_URL, OPENAI_COMPAT_API (auto|chat|responses)
  OPENROUTER_API_KEY, OPENROUTER_MODEL, OPENROUTER_BASE_URL
  DATABRICKS_HOST, DATABRICKS_MODEL, DATABRICKS_TOKEN (required: no browser login)
  BUZZ_AGENT_MODEL          overrides the provider's model variable
  BUZZ_AGENT_STREAM         1 (default) streams replies; 0 makes one plain POST per round
  BUZZ_AGENT_SYSTEM_PROMPT[_FILE], BUZZ_AGENT_MAX_ROUNDS, BUZZ_AGENT_MAX_OUTPUT_TOKENS,
  BUZZ_AGENT_MAX_CONTEXT_TOKENS, BUZZ_AGENT_MAX_HANDOFFS,
  BUZZ_AGENT_LLM_TIMEOUT_SECS (240: seconds without progress; keep-alives do not count),
  BUZZ_AGENT_LLM_MAX_CALL_SECS (600: wall-clock cap of one LLM call, retries included),
  BUZZ_AGENT_TOOL_TIMEOUT_SECS, BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS, BUZZ_AGENT_MCP_RESTART_*,
  BUZZ_AGENT_MAX_PARALLEL_TOOLS, BUZZ_AGENT_MAX_SESSIONS, BUZZ_AGENT_MAX_LINE_BYTES,
  BUZZ_AGENT_MAX_HISTORY_BYTES, BUZZ_AGENT_MAX_TOOL_RESULT_TEXT_BYTES, BUZZ_AGENT_HOOK_TIMEOUT_MS,
  BUZZ_AGENT_STOP_MAX_REJECTIONS, BUZZ_AGENT_REQUIRE_REPLY, MCP_HOOK_SERVERS, BUZZ_AGENT_NO_HINTS,
  BUZZ_AGENT_THINKING_EFFORT, BUZZ_AGENT_PROMPT_CACHING, BUZZ_AGENT_LOG_LEVEL, BUZZ_AGENT_LOG_FORMAT
  BUZZ_AGENT_STATE_DIR      absolute dir for sessions and MCP OAuth clients/tokens
                            (default $XDG_STATE_HOME/buzzbox/agent)

Flags:
  --help                  print this help and exit

Example:
  # run by an ACP client (buzz-acp, an editor); it reads JSON-RPC lines on stdin
  BUZZ_AGENT_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-… ANTHROPIC_MODEL=claude-sonnet-4-5 buzz-acp --agent-command buzz-agent
`

func newLogger(env proc.Env) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(env.Getenv(envLogLevel)) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	hopts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(env.Getenv(envLogFormat), "json") {
		return slog.New(slog.NewJSONHandler(env.Err(), hopts))
	}
	return slog.New(slog.NewTextHandler(env.Err(), hopts))
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
