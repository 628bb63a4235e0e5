package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// setupPayload is BUZZ_ACP_SETUP_PAYLOAD (spec §14): what the agent still
// needs before it can run. In setup mode no agent is spawned; mentions get
// a reply saying what to set.
type setupPayload struct {
	AgentName    string            `json:"agent_name"`
	AgentPubkey  string            `json:"agent_pubkey"`
	Requirements []json.RawMessage `json:"requirements"`
}

type requirement struct {
	Surface      string   `json:"surface"`
	Field        string   `json:"field"`
	Key          string   `json:"key"`
	ProbeArgs    []string `json:"probe_args"`
	SetupCopy    string   `json:"setup_copy"`
	Availability string   `json:"availability"`
	Diagnostic   string   `json:"diagnostic"`
}

// setupState answers each triggering event once.
type setupState struct {
	raw     string
	payload setupPayload
	mu      sync.Mutex
	done    *idSet
}

func parseSetup(raw string) (*setupState, error) {
	var p setupPayload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, cfgErr("BUZZ_ACP_SETUP_PAYLOAD must be the JSON object the desktop app writes", "BUZZ_ACP_SETUP_PAYLOAD: %v", err)
	}
	return &setupState{raw: raw, payload: p, done: newIDSet(dedupGeneration)}, nil
}

// nudgeText renders the reply: one bullet per requirement, a footer, and
// the payload in a buzz:config-nudge block.
func (s *setupState) nudgeText() string {
	var b strings.Builder
	name := s.payload.AgentName
	if name == "" {
		name = "This agent"
	}
	fmt.Fprintf(&b, "%s is not set up yet, so it cannot answer. To finish:\n\n", name)
	logins, fields := 0, 0
	for _, raw := range s.payload.Requirements {
		var r requirement
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		switch r.Surface {
		case "normalized_field":
			fields++
			fmt.Fprintf(&b, "- Set **%s** in the agent's settings.\n", r.Field)
		case "env_key":
			fields++
			fmt.Fprintf(&b, "- Set the environment variable `%s` for the agent.\n", r.Key)
		case "cli_login":
			logins++
			switch r.Availability {
			case "cli_missing", "not_installed":
				fmt.Fprintf(&b, "- Install the agent's command-line tool, then log in with `%s`.", strings.Join(r.ProbeArgs, " "))
			case "adapter_missing", "adapter_outdated":
				fmt.Fprintf(&b, "- Install or update the agent's ACP adapter, then log in with `%s`.", strings.Join(r.ProbeArgs, " "))
			default:
				fmt.Fprintf(&b, "- Log in with `%s`.", strings.Join(r.ProbeArgs, " "))
			}
			if r.SetupCopy != "" {
				b.WriteString(" " + r.SetupCopy)
			}
			b.WriteString("\n")
		case "cli_config_invalid":
			logins++
			fmt.Fprintf(&b, "- Fix the agent's CLI configuration (`%s` reports: %s).", strings.Join(r.ProbeArgs, " "), r.Diagnostic)
			if r.SetupCopy != "" {
				b.WriteString(" " + r.SetupCopy)
			}
			b.WriteString("\n")
		case "git_bash":
			fields++
			b.WriteString("- Install Git for Windows (Git Bash) so the agent can run shell commands.\n")
		default:
			fmt.Fprintf(&b, "- Complete the %q setup step.\n", r.Surface)
		}
	}
	switch {
	case logins > 0 && fields == 0:
		b.WriteString("\nAfter logging in, mention me again.\n")
	case logins > 0:
		b.WriteString("\nOnce the settings are saved and the login is done, restart the agent and mention me again.\n")
	default:
		b.WriteString("\nOnce these are set, restart the agent and mention me again.\n")
	}
	b.WriteString("\n```buzz:config-nudge\n" + s.raw + "\n```")
	return b.String()
}

// setupReply answers a mention in setup mode, once per event.
func (h *harness) setupReply(ctx context.Context, ev *Event) {
	if ev.Kind != workspace.KindStream && ev.Kind != workspace.KindApprovalRequest || !ev.mentions(h.cfg.AgentHex) {
		return
	}
	s := h.setup
	s.mu.Lock()
	fresh := s.done.Add(ev.ID)
	s.mu.Unlock()
	if !fresh {
		return
	}
	anchor, _ := ev.thread()
	if anchor == "" {
		anchor = ev.ID
	}
	reply := &nostr.Event{Kind: workspace.KindStream, CreatedAt: nostr.Now(), Content: s.nudgeText(),
		Tags: nostr.Tags{{"h", ev.Channel}, {"e", anchor, "", "reply"}, {"p", ev.PubKey}}}
	if err := h.cfg.Secret.SignEvent(reply); err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	if _, err := h.io.Publish(pctx, reply); err != nil {
		h.log.Warn("setup nudge not published", "event_id", ev.ID, "err", err)
		return
	}
	h.log.Info("answered with setup nudge", "channel", ev.Channel, "event_id", ev.ID)
}
