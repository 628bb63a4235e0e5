package nostrgit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// fakeGit puts a shell script called git first on PATH.
func fakeGit(t *testing.T, script string) (proc.Env, string) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("SKIP(loud): /bin/sh missing; the git stand-in is a shell script")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := proc.Env{Dir: dir, Environ: []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "NOSTR_PRIVATE_KEY=" + k3, "BUZZ_PRIVATE_KEY=" + k3}}
	return env, dir
}

func TestGitConfigChildEnv(t *testing.T) {
	env, dir := fakeGit(t, `env > "$(dirname "$0")/env.txt"; echo "$@" > "$(dirname "$0")/args.txt"; exit 1`+"\n")
	_, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3)
	if code != 0 {
		t.Fatalf("sign: %d %s", code, errOut)
	}
	seen, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatalf("git was not run: %v", err)
	}
	if strings.Contains(string(seen), "PRIVATE_KEY") || strings.Contains(string(seen), k3) {
		t.Errorf("git config child saw the key variables:\n%s", seen)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args.txt"))
	if got := strings.TrimSpace(string(args)); got != "config -z --type=path --get-regexp "+configPattern {
		t.Errorf("git args = %q", got)
	}
}

func TestGitConfigCaps(t *testing.T) {
	// Oversized output counts as unset: the signer goes on without an
	// attestation instead of parsing garbage.
	env, _ := fakeGit(t, `head -c 10000 /dev/zero | tr '\0' 'a'; printf '\nnostr.authtag\nx\0'`+"\n")
	out, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3)
	if code != 0 || strings.Contains(decodeArmor(t, out), `"oa"`) {
		t.Errorf("sign with oversized git config output: %d %s", code, errOut)
	}
	// A failing git is an error for settings that matter.
	env, _ = fakeGit(t, "exit 3\n")
	env.Environ = proc.Without(env.Environ, "NOSTR_PRIVATE_KEY", "BUZZ_PRIVATE_KEY")
	if _, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3); code != 1 || !strings.Contains(errOut, "error: git config") {
		t.Errorf("sign with failing git: %d %q", code, errOut)
	}
	// Values are read NUL-separated; the last of a repeated key wins.
	env, _ = fakeGit(t, `printf 'user.signingkey\n`+pk1+`\0user.signingkey\n`+pk3+`\0'`+"\n")
	sig := writeSig(t, vectorEnvelope(t, false).Armor())
	if out, _, _ := run(t, SignMain, env, payloadV, "--status-fd=1", "--verify", sig, "-"); !strings.Contains(out, "TRUST_FULLY") {
		t.Errorf("verify with repeated signingkey:\n%s", out)
	}
}
