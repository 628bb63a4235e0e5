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
	"buzzbox/internal/workspace"
)

// kind of a flag's value.
type flagKind int

const (
	kString  flagKind = iota
	kBool             // true/false, 1/0, yes/no, on/off
	kInt              // a whole number within the row's bounds
	kEnum             // one of the row's values (or an alias of one)
	kList             // comma-separated; each element one of the row's values when it has any
	kIntList          // comma-separated whole numbers, each within the row's bounds
)

// flagSpec is one row of the command-line table (spec §2.2): the flag, its
// environment fallback, its default as text, and what a value may be. The
// plan checks every given value against its row, and every message about a
// bad value is built from the row.
type flagSpec struct {
	name, env, def string
	kind           flagKind
	usage          string
	hidden         bool
	secret         bool // the value is never echoed in a message

	// Bounds of a kInt (or of each element of a kIntList), inclusive;
	// max 0 means no ceiling.
	min, max int
	zeroOff  bool   // 0 is accepted below min and means off
	capMax   bool   // a value over max is capped to it with a warning instead of refused
	unit     string // what the number counts, plural ("seconds", "messages")
	maxSay   string // the ceiling in words when plainer than the number ("7 days")

	values  []string          // allowed values of a kEnum, or of each element of a kList
	aliases map[string]string // other accepted spellings of values, to the value
	what    string            // what a bad value is not ("an event kind"); default by kind
	allowed string            // what to use, when the bounds or values do not say it
	hint    string            // the fix; default: set the flag or its variable to the allowed values
}

// Enumerations the table and the run share.
var (
	subscribeModes  = []string{"mentions", "all", "config"}
	dedupModes      = []string{"queue", "drop"}
	handlingModes   = []string{"queue", "steer", "interrupt", "owner-interrupt"}
	respondToModes  = []string{"owner-only", "allowlist", "anyone", "nobody"}
	permissionNames = []string{"default", "accept-edits", "bypass-permissions", "dont-ask", "plan"}
)

