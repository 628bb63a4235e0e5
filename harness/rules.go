package harness

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"buzzbox/harness/filter"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
)

// Rule is one [[rules]] entry of the rules file (spec §5.2), validated and
// with its filter compiled.
type Rule struct {
	Name           string
	AllChannels    bool
	Channels       map[string]bool // lowercase UUIDs when not AllChannels
	Kinds          []int           // empty = every kind
	RequireMention bool
	Filter         *filter.Expr // nil = none
	PromptTag      string

	mu       sync.Mutex
	timeouts int // consecutive filter timeouts; at filterTimeoutsToDisable the rule is off
}

type rulesFile struct {
	Rules []struct {
		Name           string `toml:"name"`
		Channels       any    `toml:"channels"`
		Kinds          []int  `toml:"kinds"`
		RequireMention bool   `toml:"require_mention"`
		Filter         string `toml:"filter"`
		PromptTag      string `toml:"prompt_tag"`
	} `toml:"rules"`
}

// LoadRules reads and validates a rules file.
func LoadRules(path string) ([]*Rule, error) {
	b, err := readCapped(path, maxRulesFileBytes)
	if err != nil {
		return nil, cfgErr("write a rules file or pick another --subscribe mode", "read rules file: %v", err)
	}
	return ParseRules(b)
}

// ParseRules validates rules file text (spec §5.2).
func ParseRules(b []byte) ([]*Rule, error) {
	var f rulesFile
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&f); err != nil {
		return nil, cfgErr("", "rules file: %v", err)
	}
	if len(f.Rules) > maxRules {
		return nil, cfgErr("", "rules file has %d rules, over the limit of %d", len(f.Rules), maxRules)
	}
	seen := map[string]bool{}
	var out []*Rule
	for i, r := range f.Rules {
		name := strings.TrimSpace(r.Name)
		if name == "" {
			return nil, cfgErr("", "rules file: rule %d has a blank name", i+1)
		}
		if seen[name] {
			return nil, cfgErr("", "rules file: duplicate rule name %q", name)
		}
		seen[name] = true
		rule := &Rule{Name: name, Kinds: r.Kinds, RequireMention: r.RequireMention, PromptTag: r.PromptTag}
		if rule.PromptTag == "" {
			rule.PromptTag = name
		}
		switch ch := r.Channels.(type) {
		case string:
			if ch != "all" {
				return nil, cfgErr(`use channels = "all" or a list of UUIDs`, "rules file: rule %q: channels = %q is neither \"all\" nor a list", name, ch)
			}
			rule.AllChannels = true
		case []any:
			rule.Channels = map[string]bool{}
			for _, c := range ch {
				s, ok := c.(string)
				if !ok {
					return nil, cfgErr("", "rules file: rule %q: channels entries must be strings", name)
				}
				rule.Channels[s] = true
			}
		case nil:
			return nil, cfgErr(`add channels = "all" or a list of UUIDs`, "rules file: rule %q has no channels", name)
		default:
			return nil, cfgErr("", "rules file: rule %q: channels must be \"all\" or a list", name)
		}
		for _, k := range r.Kinds {
			if k < 0 || k > 1<<32-1 {
				return nil, cfgErr("", "rules file: rule %q: kind %d out of range", name, k)
			}
		}
		if r.Filter != "" {
			if len(r.Filter) > maxFilterBytes {
				return nil, cfgErr("", "rules file: rule %q: filter is %d bytes, over the %d-byte limit", name, len(r.Filter), maxFilterBytes)
			}
			e, err := filter.Compile(r.Filter)
			if err != nil {
				return nil, cfgErr("", "rules file: rule %q: %v", name, err)
			}
			rule.Filter = e
		}
		out = append(out, rule)
	}
	return out, nil
}

// appliesTo reports whether the rule covers a channel.
func (r *Rule) appliesTo(channel string) bool { return r.AllChannels || r.Channels[channel] }

// ownerFromAuthTag returns the owner named by a NIP-OA auth tag (JSON array
// text ["auth", owner, conditions, sig]) when its signature verifies for agent.
func ownerFromAuthTag(tagJSON, agentHex string) (string, bool) {
	if tagJSON == "" {
		return "", false
	}
	var tag []string
	if err := json.Unmarshal([]byte(tagJSON), &tag); err != nil {
		return "", false
	}
	return verifyAuthTag(tag, agentHex)
}

// verifyAuthTag checks a NIP-OA tag: BIP-340 by the owner over
// SHA-256("nostr:agent-auth:<agent>:<conditions>"), owner not the agent.
func verifyAuthTag(tag []string, agentHex string) (string, bool) {
	t, ok := verifiedAttestation(tag, agentHex)
	if !ok {
		return "", false
	}
	return t.Owner.Hex(), true
}

