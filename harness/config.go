package harness

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/usage"
)

// kind of a flag's value.
type flagKind int

const (
	kString flagKind = iota
	kBool
	kInt
	kList
)

// flagSpec is one row of the command-line table (spec §2.2): the flag, its
// environment fallback and its default as text.
type flagSpec struct {
	name, env, def string
	kind           flagKind
	usage          string
	hidden         bool
}

// flagTable returns every flag in the order --help shows them.
func flagTable() []flagSpec {
	return []flagSpec{
		{"relay-url", "BUZZ_RELAY_URL", "ws://localhost:3000", kString, "relay websocket URL", false},
		{"private-key", "BUZZ_PRIVATE_KEY", "", kString, "agent secret key, hex or nsec1 (required)", false},
		{"agent-owner", "BUZZ_ACP_AGENT_OWNER", "", kString, "owner pubkey hex", false},
		{"agent-command", "BUZZ_ACP_AGENT_COMMAND", "buzz-agent", kString, "ACP agent program (buzz-agent runs this executable)", false},
		{"agent-args", "BUZZ_ACP_AGENT_ARGS", "", kList, "agent arguments, comma-separated", false},
		{"mcp-command", "BUZZ_ACP_MCP_COMMAND", "buzz-dev-mcp", kString, "MCP sidecar for each session (buzz-dev-mcp runs this executable; empty: none)", false},
		{"idle-timeout", "BUZZ_ACP_IDLE_TIMEOUT", "900", kInt, "seconds without agent output before a turn is cancelled", false},
		{"max-turn-duration", "BUZZ_ACP_MAX_TURN_DURATION", "7200", kInt, "hard cap on one turn, seconds", false},
		{"turn-timeout", "BUZZ_ACP_TURN_TIMEOUT", "", kInt, "deprecated alias of --idle-timeout", true},
		{"system-prompt", "BUZZ_ACP_SYSTEM_PROMPT", "", kString, "persona prompt", false},
		{"system-prompt-file", "BUZZ_ACP_SYSTEM_PROMPT_FILE", "", kString, "file holding the persona prompt", false},
		{"agents", "BUZZ_ACP_AGENTS", "1", kInt, "agent processes, 1..32", false},
		{"heartbeat-interval", "BUZZ_ACP_HEARTBEAT_INTERVAL", "0", kInt, "seconds between heartbeat turns; 0 off, else >= 10", false},
		{"turn-liveness-secs", "BUZZ_ACP_TURN_LIVENESS_SECS", "10", kInt, "observer liveness pings; 0 off, else >= 5", false},
		{"heartbeat-prompt", "BUZZ_ACP_HEARTBEAT_PROMPT", "", kString, "heartbeat prompt text", false},
		{"heartbeat-prompt-file", "BUZZ_ACP_HEARTBEAT_PROMPT_FILE", "", kString, "file holding the heartbeat prompt", false},
		{"initial-message", "BUZZ_ACP_INITIAL_MESSAGE", "", kString, "prompt sent once per new channel session", false},
		{"subscribe", "BUZZ_ACP_SUBSCRIBE", "mentions", kString, "mentions | all | config", false},
		{"kinds", "BUZZ_ACP_KINDS", "", kList, "event kinds that wake the agent", false},
		{"channels", "BUZZ_ACP_CHANNELS", "", kList, "channel UUIDs to listen on", false},
		{"no-mention-filter", "BUZZ_ACP_NO_MENTION_FILTER", "false", kBool, "do not require a p tag naming the agent", false},
		{"config", "BUZZ_ACP_CONFIG", "./buzz-acp.toml", kString, "rules file for --subscribe config", false},
		{"dedup", "BUZZ_ACP_DEDUP", "queue", kString, "queue | drop", false},
		{"multiple-event-handling", "BUZZ_ACP_MULTIPLE_EVENT_HANDLING", "steer", kString, "queue | steer | interrupt | owner-interrupt", false},
		{"no-ignore-self", "BUZZ_ACP_NO_IGNORE_SELF", "false", kBool, "process the agent's own events", false},
		{"context-message-limit", "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT", "12", kInt, "thread/DM messages in the prompt, 0..100", false},
		{"max-turns-per-session", "BUZZ_ACP_MAX_TURNS_PER_SESSION", "0", kInt, "rotate a session after this many turns; 0 never", false},
		{"no-presence", "BUZZ_ACP_NO_PRESENCE", "false", kBool, "do not publish presence", false},
		{"no-typing", "BUZZ_ACP_NO_TYPING", "false", kBool, "do not publish typing indicators", false},
		{"memory", "BUZZ_ACP_MEMORY", "true", kBool, "inject NIP-AE core memory", false},
		{"no-memory", "BUZZ_ACP_NO_MEMORY", "false", kBool, "do not inject core memory", false},
		{"no-base-prompt", "BUZZ_ACP_NO_BASE_PROMPT", "false", kBool, "drop the built-in platform prompt", false},
		{"base-prompt-file", "BUZZ_ACP_BASE_PROMPT_FILE", "", kString, "replace the built-in platform prompt", false},
		{"model", "BUZZ_ACP_MODEL", "", kString, "model to select after session/new", false},
		{"session-title", "BUZZ_ACP_SESSION_TITLE", "", kString, "session title shown by the agent", false},
		{"permission-mode", "BUZZ_ACP_PERMISSION_MODE", "bypass-permissions", kString, "default | accept-edits | bypass-permissions | dont-ask | plan", false},
		{"respond-to", "BUZZ_ACP_RESPOND_TO", "owner-only", kString, "owner-only | allowlist | anyone | nobody", false},
		{"respond-to-allowlist", "BUZZ_ACP_RESPOND_TO_ALLOWLIST", "", kList, "pubkeys (64 hex) for --respond-to allowlist", false},
		{"allowed-respond-to", "BUZZ_ACP_ALLOWED_RESPOND_TO", "", kList, "respond-to modes this deployment allows", false},
		{"team-instructions", "BUZZ_ACP_TEAM_INSTRUCTIONS", "", kString, "team instructions for the system prompt", false},
		{"relay-observer", "BUZZ_ACP_RELAY_OBSERVER", "false", kBool, "publish encrypted observer frames", false},
		{"exit-after-inactivity", "BUZZ_ACP_EXIT_AFTER_INACTIVITY", "0", kInt, "seconds idle before a clean exit; 0 never", false},
		{"lazy-pool", "BUZZ_ACP_LAZY_POOL", "false", kBool, "start agents on the first accepted event", false},
		{"catchup", "BUZZ_ACP_CATCHUP", "86400", kInt, "on start and reconnect, answer matching events of up to this many seconds back that were not answered; 0 off", false},
		{"catchup-max", "BUZZ_ACP_CATCHUP_MAX", "50", kInt, "events per channel caught up at most, 1..500", false},
		{"state-dir", "BUZZ_ACP_STATE_DIR", "", kString, "where sessions and answered events are kept (default $XDG_STATE_HOME/buzzbox/acp)", false},
		{"post-final-text", "BUZZ_ACP_POST_FINAL_TEXT", "true", kBool, "when a turn started by a mention or DM leaves nothing in the thread, post the agent's final text there (false: upstream's silence)", false},
	}
}

