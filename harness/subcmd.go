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
	spec.initWait = subInitTimeout
	log := slog.New(slog.NewTextHandler(env.Err(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := startAgent(ctx, spec, log)
	if err != nil {
		return fail(err)
	}
	defer a.kill()
	var init struct {
		Info        *acp.Implementation `json:"info"` // ACP v2
		AgentInfo   *acp.Implementation `json:"agentInfo"`
		ServerInfo  *acp.Implementation `json:"serverInfo"`
		AuthMethods []json.RawMessage   `json:"authMethods"`
	}
	json.Unmarshal(a.initRaw, &init)
	info := init.AgentInfo
	if a.protocol >= 2 && init.Info != nil {
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
			ConfigOptions []map[string]any `json:"configOptions"`
			Models        json.RawMessage  `json:"models"`
		}
		cctx, cancel := context.WithTimeout(ctx, subInitTimeout)
		defer cancel()
		if err := a.call(cctx, acp.MethodSessionNew, map[string]any{"cwd": cwd, "mcpServers": []any{}}, &res); err != nil {
			return fail(fmt.Errorf("session/new: %w", err))
		}
		stable := []map[string]any{}
		for _, o := range res.ConfigOptions {
			if o["category"] == "model" {
				stable = append(stable, o)
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
		for _, o := range stable {
			fmt.Fprintf(out, "config option %v (current %v)\n", o["id"], o["currentValue"])
			if opts, ok := o["options"].([]any); ok {
				for _, v := range opts {
					if m, ok := v.(map[string]any); ok {
						fmt.Fprintf(out, "  %v\t%v\n", m["value"], m["name"])
					}
				}
			}
		}
		if unstable != nil {
			var m struct {
				Current   string `json:"currentModelId"`
				Available []struct {
					ID   string `json:"modelId"`
					Name string `json:"name"`
				} `json:"availableModels"`
			}
			json.Unmarshal(res.Models, &m)
			fmt.Fprintf(out, "models (current %s):\n", m.Current)
			for _, am := range m.Available {
				fmt.Fprintf(out, "  %s\t%s\n", am.ID, am.Name)
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
			var am struct{ ID, Name string }
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
			var am struct{ ID string }
			json.Unmarshal(m, &am)
			found = found || am.ID == *method
		}
		if !found {
			return fail(fmt.Errorf("agent does not offer auth method %q", *method))
		}
		actx, cancel := context.WithTimeout(ctx, authWaitMax)
		defer cancel()
		if err := a.call(actx, "authenticate", map[string]any{"methodId": *method}, nil); err != nil {
			return fail(err)
		}
		fmt.Fprintln(out, "authenticated")
		return 0
	}
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