// flagTable returns every flag in the order --help shows them. An enum's
// usage is its values.
func flagTable() []flagSpec {
	const secs = "seconds"
	seconds := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	rows := []flagSpec{
		{name: "relay-url", env: workspace.EnvRelayURL, def: "ws://localhost:3000", kind: kString, usage: "relay websocket URL",
			what: "a ws:// or wss:// URL", allowed: "ws://host:port or wss://host"},
		{name: "private-key", env: workspace.EnvPrivateKey, kind: kString, usage: "agent secret key, hex or nsec1 (required)", secret: true},
		{name: "agent-owner", env: "BUZZ_ACP_AGENT_OWNER", kind: kString, usage: "owner pubkey hex"},
		{name: "agent-command", env: workspace.EnvACPAgentCommand, def: "buzz-agent", kind: kString, usage: "ACP agent program (buzz-agent runs this executable)",
			allowed: "a program name or path", hint: "set --agent-command (for example buzz-agent)"},
		{name: "agent-args", env: workspace.EnvACPAgentArgs, kind: kList, usage: "agent arguments, comma-separated"},
		{name: "mcp-command", env: "BUZZ_ACP_MCP_COMMAND", def: "buzz-dev-mcp", kind: kString, usage: "MCP sidecar for each session (buzz-dev-mcp runs this executable; empty: none)"},
		{name: "idle-timeout", env: "BUZZ_ACP_IDLE_TIMEOUT", def: seconds(defaultIdleTimeout), kind: kInt, usage: "seconds without agent output before a turn is cancelled",
			max: int(maxTurnCeiling / time.Second), unit: secs, maxSay: "7 days"},
		{name: "max-turn-duration", env: "BUZZ_ACP_MAX_TURN_DURATION", def: seconds(defaultMaxTurn), kind: kInt, usage: "hard cap on one turn, seconds",
			max: int(maxTurnCeiling / time.Second), unit: secs, maxSay: "7 days"},
		{name: "turn-timeout", env: "BUZZ_ACP_TURN_TIMEOUT", kind: kInt, usage: "deprecated alias of --idle-timeout", hidden: true,
			max: int(maxTurnCeiling / time.Second), unit: secs, maxSay: "7 days"},
		{name: "system-prompt", env: "BUZZ_ACP_SYSTEM_PROMPT", kind: kString, usage: "persona prompt"},
		{name: "system-prompt-file", env: "BUZZ_ACP_SYSTEM_PROMPT_FILE", kind: kString, usage: "file holding the persona prompt"},
		{name: "agents", env: "BUZZ_ACP_AGENTS", def: "1", kind: kInt, usage: "agent processes, 1..32",
			min: 1, max: maxAgents},
		{name: "heartbeat-interval", env: "BUZZ_ACP_HEARTBEAT_INTERVAL", def: "0", kind: kInt, usage: "seconds between heartbeat turns; 0 off, else >= 10",
			min: int(minHeartbeat / time.Second), max: int(maxHeartbeat / time.Second), zeroOff: true, capMax: true, unit: secs},
		{name: "turn-liveness-secs", env: "BUZZ_ACP_TURN_LIVENESS_SECS", def: seconds(defaultTurnLiveness), kind: kInt, usage: "observer liveness pings; 0 off, else >= 5",
			min: int(minTurnLiveness / time.Second), max: int(maxHeartbeat / time.Second), zeroOff: true, capMax: true, unit: secs},
		{name: "heartbeat-prompt", env: "BUZZ_ACP_HEARTBEAT_PROMPT", kind: kString, usage: "heartbeat prompt text"},
		{name: "heartbeat-prompt-file", env: "BUZZ_ACP_HEARTBEAT_PROMPT_FILE", kind: kString, usage: "file holding the heartbeat prompt"},
		{name: "initial-message", env: "BUZZ_ACP_INITIAL_MESSAGE", kind: kString, usage: "prompt sent once per new channel session"},
		{name: "subscribe", env: "BUZZ_ACP_SUBSCRIBE", def: "mentions", kind: kEnum,
			values: subscribeModes},
		{name: "kinds", env: "BUZZ_ACP_KINDS", kind: kIntList, usage: "event kinds that wake the agent",
			max: 1<<32 - 1, what: "an event kind"},
		{name: "channels", env: "BUZZ_ACP_CHANNELS", kind: kList, usage: "channel UUIDs to listen on"},
		{name: "no-mention-filter", env: "BUZZ_ACP_NO_MENTION_FILTER", def: "false", kind: kBool, usage: "do not require a p tag naming the agent"},
		{name: "follow-threads", env: "BUZZ_ACP_FOLLOW_THREADS", def: "false", kind: kBool, usage: "answer replies in threads the agent has replied in without a mention (never its own or another agent's)"},
		{name: "config", env: "BUZZ_ACP_CONFIG", def: "./buzz-acp.toml", kind: kString, usage: "rules file for --subscribe config"},
		{name: "dedup", env: "BUZZ_ACP_DEDUP", def: "queue", kind: kEnum,
			values: dedupModes},
		{name: "multiple-event-handling", env: "BUZZ_ACP_MULTIPLE_EVENT_HANDLING", def: "steer", kind: kEnum,
			values: handlingModes},
		{name: "no-ignore-self", env: "BUZZ_ACP_NO_IGNORE_SELF", def: "false", kind: kBool, usage: "process the agent's own events"},
		{name: "context-message-limit", env: "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT", def: strconv.Itoa(defaultContextLimit), kind: kInt, usage: "thread/DM messages in the prompt, 0..100",
			max: maxContextLimit, unit: "messages"},
		{name: "max-turns-per-session", env: "BUZZ_ACP_MAX_TURNS_PER_SESSION", def: "0", kind: kInt, usage: "rotate a session after this many turns; 0 never"},
		{name: "no-presence", env: "BUZZ_ACP_NO_PRESENCE", def: "false", kind: kBool, usage: "do not publish presence"},
		{name: "no-typing", env: "BUZZ_ACP_NO_TYPING", def: "false", kind: kBool, usage: "do not publish typing indicators"},
		{name: "memory", env: "BUZZ_ACP_MEMORY", def: "true", kind: kBool, usage: "inject NIP-AE core memory"},
		{name: "no-memory", env: "BUZZ_ACP_NO_MEMORY", def: "false", kind: kBool, usage: "do not inject core memory"},
		{name: "no-base-prompt", env: "BUZZ_ACP_NO_BASE_PROMPT", def: "false", kind: kBool, usage: "drop the built-in platform prompt"},
		{name: "base-prompt-file", env: "BUZZ_ACP_BASE_PROMPT_FILE", kind: kString, usage: "replace the built-in platform prompt"},
		{name: "model", env: "BUZZ_ACP_MODEL", kind: kString, usage: "model to select after session/new"},
		{name: "session-title", env: "BUZZ_ACP_SESSION_TITLE", kind: kString, usage: "session title shown by the agent"},
		{name: "permission-mode", env: "BUZZ_ACP_PERMISSION_MODE", def: "bypass-permissions", kind: kEnum,
			values: permissionNames, aliases: map[string]string{"acceptEdits": "accept-edits", "bypassPermissions": "bypass-permissions", "dontAsk": "dont-ask"}},
		{name: "approval-timeout", env: "BUZZ_ACP_APPROVAL_TIMEOUT_SECS", def: "600", kind: kInt, usage: "seconds a permission request waits for the owner or a channel admin; then it is rejected",
			min: 1, max: int(maxTurnCeiling / time.Second), unit: secs, maxSay: "7 days"},
		{name: "respond-to", env: "BUZZ_ACP_RESPOND_TO", def: "owner-only", kind: kEnum,
			values: respondToModes},
		{name: "respond-to-allowlist", env: "BUZZ_ACP_RESPOND_TO_ALLOWLIST", kind: kList, usage: "pubkeys (64 hex) for --respond-to allowlist",
			what: "a 64-hex pubkey", allowed: "comma-separated pubkeys of 64 hex characters"},
		{name: "allowed-respond-to", env: "BUZZ_ACP_ALLOWED_RESPOND_TO", kind: kList, usage: "respond-to modes this deployment allows",
			values: respondToModes, what: "a respond-to mode"},
		{name: "team-instructions", env: "BUZZ_ACP_TEAM_INSTRUCTIONS", kind: kString, usage: "team instructions for the system prompt"},
		{name: "relay-observer", env: "BUZZ_ACP_RELAY_OBSERVER", def: "false", kind: kBool, usage: "publish encrypted observer frames"},
		{name: "exit-after-inactivity", env: "BUZZ_ACP_EXIT_AFTER_INACTIVITY", def: "0", kind: kInt, usage: "seconds idle before a clean exit; 0 never",
			max: maxInactivitySecs, unit: secs, maxSay: "a year"},
		{name: "lazy-pool", env: "BUZZ_ACP_LAZY_POOL", def: "false", kind: kBool, usage: "start agents on the first accepted event"},
		{name: "catchup", env: "BUZZ_ACP_CATCHUP", def: "86400", kind: kInt, usage: "on start and reconnect, answer matching events of up to this many seconds back that were not answered; 0 off",
			max: maxCatchupSecs, unit: secs, maxSay: "7 days"},
		{name: "catchup-max", env: "BUZZ_ACP_CATCHUP_MAX", def: "50", kind: kInt, usage: "events per channel caught up at most, 1..500",
			min: 1, max: maxQueuePerChannel, unit: "events"},
		{name: "state-dir", env: "BUZZ_ACP_STATE_DIR", kind: kString, usage: "where sessions and answered events are kept (default $XDG_STATE_HOME/buzzbox/acp)",
			what: "an absolute path", allowed: "an absolute path"},
		{name: "post-final-text", env: "BUZZ_ACP_POST_FINAL_TEXT", def: "true", kind: kBool, usage: "when a turn started by a mention or DM leaves nothing in the thread, post the agent's final text there (false: upstream's silence)"},
		{name: "max-turn-tokens", env: "BUZZ_ACP_MAX_TURN_TOKENS", def: "0", kind: kInt, usage: "end a turn once it has used this many tokens; 0 no cap", unit: "tokens"},
		{name: "max-day-tokens", env: "BUZZ_ACP_MAX_DAY_TOKENS", def: "0", kind: kInt, usage: "take no more turns once the agent has used this many tokens today (UTC); 0 no cap", unit: "tokens"},
		{name: "max-turn-cost", env: "BUZZ_ACP_MAX_TURN_COST", kind: kString, usage: "end a turn once it has cost this many US dollars (the agent's own figure, else --price-per-mtok); empty no cap",
			what: "an amount of dollars", allowed: "a positive decimal such as 0.50"},
		{name: "max-day-cost", env: "BUZZ_ACP_MAX_DAY_COST", kind: kString, usage: "take no more turns once today's (UTC) turns have cost this many US dollars; empty no cap",
			what: "an amount of dollars", allowed: "a positive decimal such as 20"},
		{name: "price-per-mtok", env: "BUZZ_ACP_PRICE_PER_MTOK", kind: kString, usage: "US dollars per million input and output tokens, as IN,OUT (for cost caps when the agent reports no cost)",
			what: "two prices", allowed: "IN,OUT such as 3,15"},
	}
	for i, r := range rows {
		if r.kind == kEnum && r.usage == "" {
			rows[i].usage = strings.Join(r.values, " | ")
		}
	}
	return rows
}

