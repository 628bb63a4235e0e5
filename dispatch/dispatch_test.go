package dispatch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
)

func TestResolve(t *testing.T) {
	tests := []struct{ argv0, want string }{
		{"/usr/local/bin/RG.exe", "rg"},
		{"rg", "rg"},
		{"./tree", "tree"},
		{`C:\tools\Git-Sign-Nostr.EXE`, "git-sign-nostr"},
		{"/opt/buzzbox", "buzzbox"},
		{"buzz-dev-mcp", "buzz-dev-mcp"},
		{"/x/.hidden", ".hidden"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Resolve(tt.argv0); got != tt.want {
			t.Errorf("Resolve(%q) = %q; want %q", tt.argv0, got, tt.want)
		}
	}
}

func TestIdentityTable(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range Identities() {
		if seen[id.Name] {
			t.Errorf("identity %q listed twice", id.Name)
		}
		seen[id.Name] = true
		if id.Name != strings.ToLower(id.Name) || id.Name == selfName {
			t.Errorf("identity name %q must be lowercase and not %q", id.Name, selfName)
		}
		if id.Summary == "" || id.Main == nil {
			t.Errorf("identity %q lacks a summary or entry", id.Name)
		}
	}
	want := []string{"buzz-agent", "buzz-acp", "buzz-dev-mcp", "buzz-relay", "buzz", "rg", "tree", "git-credential-nostr", "git-sign-nostr"}
	for _, n := range want {
		if !seen[n] {
			t.Errorf("identity %q missing from the table", n)
		}
	}
}

// runIn runs dispatch in-process with buffers and returns exit code, stdout, stderr.
func runIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, func() proc.Env {
		return proc.Env{Stdout: &out, Stderr: &errb, Dir: dir, Exe: "/opt/buzzbox/buzzbox"}
	})
	return code, out.String(), errb.String()
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"buzzbox", "--help"}, {"/bin/buzzbox", "-h"}} {
		code, out, _ := runIn(t, "", args...)
		if code != ExitOK {
			t.Errorf("%q exit = %d; want 0", args, code)
		}
		for _, id := range Identities() {
			if !strings.Contains(out, id.Name) || !strings.Contains(out, id.Summary) {
				t.Errorf("%q output lacks %q with its summary", args, id.Name)
			}
		}
	}
	code, bare, errOut := runIn(t, "", "buzzbox")
	_, help, _ := runIn(t, "", "buzzbox", "--help")
	if code != ExitOK || bare != help || errOut != "" {
		t.Errorf("bare buzzbox = %d, stdout %q, stderr %q; want exit 0 and what --help prints", code, bare, errOut)
	}
	want := "buzzbox " + Version() + "\n"
	for _, args := range [][]string{{"buzzbox", "--version"}, {"rg", "--version"}, {"/x/TREE", "--version"}, {"buzzbox", "buzz-agent", "--version"}} {
		code, out, _ := runIn(t, "", args...)
		if code != ExitOK || out != want {
			t.Errorf("%q = %d, %q; want 0, %q", args, code, out, want)
		}
	}
}

// TestSubcommandForm checks that "buzzbox NAME ARGS" and a link called NAME
// behave the same, with the real executable.
func TestSubcommandForm(t *testing.T) {
	run := func(name string, args ...string) (int, string, string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = t.TempDir()
		out, errOut, code := testexe.Run(t, cmd)
		return code, out, errOut
	}
	for _, id := range []string{"tree", "git-sign-nostr"} {
		c1, o1, e1 := run(testexe.Path(t), id, "--definitely-not-a-flag")
		c2, o2, e2 := run(testexe.Link(t, id), "--definitely-not-a-flag")
		if c1 != c2 || o1 != o2 || e1 != e2 {
			t.Errorf("buzzbox %s = %d %q %q; link %s = %d %q %q", id, c1, o1, e1, id, c2, o2, e2)
		}
		if strings.Contains(e1, "unknown tool") {
			t.Errorf("buzzbox %s did not reach the identity: %s", id, e1)
		}
	}
}