// Config is the validated harness configuration.
type Config struct {
	RelayURL      string
	Secret        *nostrkey.Secret
	AgentHex      string
	Owner         string // from --agent-owner or a verified auth tag; empty = none
	AgentCommand  string
	AgentArgs     []string
	AgentIdentity string // normalised command identity (§8.1)
	AgentEnv      []string
	MCPCommand    string // empty = no sidecar
	// MCPKeyFile, when set, is a 0600 file holding the agent key: the
	// sidecar gets NOSTR_PRIVATE_KEY_FILE naming it instead of
	// BUZZ_PRIVATE_KEY, and the agent gets no key in its environment.
	// Not a flag; `buzzbox up` sets it to the key in its state dir.
	MCPKeyFile          string
	IdleTimeout         time.Duration
	MaxTurn             time.Duration
	SystemPrompt        string
	Agents              int
	HeartbeatInterval   time.Duration
	TurnLiveness        time.Duration
	HeartbeatPrompt     string
	InitialMessage      string
	Subscribe           string
	Kinds               []int
	Channels            []string
	NoMentionFilter     bool
	ConfigPath          string
	Rules               []*Rule
	Dedup               string
	Handling            string
	NoIgnoreSelf        bool
	ContextLimit        int
	MaxTurnsPerSession  int
	NoPresence          bool
	NoTyping            bool
	Memory              bool
	BasePrompt          string // empty = none
	Model               string
	SessionTitle        string
	PermissionMode      string // kebab-case
	RespondTo           string
	Allowlist           map[string]bool
	TeamInstructions    string
	RelayObserver       bool
	ExitAfterInactivity time.Duration
	LazyPool            bool
	PostFinalText       bool // the reply guard (reply.go); on unless --post-final-text=false
	AuthTag             string
	DisplayName         string
	EventBuffer         int
	Warnings            []string

	// Catchup is how far back missed events are answered on start and
	// reconnect; zero turns catch-up off. CatchupMax bounds them per
	// channel. StateDir holds the harness's state; empty keeps none.
	Catchup    time.Duration
	CatchupMax int
	StateDir   string
}

