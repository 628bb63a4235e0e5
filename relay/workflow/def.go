package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"gopkg.in/yaml.v3"
)

// Limits on one definition, each with its reason.
const (
	// MaxDefinitionBytes bounds the YAML text: a definition is a short
	// program, and the relay parses every one it is sent.
	MaxDefinitionBytes = 64 << 10
	// MaxSteps bounds the steps of one workflow, so a run is a bounded
	// amount of work and its trace fits a screen.
	MaxSteps = 50
	// MaxStepTimeout bounds how long one approval or agent step may wait.
	MaxStepTimeout = 7 * 24 * time.Hour
	// DefaultApprovalTimeout is how long an approval waits when the
	// definition does not say: no answer by then is a denial.
	DefaultApprovalTimeout = time.Hour
	// DefaultAgentTimeout is how long an agent step waits for the reply.
	DefaultAgentTimeout = 5 * time.Minute
	// MaxRunTimeout bounds a whole run, approvals included.
	MaxRunTimeout = 8 * 24 * time.Hour
	// DefaultRunTimeout is a run's bound when the definition sets none.
	DefaultRunTimeout = 25 * time.Hour
	// maxPatternBytes bounds a trigger's regular expression.
	maxPatternBytes = 1024
	// maxEmojiBytes bounds one reaction a reaction_added trigger names:
	// an emoji, a shortcode or "+".
	maxEmojiBytes = 64
)

// Trigger kinds (the "on" of a trigger), as upstream names them, plus manual.
const (
	OnMessage  = "message_posted"
	OnSchedule = "schedule"
	OnWebhook  = "webhook"
	OnManual   = "manual"
	OnReaction = "reaction_added"
)

// Step actions.
const (
	ActionSendMessage = "send_message"
	ActionApproval    = "request_approval"
	ActionAskAgent    = "ask_agent"
	ActionSetTopic    = "set_channel_topic"
	ActionHTTP        = "call_webhook"
)

// Approvers a request_approval step may name besides pubkeys.
const (
	ApproverOwner  = "owner"  // the workflow's publisher
	ApproverAdmins = "admins" // the channel's owners and admins
)

// Definition is a checked workflow.
type Definition struct {
	Name    string
	Trigger Trigger
	Steps   []Step
	Timeout time.Duration // the whole run's bound
}

// Trigger says what starts a run. Every trigger also allows a manual run.
type Trigger struct {
	On string
	// message_posted: Pattern must match the message (nil = any), From
	// limits the authors (empty = anyone who may post in the channel).
	Pattern *regexp.Regexp
	From    []string
	// schedule: Cron in Location.
	Cron     *Cron
	Location *time.Location
	// webhook: SecretSHA256 is the hex SHA-256 of the secret callers send.
	SecretSHA256 string
	// reaction_added: Emoji lists the reactions that start a run (empty =
	// any); From limits who reacts, as for message_posted.
	Emoji []string
}

// Step is one checked step.
type Step struct {
	ID     string
	Action string
	If     *Condition
	Line   int

	Text    string        // send_message; ask_agent's prompt
	Topic   string        // set_channel_topic
	Agent   string        // ask_agent: the agent's pubkey, hex
	Message string        // request_approval: what is asked
	From    []string      // request_approval: owner, admins or pubkeys
	Timeout time.Duration // request_approval, ask_agent, call_webhook
	URL     string        // call_webhook
	Method  string        // call_webhook
	Body    string        // call_webhook
}

