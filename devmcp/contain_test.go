package devmcp_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAttackSignalLeavesKeyFile: every terminating signal (not only
// SIGINT and SIGTERM) makes the server remove its shim dir, key file
// included, and its session dir before it exits.
func TestAttackSignalLeavesKeyFile(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			key := strings.Repeat("0", 63) + "3"
			p := startServer(t, startOpts{tmp: tmp, env: []string{"NOSTR_PRIVATE_KEY=" + key}})
			p.initialize("2025-11-25")
			if entries, _ := os.ReadDir(tmp); len(entries) != 2 {
				t.Fatalf("temp dir holds %d entries before the signal; want the shim and session dirs", len(entries))
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				t.Fatalf("server did not exit on %v", sig)
			}
			p.cmd.Wait()
			if names := dirNames(t, tmp); len(names) != 0 {
				t.Errorf("temp dir after %v holds %v; want the shim dir (with .nostr-key) and the session dir removed", sig, names)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// attackKey is the secret the attacks below try to read.
const attackKey = "00000000000000000000000000000000000000000000000000000000000000a7"

// TestAttackShellReadsServerEnviron: a command the model runs reads the
// environment of its parent, buzz-dev-mcp, which held the agent's key.
// The server is non-dumpable, so a process of the same (non-root) user
// cannot open its /proc/PID/environ. The sandbox is off here, so this
// checks the first layer alone.
func TestAttackShellReadsServerEnviron(t *testing.T) {
	p, _ := startUnprivilegedEnv(t, []string{"NOSTR_PRIVATE_KEY=" + attackKey, "BUZZ_PRIVATE_KEY=" + attackKey, "BUZZ_SHELL_SANDBOX=off"})
	out := runShell(t, p, map[string]any{"command": `cat /proc/$PPID/environ; echo; cat /proc/$PPID/cmdline; grep -a -o 'a7' /proc/$PPID/mem 2>&1 | head -1`})
	if strings.Contains(out.Stdout, attackKey) {
		t.Errorf("the shell read the server's key from /proc/$PPID/environ (%d bytes of output)", len(out.Stdout))
	}
	if !strings.Contains(out.Stderr, "Permission denied") {
		t.Errorf("stderr = %q; want the reads refused", out.Stderr)
	}
}
