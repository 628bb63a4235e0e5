package harness

import (
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
)

// TestConfigMessageShape pins the message and hint built from the flag
// table for each kind of bad value.
func TestConfigMessageShape(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		msg  string
		hint string
	}{
		{[]string{"--agents", "x"}, nil,
			"buzz-acp: --agents x: not a whole number; use 1..32",
			"set --agents (or BUZZ_ACP_AGENTS) to 1..32"},
		{[]string{"--heartbeat-interval", "5"}, nil,
			"buzz-acp: --heartbeat-interval 5: below 10 seconds; use 0 (off) or 10..86400 seconds",
			"set --heartbeat-interval (or BUZZ_ACP_HEARTBEAT_INTERVAL) to 0 (off) or 10..86400 seconds"},
		{nil, []string{"BUZZ_ACP_CATCHUP=700000"},
			"buzz-acp: --catchup 700000: over 7 days; use 0..604800 seconds",
			"set --catchup (or BUZZ_ACP_CATCHUP) to 0..604800 seconds"},
		{[]string{"--max-turn-duration", "604801"}, nil,
			"buzz-acp: --max-turn-duration 604801: over 7 days; use 0..604800 seconds",
			"set --max-turn-duration (or BUZZ_ACP_MAX_TURN_DURATION) to 0..604800 seconds"},
		{[]string{"--subscribe", "some mode"}, nil,
			`buzz-acp: --subscribe "some mode": not a mode; use mentions, all or config`,
			"set --subscribe (or BUZZ_ACP_SUBSCRIBE) to mentions, all or config"},
		{[]string{"--permission-mode", "yolo"}, nil,
			"buzz-acp: --permission-mode yolo: not a mode; use default, accept-edits, bypass-permissions, dont-ask or plan",
			"set --permission-mode (or BUZZ_ACP_PERMISSION_MODE) to default, accept-edits, bypass-permissions, dont-ask or plan"},
		{[]string{"--no-typing=maybe"}, nil,
			"buzz-acp: --no-typing maybe: not a boolean; use true or false",
			"set --no-typing (or BUZZ_ACP_NO_TYPING) to true or false"},
		{[]string{"--kinds", "1,x"}, nil,
			"buzz-acp: --kinds x: not an event kind; use 0..4294967295",
			"set --kinds (or BUZZ_ACP_KINDS) to 0..4294967295"},
		{[]string{"--allowed-respond-to", "owner-only,bogus"}, nil,
			"buzz-acp: --allowed-respond-to bogus: not a respond-to mode; use owner-only, allowlist, anyone or nobody",
			"set --allowed-respond-to (or BUZZ_ACP_ALLOWED_RESPOND_TO) to owner-only, allowlist, anyone or nobody"},
		{[]string{"--allowed-respond-to", "owner-only", "--respond-to", "anyone"}, nil,
			"buzz-acp: --respond-to anyone: not in --allowed-respond-to owner-only; use owner-only, allowlist, anyone or nobody",
			"set --respond-to (or BUZZ_ACP_RESPOND_TO) to owner-only, allowlist, anyone or nobody"},
		{[]string{"--relay-url", "http://x"}, nil,
			"buzz-acp: --relay-url http://x: not a ws:// or wss:// URL; use ws://host:port or wss://host",
			"set --relay-url (or BUZZ_RELAY_URL) to ws://host:port or wss://host"},
		{[]string{"--state-dir", "rel"}, nil,
			"buzz-acp: --state-dir rel: not absolute; use an absolute path",
			"set --state-dir (or BUZZ_ACP_STATE_DIR) to an absolute path"},
		{[]string{"--agent-command", " "}, nil,
			`buzz-acp: --agent-command " ": blank; use a program name or path`,
			"set --agent-command (for example buzz-agent)"},
	} {
		_, err := LoadConfig(tc.args, testEnv(tc.env...))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("LoadConfig(%q, %q) = %v; want a ConfigError", tc.args, tc.env, err)
			continue
		}
		if err.Error() != tc.msg || ce.Hint != tc.hint {
			t.Errorf("LoadConfig(%q, %q):\n got  %s\n      hint: %s\n want %s\n      hint: %s", tc.args, tc.env, err, ce.Hint, tc.msg, tc.hint)
		}
	}
}

