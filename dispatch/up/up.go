// Package up is `buzzbox up`, the composition root of a workspace: the
// embedded relay (buzz-relay, with the web client on its listener) and the
// harness (buzz-acp) in this process, a general channel, and buzz-agent
// with the buzz-dev-mcp sidecar as the harness's children, keys and relay
// data in the workspace's state dir.
//
// Synopsis:
//
//	buzzbox up [--listen ADDRESS] [--public-url URL]... [--dir DIR]
//
// It checks the model provider's variables through buzz-agent's own check
// before starting anything, and holds no logic of the pieces it joins: the
// relay, the harness and the agent run as they would alone.
//
// It keeps an owner key, an agent key (both 0600) and the relay's data in
// the workspace's state dir, $XDG_STATE_HOME/buzzbox/<workspace> (else
// ~/.local/state/…), outside the working tree the agent's shell reads;
// --dir names another. It creates a general channel on first run, prints
// the web client's link and then the buzz commands that talk to the agent,
// and runs until Ctrl-C.
package up

import (
	"context"
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

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent"
	"buzzbox/harness"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/usage"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/internal/workspace/relayclient"
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

// Main is `buzzbox up`: an embedded relay with data in the workspace's
// state dir (upStateDir), an owner and an agent key, a general channel,
// and the harness driving buzz-agent with the buzz-dev-mcp sidecar in the
// current directory. It prints the buzz commands to talk to the agent and
// runs until Ctrl-C.
func Main(ctx context.Context, args []string, env proc.Env) int {
	_ = proc.NoDump() // holds the owner key and the provider key; best effort
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("buzzbox up", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:3000", "`address` (host:port) the relay and the web client listen on")
	dir := fs.String("dir", "", "`dir` for keys and relay data (default $XDG_STATE_HOME/buzzbox/<workspace>, else ~/.local/state/buzzbox/<workspace>; relative to the working directory)")
	var public urlList
	fs.Var(&public, "public-url", "`url` people and their tools reach the relay by (ws://, wss://, http:// or https://): a remapped port, a proxy, a host name; AUTH and NIP-98 tokens must name it; repeatable, the first is the one printed")
	if code, done := upPage(fs).Parse(args, true, env.Out(), env.Err()); done {
		return code
	}
	// Without a model provider the workspace still starts: the agent shows
	// as not configured and answers every message with what to set.
	notConfigured := ""
	if err := agent.CheckProvider(env.Getenv); err != nil {
		notConfigured = strings.Join(strings.Fields(err.Error()), " ")
		fmt.Fprintln(env.Err(), "buzzbox up: the agent is not configured: "+err.Error()+
			"\nThe workspace starts anyway; set the variables and run buzzbox up again for the agent to answer.")
	}
	log := harness.NewLogger(env)
	base, err := upStateDir(env, log, *dir)
	if err != nil {
		fmt.Fprintln(env.Err(), err)
		return 1
	}
	if err := up(ctx, env, log, base, *listen, public, notConfigured, env.Out()); err != nil {
		fmt.Fprintln(env.Err(), err)
		return 1
	}
	return 0
}

// urlList is a repeatable flag; each use may hold comma-separated URLs.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, ",") }
func (l *urlList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// upPage is `buzzbox up --help`: what up runs, the provider variables,
// the state it keeps and the flags of fs.
func upPage(fs *flag.FlagSet) *usage.Page {
	return &usage.Page{Name: "buzzbox up", Flags: fs,
		About: `Runs a whole workspace in one process: an embedded relay that also serves
the web client at http://ADDRESS/, a #general channel, and an agent
(buzz-agent, with buzz-dev-mcp working in this directory) that answers
in every channel it is a member of: mentions, direct messages (a private
channel of one person and the agent) and people's replies in threads it
has replied in. Without a model provider the workspace starts anyway and
the agent answers every mention with the variables to set. Runs until
Ctrl-C.

Behind a remapped port (a container's -p 8080:3000) or a proxy, name the
URL people use with --public-url. A ws:// or http:// one is served beside
the listen address, which the agent keeps using; with a wss:// or https://
one the agent connects through that URL too, so it must be reachable from
here.`,
		Env: []usage.Var{
			{Name: workspace.EnvAgentProvider, Help: "the agent's model provider (required): anthropic, openai, openrouter, databricks or databricks_v2"},
			{Name: "  =anthropic", Help: "ANTHROPIC_API_KEY, ANTHROPIC_MODEL [ANTHROPIC_BASE_URL]"},
			{Name: "  =openai", Help: "OPENAI_COMPAT_API_KEY, OPENAI_COMPAT_MODEL [OPENAI_COMPAT_BASE_URL] (any OpenAI-compatible server: vLLM, llama.cpp, Ollama)"},
			{Name: "  =openrouter", Help: "OPENROUTER_API_KEY, OPENROUTER_MODEL"},
			{Name: "  =databricks", Help: "DATABRICKS_HOST, DATABRICKS_MODEL, DATABRICKS_TOKEN"},
			{Name: workspace.EnvAgentModel, Help: "overrides the provider's *_MODEL"},
			{Name: "XDG_STATE_HOME, HOME", Help: "where the state directory is made"},
			{Name: "BUZZ_AGENT_*, BUZZ_ACP_*", Help: "the agent's and the harness's own settings (buzz-agent --help, buzz-acp --help)"},
		},
		More: `State kept in $XDG_STATE_HOME/buzzbox/<workspace> (else
~/.local/state/buzzbox/<workspace>), outside this directory so that the
agent's shell cannot read your key, or in --dir; created 0700, files 0600,
reused by the next run (a ./.buzz of an earlier version is moved there):

  owner.key        your key (sign in and use the buzz CLI with it)
  agent.key        the agent's key
  general.channel  the id of #general
  relay/           the relay's events

When the model provider refuses the key, does not know the model or cannot
be reached, a notice in the thread says so and names the variable to fix;
when none is configured, the notice names the variables to set.`,
		Examples: []string{
			"BUZZ_AGENT_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-… ANTHROPIC_MODEL=claude-sonnet-4-5 buzzbox up",
			"buzzbox up --listen 0.0.0.0:3000 --public-url ws://localhost:8080   # in a container run with -p 8080:3000",
		}}
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

func up(ctx context.Context, env proc.Env, log *slog.Logger, base, listen string, public []string, notConfigured string, out io.Writer) error {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return fmt.Errorf("buzzbox up: create %s: %w", base, err)
	}
	owner, _, err := loadOrCreateKey(filepath.Join(base, upOwnerKey))
	if err != nil {
		return err
	}
	agentKey, _, err := loadOrCreateKey(filepath.Join(base, upAgentKey))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("buzzbox up: listen %s: %w (another buzzbox up running? try --listen 127.0.0.1:3001)", listen, err)
	}
	names := upNames(public, ln.Addr())
	rcfg := relay.Config{DataDir: filepath.Join(base, upRelayData), Owner: owner.Public().Hex(),
		Allow: []string{agentKey.Public().Hex()}, Logger: log.With("component", "relay")}
	if len(names.public) > 0 {
		rcfg.PublicURL, rcfg.OtherURLs = names.public[0], names.public[1:]
	}
	r, err := relay.StartListener(rcfg, ln)
	if err != nil {
		return fmt.Errorf("buzzbox up: %w", err)
	}
	defer r.Close()
	wsURL, shownURL := names.dial, names.shown

	channel, err := ensureGeneral(ctx, wsURL, base, owner, agentKey, log)
	if err != nil {
		return err
	}

	exe := env.Exe
	buzz := exe + " buzz"
	if p, err := exec.LookPath(filepath.Base(exe)); err == nil && p == exe {
		buzz = filepath.Base(exe) + " buzz"
	}
	httpURL := relayclient.HTTPBase(shownURL)
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
	fmt.Fprintf(out, "Relay %s, channel #%s (%s), agent %s\n\n", shownURL, upChannelTag, channel, agentKey.Public().Npub())
	if shownURL != wsURL {
		fmt.Fprintf(out, "Listening on %s; the agent connects by %s\n\n", ln.Addr(), wsURL)
	}
	fmt.Fprintf(out, "Or talk to the agent from another terminal, in this directory:\n\n")
	fmt.Fprintf(out, "  BUZZ_RELAY_URL=%s BUZZ_KEYFILE=%s %s messages send --channel %s --mention %s --content '@%s what is in this directory?'\n\n",
		httpURL, keyRel, buzz, channel, agentKey.Public().Hex(), upAgentName)
	fmt.Fprintf(out, "Read the replies:\n\n")
	fmt.Fprintf(out, "  BUZZ_RELAY_URL=%s BUZZ_KEYFILE=%s %s --format compact messages get --channel %s\n\n", httpURL, keyRel, buzz, channel)
	if notConfigured != "" {
		fmt.Fprintf(out, "The agent is not configured (%s); it answers every message with what to set until buzzbox up runs with them.\n\n", notConfigured)
	}
	fmt.Fprintf(out, "Press Ctrl-C to stop.\n")

	skHex, err := agentKey.AppendHex(nil)
	if err != nil {
		return err
	}
	henv := env
	henv.Environ = proc.WithEnv(env.Environ, workspace.EnvPrivateKey, string(skHex))
	henv.Environ = proc.Without(henv.Environ, workspace.EnvACPPrivateKey, workspace.EnvAuthTag)
	cfg, err := harness.LoadConfig([]string{"--relay-url", wsURL, "--agent-owner", owner.Public().Hex(),
		"--agent-command", "buzz-agent", "--mcp-command", "buzz-dev-mcp", "--follow-threads",
		// The owner's browser shows each turn's transcript from these frames.
		"--relay-observer"}, henv)
	clear(skHex)
	if err != nil {
		return err
	}
	// The agent key reaches buzz-dev-mcp as a file in the state dir, which
	// its shell sandbox hides, not in any process's environment.
	cfg.MCPKeyFile = filepath.Join(base, upAgentKey)
	cfg.NotConfigured = notConfigured
	henv.Environ = proc.Without(henv.Environ, workspace.EnvPrivateKey)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	return harness.Run(ctx, cfg, henv, log)
}

// upURLs says how `buzzbox up` names its relay.
type upURLs struct {
	public []string // the relay's --public-url list; nil: named by its listen address
	dial   string   // the ws(s):// URL the harness and the set-up connect to
	shown  string   // the ws(s):// URL printed for people
}

// upNames works out the relay's names from --public-url and the listen
// address. A ws:// public URL (a remapped port, a plain proxy) is served
// beside the listen address, which the harness keeps dialling; the relay
// takes one scheme for all its names, so behind a wss:// one the harness
// dials that URL too.
func upNames(public []string, addr net.Addr) upURLs {
	local := "ws://" + addr.String()
	if len(public) == 0 {
		return upURLs{dial: local, shown: local}
	}
	if host, port, err := net.SplitHostPort(addr.String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			local = "ws://" + net.JoinHostPort("127.0.0.1", port)
		}
	}
	ws := make([]string, len(public))
	for i, u := range public {
		ws[i] = wsScheme(u)
	}
	if strings.HasPrefix(strings.ToLower(ws[0]), "wss://") {
		return upURLs{public: ws, dial: ws[0], shown: ws[0]}
	}
	return upURLs{public: append(ws, local), dial: local, shown: ws[0]}
}

// wsScheme spells an http(s):// URL as ws(s)://; others are kept.
func wsScheme(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "https://"):
		return "wss://" + u[len("https://"):]
	case strings.HasPrefix(lower, "http://"):
		return "ws://" + u[len("http://"):]
	}
	return u
}

