package nostrgit

import (
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/internal/workspace/nip98"
)

// gitServer is a smart-HTTP git server on 127.0.0.1 that stands in for the
// relay's git route: NIP-98 via nip98.Verifier (no method check, no replay
// cache, as the spec says for git routes), owner-only access, then the real
// `git http-backend` as CGI.
type gitServer struct {
	*httptest.Server
	root  string       // GIT_PROJECT_ROOT: repos at <owner>/<name>.git
	shift atomic.Int64 // nanoseconds added to the server clock, to age tokens
	mu    sync.Mutex
	auths []string // Authorization headers that passed
}

var gitRoute = regexp.MustCompile(`^/git/([0-9a-f]{64})/([A-Za-z0-9._-]+)(/.*)?$`)

func newGitServer(t *testing.T) *gitServer {
	t.Helper()
	git := needGit(t)
	s := &gitServer{root: t.TempDir()}
	home := t.TempDir()
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Root: "/git",
		Env:  []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + home},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := gitRoute.FindStringSubmatch(r.URL.Path)
		if m == nil {
			http.Error(w, "bad git path", http.StatusBadRequest)
			return
		}
		v := nip98.Verifier{Now: func() time.Time { return time.Now().Add(time.Duration(s.shift.Load())) }}
		res, err := v.Request(r, nip98.Expect{URL: nip98.GitRepoURL(r, "http")})
		if errors.Is(err, nip98.ErrNoToken) {
			// Both challenges: git >= 2.46 answers the Nostr one through
			// its helper; older git needs curl to see a scheme it knows.
			w.Header().Add("WWW-Authenticate", nip98.Challenge(r.Method))
			w.Header().Add("WWW-Authenticate", nip98.BasicChallenge)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if err != nil {
			http.Error(w, "NIP-98 auth failed: "+err.Error(), http.StatusUnauthorized)
			return
		}
		if res.PubKey.Hex() != m[1] {
			http.Error(w, "restricted: not a relay member", http.StatusForbidden)
			return
		}
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.mu.Unlock()
		r.Header.Del("Authorization")
		backend.Env = append(backend.Env[:4:4], "REMOTE_USER="+res.PubKey.Hex())
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// bare makes an empty bare repository owned by owner and returns its URL.
func (s *gitServer) bare(t *testing.T, owner, name string) string {
	t.Helper()
	dir := filepath.Join(s.root, owner, name)
	if out, err := exec.Command("git", "init", "-q", "--bare", "--initial-branch=main", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v\n%s", err, out)
	}
	return s.URL + "/git/" + owner + "/" + name
}

func (s *gitServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// gitVersion returns git's major and minor version.
func gitVersion(t *testing.T) (int, int) {
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("git version %q", out)
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return a, b
}

// httpRepo is a client repository whose only auth set-up is the credential
// helper, and git never prompts.
func httpRepo(t *testing.T) *repo {
	r := newRepo(t, "", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=")
	// Global (in the temp HOME) so that clone, which has no repository
	// yet, sees it too.
	r.git("config", "--global", "credential.helper", "nostr")
	r.git("config", "--global", "credential.useHttpPath", "true")
	return r
}

func TestGitHTTP(t *testing.T) {
	s := newGitServer(t)
	url := s.bare(t, pk3, "repo.git")
	r := httpRepo(t)
	r.git("commit", "-q", "--allow-empty", "-m", "first")

	// The owner pushes and clones with nothing but the helper.
	if out, err := r.try(withK3, "push", url, "main"); err != nil {
		t.Fatalf("owner push: %v\n%s", err, out)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := r.try(withK3, "clone", "-q", url, clone); err != nil {
		t.Fatalf("owner clone: %v\n%s", err, out)
	}
	if out, _ := exec.Command("git", "-C", clone, "log", "-1", "--format=%s").Output(); string(out) != "first\n" {
		t.Errorf("cloned HEAD subject %q", out)
	}

	// What git sent: the token for the repository root URL, in the scheme
	// this git supports.
	major, minor := gitVersion(t)
	scheme := "Basic "
	if major > 2 || major == 2 && minor >= 46 {
		scheme = "Nostr "
	}
	auths := s.seen()
	if len(auths) == 0 {
		t.Fatal("server saw no authorised request")
	}
	for _, a := range auths {
		if !strings.HasPrefix(a, scheme) {
			t.Errorf("Authorization %.20q…; want scheme %q for git %d.%d", a, scheme, major, minor)
		}
		evt, err := nip98.ParseHeader(a)
		if err != nil {
			t.Fatal(err)
		}
		if u := evt.Tags.Find("u"); u == nil || u[1] != url {
			t.Errorf("token u = %v; want %s", u, url)
		}
	}

	// Another key is refused, for reading and for writing.
	other := []string{"NOSTR_PRIVATE_KEY=" + k1}
	if out, err := r.try(other, "clone", "-q", url, filepath.Join(t.TempDir(), "c2")); err == nil || !strings.Contains(out, "403") {
		t.Errorf("clone with another key: %v\n%s", err, out)
	}
	r.git("commit", "-q", "--allow-empty", "-m", "second")
	if out, err := r.try(other, "push", url, "main"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("push with another key: %v\n%s", err, out)
	}

	// A token older than 60 s is refused: the server's clock runs ahead.
	s.shift.Store(int64(61 * time.Second))
	if out, err := r.try(withK3, "push", url, "main"); err == nil || !strings.Contains(out, "Authentication failed") {
		t.Errorf("push with a 61 s old token: %v\n%s", err, out)
	}
	s.shift.Store(0)
	if out, err := r.try(withK3, "push", url, "main:second"); err != nil { // main is protected
		t.Errorf("push after the clock is back: %v\n%s", err, out)
	}

	// No key at all: the helper fails and git does not prompt.
	if out, err := r.try(nil, "ls-remote", url); err == nil {
		t.Errorf("ls-remote without key succeeded:\n%s", out)
	}
}