// TestConfigEveryRowChecked gives each numeric, boolean and enum flag of
// the table a bad value, by flag and by environment, and wants the
// message to name the flag and the value.
func TestConfigEveryRowChecked(t *testing.T) {
	for _, f := range flagTable() {
		var bad string
		switch f.kind {
		case kInt, kIntList:
			bad = "x1"
		case kBool:
			bad = "maybe"
		case kEnum:
			bad = "bogus"
		default:
			if len(f.values) == 0 {
				continue
			}
			bad = "bogus"
		}
		want := "buzz-acp: --" + f.name + " " + bad + ": not "
		for _, via := range []struct {
			args []string
			env  []string
		}{{[]string{"--" + f.name + "=" + bad}, nil}, {nil, []string{f.env + "=" + bad}}} {
			_, err := LoadConfig(via.args, testEnv(via.env...))
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s=%s (args %q env %q): %v; want %q…", f.name, bad, via.args, via.env, err, want)
			}
		}
	}
}

// TestBugSecondsOverflowDuration: a count of seconds large enough to
// overflow a time.Duration used to wrap negative and be accepted (an idle
// timeout below the hard cap, an inactivity exit in the past).
func TestBugSecondsOverflowDuration(t *testing.T) {
	for _, args := range [][]string{
		{"--exit-after-inactivity", "9223372037"},
		{"--idle-timeout", "9223372037"},
		{"--turn-timeout", "9223372037"},
	} {
		c, err := LoadConfig(args, testEnv())
		if err == nil {
			t.Errorf("LoadConfig(%q) accepted: idle %v exit %v", args, c.IdleTimeout, c.ExitAfterInactivity)
		} else if !strings.Contains(err.Error(), "over ") {
			t.Errorf("LoadConfig(%q) = %v; want an over-the-ceiling message", args, err)
		}
	}
}

// TestBugEventBufferUnbounded: BUZZ_ACP_EVENT_BUFFER had no ceiling, and
// the buffer is allocated whole when the harness starts.
func TestBugEventBufferUnbounded(t *testing.T) {
	_, err := LoadConfig(nil, testEnv("BUZZ_ACP_EVENT_BUFFER=1000000000000"))
	want := "buzz-acp: BUZZ_ACP_EVENT_BUFFER=1000000000000: over 65536 events; use 1..65536 events"
	var ce *ConfigError
	if !errors.As(err, &ce) || err.Error() != want || ce.Hint != "set BUZZ_ACP_EVENT_BUFFER to 1..65536 events" {
		t.Fatalf("LoadConfig = %v; want %q", err, want)
	}
	for _, v := range []string{"0", "x"} {
		if _, err := LoadConfig(nil, testEnv("BUZZ_ACP_EVENT_BUFFER="+v)); err == nil || !strings.Contains(err.Error(), "BUZZ_ACP_EVENT_BUFFER="+v+": ") {
			t.Errorf("BUZZ_ACP_EVENT_BUFFER=%s: %v", v, err)
		}
	}
	c, err := LoadConfig(nil, testEnv("BUZZ_ACP_EVENT_BUFFER=65536"))
	if err != nil || c.EventBuffer != 65536 {
		t.Errorf("BUZZ_ACP_EVENT_BUFFER=65536: %v", err)
	}
}

