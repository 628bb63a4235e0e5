package harness

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"buzzbox/harness/acpclient"

	"buzzbox/internal/acp"
	"buzzbox/internal/proc"
	"buzzbox/internal/usage"
	"buzzbox/internal/workspace"
)

// Helper sub-commands (spec §2.1): they talk to the agent only.
const (
	subInitTimeout = 10 * time.Second
	authWaitMax    = 10 * time.Minute
)

// isSubcommand reports whether args select a helper sub-command.
func isSubcommand(args []string) bool {
	return len(args) > 0 && (args[0] == "models" || args[0] == "auth-methods" || args[0] == "authenticate")
}

// subcommand runs models, auth-methods or authenticate; errors exit 1.
func subcommand(ctx context.Context, args []string, env proc.Env) int {
	name := args[0]
	fs := flag.NewFlagSet("buzz-acp "+name, flag.ContinueOnError)
	cmd := fs.String("agent-command", envOr(env, workspace.EnvACPAgentCommand, "buzz-agent"), "ACP agent `program`")
	argList := fs.String("agent-args", env.Getenv(workspace.EnvACPAgentArgs), "agent arguments, comma-separated")
	asJSON := fs.Bool("json", false, "print JSON")
	method := fs.String("method-id", "", "auth method to run (authenticate)")
	page := &usage.Page{Name: "buzz-acp " + name, Flags: fs,
		FlagEnv:      map[string]string{"agent-command": workspace.EnvACPAgentCommand, "agent-args": workspace.EnvACPAgentArgs},
		Placeholders: map[string]string{"agent-args": "A,B", "method-id": "ID"},
		About: "Starts the ACP agent once and asks it: models lists the models it offers,\n" +
			"auth-methods its login methods, authenticate runs one of them.",
		Examples: []string{"buzz-acp models --agent-command goose --json", "buzz-acp authenticate --method-id oauth --agent-command claude-agent-acp"}}
	if code, done := page.Parse(args[1:], true, env.Out(), env.Err()); done {
		if code != usage.ExitOK {
			return 1 // the helper sub-commands' errors exit 1 (spec §2.1)
		}
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Err(), "buzz-acp %s: %v\n", name, err)
		return 1
	}
	if strings.TrimSpace(*cmd) == "" {
		return fail(fmt.Errorf("agent command is blank"))
	}
	_, given := env.LookupEnv(workspace.EnvACPAgentArgs)
	given = given || flagGiven(fs, "agent-args")
	cfg := &Config{AgentCommand: strings.TrimSpace(*cmd)}
	cfg.AgentIdentity = CommandIdentity(cfg.AgentCommand)
	cfg.AgentArgs = NormalizeArgs(cfg.AgentIdentity, strings.Split(*argList, ","), given)
	spec := agentSpecFor(cfg, env, version)
	spec.InitWait = subInitTimeout
	log := slog.New(slog.NewTextHandler(env.Err(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := acpclient.Start(ctx, spec, log)
	if err != nil {
		return fail(err)
	}
	defer a.Kill()
	var init acp.InitializeReply
	json.Unmarshal(a.InitReply(), &init)
	info := init.AgentInfo
	if a.Protocol() >= 2 && init.Info != nil {
		info = init.Info
	}
	if info == nil {
		info = init.ServerInfo
	}
	if info == nil {
		info = &acp.Implementation{Name: "unknown"}
	}
	out := env.Out()
	switch name {
	case "models":
		cwd := env.Dir
		if cwd == "" {
			cwd = "/"
		}
		var res struct {
			// Printed as the agent sent them with --json.
			ConfigOptions []json.RawMessage `json:"configOptions"`
			Models        json.RawMessage   `json:"models"`
		}
		cctx, cancel := context.WithTimeout(ctx, subInitTimeout)
		defer cancel()
		if err := a.Call(cctx, acp.MethodSessionNew, acp.NewSessionRequest{Cwd: cwd, MCPServers: []acp.StdioServer{}}, &res); err != nil {
			return fail(fmt.Errorf("session/new: %w", err))
		}
		stable := []json.RawMessage{}
		var opts []acp.ConfigOption
		for _, raw := range res.ConfigOptions {
			var o acp.ConfigOption
			json.Unmarshal(raw, &o) // best effort: a field of another type stays empty
			if o.Category == "model" {
				stable = append(stable, raw)
				opts = append(opts, o)
			}
		}
		var unstable any
		if len(res.Models) > 0 && string(res.Models) != "null" {
			unstable = res.Models
		}
		if *asJSON {
			return printJSON(out, map[string]any{"agent": map[string]any{"name": info.Name, "version": info.Version},
				"stable": map[string]any{"configOptions": stable}, "unstable": unstable})
		}
		fmt.Fprintf(out, "agent: %s %s\n", info.Name, info.Version)
		for _, o := range opts {
			fmt.Fprintf(out, "config option %s (current %s)\n", orNil(o.ID), currentValue(o.CurrentValue))
			for _, v := range o.Options {
				fmt.Fprintf(out, "  %s\t%s\n", orNil(v.Value), orNil(v.Name))
			}
		}
		if unstable != nil {
			var m acp.ModelInfo
			json.Unmarshal(res.Models, &m)
			fmt.Fprintf(out, "models (current %s):\n", m.CurrentModelID)
			for _, am := range m.AvailableModels {
				fmt.Fprintf(out, "  %s\t%s\n", am.ModelID, am.Name)
			}
		}
		return 0
	case "auth-methods":
		if *asJSON {
			methods := init.AuthMethods
			if methods == nil {
				methods = []json.RawMessage{}
			}
			return printJSON(out, map[string]any{"methods": methods})
		}
		for _, m := range init.AuthMethods {
			var am acp.AuthMethod
			json.Unmarshal(m, &am)
			fmt.Fprintf(out, "%s\t%s\n", am.ID, am.Name)
		}
		return 0
	default: // authenticate
		if *method == "" {
			return fail(fmt.Errorf("--method-id is required"))
		}
		found := false
		for _, m := range init.AuthMethods {
			var am acp.AuthMethod
			json.Unmarshal(m, &am)
			found = found || am.ID == *method
		}
		if !found {
			return fail(fmt.Errorf("agent does not offer auth method %q", *method))
		}
		actx, cancel := context.WithTimeout(ctx, authWaitMax)
		defer cancel()
		if err := a.Call(actx, acp.MethodAuthenticate, acp.AuthenticateParams{MethodID: *method}, nil); err != nil {
			return fail(err)
		}
		fmt.Fprintln(out, "authenticated")
		return 0
	}
}

// currentValue prints a config option's currentValue as the text form
// always has: a string bare, anything else as JSON, "<nil>" when absent.
func currentValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "<nil>"
	}
	return string(raw)
}

// orNil is s, or "<nil>" for a field the agent left out, as the text form
// has always printed it.
func orNil(s string) string {
	if s == "" {
		return "<nil>"
	}
	return s
}

func envOr(env proc.Env, key, def string) string {
	if v, ok := env.LookupEnv(key); ok {
		return v
	}
	return def
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func printJSON(w io.Writer, v any) int {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(w, string(b))
	return 0
}