// Error is a mistake in a definition, at a line and column (1-based; 0
// when the text as a whole is wrong).
type Error struct {
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return "workflow: " + e.Msg
	}
	return fmt.Sprintf("workflow line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func errAt(n *yaml.Node, format string, a ...any) *Error {
	return &Error{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, a...)}
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// Parse reads and checks a definition. Its error is an *Error.
func Parse(text string) (*Definition, error) {
	if len(text) > MaxDefinitionBytes {
		return nil, &Error{Msg: fmt.Sprintf("definition of %d bytes is over the %d-byte limit", len(text), MaxDefinitionBytes)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		msg := err.Error()
		if m := yamlLine().FindStringSubmatch(msg); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			return nil, &Error{Line: line, Column: 1, Msg: m[2]}
		}
		return nil, &Error{Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{Msg: "empty definition: want name, trigger and steps"}
	}
	root := doc.Content[0]
	d := &Definition{Timeout: DefaultRunTimeout}
	fields, err := mapping(root, "the definition", "name", "description", "enabled", "trigger", "steps", "timeout")
	if err != nil {
		return nil, err
	}
	if n := fields["name"]; n != nil {
		if d.Name, err = str(n, "name"); err != nil {
			return nil, err
		}
	}
	if n := fields["timeout"]; n != nil {
		if d.Timeout, err = duration(n, "timeout", MaxRunTimeout); err != nil {
			return nil, err
		}
	}
	tn := fields["trigger"]
	if tn == nil {
		return nil, errAt(root, "missing trigger (want trigger: {on: %s})", strings.Join(triggers, "|"))
	}
	if d.Trigger, err = parseTrigger(tn); err != nil {
		return nil, err
	}
	sn := fields["steps"]
	if sn == nil {
		return nil, errAt(root, "missing steps")
	}
	if sn.Kind != yaml.SequenceNode {
		return nil, errAt(sn, "steps must be a list")
	}
	if len(sn.Content) == 0 {
		return nil, errAt(sn, "steps is empty: a workflow needs at least one step")
	}
	if len(sn.Content) > MaxSteps {
		return nil, errAt(sn.Content[MaxSteps], "%d steps is over the limit of %d steps per workflow", len(sn.Content), MaxSteps)
	}
	seen := map[string]bool{}
	for i, n := range sn.Content {
		s, err := parseStep(n, i, seen)
		if err != nil {
			return nil, err
		}
		seen[s.ID] = true
		d.Steps = append(d.Steps, s)
	}
	return d, nil
}

// mapping checks that n is a mapping whose keys are all allowed, and
// returns its values by key.
func mapping(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(n, "%s must be a mapping", what)
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ok := false
		for _, a := range allowed {
			ok = ok || k.Value == a
		}
		if !ok {
			return nil, errAt(k, "unknown field %q in %s (want one of %s)", k.Value, what, strings.Join(allowed, ", "))
		}
		if out[k.Value] != nil {
			return nil, errAt(k, "%q given twice in %s", k.Value, what)
		}
		out[k.Value] = v
	}
	return out, nil
}

func str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, "%s must be a string", what)
	}
	return n.Value, nil
}

func duration(n *yaml.Node, what string, most time.Duration) (time.Duration, error) {
	s, err := str(n, what)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errAt(n, "%s: %q is not a duration (e.g. 90s, 30m, 2h)", what, s)
	}
	if d <= 0 || d > most {
		return 0, errAt(n, "%s: %s is outside (0, %s]", what, d, most)
	}
	return d, nil
}

