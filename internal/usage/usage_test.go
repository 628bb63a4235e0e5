package usage

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func testPage() (*Page, *flag.FlagSet) {
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.String("listen", "127.0.0.1:3000", "`address` to listen on")
	fs.Bool("open", false, "serve anyone")
	fs.Duration("wait", time.Second, "how long to wait")
	fs.String("old", "", "deprecated alias")
	return &Page{Name: "tool", Flags: fs, About: "Does one thing.",
		FlagEnv:  map[string]string{"listen": "TOOL_LISTEN"},
		Hidden:   map[string]bool{"old": true},
		Env:      []Var{{Name: "TOOL_LOG", Help: "log level"}},
		Examples: []string{"tool --listen :0"}}, fs
}

func TestPageDoubleDashFlagsWithEnvAndDefault(t *testing.T) {
	p, _ := testPage()
	var b strings.Builder
	p.Write(&b)
	out := b.String()
	for _, want := range []string{
		"usage: tool [flags]\n",
		"  --listen ADDRESS        address to listen on (env TOOL_LISTEN, default\n                          127.0.0.1:3000)\n",
		"  --open                  serve anyone\n",
		"  --wait DURATION         how long to wait (default 1s)\n",
		"  --help                  print this help and exit\n",
		"Environment:\n  TOOL_LOG                log level\n",
		"Example:\n  tool --listen :0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--old") || strings.Contains(out, "\n  -listen") {
		t.Errorf("page shows a hidden flag or a single-dash one:\n%s", out)
	}
}

func TestParseHelpToStdoutBadFlagToStderr(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		done           bool
		stdout, stderr string
	}{
		{[]string{"--help"}, ExitOK, true, "usage: tool", ""},
		{[]string{"-h"}, ExitOK, true, "usage: tool", ""},
		{[]string{"--nope"}, ExitUsage, true, "", "tool: unknown flag --nope\nhint: run 'tool --help' for the flags and an example\n"},
		{[]string{"--listen"}, ExitUsage, true, "", "tool: a value is missing after --listen\n"},
		{[]string{"--wait", "soon"}, ExitUsage, true, "", `tool: invalid value "soon" for --wait: parse error`},
		{[]string{"--open=maybe"}, ExitUsage, true, "", `tool: invalid boolean value "maybe" for --open: parse error`},
		{[]string{"extra"}, ExitUsage, true, "", `tool: unexpected argument "extra"`},
		{[]string{"--open"}, ExitOK, false, "", ""},
	} {
		p, _ := testPage()
		var out, errb strings.Builder
		code, done := p.Parse(tc.args, true, &out, &errb)
		if code != tc.code || done != tc.done {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.args, code, done, tc.code, tc.done)
		}
		if !strings.Contains(out.String(), tc.stdout) || (tc.stdout == "") != (out.Len() == 0) {
			t.Errorf("Parse(%q) stdout = %q; want %q", tc.args, out.String(), tc.stdout)
		}
		if !strings.Contains(errb.String(), tc.stderr) || (tc.stderr == "") != (errb.Len() == 0) {
			t.Errorf("Parse(%q) stderr = %q; want %q", tc.args, errb.String(), tc.stderr)
		}
	}
}

func FuzzFlagError(f *testing.F) {
	for _, s := range []string{"flag provided but not defined: -x", "flag needs an argument: -x",
		`invalid value "a for -b" for flag -c: bad`, `invalid boolean value "\"" for -d: e`, `invalid value "unterminated`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := FlagError(errors.New(msg))
		if msg != "" && got == "" {
			t.Errorf("FlagError(%q) = empty", msg)
		}
	})
}