func TestUnknownIdentity(t *testing.T) {
	code, out, errOut := runIn(t, "", "buzzbox", "rgg", "x")
	if code != ExitUsage {
		t.Errorf("exit = %d; want 2", code)
	}
	if out != "" {
		t.Errorf("stdout = %q; want nothing", out)
	}
	if !strings.Contains(errOut, `unknown tool "rgg"; did you mean "rg"?`) {
		t.Errorf("stderr %q lacks the suggestion", errOut)
	}
	for _, n := range names() {
		if !strings.Contains(errOut, n) {
			t.Errorf("stderr does not list %q", n)
		}
	}
	if !strings.Contains(errOut, "buzzbox install DIR") {
		t.Errorf("stderr %q lacks the install hint", errOut)
	}
	// An unknown argv[0] with an unknown first argument is the same error.
	if code, _, errOut := runIn(t, "", "/bin/whatever", "nothing"); code != ExitUsage || !strings.Contains(errOut, `unknown tool "nothing"`) {
		t.Errorf("unknown argv0 = %d, %q", code, errOut)
	}
}

func TestInstallIdempotentAndForce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	code, out, errOut := runIn(t, "", "buzzbox", "install", dir)
	if code != ExitOK {
		t.Fatalf("install = %d, %s", code, errOut)
	}
	for _, id := range Identities() {
		dest, err := os.Readlink(filepath.Join(dir, id.Name))
		if err != nil || dest != "/opt/buzzbox/buzzbox" {
			t.Errorf("link %s = %q, %v; want /opt/buzzbox/buzzbox", id.Name, dest, err)
		}
	}
	if n := strings.Count(out, "->"); n != len(Identities()) {
		t.Errorf("install reported %d links; want %d:\n%s", n, len(Identities()), out)
	}
	code, out, _ = runIn(t, "", "buzzbox", "install", dir)
	if code != ExitOK || strings.Count(out, "unchanged") != len(Identities()) {
		t.Errorf("second install = %d:\n%s\nwant every link unchanged", code, out)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(Identities()) {
		t.Errorf("dir holds %d entries; want exactly the table's %d", len(entries), len(Identities()))
	}

	// A regular file in the way is refused, and nothing else is touched.
	rg := filepath.Join(dir, "rg")
	os.Remove(rg)
	os.WriteFile(rg, []byte("#!/bin/sh\n"), 0o755)
	os.Remove(filepath.Join(dir, "tree"))
	code, _, errOut = runIn(t, "", "buzzbox", "install", dir)
	if code != ExitUsage || !strings.Contains(errOut, rg+" exists and is a regular file") || !strings.Contains(errOut, "--force") {
		t.Errorf("install over a file = %d, %q; want refusal naming it and --force", code, errOut)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tree")); err == nil {
		t.Error("a refused install still created links")
	}
	if b, _ := os.ReadFile(rg); string(b) != "#!/bin/sh\n" {
		t.Error("a refused install changed the file")
	}
	code, _, errOut = runIn(t, "", "buzzbox", "install", "--force", dir)
	if code != ExitOK {
		t.Fatalf("install --force = %d, %s", code, errOut)
	}
	if dest, _ := os.Readlink(rg); dest != "/opt/buzzbox/buzzbox" {
		t.Errorf("after --force rg -> %q", dest)
	}
	// A link to another program is also someone else's; --force replaces it.
	os.Remove(rg)
	os.Symlink("/usr/bin/true", rg)
	if code, _, errOut = runIn(t, "", "buzzbox", "install", dir); code != ExitUsage || !strings.Contains(errOut, "a link to /usr/bin/true") {
		t.Errorf("install over a foreign link = %d, %q", code, errOut)
	}
	// Relative DIR is taken from the working directory.
	wd := t.TempDir()
	if code, _, errOut := runIn(t, wd, "buzzbox", "install", "rel"); code != ExitOK {
		t.Errorf("relative install = %d, %s", code, errOut)
	} else if _, err := os.Lstat(filepath.Join(wd, "rel", "rg")); err != nil {
		t.Errorf("relative install: %v", err)
	}
	if code, _, errOut := runIn(t, "", "buzzbox", "install"); code != ExitUsage || !strings.Contains(errOut, "want exactly one directory") || !strings.Contains(errOut, "buzzbox install --help") {
		t.Errorf("install without DIR = %d, %q", code, errOut)
	}
}

