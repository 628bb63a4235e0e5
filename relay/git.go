package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// Git hosting: smart HTTP under /git/<owner>/<name>.git, served by
// `git http-backend` over CGI. Every request carries a NIP-98 token for the
// repository root URL, either as `Authorization: Nostr <token>` or as the
// password of Basic auth (git before 2.46 cannot send another scheme). The
// method tag is not compared (git signs GET and reuses the token for the
// POST) and ids are not claimed, so one token serves a whole fetch or push
// within its 60 s.
//
// Who may do what: the owner named in the path reads and pushes, and a
// push to a missing repository creates it. Anyone else needs the owner's
// kind 30617 announcement (d = name) with a buzz-channel tag naming a
// channel they belong to; guests of that channel read, other roles push.
// The relay takes an announcement only when its author administers the
// channel it names, which must exist (checkRepoAnnouncement), and honours
// a stored one only while that holds and the channel is not younger than
// the announcement, so a channel id named before anyone made it gives its
// later creator nothing.
// Every refusal past authentication is the same 404, so names cannot be
// probed.

// gitRoute is a parsed /git/ path.
type gitRoute struct {
	owner   string // hex
	repo    string // name without .git
	service string // "git-upload-pack" or "git-receive-pack"
	rest    string // "info/refs", "git-upload-pack", "git-receive-pack"
}

