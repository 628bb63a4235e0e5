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
// It does not persist sessions, load them back, ask the client for
// permissions, use client file-system or terminal methods, or run the
// browser OAuth login for Databricks (set DATABRICKS_TOKEN instead).
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

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
)

// Main runs buzz-agent and returns its exit status: 0 after stdin EOF or a
// signal, 1 when the connection broke (oversize or non-UTF-8 frame, read
// error), 2 for a configuration error.
func Main(ctx context.Context, args []string, env proc.Env) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := newLogger(env)
	if len(args) > 0 {
		if args[0] == "auth" {
			fmt.Fprintln(env.Err(), "buzz-agent: auth: browser OAuth login is not part of this build; set DATABRICKS_TOKEN to a personal access token")
			return 2
		}
		fmt.Fprintf(env.Err(), "buzz-agent: unexpected argument %q; the agent takes no arguments and is configured through BUZZ_AGENT_* variables\n", args[0])
		return 2
	}
	opts, err := parseOptions(env)
	if err != nil {
		log.Error(err.Error())
		fmt.Fprintf(env.Err(), "buzz-agent: %v\n", err)
		return 2
	}
	a := newAgent(opts, env, log, version())
	conn := jsonrpc.NewConn(env.In(), env.Out(), jsonrpc.Options{MaxLineBytes: opts.MaxLineBytes, OversizeFatal: true, Logger: log})
	log.Info("buzz-agent ready", "provider", string(opts.Provider), "model", opts.Model, "stream", opts.Stream)
	err = a.serve(ctx, conn)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	}
	log.Error("connection ended", "err", err)
	return 1
}

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