func TestInstallCopy(t *testing.T) {
	exe := testexe.Path(t)
	dir := filepath.Join(t.TempDir(), "bin")
	for i, want := range []string{"copied", "unchanged"} {
		out, err := exec.Command(exe, "install", "--copy", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("install --copy #%d: %v\n%s", i, err, out)
		}
		if n := strings.Count(string(out), want); n != len(Identities()) {
			t.Errorf("install --copy #%d said %q %d times; want %d:\n%s", i, want, n, len(Identities()), out)
		}
	}
	fi, err := os.Lstat(filepath.Join(dir, "tree"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("copied tree = %v, %v; want a 0755 regular file", fi, err)
	}
	out, _ := exec.Command(filepath.Join(dir, "tree"), "--version").Output()
	if !strings.HasPrefix(string(out), "buzzbox ") {
		t.Errorf("copied tree --version = %q", out)
	}
}

// TestArgv0FromRealProcess proves dispatch by link name with the real
// executable: a link called RG.exe must become rg, not an unknown tool.
func TestArgv0FromRealProcess(t *testing.T) {
	link := testexe.Link(t, "RG.exe")
	var stderr bytes.Buffer
	cmd := exec.Command(link, "--definitely-not-a-flag")
	cmd.Stderr = &stderr
	cmd.Run()
	if strings.Contains(stderr.String(), "unknown tool") {
		t.Fatalf("RG.exe was not taken as rg: %s", stderr.String())
	}
	out, err := exec.Command(testexe.Path(t), "nope").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitUsage || !strings.Contains(string(out), "known tools:") {
		t.Fatalf("buzzbox nope = %v, %s; want exit 2 listing tools", err, out)
	}
}

// TestEmptyRoot runs the binary where a scratch container would: a directory
// holding only the executable, with no libc, /tmp, /etc or shell.
func TestEmptyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP(loud): chroot needs root; CI runs as root")
	}
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		t.Skip("SKIP(loud): no chroot program (Debian package coreutils)")
	}
	root := t.TempDir()
	body, err := os.ReadFile(testexe.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "buzzbox"), body, 0o755); err != nil {
		t.Fatal(err)
	}
	in := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(chroot, append([]string{root}, args...)...)
		cmd.Env = []string{} // nothing leaks in: no PATH, no HOME, no TMPDIR
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("chroot %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := in("/buzzbox", "--help"); !strings.Contains(out, "git-sign-nostr") {
		t.Errorf("--help in empty root = %q", out)
	}
	in("/buzzbox", "install", "/")
	version := regexp.MustCompile(`^buzzbox \S+\n$`)
	for _, name := range []string{"/rg", "/tree"} {
		if out := in(name, "--version"); !version.MatchString(out) {
			t.Errorf("%s --version in empty root = %q", name, out)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1+len(Identities()) {
		t.Errorf("empty root holds %d entries after install; want %d", len(entries), 1+len(Identities()))
	}
}

// TestUpWithoutProvider: dispatch runs `buzzbox up`, which says the agent
// is not configured (naming BUZZ_AGENT_PROVIDER) and goes on starting the
// workspace: here, with neither HOME nor XDG_STATE_HOME, it stops at the
// state dir (dispatch/up's tests run it whole).
func TestUpWithoutProvider(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runIn(t, dir, "buzzbox", "up")
	if code != 1 || !strings.Contains(errOut, "BUZZ_AGENT_PROVIDER") || !strings.Contains(errOut, "XDG_STATE_HOME") {
		t.Fatalf("buzzbox up without a provider or a home = %d, stdout %q, stderr %q; want exit 1 naming BUZZ_AGENT_PROVIDER and XDG_STATE_HOME", code, out, errOut)
	}
}