// eventBufferRow is the one knob read only from the environment; it has a
// row (with no flag name) so its value is checked and reported as the
// flags' are.
var eventBufferRow = flagSpec{env: workspace.EnvACPEventBuffer, kind: kInt, min: 1, max: maxEventBuffer, unit: "events"}

// allowedText says what a row accepts, without the leading "use".
func (f flagSpec) allowedText() string {
	if f.allowed != "" {
		return f.allowed
	}
	unit := ""
	if f.unit != "" {
		unit = " " + f.unit
	}
	switch f.kind {
	case kBool:
		return "true or false"
	case kInt, kIntList:
		r := fmt.Sprintf("%d..%d%s", f.min, f.max, unit)
		if f.max == 0 {
			r = fmt.Sprintf("%d or more%s", f.min, unit)
		}
		if f.zeroOff {
			return "0 (off) or " + r
		}
		return r
	case kEnum, kList:
		return orList(f.values)
	}
	return ""
}

// whatText is what a bad value of the row is not.
func (f flagSpec) whatText() string {
	switch {
	case f.what != "":
		return f.what
	case f.kind == kBool:
		return "a boolean"
	case f.kind == kInt || f.kind == kIntList:
		return "a whole number"
	}
	return "a mode"
}

// orList joins values as "a, b or c".
func orList(vs []string) string {
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// showValue renders a flag value in a message: bare when it reads
// unambiguously, quoted when it is empty, holds spaces, quotes, a ';' or
// unprintable runes, or ends in ':' (each would blur the message's parts).
func showValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"';") || strings.HasSuffix(v, ":") || strconv.Quote(v) != `"`+v+`"` {
		return strconv.Quote(v)
	}
	return v
}

