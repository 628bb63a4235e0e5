package relay

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// gitEnv runs git with no personal or system configuration.
func gitEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x",
		"PATH=" + os.Getenv("PATH"),
	}
}

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
}

// gitCmd is git with args in dir under env, bound to the test.
func gitCmd(t testing.TB, env []string, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(testCtx(t), "git", args...)
	cmd.Env = env
	cmd.Dir = dir
	return cmd
}

// gitRun runs git in dir and returns its combined output and error.
func gitRun(t testing.TB, env []string, dir string, args ...string) (string, error) {
	t.Helper()
	out, err := gitCmd(t, env, dir, args...).CombinedOutput()
	return string(out), err
}

func gitOK(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	out, err := gitRun(t, env, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitToken(t testing.TB, k testKey, repoURL string) string {
	t.Helper()
	sec, err := nostrkey.ParseSecret(k.sk)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := nip98.Token(sec, repoURL, "GET", nip98.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// authed returns git arguments that send a NIP-98 header for repoURL.
func authed(t testing.TB, k testKey, repoURL string) []string {
	return []string{"-c", "http.extraHeader=Authorization: Nostr " + gitToken(t, k, repoURL)}
}

// nip98BodyLimit bounds what nip98Get reads of an answer: more than the
// largest these tests ask for (a file of a repository view).
const nip98BodyLimit = 16 << 20

// nip98Get sends a GET of getURL with a NIP-98 Authorization header by k
// for signURL, made with opt, and returns the status and the body.
func nip98Get(t testing.TB, k testKey, signURL, getURL string, opt nip98.Options) (int, string) {
	t.Helper()
	sec, err := nostrkey.ParseSecret(k.sk)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := nip98.Header(sec, signURL, http.MethodGet, opt)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, getURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, nip98BodyLimit))
	return resp.StatusCode, string(b)
}

func TestGitHosting(t *testing.T) {
	needGit(t)
	owner, alice, bob := newKey(t), newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{alice.pk, bob.pk}})
	env := gitEnv(t)
	repoURL := r.HTTPURL() + "/git/" + owner.pk + "/proj.git"

	// The owner pushes a new repository.
	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	gitOK(t, env, work, "add", "README")
	gitOK(t, env, work, "commit", "--quiet", "-m", "first")
	gitOK(t, env, work, append(authed(t, owner, repoURL), "push", repoURL, "main")...)

	// and clones it back, also through the npub spelling of the path.
	npub, _ := nip19.EncodePublicKey(owner.pk)
	for _, u := range []string{repoURL, r.HTTPURL() + "/git/" + npub + "/proj.git"} {
		dst := filepath.Join(t.TempDir(), "c")
		gitOK(t, env, "", append(authed(t, owner, u), "clone", "--quiet", u, dst)...)
		if b, _ := os.ReadFile(filepath.Join(dst, "README")); string(b) != "hello\n" {
			t.Fatalf("clone of %s has README %q", u, b)
		}
	}

	// Basic auth with the token as password (git before 2.46).
	basic := strings.Replace(repoURL, "http://", "http://git:"+gitToken(t, owner, repoURL)+"@", 1)
	gitOK(t, env, "", "clone", "--quiet", basic, filepath.Join(t.TempDir(), "b"))

	// alice cannot see it until it is shared with a channel she is in.
	dst := filepath.Join(t.TempDir(), "a")
	if out, err := gitRun(t, env, "", append(authed(t, alice, repoURL), "clone", "--quiet", repoURL, dst)...); err == nil || !strings.Contains(out, "404") && !strings.Contains(out, "not found") {
		t.Fatalf("clone by a non-member = %v %s; want not found", err, out)
	}
	co := login(t, r.URL(), owner)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, co, signed(t, owner, workspace.KindAddUser, "", h, nostr.Tag{"p", alice.pk}))
	mustPublish(t, co, signed(t, owner, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", chanA}))
	gitOK(t, env, "", append(authed(t, alice, repoURL), "clone", "--quiet", repoURL, dst)...)
	os.WriteFile(filepath.Join(dst, "NEW"), []byte("alice\n"), 0o644)
	gitOK(t, env, dst, "add", "NEW")
	gitOK(t, env, dst, "commit", "--quiet", "-m", "from alice")
	gitOK(t, env, dst, append(authed(t, alice, repoURL), "push", "--quiet", "origin", "main:alice")...) // main is protected

	// bob, a relay member outside the channel, still gets 404.
	if out, err := gitRun(t, env, "", append(authed(t, bob, repoURL), "clone", "--quiet", repoURL, filepath.Join(t.TempDir(), "x"))...); err == nil {
		t.Fatalf("clone by bob succeeded: %s", out)
	}
	// alice cannot create repositories in the owner's space.
	other := r.HTTPURL() + "/git/" + owner.pk + "/other.git"
	if out, err := gitRun(t, env, dst, append(authed(t, alice, other), "push", other, "main")...); err == nil {
		t.Fatalf("push creating another's repository succeeded: %s", out)
	}
}

func TestGitAuthAnswers(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	repoURL := r.HTTPURL() + "/git/" + owner.pk + "/proj.git"
	get := func(url, auth string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(testCtx(t), "GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := get(repoURL+"/info/refs?service=git-upload-pack", "")
	if resp.StatusCode != 401 || resp.Header.Values("WWW-Authenticate")[0] != `Nostr realm="buzz", method="GET"` {
		t.Errorf("no auth = %d %q; want 401 with the Nostr challenge", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	if resp = get(repoURL+"/info/refs?service=git-upload-pack", "Nostr !!!"); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("undecodable token = %d challenge %q; want 401 without one", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	sec, _ := nostrkey.ParseSecret(owner.sk)
	old, _ := nip98.Token(sec, repoURL, "GET", nip98.Options{Now: time.Now().Add(-2 * time.Minute)})
	if resp = get(repoURL+"/info/refs?service=git-upload-pack", "Nostr "+old); resp.StatusCode != 401 {
		t.Errorf("token 120 s old = %d; want 401", resp.StatusCode)
	}
	wrong := r.HTTPURL() + "/git/" + owner.pk + "/other.git"
	if resp = get(repoURL+"/info/refs?service=git-upload-pack", "Nostr "+gitToken(t, owner, wrong)); resp.StatusCode != 401 {
		t.Errorf("token for another repo = %d; want 401", resp.StatusCode)
	}
	for _, bad := range []string{"/git/nothex/proj.git/info/refs?service=git-upload-pack", "/git/" + owner.pk + "/..x.git/info/refs?service=git-upload-pack", "/git/" + owner.pk + "/.hidden/info/refs?service=git-upload-pack"} {
		if resp = get(r.HTTPURL()+bad, ""); resp.StatusCode != 400 {
			t.Errorf("GET %s = %d; want 400", bad, resp.StatusCode)
		}
	}
}

// TestGitCredentialHelper clones and pushes with the real
// git-credential-nostr on PATH, as a session does: credential.helper=nostr,
// credential.useHttpPath=true and the key in NOSTR_PRIVATE_KEY. Git before
// 2.46 gets the token as a Basic password; later git as a Nostr credential.
func TestGitCredentialHelper(t *testing.T) {
	needGit(t)
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	helper := testexe.Link(t, "git-credential-nostr")
	env := gitEnv(t)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(helper) + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	env = append(env, "NOSTR_PRIVATE_KEY="+owner.sk)
	cfg := []string{"-c", "credential.helper=nostr", "-c", "credential.useHttpPath=true"}
	npub, _ := nip19.EncodePublicKey(owner.pk)

	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "f"), []byte("x\n"), 0o644)
	gitOK(t, env, work, "add", "f")
	gitOK(t, env, work, "commit", "--quiet", "-m", "c")
	// Every spelling of the owner the relay takes names one repository,
	// and the helper must know each for a relay remote (git before 2.41
	// sends no challenge to tell it by).
	spellings := []string{owner.pk, npub, strings.ToUpper(owner.pk)}
	for i, push := range spellings {
		clone := spellings[(i+1)%len(spellings)]
		name := "/helper" + strconv.Itoa(i) + ".git"
		gitOK(t, env, work, append(cfg, "push", "--quiet", r.HTTPURL()+"/git/"+push+name, "main")...)
		dst := filepath.Join(t.TempDir(), "c")
		gitOK(t, env, "", append(cfg, "clone", "--quiet", r.HTTPURL()+"/git/"+clone+name, dst)...)
		if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "x\n" {
			t.Fatalf("pushed as /git/%s, cloned as /git/%s: f = %q", push, clone, b)
		}
	}
}