// ConfigError is a fatal configuration problem; Hint, when set, says what to change.
type ConfigError struct {
	Msg  string
	Hint string
}

func (e *ConfigError) Error() string { return "buzz-acp: config: " + e.Msg }

func cfgErr(hint, format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// errHelp is returned when --help was asked for.
var errHelp = errors.New("help requested")

// rawConfig holds each flag's text after flag-over-env resolution.
type rawConfig struct {
	vals map[string]string
	set  map[string]bool // given by flag or env
	env  proc.Env
}

func (r rawConfig) str(name string) string { return r.vals[name] }
func (r rawConfig) given(name string) bool { return r.set[name] }

func (r rawConfig) boolean(name string) (bool, error) {
	v := strings.TrimSpace(strings.ToLower(r.vals[name]))
	switch v {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off", "":
		return false, nil
	}
	return false, cfgErr("", "--%s: %q is not a boolean (true or false)", name, r.vals[name])
}

func (r rawConfig) integer(name string) (int, error) {
	v := strings.TrimSpace(r.vals[name])
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, cfgErr("", "--%s: %q is not a non-negative integer", name, r.vals[name])
	}
	return n, nil
}

func (r rawConfig) list(name string) []string {
	var out []string
	for _, part := range strings.Split(r.vals[name], ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// boolValue is a flag.Value for flags that take no argument.
type boolValue struct{ s *string }

func (b boolValue) String() string {
	if b.s == nil {
		return ""
	}
	return *b.s
}
func (b boolValue) Set(v string) error { *b.s = v; return nil }
func (b boolValue) IsBoolFlag() bool   { return true }

type strValue struct{ s *string }

func (v strValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}
func (v strValue) Set(s string) error { *v.s = s; return nil }

// parseRaw resolves every flag: the flag if given, else its env variable if
// set, else the default.
func parseRaw(args []string, env proc.Env, stdout io.Writer) (rawConfig, error) {
	table := flagTable()
	fs := flag.NewFlagSet("buzz-acp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := make(map[string]*string, len(table))
	for _, f := range table {
		s := new(string)
		vals[f.name] = s
		*s = f.def // only for the page's defaults: values are read only for flags given
		if f.kind == kBool {
			fs.Var(boolValue{s}, f.name, f.usage)
		} else {
			fs.Var(strValue{s}, f.name, f.usage)
		}
	}
	page := acpPage(fs, table)
	var errb strings.Builder
	if code, done := page.Parse(args, true, stdout, &errb); done {
		if code == usage.ExitOK {
			return rawConfig{}, errHelp
		}
		msg, _, _ := strings.Cut(strings.TrimPrefix(errb.String(), "buzz-acp: "), "\n")
		return rawConfig{}, cfgErr("run 'buzz-acp --help' for the flags and an example", "%s", msg)
	}
	flagged := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { flagged[f.Name] = true })
	raw := rawConfig{vals: map[string]string{}, set: map[string]bool{}, env: env}
	for _, f := range table {
		switch {
		case flagged[f.name]:
			raw.vals[f.name] = *vals[f.name]
			raw.set[f.name] = true
		default:
			if v, ok := env.LookupEnv(f.env); ok {
				raw.vals[f.name] = v
				raw.set[f.name] = true
			} else {
				raw.vals[f.name] = f.def
			}
		}
	}
	return raw, nil
}

// acpPage is `buzz-acp --help`, generated from the flag table.
func acpPage(fs *flag.FlagSet, table []flagSpec) *usage.Page {
	p := &usage.Page{Name: "buzz-acp", Flags: fs, FlagEnv: map[string]string{}, Hidden: map[string]bool{}, Placeholders: map[string]string{},
		Synopsis: "[flags]\n       buzz-acp models|auth-methods [--json] [--agent-command CMD] [--agent-args A,B]\n       buzz-acp authenticate --method-id ID [--agent-command CMD]",
		About: `The harness: logs in to a Nostr relay (NIP-42) with the agent's key,
listens on the channels the agent belongs to, and turns the events that
should wake it into prompts for an ACP agent subprocess (buzz-agent, goose,
codex-acp, claude-agent-acp), with buzz-dev-mcp as its tools. Every flag
falls back to the environment variable shown beside it.`,
		Env: []usage.Var{
			{Name: "BUZZ_ACP_LOG_LEVEL", Help: "debug, info (default), warn or error"},
			{Name: "BUZZ_ACP_LOG_JSON", Help: "set: log JSON lines instead of text"},
			{Name: "BUZZ_AUTH_TAG", Help: "NIP-OA attestation of the agent key by its owner"},
			{Name: "BUZZ_ACP_DISPLAY_NAME", Help: "the agent's name in git commits"},
			{Name: "BUZZ_ACP_PRIVATE_KEY", Help: "old name of BUZZ_PRIVATE_KEY, read when that is unset"},
			{Name: "BUZZ_ACP_EVENT_BUFFER", Help: fmt.Sprintf("relay events in flight to the harness (default %d)", defaultEventBuffer)},
			{Name: "BUZZ_ACP_SETUP_PAYLOAD", Help: "set-up mode: start no agent; mentions get a reply saying what to configure"},
			{Name: "CODEX_CONFIG", Help: "JSON object for a codex agent, merged under network access turned on"},
		},
		Examples: []string{
			"BUZZ_PRIVATE_KEY=nsec1… buzz-acp --relay-url ws://localhost:3000 --agent-owner <owner hex> --agent-command buzz-agent",
			"buzz-acp models --agent-command goose",
		}}
	for _, f := range table {
		p.Order = append(p.Order, f.name)
		p.FlagEnv[f.name] = f.env
		p.Hidden[f.name] = f.hidden
		switch f.kind {
		case kInt:
			p.Placeholders[f.name] = "N"
		case kList:
			p.Placeholders[f.name] = "A,B"
		}
	}
	return p
}

// LoadConfig parses and validates the command line and environment in the
// spec's order; every fatal problem is reported before any network I/O.
func LoadConfig(args []string, env proc.Env) (*Config, error) {
	// Legacy aliases are copied only when the canonical name is unset.
	for _, alias := range [][2]string{{"BUZZ_ACP_PRIVATE_KEY", "BUZZ_PRIVATE_KEY"}, {"BUZZ_ACP_API_TOKEN", "BUZZ_API_TOKEN"}} {
		if _, ok := env.LookupEnv(alias[1]); !ok {
			if v, ok := env.LookupEnv(alias[0]); ok {
				env.Environ = proc.WithEnv(env.Environ, alias[1], v)
			}
		}
	}
	raw, err := parseRaw(args, env, env.Out())
	if err != nil {
		return nil, err
	}
	c := &Config{}
	warn := func(format string, a ...any) { c.Warnings = append(c.Warnings, fmt.Sprintf(format, a...)) }

	// Key first, so nothing else happens without one.
	keyText := strings.TrimSpace(raw.str("private-key"))
	if keyText == "" {
		return nil, cfgErr("set BUZZ_PRIVATE_KEY (hex or nsec1…) or pass --private-key", "private key is required")
	}
	sec, err := nostrkey.ParseSecret(keyText)
	if err != nil {
		return nil, cfgErr("BUZZ_PRIVATE_KEY must be 64 hex characters or an nsec1 string", "parse private key: %v", err)
	}
	c.Secret = sec
	c.AgentHex = sec.Public().Hex()

	c.RelayURL = strings.TrimSpace(raw.str("relay-url"))
	if !strings.HasPrefix(c.RelayURL, "ws://") && !strings.HasPrefix(c.RelayURL, "wss://") {
		return nil, cfgErr("use ws://host:port or wss://host", "--relay-url %q is not a ws:// or wss:// URL", c.RelayURL)
	}

	if raw.given("system-prompt") && raw.given("system-prompt-file") {
		return nil, cfgErr("", "--system-prompt and --system-prompt-file conflict; give one")
	}
	c.SystemPrompt = raw.str("system-prompt")
	if p := raw.str("system-prompt-file"); p != "" {
		b, err := readCapped(p, maxSystemPromptFile)
		if err != nil {
			return nil, cfgErr("", "read --system-prompt-file: %v", err)
		}
		c.SystemPrompt = string(b)
	}

	hb, err := raw.integer("heartbeat-interval")
	if err != nil {
		return nil, err
	}
	switch {
	case hb != 0 && time.Duration(hb)*time.Second < minHeartbeat:
		return nil, cfgErr("use 0 (off) or at least 10", "--heartbeat-interval %d is below 10 seconds", hb)
	case time.Duration(hb)*time.Second > maxHeartbeat:
		warn("--heartbeat-interval %d capped at 86400 seconds", hb)
		hb = int(maxHeartbeat / time.Second)
	}
	c.HeartbeatInterval = time.Duration(hb) * time.Second
	tl, err := raw.integer("turn-liveness-secs")
	if err != nil {
		return nil, err
	}
	switch {
	case tl != 0 && time.Duration(tl)*time.Second < minTurnLiveness:
		return nil, cfgErr("use 0 (off) or at least 5", "--turn-liveness-secs %d is below 5 seconds", tl)
	case time.Duration(tl)*time.Second > maxHeartbeat:
		tl = int(maxHeartbeat / time.Second)
	}
	c.TurnLiveness = time.Duration(tl) * time.Second

	if raw.given("heartbeat-prompt") && raw.given("heartbeat-prompt-file") {
		return nil, cfgErr("", "--heartbeat-prompt and --heartbeat-prompt-file conflict; give one")
	}
	c.HeartbeatPrompt = raw.str("heartbeat-prompt")
	if p := raw.str("heartbeat-prompt-file"); p != "" {
		b, err := readCapped(p, maxSystemPromptFile)
		if err != nil {
			return nil, cfgErr("", "read --heartbeat-prompt-file: %v", err)
		}
		c.HeartbeatPrompt = string(b)
	}

	noBase, err := raw.boolean("no-base-prompt")
	if err != nil {
		return nil, err
	}
	if noBase && raw.given("base-prompt-file") {
		return nil, cfgErr("", "--base-prompt-file and --no-base-prompt conflict; give one")
	}
	switch {
	case noBase:
	case raw.str("base-prompt-file") != "":
		p := raw.str("base-prompt-file")
		fi, err := os.Stat(p)
		if err != nil {
			return nil, cfgErr("", "read --base-prompt-file: %v", err)
		}
		if fi.Size() > maxBasePromptBytes {
			return nil, cfgErr("keep the base prompt at or under 1048576 bytes", "--base-prompt-file %s is %d bytes, over the %d-byte limit", p, fi.Size(), maxBasePromptBytes)
		}
		b, err := readCapped(p, maxBasePromptBytes)
		if err != nil {
			return nil, cfgErr("", "read --base-prompt-file: %v", err)
		}
		c.BasePrompt = string(b)
	default:
		c.BasePrompt = builtinBasePrompt
	}

	c.Subscribe = raw.str("subscribe")
	switch c.Subscribe {
	case "mentions", "all", "config":
	default:
		return nil, cfgErr("use mentions, all or config", "--subscribe %q is not a mode", c.Subscribe)
	}
	for _, k := range raw.list("kinds") {
		n, err := strconv.ParseUint(k, 10, 32)
		if err != nil {
			return nil, cfgErr("", "--kinds: %q is not an event kind", k)
		}
		c.Kinds = append(c.Kinds, int(n))
	}
	if c.NoMentionFilter, err = raw.boolean("no-mention-filter"); err != nil {
		return nil, err
	}
	c.ConfigPath = raw.str("config")
	if c.Subscribe == "config" {
		if raw.given("kinds") {
			warn("--kinds is ignored with --subscribe config")
			c.Kinds = nil
		}
		if raw.given("channels") {
			warn("--channels is ignored with --subscribe config")
		}
		if c.NoMentionFilter {
			warn("--no-mention-filter is ignored with --subscribe config")
			c.NoMentionFilter = false
		}
		rules, err := LoadRules(c.ConfigPath)
		if err != nil {
			return nil, err
		}
		if len(rules) == 0 {
			warn("rules file %s has no rules: agent will receive nothing", c.ConfigPath)
		}
		c.Rules = rules
	}

	c.AgentCommand = strings.TrimSpace(raw.str("agent-command"))
	if c.AgentCommand == "" {
		return nil, cfgErr("set --agent-command (for example buzz-agent)", "agent command is blank")
	}
	c.AgentIdentity = CommandIdentity(c.AgentCommand)
	c.AgentArgs = NormalizeArgs(c.AgentIdentity, raw.list("agent-args"), raw.given("agent-args"))
	c.MCPCommand = strings.TrimSpace(raw.str("mcp-command"))

	if c.Subscribe != "config" {
		for _, ch := range raw.list("channels") {
			if !isUUID(ch) {
				warn("--channels: %q is not a UUID; ignored", ch)
				continue
			}
			c.Channels = append(c.Channels, strings.ToLower(ch))
		}
	}

	if c.Agents, err = raw.integer("agents"); err != nil {
		return nil, err
	}
	if c.Agents < 1 || c.Agents > maxAgents {
		return nil, cfgErr("use 1..32", "--agents %d is out of range", c.Agents)
	}
	if c.ContextLimit, err = raw.integer("context-message-limit"); err != nil {
		return nil, err
	}
	if c.ContextLimit > maxContextLimit {
		return nil, cfgErr("use 0..100", "--context-message-limit %d is out of range", c.ContextLimit)
	}
	if c.MaxTurnsPerSession, err = raw.integer("max-turns-per-session"); err != nil {
		return nil, err
	}
	catchup, err := raw.integer("catchup")
	if err != nil {
		return nil, err
	}
	if catchup < 0 || catchup > maxCatchupSecs {
		return nil, cfgErr("use 0..604800 seconds", "--catchup %d is out of range", catchup)
	}
	c.Catchup = time.Duration(catchup) * time.Second
	if c.CatchupMax, err = raw.integer("catchup-max"); err != nil {
		return nil, err
	}
	if c.CatchupMax < 1 || c.CatchupMax > maxQueuePerChannel {
		return nil, cfgErr("use 1..500", "--catchup-max %d is out of range", c.CatchupMax)
	}
	c.StateDir = strings.TrimSpace(raw.str("state-dir"))
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		return nil, cfgErr("give an absolute path", "--state-dir %q is not absolute", c.StateDir)
	}

	// Idle and hard-cap resolution.
	idle, err := raw.integer("idle-timeout")
	if err != nil {
		return nil, err
	}
	if raw.given("turn-timeout") {
		warn("--turn-timeout is deprecated; use --idle-timeout")
		if !raw.given("idle-timeout") {
			if idle, err = raw.integer("turn-timeout"); err != nil {
				return nil, err
			}
		}
	}
	c.IdleTimeout = time.Duration(idle) * time.Second
	if idle == 0 {
		warn("--idle-timeout 0 means 1 second")
		c.IdleTimeout = zeroIdleTimeout
	}
	maxTurn, err := raw.integer("max-turn-duration")
	if err != nil {
		return nil, err
	}
	c.MaxTurn = time.Duration(maxTurn) * time.Second
	if maxTurn == 0 {
		warn("--max-turn-duration 0 means 60 seconds")
		c.MaxTurn = zeroMaxTurn
	}
	if c.MaxTurn > maxTurnCeiling {
		return nil, cfgErr("use at most 604800 seconds (7 days)", "--max-turn-duration %d is over 7 days", maxTurn)
	}
	if c.IdleTimeout >= c.MaxTurn {
		return nil, cfgErr("make --idle-timeout smaller than --max-turn-duration",
			"idle timeout %v must be less than max turn duration %v, or it could never fire", c.IdleTimeout, c.MaxTurn)
	}

	c.RespondTo = raw.str("respond-to")
	if !validRespondTo(c.RespondTo) {
		return nil, cfgErr("use owner-only, allowlist, anyone or nobody", "--respond-to %q is not a mode", c.RespondTo)
	}
	allow := raw.list("respond-to-allowlist")
	if c.RespondTo == "allowlist" {
		if len(allow) == 0 {
			return nil, cfgErr("set --respond-to-allowlist to comma-separated 64-hex pubkeys", "--respond-to allowlist needs a list")
		}
		c.Allowlist = map[string]bool{}
		for _, a := range allow {
			h := strings.ToLower(strings.TrimSpace(a))
			if !nostrkey.IsLowerHex(h, 64) {
				return nil, cfgErr("allowlist entries are 64 hex characters", "--respond-to-allowlist: %q is not a 64-hex pubkey", a)
			}
			c.Allowlist[h] = true
		}
	} else if len(allow) > 0 {
		warn("--respond-to-allowlist is ignored unless --respond-to allowlist")
	}
	if ceiling := raw.list("allowed-respond-to"); len(ceiling) > 0 {
		listed := false
		for _, m := range ceiling {
			if !validRespondTo(m) {
				return nil, cfgErr("", "--allowed-respond-to: %q is not a respond-to mode", m)
			}
			if m == c.RespondTo {
				listed = true
			}
		}
		if !listed {
			return nil, cfgErr("pick a --respond-to mode the deployment allows", "--respond-to %s is not in --allowed-respond-to %s", c.RespondTo, raw.str("allowed-respond-to"))
		}
	}

	c.Dedup = raw.str("dedup")
	if c.Dedup != "queue" && c.Dedup != "drop" {
		return nil, cfgErr("use queue or drop", "--dedup %q is not a mode", c.Dedup)
	}
	c.Handling = raw.str("multiple-event-handling")
	switch c.Handling {
	case "queue", "steer", "interrupt", "owner-interrupt":
	default:
		return nil, cfgErr("use queue, steer, interrupt or owner-interrupt", "--multiple-event-handling %q is not a mode", c.Handling)
	}
	if c.Dedup == "drop" && c.Handling != "queue" {
		return nil, cfgErr("add --multiple-event-handling queue, or use --dedup queue",
			"--multiple-event-handling %s needs --dedup queue (drop would lose events while a turn is cancelled)", c.Handling)
	}

	pm, ok := permissionModes[raw.str("permission-mode")]
	if !ok {
		return nil, cfgErr("use default, accept-edits, bypass-permissions, dont-ask or plan", "--permission-mode %q is not a mode", raw.str("permission-mode"))
	}
	c.PermissionMode = pm

	for _, b := range []struct {
		name string
		dst  *bool
	}{
		{"no-ignore-self", &c.NoIgnoreSelf}, {"no-presence", &c.NoPresence}, {"no-typing", &c.NoTyping},
		{"relay-observer", &c.RelayObserver}, {"lazy-pool", &c.LazyPool}, {"post-final-text", &c.PostFinalText},
	} {
		if *b.dst, err = raw.boolean(b.name); err != nil {
			return nil, err
		}
	}
	mem, err := raw.boolean("memory")
	if err != nil {
		return nil, err
	}
	noMem, err := raw.boolean("no-memory")
	if err != nil {
		return nil, err
	}
	if raw.given("memory") && raw.given("no-memory") && mem && noMem {
		return nil, cfgErr("", "--memory and --no-memory conflict; give one")
	}
	c.Memory = mem && !noMem

	c.InitialMessage = raw.str("initial-message")
	c.Model = strings.TrimSpace(raw.str("model"))
	c.SessionTitle = SanitizeTitle(raw.str("session-title"))
	c.TeamInstructions = strings.TrimSpace(raw.str("team-instructions"))
	ex, err := raw.integer("exit-after-inactivity")
	if err != nil {
		return nil, err
	}
	c.ExitAfterInactivity = time.Duration(ex) * time.Second

	c.AuthTag = strings.TrimSpace(env.Getenv("BUZZ_AUTH_TAG"))
	c.DisplayName = strings.TrimSpace(env.Getenv("BUZZ_ACP_DISPLAY_NAME"))
	c.EventBuffer = defaultEventBuffer
	if v := strings.TrimSpace(env.Getenv("BUZZ_ACP_EVENT_BUFFER")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, cfgErr("use a positive integer", "BUZZ_ACP_EVENT_BUFFER=%q is not a positive integer", v)
		}
		c.EventBuffer = n
	}

	c.Owner = strings.ToLower(strings.TrimSpace(raw.str("agent-owner")))
	if o, ok := ownerFromAuthTag(c.AuthTag, c.AgentHex); ok {
		c.Owner = o
		if why := authTagLapsed(c.AuthTag, time.Now()); why != "" {
			warn("BUZZ_AUTH_TAG %s: the relay will not count it for the owner's membership; ask the owner for a new one (buzz agents attest)", why)
		}
	}
	if c.Owner == "" {
		warn("no owner known (set --agent-owner): owner-only mode will answer nobody")
	}

	// Codex network env (§8.1).
	if c.AgentIdentity == "codex" || c.AgentIdentity == "codex-acp" {
		ce, err := codexEnv(env.Getenv("CODEX_CONFIG"))
		if err != nil {
			return nil, err
		}
		c.AgentEnv = append(c.AgentEnv, ce)
	}
	if c.AgentIdentity == "hermes" || c.AgentIdentity == "hermes-agent" || c.AgentIdentity == "hermes-acp" {
		if _, set := env.LookupEnv("HERMES_ACP_SKIP_CONFIGURED_MCP"); !set {
			c.AgentEnv = append(c.AgentEnv, "HERMES_ACP_SKIP_CONFIGURED_MCP=1")
		}
	}
	return c, nil
}

