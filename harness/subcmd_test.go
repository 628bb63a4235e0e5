package harness

import (
	"context"
	"os"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

func TestSubcommands(t *testing.T) {
	exe, _ := os.Executable()
	env := func() (proc.Env, *strings.Builder) {
		var out strings.Builder
		return proc.Env{Environ: append(os.Environ(), envFakeAgent+"=echo"), Dir: t.TempDir(), Exe: exe, Stdout: &out, Stderr: t.Output()}, &out
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"models", "--json", "--agent-command", exe}, 0, `"modelId": "m1"`},
		{[]string{"models", "--agent-command", exe}, 0, "agent: fake 0"},
		{[]string{"auth-methods", "--agent-command", exe}, 0, "login\tLog in"},
		{[]string{"auth-methods", "--json", "--agent-command", exe}, 0, `"methods"`},
		{[]string{"authenticate", "--method-id", "login", "--agent-command", exe}, 0, "authenticated"},
		{[]string{"authenticate", "--method-id", "nope", "--agent-command", exe}, 1, ""},
	} {
		e, out := env()
		if code := Main(context.Background(), tc.args, e); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("Main(%q) = %d, %q; want %d and %q", tc.args, code, out.String(), tc.code, tc.want)
		}
	}
}