// TestConfigCapWarns: a heartbeat or liveness interval over a day is
// capped, with a warning naming the flag.
func TestConfigCapWarns(t *testing.T) {
	c, err := LoadConfig([]string{"--turn-liveness-secs", "90000"}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	if c.TurnLiveness.Seconds() != 86400 || !strings.Contains(strings.Join(c.Warnings, "\n"), "--turn-liveness-secs 90000 capped at 86400 seconds") {
		t.Errorf("liveness %v warnings %q", c.TurnLiveness, c.Warnings)
	}
}

// TestBinaryFlagErrorShape runs the built binary with a bad flag value:
// exit 2, the message on one line and the fix on the next, nothing on
// stdout, and the key never echoed.
func TestBinaryFlagErrorShape(t *testing.T) {
	acp := testexe.Link(t, "buzz-acp")
	cmd := exec.Command(acp, "--agents", "0")
	cmd.Env = []string{"BUZZ_PRIVATE_KEY=" + testKey, "HOME=" + t.TempDir()}
	stdout, stderr, code := testexe.Run(t, cmd)
	want := "buzz-acp: --agents 0: below 1; use 1..32\nhint: set --agents (or BUZZ_ACP_AGENTS) to 1..32\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d stdout %q stderr %q; want 2, nothing, %q", code, stdout, stderr, want)
	}
	cmd = exec.Command(acp, "--private-key", "zz"+testKey[2:])
	cmd.Env = []string{"HOME=" + t.TempDir()}
	_, stderr, code = testexe.Run(t, cmd)
	if code != 2 || strings.Contains(stderr, testKey[2:]) {
		t.Errorf("bad key: exit %d stderr %q; want 2 without the key", code, stderr)
	}
}

// FuzzLoadConfig loads random flag and environment combinations: no
// panic, and an accepted plan renders to flags that load to an equal
// Config.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte{11, 12 | 0x80, 18}, "5\x0090000\x00all")
	f.Add([]byte{36, 37, 38}, "allowlist\x00"+strings.Repeat("AB", 32)+"\x00allowlist,anyone")
	f.Add([]byte{6, 8, 7}, "30\x00 40 \x000")
	f.Add([]byte{35, 19, 0}, "acceptEdits\x00 1 ,2,\x00wss://r")
	var rows []flagSpec
	for _, r := range flagTable() {
		// No file reads (a fuzzed path could name a device) and the key stays valid.
		if strings.HasSuffix(r.name, "-file") || r.name == "config" || r.name == "private-key" {
			continue
		}
		rows = append(rows, r)
	}
	f.Fuzz(func(t *testing.T, picks []byte, vals string) {
		parts := strings.Split(vals, "\x00")
		var args []string
		env := []string{"BUZZ_PRIVATE_KEY=" + testKey, "HOME=/nonexistent"}
		for i, b := range picks {
			if i >= len(parts) {
				break
			}
			r := rows[int(b&0x7f)%len(rows)]
			if b&0x80 != 0 {
				env = append(env, r.env+"="+parts[i])
			} else {
				args = append(args, "--"+r.name+"="+parts[i])
			}
		}
		p, err := planConfig(args, proc.Env{Environ: env})
		if err != nil {
			return
		}
		c, err := p.run()
		if err != nil {
			return
		}
		again, err := LoadConfig(p.args(), proc.Env{Environ: []string{"BUZZ_PRIVATE_KEY=" + testKey, "HOME=/nonexistent"}})
		if err != nil {
			t.Fatalf("LoadConfig(%q) = %v; it loaded from args %q env %q", p.args(), err, args, env)
		}
		c.Warnings, again.Warnings = nil, nil
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("rendered flags %q load to\n%+v\nwant\n%+v", p.args(), again, c)
		}
	})
}

// TestFlagUsageMatchesBounds: a range or floor a flag's --help text states
// is the one its row enforces.
func TestFlagUsageMatchesBounds(t *testing.T) {
	stated := 0
	for _, f := range flagTable() {
		if f.kind != kInt {
			continue
		}
		if strings.Contains(f.usage, "..") {
			stated++
			if want := fmt.Sprintf("%d..%d", f.min, f.max); !strings.Contains(f.usage, want) {
				t.Errorf("--%s: usage %q; the row allows %s", f.name, f.usage, want)
			}
		}
		if strings.Contains(f.usage, ">=") {
			stated++
			if want := fmt.Sprintf(">= %d", f.min); !strings.Contains(f.usage, want) || !f.zeroOff {
				t.Errorf("--%s: usage %q; the row allows 0 (off: %v) or %s", f.name, f.usage, f.zeroOff, want)
			}
		}
	}
	if stated == 0 {
		t.Fatal("no flag states its bounds; the test checks nothing")
	}
}