func validRespondTo(m string) bool {
	switch m {
	case "owner-only", "allowlist", "anyone", "nobody":
		return true
	}
	return false
}

// permissionModes maps accepted spellings to the kebab-case mode.
var permissionModes = map[string]string{
	"default": "default", "accept-edits": "accept-edits", "acceptEdits": "accept-edits",
	"bypass-permissions": "bypass-permissions", "bypassPermissions": "bypass-permissions",
	"dont-ask": "dont-ask", "dontAsk": "dont-ask", "plan": "plan",
}

// permissionWire is the ACP mode id of each permission mode.
func permissionWire(mode string) string {
	switch mode {
	case "accept-edits":
		return "acceptEdits"
	case "bypass-permissions":
		return "bypassPermissions"
	case "dont-ask":
		return "dontAsk"
	case "plan":
		return "plan"
	}
	return ""
}

// CommandIdentity normalises an agent command to its runtime identity
// (§8.1): last path segment, lowercased, one of .exe/.cmd/.bat stripped,
// spaces and underscores as hyphens.
func CommandIdentity(cmd string) string {
	s := strings.TrimSpace(cmd)
	s = strings.ReplaceAll(s, `\`, "/")
	s = strings.TrimRight(s, "/")
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ToLower(s)
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if strings.HasSuffix(s, ext) {
			s = strings.TrimSuffix(s, ext)
			break
		}
	}
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	return s
}

// runtimeDefaults lists the known runtimes and their default arguments; a
// nil entry takes none.
func runtimeDefaults(identity string) (args []string, known bool) {
	switch identity {
	case "goose":
		return []string{"acp"}, true
	case "codex", "codex-acp", "claude-agent-acp", "claude-code-acp", "claude-code", "claudecode", "buzz-agent":
		return nil, true
	case "hermes", "hermes-agent", "hermes-acp":
		return nil, true
	}
	return nil, false
}

// NormalizeArgs applies §8.1: trim, drop empties; a known runtime with no
// args gets its defaults, and the legacy lone "acp" is dropped for
// runtimes that take none. Unknown runtimes keep what was given, and get
// "acp" (the upstream default) when nothing was given.
func NormalizeArgs(identity string, args []string, given bool) []string {
	var out []string
	for _, a := range args {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	defs, known := runtimeDefaults(identity)
	if !known {
		if !given {
			return []string{"acp"}
		}
		return out
	}
	if len(out) == 0 {
		return defs
	}
	if len(out) == 1 && strings.EqualFold(out[0], "acp") && len(defs) == 0 && !strings.HasPrefix(identity, "hermes") {
		return []string{}
	}
	return out
}

// SanitizeTitle drops control characters, collapses whitespace and caps the
// result at 80 characters.
func SanitizeTitle(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return truncRunes(b.String(), maxSessionTitleChars)
}

func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// isUUID reports whether s is a hyphenated UUID (any case).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// readCapped reads a whole file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over the %d-byte limit", path, limit)
	}
	return b, nil
}
