package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// Environment variables the CLI reads; spelled as upstream.
const (
	defaultRelay = "http://localhost:3000"
)

// inv is one invocation of one command.
type inv struct {
	ctx     context.Context
	env     proc.Env
	out     io.Writer
	p       *parsed
	compact bool
	c       *relayclient.Client // nil for commands that need no relay
	key     *nostrkey.Secret
	pubkey  string
	auth    *authTag
}

// Main runs the buzz CLI with args (the identity name excluded) and
// returns the exit code of spec §6.3.
func Main(ctx context.Context, args []string, env proc.Env) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, env)
}

// Run runs one command as Main does, but leaves signals to the caller and
// ends with ctx: for a long-running identity that speaks for the agent
// without a shell (buzz-dev-mcp's workspace tools), so that the events it
// builds are exactly the CLI's. env.Environ is all the command sees.
func Run(ctx context.Context, args []string, env proc.Env) int {
	err := run(ctx, args, env)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelpShown) {
		return exitOK
	}
	e := asError(err)
	writeError(env.Err(), e)
	return exitCode(e.Category)
}

// errHelpShown ends a run that printed help.
var errHelpShown = errors.New("help shown")

func run(ctx context.Context, args []string, env proc.Env) error {
	words, at, help := leadingWords(args)
	table := commands()
	cmd, rest, err := lookup(table, words, at, args)
	if err != nil || help && cmd == nil {
		if help || len(args) == 0 || len(words) > 0 && words[0] == "help" {
			printHelp(env.Out(), table, words)
			return errHelpShown
		}
		if len(words) == 0 {
			if f := firstUnknownFlag(args); f != "" {
				return userErr("unknown flag %q before the command; run buzz --help", f)
			}
		}
		return err
	}
	p, err := parseArgs(rest, cmd.Flags)
	if err != nil {
		return err
	}
	if p.help {
		printCommandHelp(env.Out(), cmd)
		return errHelpShown
	}
	if len(p.args) > cmd.MaxArgs {
		return userErr("unexpected argument %q; see buzz %s --help", p.args[cmd.MaxArgs], cmd.path())
	}
	out := bufio.NewWriterSize(env.Out(), stdoutBuffer)
	defer out.Flush()
	in := &inv{ctx: ctx, env: env, out: out, p: p}
	switch f := p.str("format"); f {
	case "", "json":
	case "compact":
		in.compact = true
	default:
		return userErr("--format must be json or compact, got %q", f)
	}
	if !cmd.NoKey {
		if err := in.loadIdentity(); err != nil {
			return err
		}
		defer in.key.Zero()
	}
	if !cmd.Offline {
		in.c = newClient(env, p, in.key, in.auth)
		defer in.c.Close()
	}
	return cmd.Run(in)
}

// leadingWords returns the group/command words, skipping global flags and
// their values, and whether --help was asked for.
func leadingWords(args []string) (words []string, at []int, help bool) {
	for i := 0; i < len(args) && len(words) < 2; i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help":
			help = true
		case strings.HasPrefix(a, "-"):
			name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !isGlobal(name) {
				return words, at, help
			}
			if !hasVal {
				i++
			}
		default:
			words = append(words, a)
			at = append(at, i)
		}
	}
	return words, at, help
}

// firstUnknownFlag returns the first argument that looks like a flag and
// is no global one, or "".
func firstUnknownFlag(args []string) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && a != "-" && !isGlobal(name) {
			return a
		}
	}
	return ""
}

func isGlobal(name string) bool {
	for _, f := range globalFlags {
		if f.Name == name {
			return true
		}
	}
	return false
}

// lookup finds the command named by words and returns args without them.
func lookup(table []command, words []string, at []int, args []string) (*command, []string, error) {
	if len(words) == 0 {
		return nil, nil, userErr("missing command; run buzz --help")
	}
	var cmd *command
	for i := range table {
		c := &table[i]
		if c.Group == "" && c.Name == words[0] {
			cmd = c
			break
		}
		if len(words) > 1 && c.Group == words[0] && c.Name == words[1] {
			cmd = c
			break
		}
	}
	if cmd == nil {
		known := false
		for _, c := range table {
			known = known || c.Group == words[0]
		}
		if known && len(words) > 1 {
			return nil, nil, userErr("unknown command %q for %q; run buzz %s --help", words[1], words[0], words[0])
		}
		if known {
			return nil, nil, userErr("missing command for %q; run buzz %s --help", words[0], words[0])
		}
		return nil, nil, userErr("unknown command %q; run buzz --help", words[0])
	}
	skip := map[int]bool{at[0]: true}
	if cmd.Group != "" {
		skip[at[1]] = true
	}
	rest := make([]string, 0, len(args))
	for i, a := range args {
		if !skip[i] {
			rest = append(rest, a)
		}
	}
	return cmd, rest, nil
}

// loadIdentity reads the key (flag, env, key file) and the auth tag.
func (in *inv) loadIdentity() error {
	l, err := nostrkey.ForCLI(in.env, in.p.str("private-key"))
	if errors.Is(err, nostrkey.ErrNoKey) {
		return &Error{Category: catAuth, Message: "auth error: BUZZ_PRIVATE_KEY is required (use --private-key or set env var)"}
	}
	if err != nil {
		return &Error{Category: catKey, Message: "key error: invalid BUZZ_PRIVATE_KEY: " + err.Error()}
	}
	in.key = l.Secret
	in.pubkey = l.Secret.Public().Hex()
	raw := in.p.str("auth-tag")
	if !in.p.has("auth-tag") {
		raw = in.env.Getenv(workspace.EnvAuthTag)
	}
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	a, err := parseAuthTag(raw)
	if err != nil {
		in.key.Zero()
		return &Error{Category: catAuth, Message: "auth error: invalid NIP-OA auth tag in BUZZ_AUTH_TAG: " + err.Error()}
	}
	if err := a.verify(in.pubkey); err != nil {
		in.key.Zero()
		return &Error{Category: catAuth, Message: "auth error: BUZZ_AUTH_TAG verification failed for pubkey " + in.pubkey + ": " + err.Error()}
	}
	in.auth = a
	return nil
}

// newClient is the relay client for one invocation: the relay from
// --relay, BUZZ_RELAY_URL or the default, the timeouts from the
// environment, the key and attestation the invocation loaded.
func newClient(env proc.Env, p *parsed, key *nostrkey.Secret, auth *authTag) *relayclient.Client {
	relay := p.str("relay")
	if relay == "" {
		relay = env.Getenv(workspace.EnvRelayURL)
	}
	if strings.TrimSpace(relay) == "" {
		relay = defaultRelay
	}
	connect := secondsEnv(env, workspace.EnvConnectTimeoutSecs, defaultConnectTimeout)
	opt := relayclient.Options{
		Key:            key,
		Timeout:        secondsEnv(env, workspace.EnvTimeoutSecs, defaultTimeout),
		ConnectTimeout: connect,
		WriteCap:       wsWriteCap,
		HTTPClient: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: connect}).DialContext,
			TLSHandshakeTimeout: connect,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 2,
		}},
	}
	if auth != nil {
		opt.AuthTag, opt.AuthTagJSON = auth.Tag(), auth.JSON()
	}
	return relayclient.New(relay, opt)
}

// secondsEnv reads a positive number of seconds; 0 or garbage keeps def.
func secondsEnv(env proc.Env, name string, def time.Duration) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(env.Getenv(name)))
	if err != nil || n <= 0 {
		return def
	}
	return time.Duration(n) * time.Second
}
