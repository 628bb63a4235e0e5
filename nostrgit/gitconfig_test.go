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

func TestEnvConfig(t *testing.T) {
	base := []string{"HOME=/home/a", "GIT_CONFIG_COUNT=3",
		"GIT_CONFIG_KEY_0=user.signingKey", "GIT_CONFIG_VALUE_0=" + pk1,
		"GIT_CONFIG_KEY_1=nostr.keyfile", "GIT_CONFIG_VALUE_1=~/k",
		"GIT_CONFIG_KEY_2=user.signingkey", "GIT_CONFIG_VALUE_2=" + pk3}
	cases := []struct {
		name, key, want string
		ok              bool
		env             []string
	}{
		{"last wins, any case", configSigningKey, pk3, true, base},
		{"tilde", configKeyFile, "/home/a/k", true, base},
		{"absent key", "nostr.authtag", "", false, base},
		{"git -c outranks", configSigningKey, "", false, append(base, "GIT_CONFIG_PARAMETERS='user.signingkey'='x'")},
		{"GIT_CONFIG file", configSigningKey, "", false, append(base, "GIT_CONFIG=/x")},
		{"bad count", configSigningKey, "", false, append(base, "GIT_CONFIG_COUNT=x")},
		{"missing entry", configSigningKey, "", false, append(base, "GIT_CONFIG_COUNT=4")},
		{"tilde user", configKeyFile, "", false, append(base, "GIT_CONFIG_VALUE_1=~bob/k")},
		{"no count", configSigningKey, "", false, []string{"GIT_CONFIG_KEY_0=user.signingkey", "GIT_CONFIG_VALUE_0=x"}},
	}
	for _, c := range cases {
		got, ok := envConfig(proc.Env{Environ: c.env}, c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: envConfig(%s) = %q, %v; want %q, %v", c.name, c.key, got, ok, c.want, c.ok)
		}
	}
}

// Under the session env every key the helpers need is in GIT_CONFIG_*, so
// they must not start git at all: the stand-in git fails if they do.
func TestSessionEnvNeedsNoGit(t *testing.T) {
	env, dir := fakeGit(t, `touch "$(dirname "$0")/ran"; exit 3`+"\n")
	env.Environ = append(proc.Without(env.Environ, "NOSTR_PRIVATE_KEY", "BUZZ_PRIVATE_KEY"), sessionEnv(t, k3)...)
	env.Environ = append(env.Environ, "BUZZ_AUTH_TAG="+authTagV)
	out, errOut, code := run(t, SignMain, env, payloadV, "--status-fd=2", "-bsau", pk3)
	if code != 0 {
		t.Fatalf("sign under session env: %d %s", code, errOut)
	}
	vout, _, code := run(t, SignMain, env, payloadV, "--status-fd=1", "--verify", writeSig(t, []byte(out)), "-")
	if code != 0 || !strings.Contains(vout, "TRUST_FULLY") {
		t.Errorf("verify under session env: %d\n%s", code, vout)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a helper started git although the environment held every key")
	}
}
