package shim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// A fixed test key (never used anywhere real) and its public half.
const (
	testKey    = "0000000000000000000000000000000000000000000000000000000000000001"
	testPubHex = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
)

func testEnv(t *testing.T, extra ...string) (proc.Env, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	var errb bytes.Buffer
	env := proc.Env{
		Stderr: &errb,
		Environ: append([]string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"GIT_CONFIG_NOSYSTEM=1",
			"TMPDIR=" + t.TempDir(),
		}, extra...),
		Exe: exe,
		Dir: t.TempDir(),
	}
	return env, &errb
}

func TestNewLaysOutDirLinksAndKey(t *testing.T) {
	env, errb := testEnv(t, workspace.EnvNostrPrivateKey+"="+testKey, "GIT_CONFIG_COUNT=2", "BUZZ_RELAY_URL=wss://relay.example.com:443/x")
	s, err := New(env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if errb.Len() > 0 {
		t.Errorf("stderr = %q; want nothing", errb.String())
	}
	if !strings.HasPrefix(filepath.Base(s.Dir()), "buzz-dev-mcp-") {
		t.Errorf("Dir() = %s; want prefix buzz-dev-mcp-", s.Dir())
	}
	fi, err := os.Stat(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		t.Errorf("shim dir mode = %o; want 700", fi.Mode().Perm())
	}
	for _, name := range Names() {
		target, err := os.Readlink(filepath.Join(s.Dir(), name))
		if err != nil || target != env.Exe {
			t.Errorf("link %s -> %q, %v; want -> %s", name, target, err, env.Exe)
		}
	}
	kf := s.KeyFile()
	if kf != filepath.Join(s.Dir(), KeyFileName) {
		t.Fatalf("KeyFile() = %q", kf)
	}
	kfi, err := os.Stat(kf)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && kfi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %o; want 600", kfi.Mode().Perm())
	}
	if b, _ := os.ReadFile(kf); string(b) != testKey {
		t.Errorf("key file holds %q; want the raw value, no newline", b)
	}
	got := proc.Env{Environ: s.Environ()}
	if _, ok := got.LookupEnv(workspace.EnvNostrPrivateKey); ok {
		t.Errorf("Environ() still holds %s", workspace.EnvNostrPrivateKey)
	}
	if p := got.Getenv("PATH"); !strings.HasPrefix(p, s.Dir()+string(os.PathListSeparator)) {
		t.Errorf("PATH = %q; want the shim dir first", p)
	}
	want := map[string]string{
		"GIT_CONFIG_COUNT":    "12",
		"GIT_CONFIG_KEY_2":    "user.name",
		"GIT_CONFIG_KEY_3":    "user.email",
		"GIT_CONFIG_VALUE_3":  testPubHex + "@relay.example.com",
		"GIT_CONFIG_VALUE_4":  "nostr",
		"GIT_CONFIG_VALUE_5":  "true",
		"GIT_CONFIG_KEY_6":    "nostr.keyfile",
		"GIT_CONFIG_VALUE_6":  kf,
		"GIT_CONFIG_VALUE_7":  "x509",
		"GIT_CONFIG_VALUE_8":  "git-sign-nostr",
		"GIT_CONFIG_KEY_9":    "commit.gpgSign",
		"GIT_CONFIG_KEY_10":   "tag.gpgSign",
		"GIT_CONFIG_KEY_11":   "user.signingkey",
		"GIT_CONFIG_VALUE_11": testPubHex,
	}
	for k, v := range want {
		if g := got.Getenv(k); g != v {
			t.Errorf("%s = %q; want %q", k, g, v)
		}
	}
	if n := got.Getenv("GIT_CONFIG_VALUE_2"); !strings.HasPrefix(n, "npub1") {
		t.Errorf("user.name = %q; want the npub when no display name is set", n)
	}
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Close, stat %s = %v; want not exist", dir, err)
	}
}

func TestChildSeesNoKeyAndGitSeesConfig(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git to check the GIT_CONFIG_* entries with real git")
	}
	envExe, err := exec.LookPath("env")
	if err != nil {
		t.Skip("SKIP(loud): env(1) is not installed (coreutils)")
	}
	env, _ := testEnv(t, workspace.EnvNostrPrivateKey+"="+testKey, workspace.EnvDisplayName+"=Ada \u200bLovelace <ada>")
	s, err := New(env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cmd := exec.Command(envExe)
	cmd.Env = s.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(workspace.EnvNostrPrivateKey)) || bytes.Contains(out, []byte(testKey)) {
		t.Errorf("child environment holds the key:\n%s", out)
	}

	for key, want := range map[string]string{
		"user.name":         "Ada Lovelace ada",
		"user.email":        testPubHex + "@buzz",
		"credential.helper": "nostr",
		"gpg.x509.program":  "git-sign-nostr",
		"user.signingkey":   testPubHex,
		"nostr.keyfile":     s.KeyFile(),
	} {
		cmd := exec.Command(git, "config", "--get", key)
		cmd.Env = s.Environ()
		cmd.Dir = env.Dir
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("git config --get %s = %q, %v; want %q", key, got, err, want)
		}
	}
}

func TestBadKeyWarnsAndStillRemovesIt(t *testing.T) {
	env, errb := testEnv(t, workspace.EnvNostrPrivateKey+"=not-a-key")
	s, err := New(env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(errb.String(), "git auth and commit signing are disabled") {
		t.Errorf("stderr = %q; want the disabled warning", errb.String())
	}
	if strings.Contains(errb.String(), "not-a-key") {
		t.Errorf("stderr repeats the key: %q", errb.String())
	}
	got := proc.Env{Environ: s.Environ()}
	if _, ok := got.LookupEnv(workspace.EnvNostrPrivateKey); ok {
		t.Error("Environ() still holds the key")
	}
	if _, ok := got.LookupEnv("GIT_CONFIG_COUNT"); ok {
		t.Error("GIT_CONFIG_COUNT set without a usable key")
	}
	if s.KeyFile() != "" {
		t.Errorf("KeyFile() = %q; want none", s.KeyFile())
	}
}

func TestEmailHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "buzz",
		"wss://relay.example.com":          "relay.example.com",
		"https://relay.example.com:8443/p": "relay.example.com",
		"ws://localhost:3000":              "buzz",
		"ws://127.0.0.1:3000":              "buzz",
		"relay.example.org/x":              "relay.example.org",
		"WSS://Upper.example":              "WSS",
	} {
		if got := EmailHost(in); got != want {
			t.Errorf("EmailHost(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	long := strings.Repeat("é", 100)
	for in, want := range map[string]string{
		"  Ada   Lovelace ": "Ada Lovelace",
		"<>":                "",
		"\"',:;":            "",
		"a\u200bb \u2065c":  "ab \u2065c",
		"bell\x07 x":        "bell x",
		long:                strings.Repeat("é", 80),
		"\u00ad":            "",
	} {
		if got := DisplayName(in); got != want {
			t.Errorf("DisplayName(%q) = %q; want %q", in, got, want)
		}
	}
}