// flagErr is the message about one bad value of one flag, in the shape
// `--flag VALUE: <what is wrong>; use <allowed>`, with the row's hint.
func (f flagSpec) flagErr(value, problem string) error {
	msg := "--" + f.name
	switch {
	case f.name == "":
		msg = f.env + "=" + showValue(value)
	case !f.secret:
		msg += " " + showValue(value)
	}
	msg += ": " + problem
	allowed := f.allowedText()
	if allowed != "" {
		msg += "; use " + allowed
	}
	hint := f.hint
	switch {
	case hint != "" || allowed == "":
	case f.name == "":
		hint = fmt.Sprintf("set %s to %s", f.env, allowed)
	default:
		hint = fmt.Sprintf("set --%s (or %s) to %s", f.name, f.env, allowed)
	}
	flagName := f.name
	if flagName == "" {
		flagName = f.env
	}
	return &ConfigError{Msg: msg, Hint: hint, Flag: flagName}
}

// checkInt parses one whole number of the row and holds it to the bounds.
// capped reports a value over max that the row caps instead of refusing.
func (f flagSpec) checkInt(text string) (n int, capped bool, err error) {
	n, perr := strconv.Atoi(strings.TrimSpace(text))
	if perr != nil || n < 0 {
		return 0, false, f.flagErr(text, "not "+f.whatText())
	}
	unit := ""
	if f.unit != "" {
		unit = " " + f.unit
	}
	switch {
	case n < f.min && !(f.zeroOff && n == 0):
		return 0, false, f.flagErr(text, fmt.Sprintf("below %d%s", f.min, unit))
	case f.max != 0 && n > f.max && f.capMax:
		return f.max, true, nil
	case f.max != 0 && n > f.max:
		over := f.maxSay
		if over == "" {
			over = fmt.Sprintf("%d%s", f.max, unit)
		}
		return 0, false, f.flagErr(text, "over "+over)
	}
	return n, false, nil
}

// checkEnum resolves one value of the row (an alias to its value).
func (f flagSpec) checkEnum(text string) (string, error) {
	for _, v := range f.values {
		if text == v {
			return v, nil
		}
	}
	if v, ok := f.aliases[text]; ok {
		return v, nil
	}
	return "", f.flagErr(text, "not "+f.whatText())
}