// validRepoName applies the naming rule: [A-Za-z0-9._-]{1,64}, no leading
// dot, no "..".
func validRepoName(s string) bool {
	if s == "" || len(s) > maxRepoName || s[0] == '.' || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseGitPath reads /git/<owner>/<repo>[.git]/<rest>.
func parseGitPath(req *http.Request) (gitRoute, int) {
	parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/git/"), "/", 3)
	if len(parts) < 3 {
		return gitRoute{}, http.StatusBadRequest
	}
	owner, err := parsePubkey(parts[0])
	if err != nil {
		return gitRoute{}, http.StatusBadRequest
	}
	name := strings.TrimSuffix(parts[1], ".git")
	if !validRepoName(name) {
		return gitRoute{}, http.StatusBadRequest
	}
	rt := gitRoute{owner: owner, repo: name, rest: parts[2]}
	switch {
	case rt.rest == "info/refs" && req.Method == http.MethodGet:
		// Exactly one service: git http-backend takes the last of several,
		// which must not differ from the one access was judged for.
		q, err := url.ParseQuery(req.URL.RawQuery)
		if err != nil || len(q["service"]) != 1 {
			return gitRoute{}, http.StatusBadRequest
		}
		rt.service = q.Get("service")
		if rt.service != "git-upload-pack" && rt.service != "git-receive-pack" {
			return gitRoute{}, http.StatusForbidden // dumb HTTP is not served
		}
	case (rt.rest == "git-upload-pack" || rt.rest == "git-receive-pack") && req.Method == http.MethodPost:
		if s := req.URL.Query()["service"]; len(s) > 0 && (len(s) > 1 || s[0] != rt.rest) {
			return gitRoute{}, http.StatusBadRequest // a service parameter that disagrees with the path
		}
		rt.service = rt.rest
	default:
		return gitRoute{}, http.StatusNotFound
	}
	return rt, 0
}

func (r *Relay) gitRoot() string {
	if r.cfg.GitDir != "" {
		return r.cfg.GitDir
	}
	return filepath.Join(r.cfg.DataDir, "git")
}

// gitOff is why git hosting is off, or "": with --db and no --git-dir
// each instance would keep repositories of its own, and a push landing on
// one would be missing from a fetch landing on another.
func (r *Relay) gitOff() string {
	if r.cfg.DB != "" && r.cfg.GitDir == "" {
		return "git hosting is off: this relay keeps events in PostgreSQL (--db), where several instances may serve it; start every instance with the same --git-dir on shared storage to host repositories"
	}
	return ""
}

func (r *Relay) challenge(w http.ResponseWriter, method string) {
	w.Header().Add("WWW-Authenticate", nip98.Challenge(method))
	w.Header().Add("WWW-Authenticate", `Basic realm="buzz"`)
	http.Error(w, "authentication required", http.StatusUnauthorized)
}

func (r *Relay) serveGit(w http.ResponseWriter, req *http.Request) {
	if msg := r.gitOff(); msg != "" {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	if r.serveRepoEndpoint(w, req) {
		return
	}
	rt, status := parseGitPath(req)
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	v := nip98.Verifier{Now: r.cfg.Now}
	res, err := v.Request(req, r.expect(req, nip98.GitPathURL))
	switch {
	case errors.Is(err, nip98.ErrNoToken):
		r.challenge(w, req.Method)
		return
	case errors.Is(err, nip98.ErrMalformed):
		http.Error(w, "malformed authorization", http.StatusUnauthorized)
		return
	case err != nil:
		r.log.Debug("git auth refused", "path", req.URL.Path, "err", err)
		http.Error(w, "NIP-98 auth failed", http.StatusUnauthorized)
		return
	}
	c, why := r.gitCaller(res)
	if msg := r.gate(c); msg != "" && (!r.cfg.Open || r.banned(c)) {
		if why != "" {
			msg = why
		}
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	push := rt.service == "git-receive-pack"
	dir := filepath.Join(r.gitRoot(), rt.owner, rt.repo+".git")
	if !r.gitAllowed(req.Context(), c, rt, push) {
		http.Error(w, "repository not found", http.StatusNotFound)
		return
	}
	if _, err := os.Stat(dir); err != nil {
		if !push || c.pubkey != rt.owner {
			http.Error(w, "repository not found", http.StatusNotFound)
			return
		}
		if err := r.initRepo(req.Context(), dir); err != nil {
			r.log.Error("create repository", "dir", dir, "err", err)
			http.Error(w, "cannot create repository", http.StatusInternalServerError)
			return
		}
	}
	if req.ContentLength > maxPackBytes {
		http.Error(w, fmt.Sprintf("request body over %d bytes", maxPackBytes), http.StatusRequestEntityTooLarge)
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, maxPackBytes)
	if rt.rest == "git-receive-pack" && !r.guardPush(w, req, rt) {
		return
	}
	r.runBackend(w, req, rt, c)
	if rt.rest == "git-receive-pack" {
		r.afterPush(req.Context(), rt, r.httpScheme(req))
	}
}

// gitCaller returns who a git request acts for. The owner of the token's
// auth tag counts only while its time clauses hold at the relay's clock
// and when it has no kind= clause: git access is not an event kind, so a
// kind-limited attestation grants none. why says what an attestation that
// grants nothing lacks, for the refusal.
func (r *Relay) gitCaller(res nip98.Result) (c caller, why string) {
	c.pubkey = res.PubKey.Hex()
	t := res.Event.Tags.Find(nipoa.TagName)
	if t == nil {
		return c, ""
	}
	grant, ok := attestedGrant(t, c.pubkey)
	if !ok {
		return c, ""
	}
	if grant.KindClauses() {
		return c, "restricted: owner attestation limits event kinds (" + grant.Conditions + "); git access needs one without kind= clauses"
	}
	owner, err := grantOwner(grant, r.cfg.Now())
	if err != nil {
		return c, "restricted: " + err.Error() + "; ask the owner for a new one"
	}
	c.owner = owner
	return c, ""
}

// gitAllowed applies the ownership and channel-sharing rules.
func (r *Relay) gitAllowed(ctx context.Context, c caller, rt gitRoute, push bool) bool {
	if c.pubkey == rt.owner || (c.owner != "" && c.owner == rt.owner) {
		return true
	}
	ch := r.repoChannel(ctx, rt)
	if ch == "" {
		return false
	}
	role := r.chans.role(ch, c.pubkey)
	if role == "" && c.owner != "" {
		role = r.chans.role(ch, c.owner)
	}
	switch role {
	case "":
		return false
	case roleOwner, roleAdmin, roleMember, roleBot:
		return true
	}
	return !push // guests, and any role this relay does not know, read only
}

// checkRepoAnnouncement refuses a 30617 that shares a repository with a
// channel that does not exist, was deleted, or that its author does not
// administer: whoever later created such an id would get push.
func (r *Relay) checkRepoAnnouncement(ev *nostr.Event) string {
	if ev.Kind != workspace.KindRepoAnnouncement {
		return ""
	}
	for _, id := range tagValues(ev, workspace.TagRepoChannel) {
		if !workspace.IsChannelID(id) {
			return "invalid: " + workspace.TagRepoChannel + " must be a lower-case channel UUID, got " + strconv.Quote(id)
		}
		if ch, ok := r.chans.get(id); !ok || ch.deleted {
			return "invalid: no channel " + id + " to share the repository with; create it first"
		}
		if !r.admin(id, ev.PubKey) {
			return "restricted: only the channel's owner or admins may share a repository with channel " + id
		}
	}
	return ""
}

// sharedWith reports whether the owner's announcement ann may share its
// repository with channel id: the channel exists, is no younger than the
// announcement, and the owner administers it (announcements stored
// before checkRepoAnnouncement may name any id).
func (r *Relay) sharedWith(ann *nostr.Event, id string) bool {
	ch, ok := r.chans.get(id)
	return ok && !ch.deleted && ch.createdAt <= ann.CreatedAt && r.admin(id, ann.PubKey)
}

// repoChannel returns the channel the owner's announcement shares the
// repository with, or "".
func (r *Relay) repoChannel(ctx context.Context, rt gitRoute) string {
	res, err := r.store.QueryEvents(internal(ctx), nostr.Filter{
		Kinds: []int{workspace.KindRepoAnnouncement}, Authors: []string{rt.owner},
		Tags: nostr.TagMap{"d": []string{rt.repo}}, Limit: 1,
	})
	if err != nil {
		return ""
	}
	ch := ""
	for ev := range res {
		if v, ok := tagValue(ev, workspace.TagRepoChannel); ok && workspace.IsChannelID(v) && r.sharedWith(ev, v) {
			ch = v
		}
	}
	return ch
}

func (r *Relay) gitPath() (string, error) {
	if r.cfg.Git != "" {
		return r.cfg.Git, nil
	}
	return exec.LookPath("git")
}

func (r *Relay) initRepo(ctx context.Context, dir string) error {
	git, err := r.gitPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, git, "init", "--quiet", "--bare", "--initial-branch=main", dir)
	cmd.Env = r.gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// gitEnv keeps the user's and the system's git configuration away from
// the served repositories.
func (r *Relay) gitEnv() []string {
	return []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"HOME=" + r.cfg.DataDir,
	}
}

func (r *Relay) runBackend(w http.ResponseWriter, req *http.Request, rt gitRoute, c caller) {
	git, err := r.gitPath()
	if err != nil {
		http.Error(w, "git is not installed on the relay host", http.StatusServiceUnavailable)
		return
	}
	// http-backend finds the repository from PATH_INFO; give it the
	// canonical spelling (hex owner, .git suffix) whatever the URL said.
	// The query is rebuilt from the service access was judged for, and
	// only a push gets REMOTE_USER, without which http-backend refuses
	// receive-pack: whatever the URL said, git serves what was allowed.
	req = req.Clone(req.Context())
	req.URL.Path = "/git/" + rt.owner + "/" + rt.repo + ".git/" + rt.rest
	req.URL.RawQuery = ""
	if rt.rest == "info/refs" {
		req.URL.RawQuery = "service=" + rt.service
	}
	env := append(r.gitEnv(), "GIT_PROJECT_ROOT="+r.gitRoot(), "GIT_HTTP_EXPORT_ALL=1")
	if rt.service == "git-receive-pack" {
		env = append(env, "REMOTE_USER="+c.pubkey)
	}
	h := &cgi.Handler{
		Path:   git,
		Root:   "/git",
		Args:   []string{"http-backend"},
		Env:    env,
		Stderr: logWriter{r.log},
	}
	h.ServeHTTP(w, req)
}

// logWriter turns git's stderr into log lines.
type logWriter struct {
	l interface{ Warn(string, ...any) }
}

func (lw logWriter) Write(p []byte) (int, error) {
	lw.l.Warn("git http-backend", "stderr", strings.TrimSpace(string(p)))
	return len(p), nil
}
