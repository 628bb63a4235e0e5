package harness

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/proc"
)

const testKey = "0000000000000000000000000000000000000000000000000000000000000001"

func testEnv(kv ...string) proc.Env {
	return proc.Env{Environ: append([]string{"BUZZ_PRIVATE_KEY=" + testKey}, kv...)}
}

func TestConfigValidation(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	os.WriteFile(big, make([]byte, maxBasePromptBytes+1), 0o600)
	ok := filepath.Join(dir, "ok.md")
	os.WriteFile(ok, make([]byte, maxBasePromptBytes), 0o600)
	up := strings.Repeat("AB", 32)
	for _, tc := range []struct {
		name    string
		args    []string
		env     []string
		wantErr string // substring; empty = success
	}{
		{"defaults", nil, nil, ""},
		{"idle equal to cap", []string{"--idle-timeout", "7200", "--max-turn-duration", "7200"}, nil, "must be less than"},
		{"idle below cap", []string{"--idle-timeout", "7199", "--max-turn-duration", "7200"}, nil, ""},
		{"cap over a week", []string{"--max-turn-duration", "604801"}, nil, "over 7 days"},
		{"heartbeat 5", []string{"--heartbeat-interval", "5"}, nil, "below 10"},
		{"liveness 3", []string{"--turn-liveness-secs", "3"}, nil, "below 5"},
		{"agents 0", []string{"--agents", "0"}, nil, "--agents 0: below 1; use 1..32"},
		{"agents 33", []string{"--agents", "33"}, nil, "--agents 33: over 32; use 1..32"},
		{"context 101", []string{"--context-message-limit", "101"}, nil, "over 100 messages"},
		{"drop with steer", []string{"--dedup", "drop"}, nil, "needs --dedup queue"},
		{"drop with queue", []string{"--dedup", "drop", "--multiple-event-handling", "queue"}, nil, ""},
		{"drop via env", nil, []string{"BUZZ_ACP_DEDUP=drop", "BUZZ_ACP_MULTIPLE_EVENT_HANDLING=interrupt"}, "needs --dedup queue"},
		{"allowlist empty", []string{"--respond-to", "allowlist"}, nil, "needs a list"},
		{"allowlist bad hex", []string{"--respond-to", "allowlist", "--respond-to-allowlist", "abc"}, nil, "not a 64-hex"},
		{"allowlist upper", []string{"--respond-to", "allowlist", "--respond-to-allowlist", up}, nil, ""},
		{"ceiling excludes mode", []string{"--allowed-respond-to", "owner-only,allowlist", "--respond-to", "anyone"}, nil, "not in --allowed-respond-to"},
		{"ceiling bogus", []string{"--allowed-respond-to", "bogus"}, nil, "not a respond-to mode"},
		{"base prompt too big", []string{"--base-prompt-file", big}, nil, "over the 1048576-byte limit"},
		{"base prompt at limit", []string{"--base-prompt-file", ok}, nil, ""},
		{"base prompt with none", []string{"--base-prompt-file", ok, "--no-base-prompt"}, nil, "conflict"},
		{"system prompt twice", []string{"--system-prompt", "x", "--system-prompt-file", ok}, nil, "conflict"},
		{"blank agent", []string{"--agent-command", "  "}, nil, "blank"},
		{"bad subscribe", []string{"--subscribe", "some"}, nil, "not a mode"},
		{"bad permission", []string{"--permission-mode", "yolo"}, nil, "not a mode"},
		{"camel permission", []string{"--permission-mode", "acceptEdits"}, nil, ""},
		{"relay url", []string{"--relay-url", "http://x"}, nil, "ws://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(tc.args, testEnv(tc.env...))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("LoadConfig(%q) = %v; want success", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("LoadConfig(%q) = %v; want error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

func TestConfigKey(t *testing.T) {
	_, err := LoadConfig(nil, proc.Env{})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "private key is required") {
		t.Fatalf("no key: %v", err)
	}
	c, err := LoadConfig(nil, proc.Env{Environ: []string{"BUZZ_ACP_PRIVATE_KEY=" + testKey}})
	if err != nil || c.AgentHex == "" {
		t.Fatalf("legacy alias: %v", err)
	}
	other := strings.Repeat("0", 63) + "2"
	c, err = LoadConfig(nil, proc.Env{Environ: []string{"BUZZ_ACP_PRIVATE_KEY=" + other, "BUZZ_PRIVATE_KEY=" + testKey}})
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := LoadConfig(nil, testEnv())
	if c.AgentHex != c1.AgentHex {
		t.Errorf("alias used although BUZZ_PRIVATE_KEY is set")
	}
	if _, err := LoadConfig(nil, proc.Env{Environ: []string{"BUZZ_PRIVATE_KEY=zz"}}); err == nil {
		t.Errorf("bad key accepted")
	}
}

func TestConfigTimeouts(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		idle, hard time.Duration
		warn       string
	}{
		{nil, 900 * time.Second, 7200 * time.Second, ""},
		{[]string{"--max-turn-duration", "0", "--idle-timeout", "30"}, 30 * time.Second, 60 * time.Second, "60 seconds"},
		{[]string{"--idle-timeout", "0"}, time.Second, 7200 * time.Second, "1 second"},
		{[]string{"--turn-timeout", "300"}, 300 * time.Second, 7200 * time.Second, "deprecated"},
		{[]string{"--turn-timeout", "300", "--idle-timeout", "400"}, 400 * time.Second, 7200 * time.Second, "deprecated"},
	} {
		c, err := LoadConfig(tc.args, testEnv())
		if err != nil {
			t.Fatalf("LoadConfig(%q) = %v", tc.args, err)
		}
		if c.IdleTimeout != tc.idle || c.MaxTurn != tc.hard {
			t.Errorf("LoadConfig(%q) = idle %v hard %v; want %v %v", tc.args, c.IdleTimeout, c.MaxTurn, tc.idle, tc.hard)
		}
		if tc.warn != "" && !strings.Contains(strings.Join(c.Warnings, "\n"), tc.warn) {
			t.Errorf("LoadConfig(%q) warnings %q; want %q", tc.args, c.Warnings, tc.warn)
		}
	}
	c, _ := LoadConfig([]string{"--heartbeat-interval", "100000"}, testEnv())
	if c.HeartbeatInterval != 86400*time.Second {
		t.Errorf("heartbeat 100000 = %v; want 86400s", c.HeartbeatInterval)
	}
	c, _ = LoadConfig([]string{"--respond-to", "allowlist", "--respond-to-allowlist", strings.Repeat("AB", 32)}, testEnv())
	if !c.Allowlist[strings.Repeat("ab", 32)] {
		t.Errorf("allowlist not lowercased: %v", c.Allowlist)
	}
}

// TestDefaultsAreTheNamedConstants: the flag table's defaults are the
// constants of limits.go, not copies of their numbers.
func TestDefaultsAreTheNamedConstants(t *testing.T) {
	c, err := LoadConfig(nil, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if c.IdleTimeout != defaultIdleTimeout || c.MaxTurn != defaultMaxTurn || c.TurnLiveness != defaultTurnLiveness || c.ContextLimit != defaultContextLimit {
		t.Errorf("defaults: idle %v, turn %v, liveness %v, context %d; want %v, %v, %v, %d",
			c.IdleTimeout, c.MaxTurn, c.TurnLiveness, c.ContextLimit, defaultIdleTimeout, defaultMaxTurn, defaultTurnLiveness, defaultContextLimit)
	}
}

func TestFlagBeatsEnv(t *testing.T) {
	c, err := LoadConfig([]string{"--agents", "3"}, testEnv("BUZZ_ACP_AGENTS=5", "BUZZ_ACP_CONTEXT_MESSAGE_LIMIT=7", "BUZZ_ACP_NO_TYPING=true"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents != 3 || c.ContextLimit != 7 || !c.NoTyping {
		t.Errorf("agents %d context %d notyping %v; want 3 7 true", c.Agents, c.ContextLimit, c.NoTyping)
	}
}

func TestCommandIdentityAndArgs(t *testing.T) {
	if got := CommandIdentity(`C:\tools\Claude_Code.CMD`); got != "claude-code" {
		t.Errorf("CommandIdentity = %q; want claude-code", got)
	}
	for _, tc := range []struct {
		cmd   string
		args  []string
		given bool
		want  []string
	}{
		{"goose", nil, true, []string{"acp"}},
		{"goose", nil, false, []string{"acp"}},
		{"/usr/bin/codex-acp", []string{"acp"}, true, []string{}},
		{"mystery", []string{"acp"}, true, []string{"acp"}},
		{"mystery", nil, false, []string{"acp"}},
		{`C:\tools\Claude_Code.CMD`, nil, false, nil},
		{"buzz-agent", nil, false, nil},
		{"goose", []string{" x ", "", "y"}, true, []string{"x", "y"}},
	} {
		got := NormalizeArgs(CommandIdentity(tc.cmd), tc.args, tc.given)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("NormalizeArgs(%s, %q) = %q; want %q", tc.cmd, tc.args, got, tc.want)
		}
	}
}

func TestCodexConfig(t *testing.T) {
	c, err := LoadConfig([]string{"--agent-command", "codex-acp"},
		testEnv(`CODEX_CONFIG={"sandbox_workspace_write":{"network_access":false,"x":1},"y":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AgentEnv) != 1 || !strings.HasPrefix(c.AgentEnv[0], "CODEX_CONFIG=") {
		t.Fatalf("AgentEnv = %q", c.AgentEnv)
	}
	var got map[string]map[string]any
	json.Unmarshal([]byte(strings.TrimPrefix(c.AgentEnv[0], "CODEX_CONFIG=")), &got)
	if got["sandbox_workspace_write"]["network_access"] != true || got["sandbox_workspace_write"]["x"] != 1.0 {
		t.Errorf("CODEX_CONFIG = %s", c.AgentEnv[0])
	}
	if _, err := LoadConfig([]string{"--agent-command", "codex"}, testEnv(`CODEX_CONFIG=[1]`)); err == nil {
		t.Errorf("non-object CODEX_CONFIG accepted")
	}
}

func TestConfigModeWarnings(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "r.toml")
	os.WriteFile(rules, []byte("[[rules]]\nname=\"a\"\nchannels=\"all\"\n"), 0o600)
	c, err := LoadConfig([]string{"--subscribe", "config", "--config", rules, "--kinds", "1"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if c.Kinds != nil || !strings.Contains(strings.Join(c.Warnings, "\n"), "--kinds is ignored") {
		t.Errorf("kinds %v warnings %q", c.Kinds, c.Warnings)
	}
	c, err = LoadConfig([]string{"--channels", "not-a-uuid,6f1c2d4e-0000-4000-8000-00000000000A"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Channels) != 1 || c.Channels[0] != "6f1c2d4e-0000-4000-8000-00000000000a" || !strings.Contains(strings.Join(c.Warnings, "\n"), "not a UUID") {
		t.Errorf("channels %v warnings %q", c.Channels, c.Warnings)
	}
}

func TestSanitizeTitle(t *testing.T) {
	if got := SanitizeTitle("A\tB  C\x07"); got != "A B C" {
		t.Errorf("SanitizeTitle = %q", got)
	}
	if got := SanitizeTitle(strings.Repeat("é", 100)); len([]rune(got)) != 80 {
		t.Errorf("SanitizeTitle cap = %d runes", len([]rune(got)))
	}
}

func TestRulesFile(t *testing.T) {
	rule := func(name, extra string) string {
		return "[[rules]]\nname = " + name + "\nchannels = \"all\"\n" + extra + "\n"
	}
	var many strings.Builder
	for i := 0; i <= maxRules; i++ {
		many.WriteString(rule(`"r`+strings.Repeat("x", i)+`"`, ""))
	}
	for _, tc := range []struct {
		name, text, wantErr string
	}{
		{"ok", rule(`"a"`, `filter = 'str_contains(content, "P1") && kind == 9'`), ""},
		{"101 rules", many.String(), "over the limit"},
		{"duplicate", rule(`"a"`, "") + rule(`"a"`, ""), "duplicate"},
		{"blank", rule(`"  "`, ""), "blank name"},
		{"ALL", "[[rules]]\nname=\"a\"\nchannels=\"ALL\"\n", "neither"},
		{"long filter", rule(`"a"`, "filter = '"+strings.Repeat(" ", 4090)+"kind == 9'"), "over the 4096-byte limit"},
		{"bad filter", rule(`"a"`, "filter = 'kind =='"), "unexpected end"},
		{"syntax", "[[rules]\n", "rules file"},
		{"no channels", "[[rules]]\nname=\"a\"\n", "no channels"},
	} {
		_, err := ParseRules([]byte(tc.text))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: ParseRules = %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: ParseRules = %v; want %q", tc.name, err, tc.wantErr)
		}
	}
}

func FuzzParseRules(f *testing.F) {
	f.Add([]byte("[[rules]]\nname=\"a\"\nchannels=\"all\"\nkinds=[9]\nfilter='kind == 9'\n"))
	f.Add([]byte("[[rules]]\nname=\"b\"\nchannels=[\"x\"]\nrequire_mention=true\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rules, err := ParseRules(b)
		if err != nil {
			return
		}
		m := newRuleMatcher(rules, "ab")
		ev := &Event{Channel: "x"}
		ev.Kind = 9
		m.match(ev)
	})
}

func TestRuleMatching(t *testing.T) {
	const ch = "6f1c2d4e-0000-4000-8000-00000000000a"
	rules, err := ParseRules([]byte(`
[[rules]]
name = "broken"
channels = "all"
kinds = [1]
filter = 'kind == "1"'

[[rules]]
name = "incidents"
channels = ["` + ch + `"]
kinds = [9]
filter = 'str_contains(content, "P1")'
prompt_tag = "incident"

[[rules]]
name = "mentions"
channels = "all"
require_mention = true
`))
	if err != nil {
		t.Fatal(err)
	}
	m := newRuleMatcher(rules, "agent")
	mk := func(kind int, content string, p bool) *Event {
		e := &Event{Channel: ch}
		e.Kind, e.Content = kind, content
		if p {
			e.Tags = append(e.Tags, []string{"p", "agent"})
		}
		return e
	}
	for _, tc := range []struct {
		ev   *Event
		tag  string
		want bool
	}{
		{mk(9, "P1 fire", false), "incident", true},
		{mk(9, "P1 fire", true), "incident", true},
		{mk(9, "calm", true), "mentions", true},
		{mk(9, "calm", false), "", false},
		{mk(1, "x", true), "", false}, // filter error is fail-closed for the whole event
	} {
		tag, ok := m.match(tc.ev)
		if tag != tc.tag || ok != tc.want {
			t.Errorf("match(kind %d %q) = %q %v; want %q %v", tc.ev.Kind, tc.ev.Content, tag, ok, tc.tag, tc.want)
		}
	}
	rules[1].timeouts = filterTimeoutsToDisable
	if tag, ok := m.match(mk(9, "P1", true)); ok {
		t.Errorf("disabled rule let the event through to %q", tag)
	}
}