// parseBool reads a kBool value; ok is false when it is none of the spellings.
func parseBool(text string) (v, ok bool) {
	switch strings.TrimSpace(strings.ToLower(text)) {
	case "true", "1", "yes", "on":
		return true, true
	case "false", "0", "no", "off", "":
		return false, true
	}
	return false, false
}

// splitList splits a comma-separated value, trimming and dropping empties.
func splitList(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

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
	MCPKeyFile        string
	IdleTimeout       time.Duration
	MaxTurn           time.Duration
	SystemPrompt      string
	Agents            int
	HeartbeatInterval time.Duration
	TurnLiveness      time.Duration
	HeartbeatPrompt   string
	InitialMessage    string
	Subscribe         string
	Kinds             []int
	Channels          []string
	NoMentionFilter   bool
	FollowThreads     bool // wake on unmentioned replies in threads the agent is in
	// NotConfigured, set by a launcher (buzzbox up) whose agent has no
	// model provider, says what to set; the harness then starts no agent,
	// shows as "not configured" and answers every message with it.
	NotConfigured      string
	ConfigPath         string
	Rules              []*Rule
	Dedup              string
	Handling           string
	NoIgnoreSelf       bool
	ContextLimit       int
	MaxTurnsPerSession int
	NoPresence         bool
	NoTyping           bool
	Memory             bool
	BasePrompt         string // empty = none
	Model              string
	SessionTitle       string
	PermissionMode     string // kebab-case
	// ApprovalTimeout is how long a permission request waits for a
	// person (--approval-timeout); then it is rejected.
	ApprovalTimeout     time.Duration
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

	// Budget caps the agent's usage per turn and per UTC day (budget.go);
	// the zero value caps nothing.
	Budget Budget
}

// ConfigError is a fatal configuration problem; Hint, when set, says what
// to change. Flag names the flag (or environment variable) whose value is
// wrong, when one is.
type ConfigError struct {
	Msg  string
	Hint string
	Flag string
}

func (e *ConfigError) Error() string {
	if e.Flag != "" {
		return "buzz-acp: " + e.Msg
	}
	return "buzz-acp: config: " + e.Msg
}

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

// plan is the command line and environment resolved (flag over env over
// default) and every value checked against its row of the table; run
// turns it into one Config. Nothing in a plan has touched a file.
type plan struct {
	rawConfig
	rows     map[string]flagSpec
	ints     map[string]int
	bools    map[string]bool
	enums    map[string]string
	lists    map[string][]string
	intLists map[string][]int
	warnings []string
}

func (p *plan) str(name string) string    { return p.vals[name] }
func (p *plan) given(name string) bool    { return p.set[name] }
func (p *plan) row(name string) flagSpec  { return p.rows[name] }
func (p *plan) list(name string) []string { return p.lists[name] }
func (p *plan) warn(format string, a ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, a...))
}

// newPlan checks every resolved value against its row, in table order.
func newPlan(raw rawConfig) (*plan, error) {
	p := &plan{rawConfig: raw, rows: map[string]flagSpec{}, ints: map[string]int{}, bools: map[string]bool{},
		enums: map[string]string{}, lists: map[string][]string{}, intLists: map[string][]int{}}
	for _, f := range flagTable() {
		p.rows[f.name] = f
		text := raw.vals[f.name]
		switch f.kind {
		case kBool:
			v, ok := parseBool(text)
			if !ok {
				return nil, f.flagErr(text, "not "+f.whatText())
			}
			p.bools[f.name] = v
		case kInt:
			if text == "" && !raw.set[f.name] {
				continue // no default: read only when given
			}
			n, capped, err := f.checkInt(text)
			if err != nil {
				return nil, err
			}
			if capped {
				p.warn("--%s %s capped at %d %s", f.name, strings.TrimSpace(text), n, f.unit)
			}
			p.ints[f.name] = n
		case kEnum:
			v, err := f.checkEnum(text)
			if err != nil {
				return nil, err
			}
			p.enums[f.name] = v
		case kList:
			items := splitList(text)
			if len(f.values) > 0 {
				for i, it := range items {
					v, err := f.checkEnum(it)
					if err != nil {
						return nil, err
					}
					items[i] = v
				}
			}
			p.lists[f.name] = items
		case kIntList:
			var ns []int
			for _, it := range splitList(text) {
				n, _, err := f.checkInt(it)
				if err != nil {
					return nil, err
				}
				ns = append(ns, n)
			}
			p.intLists[f.name] = ns
		}
	}
	return p, nil
}