// authTagLapsed says why the time clauses of an auth tag (JSON text) do not
// hold at now, or "" when they do or the tag does not parse.
func authTagLapsed(tagJSON string, now time.Time) string {
	var tag []string
	if json.Unmarshal([]byte(tagJSON), &tag) != nil || len(tag) != 4 {
		return ""
	}
	t, err := nipoa.FromParts(strings.ToLower(tag[1]), tag[2], tag[3])
	if err != nil {
		return ""
	}
	if err := t.CheckTime(now.Unix()); err != nil {
		return "does not hold now (" + err.Error() + ")"
	}
	return ""
}

// verifiedAttestation is verifyAuthTag returning the whole attestation,
// conditions included.
func verifiedAttestation(tag []string, agentHex string) (*nipoa.Tag, bool) {
	if len(tag) != 4 || tag[0] != nipoa.TagName {
		return nil, false
	}
	t, err := nipoa.FromParts(strings.ToLower(tag[1]), tag[2], tag[3])
	if err != nil {
		return nil, false
	}
	agent, err := nostrkey.ParsePublic(agentHex)
	if err != nil || t.Verify(agent) != nil {
		return nil, false
	}
	return &t, true
}

// attestationAdmits reports whether a sibling's attestation covers an
// event it wrote: every clause holds for the event's kind and created_at
// (NIP-OA), and the time clauses also hold at now, since created_at is the
// agent's to choose and an expired attestation must stop counting.
func attestationAdmits(a *nipoa.Tag, kind int, createdAt int64, now time.Time) bool {
	return a != nil && a.CheckEvent(kind, createdAt) == nil && a.CheckTime(now.Unix()) == nil
}

// codexEnv returns the CODEX_CONFIG entry for a codex child: the parent's
// object (if any) deep-merged over our overlay, then network access forced
// on (spec §8.1).
func codexEnv(parent string) (string, error) {
	merged := map[string]any{"sandbox_workspace_write": map[string]any{"network_access": true}}
	if strings.TrimSpace(parent) != "" {
		var p any
		if err := json.Unmarshal([]byte(parent), &p); err != nil {
			return "", cfgErr("CODEX_CONFIG must be a JSON object", "CODEX_CONFIG: %v", err)
		}
		obj, ok := p.(map[string]any)
		if !ok {
			return "", cfgErr("CODEX_CONFIG must be a JSON object", "CODEX_CONFIG is not a JSON object")
		}
		deepMerge(merged, obj)
	}
	sw, ok := merged["sandbox_workspace_write"].(map[string]any)
	if !ok {
		sw = map[string]any{}
		merged["sandbox_workspace_write"] = sw
	}
	sw["network_access"] = true
	b, err := json.Marshal(merged)
	if err != nil {
		return "", err
	}
	return "CODEX_CONFIG=" + string(b), nil
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				deepMerge(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

// ruleMatcher runs rules against events with the spec's budgets (§5.3).
type ruleMatcher struct {
	rules []*Rule
	agent string
	slots chan struct{}
}

func newRuleMatcher(rules []*Rule, agent string) *ruleMatcher {
	return &ruleMatcher{rules: rules, agent: agent, slots: make(chan struct{}, filterPoolSize)}
}

// match returns the prompt tag of the first rule that accepts ev. A filter
// error or timeout drops the event without trying later rules.
func (m *ruleMatcher) match(ev *Event) (string, bool) {
	for _, r := range m.rules {
		if !r.appliesTo(ev.Channel) {
			continue
		}
		if len(r.Kinds) > 0 && !containsInt(r.Kinds, ev.Kind) {
			continue
		}
		if r.RequireMention && !ev.mentions(m.agent) && ev.Woken == "" {
			continue
		}
		if r.Filter == nil {
			return r.PromptTag, true
		}
		r.mu.Lock()
		disabled := r.timeouts >= filterTimeoutsToDisable
		r.mu.Unlock()
		if disabled {
			return "", false
		}
		ok, err := m.eval(r, ev)
		r.mu.Lock()
		if err == filter.ErrTimeout {
			r.timeouts++
		} else {
			r.timeouts = 0
		}
		r.mu.Unlock()
		if err != nil {
			return "", false
		}
		if ok {
			return r.PromptTag, true
		}
	}
	return "", false
}

func (m *ruleMatcher) eval(r *Rule, ev *Event) (bool, error) {
	t := time.NewTimer(filterSlotWait)
	defer t.Stop()
	select {
	case m.slots <- struct{}{}:
	case <-t.C:
		return false, filter.ErrTimeout
	}
	defer func() { <-m.slots }()
	return r.Filter.Match(&filter.Event{
		Content: ev.Content, Author: ev.PubKey, Kind: ev.Kind,
		ChannelID: ev.Channel, Timestamp: int64(ev.CreatedAt),
	}, time.Now().Add(filterEvalBudget))
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
