package nostrgit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
)

// repo is a temp git repository with isolated config and the helpers on PATH.
type repo struct {
	t   testing.TB
	dir string
	env []string
}

func newRepo(t testing.TB, exe string, extra ...string) *repo {
	t.Helper()
	needGit(t)
	home := t.TempDir()
	env := gitEnviron(t, home, extra...)
	env[0] = "PATH=" + helperBin(t, exe) + string(os.PathListSeparator) + os.Getenv("PATH")
	dir := filepath.Join(home, "repo")
	os.Mkdir(dir, 0o700)
	r := &repo{t: t, dir: dir, env: env}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "T")
	r.git("config", "user.email", "t@x")
	r.git("config", "user.signingkey", pk3)
	r.git("config", "gpg.format", "x509")
	r.git("config", "gpg.x509.program", "git-sign-nostr")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	return gitCmd(r.t, r.env, r.dir, args...)
}

// try runs git with extra env entries and returns combined output and error.
func (r *repo) try(extra []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(append([]string{}, r.env...), extra...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var withK3 = []string{"NOSTR_PRIVATE_KEY=" + k3}

func TestGitSignedCommit(t *testing.T) {
	r := newRepo(t, "")
	if out, err := r.try(withK3, "commit", "--allow-empty", "-S", "-m", "test"); err != nil {
		t.Fatalf("git commit -S: %v\n%s", err, out)
	}
	if obj := r.git("cat-file", "commit", "HEAD"); !strings.Contains(obj, "\ngpgsig -----BEGIN SIGNED MESSAGE-----\n") {
		t.Errorf("commit object lacks the signature header:\n%s", obj)
	}
	// No key is needed to verify.
	if out, err := r.try(nil, "verify-commit", "HEAD"); err != nil || !strings.Contains(out, "Good signature") {
		t.Errorf("git verify-commit: %v\n%s", err, out)
	}
	if got, want := r.git("log", "-1", "--format=%G?|%GK|%GS|%GF|%GP|%GT"), fmt.Sprintf("G|%s|%s|%s|%s|fully\n", pk3, pk3, pk3, pk3); got != want {
		t.Errorf("%%G? line = %q; want %q", got, want)
	}
	if out, _ := r.try(nil, "verify-commit", "--raw", "HEAD"); !strings.Contains(out, "[GNUPG:] GOODSIG "+pk3+" "+pk3+"\n") {
		t.Errorf("verify-commit --raw:\n%s", out)
	}
	if out, err := r.try(nil, "log", "-1", "--show-signature"); err != nil || !strings.Contains(out, "Good signature") {
		t.Errorf("git log --show-signature: %v\n%s", err, out)
	}

	// A tampered copy of the commit: bad signature.
	obj := r.git("cat-file", "commit", "HEAD")
	forged := strings.Replace(obj, "\ntest\n", "\ntampered\n", 1)
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Env, cmd.Dir, cmd.Stdin = r.env, r.dir, strings.NewReader(forged)
	sha, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.TrimSpace(string(sha))
	if out, err := r.try(nil, "verify-commit", bad); err == nil {
		t.Errorf("verify-commit of a tampered commit succeeded:\n%s", out)
	} else if !strings.Contains(out, "BAD signature") {
		t.Errorf("verify-commit of a tampered commit says:\n%s", out)
	}
	if got := r.git("log", "-1", "--format=%G?", bad); got != "B\n" {
		t.Errorf("%%G? of tampered commit = %q; want B", got)
	}

	// Another configured signing key: still a good signature, not trusted.
	r.git("config", "user.signingkey", pk1)
	if got := r.git("log", "-1", "--format=%G?|%GT"); got != "U|undefined\n" {
		t.Errorf("%%G? with another signingkey = %q; want U|undefined", got)
	}
	if out, err := r.try(nil, "verify-commit", "HEAD"); err != nil {
		t.Errorf("verify-commit with another signingkey: %v\n%s", err, out)
	}
	if out, err := r.try(nil, "-c", "gpg.minTrustLevel=fully", "verify-commit", "HEAD"); err == nil {
		t.Errorf("verify-commit with minTrustLevel=fully passed:\n%s", out)
	}
}

func TestGitOtherKeySignature(t *testing.T) {
	// Signed by K1 while the repository trusts PK3: git reports the good
	// signature as untrusted (U), per the spec's advisory trust model.
	r := newRepo(t, "")
	r.git("config", "user.signingkey", pk1)
	if out, err := r.try([]string{"NOSTR_PRIVATE_KEY=" + k1}, "commit", "--allow-empty", "-S", "-m", "by k1"); err != nil {
		t.Fatalf("commit by k1: %v\n%s", err, out)
	}
	r.git("config", "user.signingkey", pk3)
	if got := r.git("log", "-1", "--format=%G?|%GK"); got != "U|"+pk1+"\n" {
		t.Errorf("%%G? of other key's commit = %q; want U|%s", got, pk1)
	}
}

func TestGitSignedTag(t *testing.T) {
	r := newRepo(t, "")
	r.git("commit", "--allow-empty", "-m", "base")
	if out, err := r.try(withK3, "tag", "-s", "v1", "-m", "t"); err != nil {
		t.Fatalf("git tag -s: %v\n%s", err, out)
	}
	if out, err := r.try(nil, "verify-tag", "v1"); err != nil || !strings.Contains(out, "Good signature") {
		t.Errorf("git verify-tag: %v\n%s", err, out)
	}
	if out, _ := r.try(nil, "cat-file", "tag", "v1"); !strings.Contains(out, "-----BEGIN SIGNED MESSAGE-----") {
		t.Errorf("tag object lacks the signature:\n%s", out)
	}
}

func TestGitKeyFile(t *testing.T) {
	r := newRepo(t, "")
	keyfile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyfile, []byte(k3+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.git("config", "nostr.keyfile", keyfile)
	if out, err := r.try(nil, "commit", "--allow-empty", "-S", "-m", "from file"); err != nil {
		t.Fatalf("commit with 0600 key file: %v\n%s", err, out)
	}
	os.Chmod(keyfile, 0o644)
	out, err := r.try(nil, "commit", "--allow-empty", "-S", "-m", "insecure")
	if err == nil {
		t.Fatalf("commit with 0644 key file succeeded:\n%s", out)
	}
	// git 2.39 swallows the signer's stderr (it is the status stream) and
	// only says signing failed; the helper's own message is pinned in
	// TestSignKeySources.
	if !strings.Contains(out, "failed to sign") {
		t.Errorf("commit with 0644 key file says:\n%s", out)
	}
	// Without user.signingkey git passes the committer ident: refused.
	os.Chmod(keyfile, 0o600)
	r.git("config", "--unset", "user.signingkey")
	if out, err := r.try(nil, "commit", "--allow-empty", "-S", "-m", "no signingkey"); err == nil || !strings.Contains(out, "failed to sign") {
		t.Errorf("commit without user.signingkey: %v\n%s", err, out)
	}
}

// sessionEnv is the GIT_CONFIG_* environment the session host builds (spec
// §1.7), with the key only in a 0600 file.
func sessionEnv(t testing.TB, keyHex string) []string {
	t.Helper()
	k, err := nostrkey.ParseSecret(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	keyfile := filepath.Join(t.TempDir(), ".nostr-key")
	if err := nostrkey.WriteFile(keyfile, k); err != nil {
		t.Fatal(err)
	}
	pk := k.Public()
	kv := [][2]string{
		{"user.name", pk.Npub()}, {"user.email", pk.Hex() + "@buzz"},
		{"credential.helper", "nostr"}, {"credential.useHttpPath", "true"},
		{"nostr.keyfile", keyfile}, {"gpg.format", "x509"},
		{"gpg.x509.program", "git-sign-nostr"}, {"commit.gpgSign", "true"},
		{"tag.gpgSign", "true"}, {"user.signingkey", pk.Hex()},
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return env
}

func TestGitSessionEnv(t *testing.T) {
	r := newRepo(t, "", sessionEnv(t, k3)...)
	r.git("config", "--unset", "user.signingkey") // only the session's config
	r.git("commit", "-q", "--allow-empty", "-m", "x")
	if got := r.git("log", "-1", "--format=%G?|%GK"); got != "G|"+pk3+"\n" {
		t.Errorf("session commit %%G? = %q; want G|%s", got, pk3)
	}
	if out, err := r.try(nil, "verify-commit", "HEAD"); err != nil {
		t.Errorf("verify-commit: %v\n%s", err, out)
	}
	r.git("tag", "-m", "t", "v1") // tag.gpgSign
	if out, err := r.try(nil, "verify-tag", "v1"); err != nil {
		t.Errorf("verify-tag: %v\n%s", err, out)
	}
}
