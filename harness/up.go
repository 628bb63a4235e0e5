package harness

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/relay"
)

// Files `buzzbox up` keeps in its state directory (upStateDir).
const (
	upOwnerKey   = "owner.key"
	upAgentKey   = "agent.key"
	upChannel    = "general.channel"
	upRelayData  = "relay"
	upChannelTag = "general"
	upAgentName  = "agent"
)

// providerVars lists, per BUZZ_AGENT_PROVIDER value, the variables that
// must be set for buzz-agent to reach a model.
func providerVars() map[string][]string {
	return map[string][]string{
		"anthropic":     {"ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"},
		"openai":        {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPAT_MODEL"},
		"openai-compat": {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPAT_MODEL"},
		"openrouter":    {"OPENROUTER_API_KEY", "OPENROUTER_MODEL"},
		"databricks":    {"DATABRICKS_HOST", "DATABRICKS_MODEL"},
		"databricks_v2": {"DATABRICKS_HOST", "DATABRICKS_MODEL"},
		"databricks-v2": {"DATABRICKS_HOST", "DATABRICKS_MODEL"},
	}
}

// checkProvider returns what is missing for buzz-agent, or "" when ready.
func checkProvider(env proc.Env) string {
	p := strings.ToLower(strings.TrimSpace(env.Getenv("BUZZ_AGENT_PROVIDER")))
	if p == "" {
		return "no LLM provider configured: set BUZZ_AGENT_PROVIDER and that provider's key and model, for example\n" +
			"  BUZZ_AGENT_PROVIDER=anthropic  ANTHROPIC_API_KEY=…  ANTHROPIC_MODEL=…\n" +
			"  BUZZ_AGENT_PROVIDER=openai     OPENAI_COMPAT_API_KEY=…  OPENAI_COMPAT_MODEL=…  [OPENAI_COMPAT_BASE_URL=…]\n" +
			"  BUZZ_AGENT_PROVIDER=openrouter OPENROUTER_API_KEY=…  OPENROUTER_MODEL=…\n" +
			"  BUZZ_AGENT_PROVIDER=databricks DATABRICKS_HOST=…  DATABRICKS_MODEL=…  [DATABRICKS_TOKEN=…]"
	}
	vars, ok := providerVars()[p]
	if !ok {
		return "BUZZ_AGENT_PROVIDER=" + p + " is not supported: use anthropic, openai, openrouter, databricks or databricks_v2"
	}
	var missing []string
	for _, v := range vars {
		if strings.TrimSpace(env.Getenv(v)) == "" && !(strings.HasSuffix(v, "_MODEL") && env.Getenv("BUZZ_AGENT_MODEL") != "") {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return "BUZZ_AGENT_PROVIDER=" + p + " needs " + strings.Join(missing, " and ") + " to be set"
	}
	return ""
}

// Up is `buzzbox up`: an embedded relay with data in the workspace's state
// dir (upStateDir), an owner and
// an agent key, a general channel, and the harness driving buzz-agent with
// the buzz-dev-mcp sidecar in the current directory. It prints the buzz
// commands to talk to the agent and runs until Ctrl-C.
func Up(ctx context.Context, args []string, env proc.Env) int {
	_ = proc.NoDump() // holds the owner key and the provider key; best effort
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("buzzbox up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	listen := fs.String("listen", "127.0.0.1:3000", "address the relay and the web client listen on")
	dir := fs.String("dir", "", "where keys and relay data live (default $XDG_STATE_HOME/buzzbox/<workspace>, else ~/.local/state/buzzbox/<workspace>; relative to the working directory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			upUsage(env.Out(), fs)
			return 0
		}
		fmt.Fprintf(env.Err(), "buzzbox up: %v\nhint: run buzzbox up --help for the flags\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Err(), "buzzbox up: unexpected argument %q\nhint: run buzzbox up --help for the flags\n", fs.Arg(0))
		return 2
	}
	if msg := checkProvider(env); msg != "" {
		fmt.Fprintln(env.Err(), "buzzbox up: "+msg)
		return 2
	}
	log := newLogger(env)
	base, err := upStateDir(env, log, *dir)
	if err != nil {
		fmt.Fprintln(env.Err(), err)
		return 1
	}
	if err := up(ctx, env, log, base, *listen, env.Out()); err != nil {
		fmt.Fprintln(env.Err(), err)
		return 1
	}
	return 0
}

// upUsage is `buzzbox up --help`: what up runs, the provider variables,
// the state it keeps and the flags of fs.
func upUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: buzzbox up [--listen ADDR] [--dir DIR]

Runs a whole workspace in one process: an embedded relay that also serves
the web client at http://ADDR/, a #general channel, and an agent
(buzz-agent, with buzz-dev-mcp working in this directory) that answers
when mentioned there. Runs until Ctrl-C.

The agent's model provider comes from the environment:

  BUZZ_AGENT_PROVIDER=anthropic      ANTHROPIC_API_KEY, ANTHROPIC_MODEL [ANTHROPIC_BASE_URL]
  BUZZ_AGENT_PROVIDER=openai         OPENAI_COMPAT_API_KEY, OPENAI_COMPAT_MODEL [OPENAI_COMPAT_BASE_URL]
                                     (any OpenAI-compatible server: vLLM, llama.cpp, Ollama)
  BUZZ_AGENT_PROVIDER=openrouter     OPENROUTER_API_KEY, OPENROUTER_MODEL
  BUZZ_AGENT_PROVIDER=databricks     DATABRICKS_HOST, DATABRICKS_MODEL, DATABRICKS_TOKEN
  BUZZ_AGENT_MODEL                   overrides the provider's *_MODEL

State kept in $XDG_STATE_HOME/buzzbox/<workspace> (else
~/.local/state/buzzbox/<workspace>), outside this directory so that the
agent's shell cannot read your key, or in --dir; created 0700, files 0600,
reused by the next run (a ./.buzz of an earlier version is moved there):

  owner.key        your key (sign in and use the buzz CLI with it)
  agent.key        the agent's key
  general.channel  the id of #general
  relay/           the relay's events

When the model provider refuses the key, does not know the model or cannot
be reached, a notice in the thread says so and names the variable to fix.

Flags:

`)
	metavar := map[string]string{"listen": "ADDR", "dir": "DIR"}
	fs.VisitAll(func(f *flag.Flag) {
		if f.DefValue == "" {
			fmt.Fprintf(w, "  --%s %s\n        %s\n", f.Name, metavar[f.Name], f.Usage)
			return
		}
		fmt.Fprintf(w, "  --%s %s\n        %s (default %q)\n", f.Name, metavar[f.Name], f.Usage, f.DefValue)
	})
	fmt.Fprint(w, "  --help\n        print this and exit\n")
}

// loadOrCreateKey reads a 0600 key file, creating it on first run.
func loadOrCreateKey(path string) (*nostrkey.Secret, bool, error) {
	s, err := nostrkey.ReadFile(path, nostrkey.FileRules{})
	if err == nil {
		return s, false, nil
	}
	if _, statErr := os.Stat(path); statErr == nil {
		return nil, false, fmt.Errorf("buzzbox up: read key %s: %w", path, err)
	}
	s, err = nostrkey.NewSecret()
	if err != nil {
		return nil, false, err
	}
	if err := nostrkey.WriteFile(path, s); err != nil {
		return nil, false, fmt.Errorf("buzzbox up: write key %s: %w", path, err)
	}
	return s, true, nil
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func up(ctx context.Context, env proc.Env, log *slog.Logger, base, listen string, out io.Writer) error {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return fmt.Errorf("buzzbox up: create %s: %w", base, err)
	}
	owner, _, err := loadOrCreateKey(filepath.Join(base, upOwnerKey))
	if err != nil {
		return err
	}
	agent, _, err := loadOrCreateKey(filepath.Join(base, upAgentKey))
	if err != nil {
		return err
	}
	r, err := relay.New(relay.Config{DataDir: filepath.Join(base, upRelayData), Owner: owner.Public().Hex(),
		Allow: []string{agent.Public().Hex()}, Logger: log.With("component", "relay")})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		r.Close()
		return fmt.Errorf("buzzbox up: listen %s: %w (another buzzbox up running? try --listen 127.0.0.1:3001)", listen, err)
	}
	rctx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() { // the relay; ends when stopRelay is called
		defer close(served)
		if err := r.Serve(rctx, ln); err != nil {
			log.Error("relay stopped", "err", err)
		}
	}()
	defer func() {
		stopRelay()
		<-served
		r.Close()
	}()
	wsURL := "ws://" + ln.Addr().String()

	channel, err := ensureGeneral(ctx, wsURL, base, owner, agent, log)
	if err != nil {
		return err
	}

	exe := env.Exe
	buzz := exe + " buzz"
	if p, err := exec.LookPath(filepath.Base(exe)); err == nil && p == exe {
		buzz = filepath.Base(exe) + " buzz"
	}
	httpURL := httpBase(wsURL)
	// The state dir is outside the working tree: name the key by its
	// absolute path unless --dir put it below this directory.
	keyRel := filepath.Join(base, upOwnerKey)
	if r, err := filepath.Rel(env.Dir, keyRel); err == nil && !strings.HasPrefix(r, "..") {
		keyRel = r
	}
	fmt.Fprintf(out, "buzzbox is up. Open the workspace in a browser:\n\n  %s/\n\n", httpURL)
	if skOwner, err := owner.AppendHex(nil); err == nil {
		if tok, err := r.LoginToken(string(skOwner)); err == nil {
			fmt.Fprintf(out, "Or sign in there as the owner with this link (it works once, within 10 minutes):\n\n  %s/#login=%s\n\n", httpURL, tok)
		}
	}
	fmt.Fprintf(out, "Relay %s, channel #%s (%s), agent %s\n\n", wsURL, upChannelTag, channel, agent.Public().Npub())
	fmt.Fprintf(out, "Or talk to the agent from another terminal, in this directory:\n\n")
	fmt.Fprintf(out, "  BUZZ_RELAY_URL=%s BUZZ_KEYFILE=%s %s messages send --channel %s --mention %s --content '@%s what is in this directory?'\n\n",
		httpURL, keyRel, buzz, channel, agent.Public().Hex(), upAgentName)
	fmt.Fprintf(out, "Read the replies:\n\n")
	fmt.Fprintf(out, "  BUZZ_RELAY_URL=%s BUZZ_KEYFILE=%s %s --format compact messages get --channel %s\n\n", httpURL, keyRel, buzz, channel)
	fmt.Fprintf(out, "Press Ctrl-C to stop.\n")

	skHex, err := agent.AppendHex(nil)
	if err != nil {
		return err
	}
	henv := env
	henv.Environ = proc.WithEnv(env.Environ, "BUZZ_PRIVATE_KEY", string(skHex))
	henv.Environ = proc.Without(henv.Environ, "BUZZ_ACP_PRIVATE_KEY", "BUZZ_AUTH_TAG")
	cfg, err := LoadConfig([]string{"--relay-url", wsURL, "--agent-owner", owner.Public().Hex(),
		"--agent-command", "buzz-agent", "--mcp-command", "buzz-dev-mcp", "--channels", channel}, henv)
	clear(skHex)
	if err != nil {
		return err
	}
	// The agent key reaches buzz-dev-mcp as a file in the state dir, which
	// its shell sandbox hides, not in any process's environment.
	cfg.MCPKeyFile = filepath.Join(base, upAgentKey)
	henv.Environ = proc.Without(henv.Environ, "BUZZ_PRIVATE_KEY")
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	return Run(ctx, cfg, henv, log)
}

// ensureGeneral makes sure the general channel exists with the agent in
// it, and that both keys have a profile, and returns the channel id.
func ensureGeneral(ctx context.Context, wsURL, base string, owner, agent *nostrkey.Secret, log *slog.Logger) (string, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc := newRelayConn(wsURL, owner, nil, 64, log.With("component", "setup"))
	done := make(chan error, 1)
	go func() { done <- rc.run(cctx) }() // ends with cancel
	defer func() { cancel(); <-done }()
	select {
	case <-rc.connected:
	case err := <-done:
		return "", fmt.Errorf("buzzbox up: connect to the embedded relay: %w", err)
	case <-time.After(dialTimeout):
		return "", errors.New("buzzbox up: embedded relay did not answer")
	}
	io := newRelayIO(wsURL, owner, "", rc)
	io.probe(cctx)
	publish := func(key *nostrkey.Secret, ev *nostr.Event) error {
		ev.CreatedAt = nostr.Now()
		if err := key.SignEvent(ev); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(cctx, httpTimeout)
		defer cancel()
		return io.publish(pctx, ev)
	}
	idPath := filepath.Join(base, upChannel)
	id := ""
	if b, err := os.ReadFile(idPath); err == nil && isUUID(strings.TrimSpace(string(b))) {
		id = strings.TrimSpace(string(b))
		qctx, cancel := context.WithTimeout(cctx, httpTimeout)
		evs, err := io.query(qctx, nostr.Filter{Kinds: []int{kindGroupMeta}, Tags: nostr.TagMap{"d": {id}}, Limit: 1})
		cancel()
		if err != nil || len(evs) == 0 {
			id = ""
		}
	}
	if id == "" {
		id = newUUID()
		if err := publish(owner, &nostr.Event{Kind: 9007, Tags: nostr.Tags{{"h", id}, {"name", upChannelTag},
			{"visibility", "open"}, {"channel_type", "stream"}, {"about", "where the owner and the agent talk"}}}); err != nil {
			return "", fmt.Errorf("buzzbox up: create channel: %w", err)
		}
		if err := os.WriteFile(idPath, []byte(id+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	if err := publish(owner, &nostr.Event{Kind: 9000, Tags: nostr.Tags{{"h", id}, {"p", agent.Public().Hex(), "", "member"}}}); err != nil &&
		!strings.Contains(err.Error(), "already") {
		log.Debug("add agent to channel", "err", err)
	}
	publish(owner, &nostr.Event{Kind: 0, Content: `{"name":"owner","display_name":"owner"}`})
	publish(agent, &nostr.Event{Kind: 0, Content: `{"name":"` + upAgentName + `","display_name":"` + upAgentName + `"}`})
	return id, nil
}