// pubkeys reads a pubkey or a list of them; extra names (owner, admins)
// pass through when allowed.
func pubkeys(n *yaml.Node, what string, names ...string) ([]string, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []string
	for _, it := range items {
		s, err := str(it, what)
		if err != nil {
			return nil, err
		}
		s = strings.ToLower(strings.TrimSpace(s))
		named := false
		for _, nm := range names {
			named = named || s == nm
		}
		if !named && !nostr.IsValid32ByteHex(s) {
			if len(names) > 0 {
				return nil, errAt(it, "%s: %q is neither %s nor a 64-hex pubkey", what, s, strings.Join(names, " nor "))
			}
			return nil, errAt(it, "%s: %q is not a 64-hex pubkey", what, s)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseTrigger(n *yaml.Node) (Trigger, error) {
	var t Trigger
	f, err := mapping(n, "trigger", "on", "pattern", "from", "cron", "timezone", "secret_sha256", "emoji")
	if err != nil {
		return t, err
	}
	on := f["on"]
	if on == nil {
		return t, errAt(n, "trigger: missing on (want %s)", strings.Join(triggers, ", "))
	}
	if t.On, err = str(on, "trigger.on"); err != nil {
		return t, err
	}
	only := func(on string, keys ...string) error {
		for k, v := range f {
			if k == "on" {
				continue
			}
			ok := false
			for _, a := range keys {
				ok = ok || a == k
			}
			if !ok {
				return errAt(v, "trigger: %s does not apply to on: %s", k, on)
			}
		}
		return nil
	}
	switch t.On {
	case OnMessage:
		if err := only(OnMessage, "pattern", "from"); err != nil {
			return t, err
		}
		if p := f["pattern"]; p != nil {
			s, err := str(p, "trigger.pattern")
			if err != nil {
				return t, err
			}
			if len(s) > maxPatternBytes {
				return t, errAt(p, "trigger.pattern is over %d bytes", maxPatternBytes)
			}
			if t.Pattern, err = regexp.Compile(s); err != nil {
				return t, errAt(p, "trigger.pattern: %v", err)
			}
		}
		if p := f["from"]; p != nil {
			if t.From, err = pubkeys(p, "trigger.from"); err != nil {
				return t, err
			}
		}
	case OnSchedule:
		if err := only(OnSchedule, "cron", "timezone"); err != nil {
			return t, err
		}
		c := f["cron"]
		if c == nil {
			return t, errAt(on, "trigger: on: schedule needs cron (e.g. cron: \"0 9 * * 1-5\")")
		}
		s, err := str(c, "trigger.cron")
		if err != nil {
			return t, err
		}
		if t.Cron, err = ParseCron(s); err != nil {
			return t, errAt(c, "trigger.cron: %v", err)
		}
		t.Location = time.UTC
		if z := f["timezone"]; z != nil {
			s, err := str(z, "trigger.timezone")
			if err != nil {
				return t, err
			}
			if t.Location, err = time.LoadLocation(s); err != nil || s == "" || s == "Local" {
				return t, errAt(z, "trigger.timezone: %q is not an IANA time zone (e.g. Europe/Berlin)", s)
			}
		}
	case OnWebhook:
		if err := only(OnWebhook, "secret_sha256"); err != nil {
			return t, err
		}
		s := f["secret_sha256"]
		if s == nil {
			return t, errAt(on, "trigger: on: webhook needs secret_sha256, the hex SHA-256 of the secret callers send")
		}
		v, err := str(s, "trigger.secret_sha256")
		if err != nil {
			return t, err
		}
		if v = strings.ToLower(v); !nostr.IsValid32ByteHex(v) {
			return t, errAt(s, "trigger.secret_sha256 must be 64 hex characters")
		}
		t.SecretSHA256 = v
	case OnReaction:
		if err := only(OnReaction, "emoji", "from"); err != nil {
			return t, err
		}
		if e := f["emoji"]; e != nil {
			items := []*yaml.Node{e}
			if e.Kind == yaml.SequenceNode {
				items = e.Content
			}
			for _, it := range items {
				s, err := str(it, "trigger.emoji")
				if err != nil {
					return t, err
				}
				if s == "" || len(s) > maxEmojiBytes {
					return t, errAt(it, "trigger.emoji: want a reaction of 1 to %d bytes (e.g. 🚀 or +)", maxEmojiBytes)
				}
				t.Emoji = append(t.Emoji, s)
			}
		}
		if p := f["from"]; p != nil {
			if t.From, err = pubkeys(p, "trigger.from"); err != nil {
				return t, err
			}
		}
	case OnManual:
		if err := only(OnManual); err != nil {
			return t, err
		}
	default:
		return t, errAt(on, "trigger.on: unknown trigger %q (want %s)", t.On, strings.Join(triggers, ", "))
	}
	return t, nil
}

var stepID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`) })

func parseStep(n *yaml.Node, i int, earlier map[string]bool) (Step, error) {
	s := Step{Line: n.Line}
	what := fmt.Sprintf("step %d", i+1)
	f, err := mapping(n, what, "id", "name", "action", "if", "text", "topic", "agent", "prompt", "message", "from", "timeout", "url", "method", "body")
	if err != nil {
		return s, err
	}
	s.ID = fmt.Sprintf("step%d", i+1)
	if v := f["id"]; v != nil {
		if s.ID, err = str(v, what+".id"); err != nil {
			return s, err
		}
		if !stepID().MatchString(s.ID) {
			return s, errAt(v, "%s.id %q: want a letter, then letters, digits, _ or -", what, s.ID)
		}
		if earlier[s.ID] {
			return s, errAt(v, "%s.id %q is used by an earlier step", what, s.ID)
		}
	}
	what = fmt.Sprintf("step %q", s.ID)
	a := f["action"]
	if a == nil {
		return s, errAt(n, "%s: missing action (want %s)", what, strings.Join(actions, ", "))
	}
	if s.Action, err = str(a, what+".action"); err != nil {
		return s, err
	}
	need := func(key string) (*yaml.Node, error) {
		v := f[key]
		if v == nil {
			return nil, errAt(a, "%s: %s needs %s", what, s.Action, key)
		}
		return v, nil
	}
	text := func(key string) (string, error) {
		v, err := need(key)
		if err != nil {
			return "", err
		}
		s, err := str(v, what+"."+key)
		if err == nil {
			err = checkTemplate(v, s, earlier)
		}
		return s, err
	}
	allowed := map[string][]string{
		ActionSendMessage: {"text"},
		ActionSetTopic:    {"topic"},
		ActionAskAgent:    {"agent", "prompt", "timeout"},
		ActionApproval:    {"message", "from", "timeout"},
		ActionHTTP:        {"url", "method", "body", "timeout"},
	}
	keys, ok := allowed[s.Action]
	if !ok {
		return s, errAt(a, "%s: unknown action %q (want %s)", what, s.Action, strings.Join(actions, ", "))
	}
	for k, v := range f {
		switch k {
		case "id", "name", "action", "if":
			continue
		}
		fits := false
		for _, a := range keys {
			fits = fits || a == k
		}
		if !fits {
			return s, errAt(v, "%s: %s does not apply to action %s", what, k, s.Action)
		}
	}
	timeout := func(def time.Duration) error {
		s.Timeout = def
		if v := f["timeout"]; v != nil {
			var err error
			s.Timeout, err = duration(v, what+".timeout", MaxStepTimeout)
			return err
		}
		return nil
	}
	switch s.Action {
	case ActionSendMessage:
		s.Text, err = text("text")
	case ActionSetTopic:
		s.Topic, err = text("topic")
	case ActionAskAgent:
		var v *yaml.Node
		if v, err = need("agent"); err == nil {
			var pks []string
			if pks, err = pubkeys(v, what+".agent"); err == nil {
				if len(pks) != 1 {
					err = errAt(v, "%s.agent: name one agent", what)
				} else {
					s.Agent = pks[0]
				}
			}
		}
		if err == nil {
			s.Text, err = text("prompt")
		}
		if err == nil {
			err = timeout(DefaultAgentTimeout)
		}
	case ActionApproval:
		if s.Message, err = text("message"); err == nil {
			var v *yaml.Node
			if v, err = need("from"); err == nil {
				s.From, err = pubkeys(v, what+".from", ApproverOwner, ApproverAdmins)
			}
		}
		if err == nil {
			err = timeout(DefaultApprovalTimeout)
		}
	case ActionHTTP:
		if s.URL, err = text("url"); err == nil {
			s.Method = "POST"
			if v := f["method"]; v != nil {
				if s.Method, err = str(v, what+".method"); err == nil && s.Method != "GET" && s.Method != "POST" {
					err = errAt(v, "%s.method: want GET or POST", what)
				}
			}
		}
		if err == nil && f["body"] != nil {
			s.Body, err = text("body")
		}
		if err == nil {
			err = timeout(httpDefaultTimeout)
		}
	}
	if err != nil {
		return s, err
	}
	if v := f["if"]; v != nil {
		src, err := str(v, what+".if")
		if err != nil {
			return s, err
		}
		if s.If, err = ParseCondition(src); err != nil {
			return s, errAt(v, "%s.if: %v", what, err)
		}
		if err := checkTemplate(v, src, earlier); err != nil {
			return s, err
		}
	}
	return s, nil
}

// httpDefaultTimeout bounds a call_webhook step that sets none.
const httpDefaultTimeout = 10 * time.Second

var triggers = []string{OnMessage, OnReaction, OnSchedule, OnWebhook, OnManual}

var actions = []string{ActionSendMessage, ActionAskAgent, ActionApproval, ActionSetTopic, ActionHTTP}

// checkTemplate refuses a reference to a step that does not come earlier
// or to a field that does not exist.
func checkTemplate(n *yaml.Node, text string, earlier map[string]bool) error {
	for _, m := range placeholder().FindAllStringSubmatch(text, -1) {
		if err := checkRef(m[1], earlier); err != nil {
			return errAt(n, "{{%s}}: %v", m[1], err)
		}
	}
	return nil
}

func checkRef(ref string, earlier map[string]bool) error {
	parts := strings.Split(ref, ".")
	switch parts[0] {
	case "trigger":
		if len(parts) == 2 && triggerFields[parts[1]] || len(parts) == 3 && parts[1] == "inputs" {
			return nil
		}
		return errors.New("want trigger.text, trigger.author, trigger.channel, trigger.event, trigger.target, trigger.time or trigger.inputs.NAME")
	case "steps":
		if len(parts) != 3 || (parts[2] != "output" && parts[2] != "status") {
			return errors.New("want steps.ID.output or steps.ID.status")
		}
		if !earlier[parts[1]] {
			return fmt.Errorf("no earlier step has id %q", parts[1])
		}
		return nil
	case "workflow":
		if len(parts) == 2 && (parts[1] == "name" || parts[1] == "run") {
			return nil
		}
		return errors.New("want workflow.name or workflow.run")
	}
	return errors.New("want trigger.…, steps.ID.… or workflow.…")
}

var triggerFields = map[string]bool{"text": true, "author": true, "channel": true, "event": true, "target": true, "time": true}