// args renders the plan's checked values as flags: loading them (with no
// environment but the key's) gives the same Config.
func (p *plan) args() []string {
	var out []string
	for _, f := range flagTable() {
		if !p.given(f.name) {
			continue
		}
		var v string
		switch f.kind {
		case kString:
			v = p.vals[f.name]
		case kBool:
			v = strconv.FormatBool(p.bools[f.name])
		case kInt:
			v = strconv.Itoa(p.ints[f.name])
		case kEnum:
			v = p.enums[f.name]
		case kList:
			v = strings.Join(p.lists[f.name], ",")
		case kIntList:
			parts := make([]string, 0, len(p.intLists[f.name]))
			for _, n := range p.intLists[f.name] {
				parts = append(parts, strconv.Itoa(n))
			}
			v = strings.Join(parts, ",")
		}
		out = append(out, "--"+f.name+"="+v)
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
			{Name: workspace.EnvACPLogLevel, Help: "debug, info (default), warn or error"},
			{Name: workspace.EnvACPLogJSON, Help: "set: log JSON lines instead of text"},
			{Name: workspace.EnvAuthTag, Help: "NIP-OA attestation of the agent key by its owner"},
			{Name: workspace.EnvDisplayName, Help: "the agent's name in git commits"},
			{Name: workspace.EnvACPPrivateKey, Help: "old name of BUZZ_PRIVATE_KEY, read when that is unset"},
			{Name: workspace.EnvACPEventBuffer, Help: fmt.Sprintf("relay events in flight to the harness (default %d)", defaultEventBuffer)},
			{Name: workspace.EnvACPSetupPayload, Help: "set-up mode: start no agent; mentions get a reply saying what to configure"},
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
		case kList, kIntList:
			p.Placeholders[f.name] = "A,B"
		}
	}
	return p
}

// LoadConfig parses and validates the command line and environment in the
// spec's order; every fatal problem is reported before any network I/O.
func LoadConfig(args []string, env proc.Env) (*Config, error) {
	p, err := planConfig(args, env)
	if err != nil {
		return nil, err
	}
	return p.run()
}

