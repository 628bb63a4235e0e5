package devmcp_test

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestAttackShellEnvSecrets: a command the model runs prints its
// environment. Provider keys, tokens, passwords and private keys of the
// server's environment are not in it, unless BUZZ_SHELL_PASS_ENV names
// them; the agent's own BUZZ_PRIVATE_KEY stays for the buzz CLI.
func TestAttackShellEnvSecrets(t *testing.T) {
	secrets := map[string]string{
		"ANTHROPIC_API_KEY":     "sk-ant-leak1",
		"OPENAI_COMPAT_API_KEY": "sk-leak2",
		"DATABRICKS_TOKEN":      "dapi-leak3",
		"AWS_SECRET_ACCESS_KEY": "aws-leak4",
		"DB_PASSWORD":           "pw-leak5",
		"SSH_PRIVATE_KEY_PEM":   "pem-leak6",
		"my_client_secret":      "lower-leak7",
	}
	env := []string{"GITHUB_TOKEN=passed-on-purpose", "BUZZ_SHELL_PASS_ENV=GITHUB_TOKEN", "BUZZ_PRIVATE_KEY=" + attackKey, "HARMLESS=visible"}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	p := startServer(t, startOpts{env: env})
	p.initialize("2025-11-25")
	out := runShell(t, p, map[string]any{"command": "env"})
	for k, v := range secrets {
		if strings.Contains(out.Stdout, v) {
			t.Errorf("the shell sees %s", k)
		}
	}
	for _, want := range []string{"GITHUB_TOKEN=passed-on-purpose", "BUZZ_PRIVATE_KEY=" + attackKey, "HARMLESS=visible"} {
		if !strings.Contains(out.Stdout, want+"\n") {
			t.Errorf("shell environment lacks %s", want)
		}
	}
}

// TestAttackKeyInServerEnviron: the key handed over in a 0600 file named
// by NOSTR_PRIVATE_KEY_FILE never appears in the server's own environment
// block, yet git and the buzz CLI in the shell get it through the shim's
// key file. A key given in NOSTR_PRIVATE_KEY instead is warned about.
func TestAttackKeyInServerEnviron(t *testing.T) {
	keyDir := t.TempDir()
	keyFile := filepath.Join(keyDir, "agent.key")
	if err := os.WriteFile(keyFile, []byte(attackKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, startOpts{env: []string{"NOSTR_PRIVATE_KEY_FILE=" + keyFile}})
	p.initialize("2025-11-25")
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(environ), attackKey) {
		t.Errorf("the key is in /proc/<buzz-dev-mcp>/environ")
	}
	out := runShell(t, p, map[string]any{"command": `git config user.signingkey; cat "$BUZZ_KEYFILE"; echo; echo "${NOSTR_PRIVATE_KEY-unset} ${BUZZ_PRIVATE_KEY-unset}"`})
	lines := strings.Split(out.Stdout, "\n")
	if len(lines) < 3 || lines[0] == "" || lines[1] != attackKey || lines[2] != "unset unset" {
		t.Errorf("shell: %q; want git's signing key set, $BUZZ_KEYFILE holding the key, and no key variable", out.Stdout)
	}
	if s := p.stderrText(); strings.Contains(s, "key passed in the environment") {
		t.Errorf("warned although the key came in a file:\n%s", s)
	}

	q := startServer(t, startOpts{env: []string{"NOSTR_PRIVATE_KEY=" + attackKey}})
	q.initialize("2025-11-25")
	q.waitLog("key passed in the environment")
}
