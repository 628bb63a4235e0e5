package relay

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

func TestMainUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, exitOK, "usage: buzz-relay"},
		{[]string{"--bogus"}, exitError, "unknown flag --bogus\nhint: run 'buzz-relay --help'"},
		{[]string{"extra"}, exitError, `unexpected argument "extra"`},
		{[]string{"--data", "x"}, exitError, "hint: buzz-relay --owner"},
		{[]string{"--open", "--log-level", "loud"}, exitError, "--log-level"},
		{[]string{"--owner", "nope", "--data", "DIR"}, exitError, "owner"},
	} {
		var stderr, stdout bytes.Buffer
		if tc.args[0] == "--help" {
			// Help is asked-for output: stdout.
			code := Main(t.Context(), tc.args, proc.Env{Stdout: &stdout, Stderr: &stderr})
			if code != tc.code || !strings.Contains(stdout.String(), tc.want) || stderr.Len() != 0 {
				t.Errorf("buzz-relay --help = %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			continue
		}
		args := tc.args
		for i := range args {
			if args[i] == "DIR" {
				args[i] = t.TempDir()
			}
		}
		code := Main(t.Context(), args, proc.Env{Stdout: &stdout, Stderr: &stderr, Dir: t.TempDir()})
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("buzz-relay %v = %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("buzz-relay %v wrote to stdout: %q", tc.args, stdout.String())
		}
	}
}

// TestMainServesUntilCancelled runs the identity in-process: it logs its
// address, serves, and returns 0 when its context ends.
func TestMainServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	dir := t.TempDir()
	code := make(chan int, 1)
	// Ends when ctx is cancelled below.
	go func() {
		code <- Main(ctx, []string{"--listen", "127.0.0.1:0", "--data", "data", "--open"}, proc.Env{Stderr: pw, Dir: dir})
		pw.Close()
	}()
	url := ""
	sc := bufio.NewScanner(pr)
	for url == "" && sc.Scan() {
		if strings.Contains(sc.Text(), "msg=listening") {
			for _, f := range strings.Fields(sc.Text()) {
				if u, ok := strings.CutPrefix(f, "url="); ok {
					url = u
				}
			}
		}
	}
	// Drains the rest of the log until Main closes the pipe.
	go io.Copy(io.Discard, pr)
	if url == "" {
		t.Fatal("no listening line")
	}
	c := connect(t, url)
	mustPublish(t, c, signed(t, newKey(t), 1, "hello"))
	cancel()
	if got := <-code; got != exitOK {
		t.Fatalf("Main after cancel = %d; want 0", got)
	}
}