// planConfig resolves and checks every flag: the key first, so nothing
// else happens without one, then each value against its row.
func planConfig(args []string, env proc.Env) (*plan, error) {
	// Legacy aliases are copied only when the canonical name is unset.
	for _, alias := range [][2]string{{workspace.EnvACPPrivateKey, workspace.EnvPrivateKey}, {"BUZZ_ACP_API_TOKEN", "BUZZ_API_TOKEN"}} {
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
	if strings.TrimSpace(raw.vals["private-key"]) == "" {
		return nil, cfgErr("set BUZZ_PRIVATE_KEY (hex or nsec1…) or pass --private-key", "private key is required")
	}
	return newPlan(raw)
}

// run builds the Config from a checked plan: the rules that tie flags to
// one another, and the files they name.
func (p *plan) run() (*Config, error) {
	c := &Config{}
	warn := func(format string, a ...any) { c.Warnings = append(c.Warnings, fmt.Sprintf(format, a...)) }
	c.Warnings = append(c.Warnings, p.warnings...)

	sec, err := nostrkey.ParseSecret(strings.TrimSpace(p.str("private-key")))
	if err != nil {
		return nil, cfgErr("BUZZ_PRIVATE_KEY must be 64 hex characters or an nsec1 string", "parse private key: %v", err)
	}
	c.Secret = sec
	c.AgentHex = sec.Public().Hex()

	c.RelayURL = strings.TrimSpace(p.str("relay-url"))
	if !strings.HasPrefix(c.RelayURL, "ws://") && !strings.HasPrefix(c.RelayURL, "wss://") {
		return nil, p.row("relay-url").flagErr(c.RelayURL, "not a ws:// or wss:// URL")
	}

	if p.given("system-prompt") && p.given("system-prompt-file") {
		return nil, cfgErr("", "--system-prompt and --system-prompt-file conflict; give one")
	}
	c.SystemPrompt = p.str("system-prompt")
	if path := p.str("system-prompt-file"); path != "" {
		b, err := readCapped(path, maxSystemPromptFile)
		if err != nil {
			return nil, cfgErr("", "read --system-prompt-file: %v", err)
		}
		c.SystemPrompt = string(b)
	}

	c.HeartbeatInterval = time.Duration(p.ints["heartbeat-interval"]) * time.Second
	c.TurnLiveness = time.Duration(p.ints["turn-liveness-secs"]) * time.Second

	if p.given("heartbeat-prompt") && p.given("heartbeat-prompt-file") {
		return nil, cfgErr("", "--heartbeat-prompt and --heartbeat-prompt-file conflict; give one")
	}
	c.HeartbeatPrompt = p.str("heartbeat-prompt")
	if path := p.str("heartbeat-prompt-file"); path != "" {
		b, err := readCapped(path, maxSystemPromptFile)
		if err != nil {
			return nil, cfgErr("", "read --heartbeat-prompt-file: %v", err)
		}
		c.HeartbeatPrompt = string(b)
	}

	noBase := p.bools["no-base-prompt"]
	if noBase && p.given("base-prompt-file") {
		return nil, cfgErr("", "--base-prompt-file and --no-base-prompt conflict; give one")
	}
	switch {
	case noBase:
	case p.str("base-prompt-file") != "":
		path := p.str("base-prompt-file")
		fi, err := os.Stat(path)
		if err != nil {
			return nil, cfgErr("", "read --base-prompt-file: %v", err)
		}
		if fi.Size() > maxBasePromptBytes {
			return nil, cfgErr("keep the base prompt at or under 1048576 bytes", "--base-prompt-file %s is %d bytes, over the %d-byte limit", path, fi.Size(), maxBasePromptBytes)
		}
		b, err := readCapped(path, maxBasePromptBytes)
		if err != nil {
			return nil, cfgErr("", "read --base-prompt-file: %v", err)
		}
		c.BasePrompt = string(b)
	default:
		c.BasePrompt = builtinBasePrompt
	}

	c.Subscribe = p.enums["subscribe"]
	c.Kinds = p.intLists["kinds"]
	c.NoMentionFilter = p.bools["no-mention-filter"]
	c.FollowThreads = p.bools["follow-threads"]
	c.ConfigPath = p.str("config")
	if c.Subscribe == "config" {
		if p.given("kinds") {
			warn("--kinds is ignored with --subscribe config")
			c.Kinds = nil
		}
		if p.given("channels") {
			warn("--channels is ignored with --subscribe config")
		}
		if c.NoMentionFilter {
			warn("--no-mention-filter is ignored with --subscribe config")
			c.NoMentionFilter = false
		}
		if c.FollowThreads {
			warn("--follow-threads is ignored with --subscribe config")
			c.FollowThreads = false
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

	c.AgentCommand = strings.TrimSpace(p.str("agent-command"))
	if c.AgentCommand == "" {
		return nil, p.row("agent-command").flagErr(p.str("agent-command"), "blank")
	}
	c.AgentIdentity = CommandIdentity(c.AgentCommand)
	c.AgentArgs = NormalizeArgs(c.AgentIdentity, p.list("agent-args"), p.given("agent-args"))
	c.MCPCommand = strings.TrimSpace(p.str("mcp-command"))

	if c.Subscribe != "config" {
		for _, ch := range p.list("channels") {
			if !workspace.IsUUID(ch) {
				warn("--channels: %q is not a UUID; ignored", ch)
				continue
			}
			c.Channels = append(c.Channels, strings.ToLower(ch))
		}
	}

	c.Agents = p.ints["agents"]
	c.ContextLimit = p.ints["context-message-limit"]
	c.MaxTurnsPerSession = p.ints["max-turns-per-session"]
	b, err := p.budget()
	if err != nil {
		return nil, err
	}
	c.Budget = b
	c.Catchup = time.Duration(p.ints["catchup"]) * time.Second
	c.CatchupMax = p.ints["catchup-max"]
	c.ApprovalTimeout = time.Duration(p.ints["approval-timeout"]) * time.Second
	c.StateDir = strings.TrimSpace(p.str("state-dir"))
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		return nil, p.row("state-dir").flagErr(c.StateDir, "not absolute")
	}

	// Idle and hard-cap resolution.
	idle := p.ints["idle-timeout"]
	if p.given("turn-timeout") {
		warn("--turn-timeout is deprecated; use --idle-timeout")
		if !p.given("idle-timeout") {
			idle = p.ints["turn-timeout"]
		}
	}
	c.IdleTimeout = time.Duration(idle) * time.Second
	if idle == 0 {
		warn("--idle-timeout 0 means 1 second")
		c.IdleTimeout = zeroIdleTimeout
	}
	maxTurn := p.ints["max-turn-duration"]
	c.MaxTurn = time.Duration(maxTurn) * time.Second
	if maxTurn == 0 {
		warn("--max-turn-duration 0 means 60 seconds")
		c.MaxTurn = zeroMaxTurn
	}
	if c.IdleTimeout >= c.MaxTurn {
		return nil, cfgErr("make --idle-timeout smaller than --max-turn-duration",
			"idle timeout %v must be less than max turn duration %v, or it could never fire", c.IdleTimeout, c.MaxTurn)
	}

	c.RespondTo = p.enums["respond-to"]
	allow := p.list("respond-to-allowlist")
	if c.RespondTo == "allowlist" {
		if len(allow) == 0 {
			return nil, cfgErr("set --respond-to-allowlist to comma-separated 64-hex pubkeys", "--respond-to allowlist needs a list")
		}
		c.Allowlist = map[string]bool{}
		for _, a := range allow {
			h := strings.ToLower(a)
			if !nostrkey.IsLowerHex(h, 64) {
				return nil, p.row("respond-to-allowlist").flagErr(a, "not a 64-hex pubkey")
			}
			c.Allowlist[h] = true
		}
	} else if len(allow) > 0 {
		warn("--respond-to-allowlist is ignored unless --respond-to allowlist")
	}
	if ceiling := p.list("allowed-respond-to"); len(ceiling) > 0 {
		listed := false
		for _, m := range ceiling {
			if m == c.RespondTo {
				listed = true
			}
		}
		if !listed {
			return nil, p.row("respond-to").flagErr(c.RespondTo, "not in --allowed-respond-to "+strings.Join(ceiling, ","))
		}
	}

	c.Dedup = p.enums["dedup"]
	c.Handling = p.enums["multiple-event-handling"]
	if c.Dedup == "drop" && c.Handling != "queue" {
		return nil, cfgErr("add --multiple-event-handling queue, or use --dedup queue",
			"--multiple-event-handling %s needs --dedup queue (drop would lose events while a turn is cancelled)", c.Handling)
	}
	c.PermissionMode = p.enums["permission-mode"]

	c.NoIgnoreSelf = p.bools["no-ignore-self"]
	c.NoPresence = p.bools["no-presence"]
	c.NoTyping = p.bools["no-typing"]
	c.RelayObserver = p.bools["relay-observer"]
	c.LazyPool = p.bools["lazy-pool"]
	c.PostFinalText = p.bools["post-final-text"]
	mem, noMem := p.bools["memory"], p.bools["no-memory"]
	if p.given("memory") && p.given("no-memory") && mem && noMem {
		return nil, cfgErr("", "--memory and --no-memory conflict; give one")
	}
	c.Memory = mem && !noMem

	c.InitialMessage = p.str("initial-message")
	c.Model = strings.TrimSpace(p.str("model"))
	c.SessionTitle = SanitizeTitle(p.str("session-title"))
	c.TeamInstructions = strings.TrimSpace(p.str("team-instructions"))
	c.ExitAfterInactivity = time.Duration(p.ints["exit-after-inactivity"]) * time.Second

	env := p.env
	c.AuthTag = strings.TrimSpace(env.Getenv(workspace.EnvAuthTag))
	c.DisplayName = strings.TrimSpace(env.Getenv(workspace.EnvDisplayName))
	c.EventBuffer = defaultEventBuffer
	if v, ok := env.LookupEnv(eventBufferRow.env); ok && strings.TrimSpace(v) != "" {
		n, _, err := eventBufferRow.checkInt(v)
		if err != nil {
			return nil, err
		}
		c.EventBuffer = n
	}

	c.Owner = strings.ToLower(strings.TrimSpace(p.str("agent-owner")))
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

// permissionWire is the ACP mode id of each permission mode. "default" is
// sent too, to an agent that offers a mode of that id: claude-agent-acp
// starts in its "auto" mode, where it decides alone, and its "default"
// mode is the one that asks before acting.
func permissionWire(mode string) string {
	switch mode {
	case "default":
		return "default"
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