// ensureGeneral makes sure the general channel exists with the agent in
// it, and that both keys have a profile, and returns the channel id.
func ensureGeneral(ctx context.Context, wsURL, base string, owner, agentKey *nostrkey.Secret, log *slog.Logger) (string, error) {
	// Log in once first, so that a relay that refuses the owner, or does
	// not answer, is reported as such before anything is written.
	dctx, cancel := context.WithTimeout(ctx, connectTimeout)
	w, err := relayclient.Dial(dctx, wsURL, relayclient.ConnOptions{Key: owner})
	if err == nil {
		_, err = w.Login(dctx, 0)
		w.CloseNow()
	}
	late := dctx.Err() != nil && ctx.Err() == nil
	cancel()
	if late {
		return "", errors.New("buzzbox up: embedded relay did not answer")
	}
	if err != nil {
		return "", fmt.Errorf("buzzbox up: connect to the embedded relay: %w", err)
	}
	conn := relayclient.New(wsURL, relayclient.Options{Key: owner, Timeout: requestTimeout, ConnectTimeout: connectTimeout})
	defer conn.Close()
	if _, err := conn.ProbeOrWebsocket(ctx); err != nil {
		log.Debug("no NIP-11 document; the set-up uses the websocket", "err", err)
	}
	publish := func(key *nostrkey.Secret, ev *nostr.Event) error {
		ev.CreatedAt = nostr.Now()
		if err := key.SignEvent(ev); err != nil {
			return err
		}
		res, err := conn.Publish(ctx, ev)
		if err == nil && !res.Accepted {
			err = fmt.Errorf("relay refused event: %s", res.Message)
		}
		return err
	}
	idPath := filepath.Join(base, upChannel)
	id := ""
	if b, err := os.ReadFile(idPath); err == nil && workspace.IsUUID(strings.TrimSpace(string(b))) {
		id = strings.TrimSpace(string(b))
		evs, err := conn.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": {id}}, Limit: 1})
		if err != nil || len(evs) == 0 {
			id = ""
		}
	}
	if id == "" {
		id = workspace.NewUUID()
		if err := publish(owner, &nostr.Event{Kind: workspace.KindCreateGroup, Tags: nostr.Tags{{"h", id}, {workspace.TagName, upChannelTag},
			{workspace.TagVisibility, workspace.VisibilityOpen}, {workspace.TagChannelType, workspace.ChannelTypeStream}, {workspace.TagAbout, "where the owner and the agent talk"}}}); err != nil {
			return "", fmt.Errorf("buzzbox up: create channel: %w", err)
		}
		if err := os.WriteFile(idPath, []byte(id+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	if err := publish(owner, &nostr.Event{Kind: workspace.KindAddUser, Tags: nostr.Tags{{"h", id}, {"p", agentKey.Public().Hex(), "", "member"}}}); err != nil &&
		!strings.Contains(err.Error(), "already") {
		log.Debug("add agent to channel", "err", err)
	}
	publish(owner, &nostr.Event{Kind: workspace.KindProfile, Content: `{"name":"owner","display_name":"owner"}`})
	// The agent's profile carries the owner's NIP-OA attestation, so every
	// client can name the agent's owner (the web client's badge and agents
	// panel) without trusting the profile's own word.
	profile := &nostr.Event{Kind: workspace.KindProfile, Content: `{"name":"` + upAgentName + `","display_name":"` + upAgentName + `","bot":true}`}
	if att, err := nipoa.Sign(owner, agentKey.Public(), ""); err == nil {
		profile.Tags = nostr.Tags{att.Nostr()}
	} else {
		log.Warn("the agent's profile goes out without its owner's attestation", "err", err)
	}
	publish(agentKey, profile)
	return id, nil
}
