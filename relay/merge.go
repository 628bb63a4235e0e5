package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr/nip19"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipgs"
)

// Merging a pull request: POST /git/<owner>/<name>.git/buzz-merge with
// {"pr": "<1618 id>"} and a NIP-98 token for that URL, method POST and
// the body's payload (each token good once). The caller must be allowed
// to push; a stranger gets the git route's 404. The relay's git merges the
// head branch into the base: a fast-forward when the base is in the
// head's history, else a merge commit by the relay naming the merger
// (refused with the conflicting files named). A merge into a protected
// branch needs reviewRules' approval and no open request for changes.
// The answer is JSON {merge_commit, fast_forward, base, head, tip}; the
// merger then publishes the 1631, which the write gate checks against the
// repository (pr.go).
//
// A merge commit is signed with the relay's key (NIP-GS v1, as
// git-sign-nostr signs a person's commits), so that every commit on a
// protected branch verifies. What it does not do: merge a pull request
// whose tip lives only in another repository.

// mergePath and diffPath are the last path elements of the merge and
// diff endpoints.
const (
	mergePath = "buzz-merge"
	diffPath  = "buzz-diff"
)

// mergeAnswer is the endpoint's JSON answer.
type mergeAnswer struct {
	MergeCommit string `json:"merge_commit"`
	FastForward bool   `json:"fast_forward"`
	Base        string `json:"base"`
	Head        string `json:"head"`
	Tip         string `json:"tip"`
}

// mergeError is a refusal with its HTTP status.
type mergeError struct {
	status int
	msg    string
}

func (e *mergeError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &mergeError{status: status, msg: fmt.Sprintf(format, args...)}
}

// serveRepoEndpoint answers the merge and diff endpoints and the
// repository view's (repoview.go), reporting whether req asked for one.
func (r *Relay) serveRepoEndpoint(w http.ResponseWriter, req *http.Request) bool {
	_, last, _ := strings.Cut(req.URL.Path, ".git/")
	switch {
	case last == mergePath:
		r.serveMerge(w, req)
	case last == diffPath:
		r.serveDiff(w, req)
	case viewEndpoint(last):
		r.serveView(w, req, last)
	default:
		return false
	}
	return true
}

// authRepoRequest checks a request to a repository endpoint (merge.go's
// merge and diff, repoview.go's view): a NIP-98 token for the exact URL
// and method (and body, when one is sent), the relay's gate, and the
// repository's rules (push or read). A refusal has been answered when ok is false.
func (r *Relay) authRepoRequest(w http.ResponseWriter, req *http.Request, rest string, push bool, body []byte) (c caller, rt gitRoute, ok bool) {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/git/"), "/")
	if len(parts) != 3 {
		http.Error(w, "bad repository path", http.StatusBadRequest)
		return c, rt, false
	}
	owner, err := parsePubkey(parts[0])
	name := strings.TrimSuffix(parts[1], ".git")
	if err != nil || !validRepoName(name) {
		http.Error(w, "bad repository path", http.StatusBadRequest)
		return c, rt, false
	}
	rt = gitRoute{owner: owner, repo: name, rest: rest}
	want := r.expect(req, nip98.PathURL)
	want.Method = req.Method
	if body != nil {
		want.Body, want.RequirePayload = body, true
	}
	v := r.verifier()
	res, err := v.Request(req, want)
	if errors.Is(err, nip98.ErrNoToken) {
		r.challenge(w, req.Method)
		return c, rt, false
	}
	if err != nil {
		http.Error(w, "NIP-98 auth failed: "+err.Error(), http.StatusUnauthorized)
		return c, rt, false
	}
	c, why := r.gitCaller(res)
	if msg := r.gate(c); msg != "" {
		if why != "" {
			msg = why
		}
		http.Error(w, msg, http.StatusForbidden)
		return c, rt, false
	}
	if !r.gitAllowed(req.Context(), c, rt, push) {
		http.Error(w, "repository not found", http.StatusNotFound)
		return c, rt, false
	}
	return c, rt, true
}

func (r *Relay) serveMerge(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "merge is POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxMergeBody+1))
	if err != nil || len(body) > maxMergeBody {
		http.Error(w, fmt.Sprintf("merge request body over %d bytes", maxMergeBody), http.StatusRequestEntityTooLarge)
		return
	}
	c, rt, ok := r.authRepoRequest(w, req, mergePath, true, body)
	if !ok {
		return
	}
	var in struct {
		PR string `json:"pr"`
	}
	if err := json.Unmarshal(body, &in); err != nil || !isHex64(in.PR) {
		http.Error(w, `merge body must be {"pr": "<64 hex event id>"}`, http.StatusBadRequest)
		return
	}
	ans, err := r.merge(req.Context(), rt, in.PR, c.pubkey)
	var me *mergeError
	if errors.As(err, &me) {
		http.Error(w, me.msg, me.status)
		return
	}
	if err != nil {
		r.log.Error("merge", "repo", repoD(rt), "pr", in.PR, "err", err)
		http.Error(w, "merge failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	r.publishRepo(req.Context(), rt, r.httpScheme(req))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}

// serveDiff answers GET …/buzz-diff?pr=ID with the pull request's
// unified diff against the merge base (git diff base...tip), for whoever
// may read the repository; X-Buzz-Base, X-Buzz-Tip name the commits.
// With &commit=SHA the diff is the one the pull request had at that
// commit (a line comment's buzz-commit): base...SHA. The commit must be
// in the repository; whoever may read it may read any of its commits.
func (r *Relay) serveDiff(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		http.Error(w, "diff is GET", http.StatusMethodNotAllowed)
		return
	}
	_, rt, ok := r.authRepoRequest(w, req, diffPath, false, nil)
	if !ok {
		return
	}
	id := req.URL.Query().Get("pr")
	p, found := r.loadPR(req.Context(), id)
	if !isHex64(id) || !found || repoD(p.rt) != repoD(rt) {
		http.Error(w, "no such pull request on "+repoD(rt), http.StatusNotFound)
		return
	}
	base, err := r.gitIn(req.Context(), rt, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+p.base+"^{commit}")
	if err != nil || !validRefName(p.base) || !isObjectID(p.tip) {
		http.Error(w, "base branch "+p.base+" or tip missing", http.StatusConflict)
		return
	}
	base = strings.TrimSpace(base)
	tip := p.tip
	if c := req.URL.Query().Get("commit"); c != "" {
		if !isObjectID(c) {
			http.Error(w, "commit must be 40 hex characters", http.StatusBadRequest)
			return
		}
		if _, err := r.gitIn(req.Context(), rt, nil, "cat-file", "-e", c+"^{commit}"); err != nil {
			http.Error(w, "no commit "+c+" in "+repoD(rt), http.StatusNotFound)
			return
		}
		tip = c
	}
	out, err := r.gitIn(req.Context(), rt, nil, "diff", "--no-color", "--no-ext-diff", base+"..."+tip)
	if err != nil {
		http.Error(w, "diff: "+err.Error(), http.StatusConflict)
		return
	}
	if len(out) > maxDiffBytes {
		out = out[:maxDiffBytes]
		w.Header().Set("X-Buzz-Truncated", "true")
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	w.Header().Set("X-Buzz-Base", base)
	w.Header().Set("X-Buzz-Tip", tip)
	io.WriteString(w, out)
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// merge merges pull request id of rt for merger.
func (r *Relay) merge(ctx context.Context, rt gitRoute, id, merger string) (mergeAnswer, error) {
	p, ok := r.loadPR(ctx, id)
	if !ok || repoD(p.rt) != repoD(rt) {
		return mergeAnswer{}, refuse(http.StatusNotFound, "no pull request %s on %s", id, repoD(rt))
	}
	switch p.status {
	case workspace.KindStatusMerged:
		return mergeAnswer{}, refuse(http.StatusConflict, "pull request %s is already merged", id)
	case workspace.KindStatusClosed:
		return mergeAnswer{}, refuse(http.StatusConflict, "pull request %s is closed; reopen it first", id)
	case workspace.KindStatusDraft:
		return mergeAnswer{}, refuse(http.StatusConflict, "pull request %s is a draft; mark it ready (buzz pr reopen) first", id)
	}
	if p.head == "" || !validRefName(p.head) || !validRefName(p.base) {
		return mergeAnswer{}, refuse(http.StatusBadRequest, "pull request %s names no valid head branch-name and base", id)
	}
	headRef, baseRef := "refs/heads/"+p.head, "refs/heads/"+p.base
	tip, err := r.gitIn(ctx, rt, nil, "rev-parse", "--verify", "--quiet", headRef+"^{commit}")
	if err != nil {
		return mergeAnswer{}, refuse(http.StatusConflict, "head branch %s is not in %s; push it first", p.head, repoD(rt))
	}
	tip = strings.TrimSpace(tip)
	base, err := r.gitIn(ctx, rt, nil, "rev-parse", "--verify", "--quiet", baseRef+"^{commit}")
	if err != nil {
		return mergeAnswer{}, refuse(http.StatusConflict, "base branch %s is not in %s", p.base, repoD(rt))
	}
	base = strings.TrimSpace(base)
	if r.isProtected(ctx, rt, p.base) {
		v := r.reviewRules(ctx, p)
		if len(v.blockedBy) > 0 {
			return mergeAnswer{}, refuse(http.StatusForbidden, "branch protection: %s is protected and changes were requested by %s", p.base, strings.Join(v.blockedBy, ", "))
		}
		if len(v.approvedBy) == 0 {
			msg := fmt.Sprintf("branch protection: %s is protected; a merge needs an approval from a member other than the author", p.base)
			if len(v.ignored) > 0 {
				msg += "; not counted: " + strings.Join(v.ignored, ", ")
			}
			return mergeAnswer{}, refuse(http.StatusForbidden, "%s", msg)
		}
	}
	ans := mergeAnswer{Base: p.base, Head: p.head, Tip: tip}
	if r.isAncestor(ctx, rt, tip, base) {
		return mergeAnswer{}, refuse(http.StatusConflict, "nothing to merge: %s is already in %s", p.head, p.base)
	}
	if r.isAncestor(ctx, rt, base, tip) {
		ans.MergeCommit, ans.FastForward = tip, true
	} else {
		out, err := r.gitIn(ctx, rt, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, tip)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil {
			if len(lines) > 1 && isObjectID(lines[0]) {
				files := lines[1:]
				if len(files) > maxConflictFiles {
					files = append(files[:maxConflictFiles], fmt.Sprintf("and %d more", len(files)-maxConflictFiles))
				}
				return mergeAnswer{}, refuse(http.StatusConflict, "merge conflict in %s; merge %s into %s on your side and push", strings.Join(files, ", "), p.base, p.head)
			}
			return mergeAnswer{}, err
		}
		subject, _ := tagValue(p.ev, workspace.TagSubject)
		npub, _ := nip19.EncodePublicKey(merger)
		msg := fmt.Sprintf("Merge pull request %s from %s\n\n%s\n\nMerged-by: %s\nPull-request: nostr:%s\n", id[:12], p.head, subject, npub, id)
		when := r.cfg.Now()
		ans.MergeCommit, err = r.writeSignedCommit(ctx, rt, lines[0], []string{base, tip},
			gitIdent(npub, merger+"@nostr", when), gitIdent("buzz-relay", r.pubkey+"@nostr", when), msg, when)
		if err != nil {
			return mergeAnswer{}, err
		}
	}
	// The old value makes this safe against a concurrent merge on another
	// instance sharing the --git-dir: one wins, the other fails here.
	if _, err := r.gitIn(ctx, rt, nil, "update-ref", "-m", "merge pull request "+id, baseRef, ans.MergeCommit, base); err != nil {
		return mergeAnswer{}, refuse(http.StatusConflict, "%s moved during the merge; try again", p.base)
	}
	r.log.Info("pull request merged", "repo", repoD(rt), "pr", id, "by", merger, "commit", ans.MergeCommit, "fast_forward", ans.FastForward)
	return ans, nil
}

// validRefName is a conservative branch-name check: what git accepts,
// minus anything that could read as an option or a revision expression.
func validRefName(s string) bool {
	if s == "" || len(s) > maxRefLine || s[0] == '-' || strings.Contains(s, "..") || strings.HasSuffix(s, ".lock") || strings.HasSuffix(s, "/") {
		return false
	}
	for _, c := range s {
		if c <= ' ' || strings.ContainsRune("~^:?*[\\@{}", c) {
			return false
		}
	}
	return true
}

// gitIdent is an author or committer line's value: name <email> and the
// time in git's raw form, in UTC.
func gitIdent(name, email string, at time.Time) string {
	return fmt.Sprintf("%s <%s> %d +0000", name, email, at.Unix())
}

// writeSignedCommit writes a commit of tree with parents, author and
// committer (gitIdent values) and msg into rt's repository, signed with
// the relay's key as git-sign-nostr signs (a NIP-GS v1 envelope in the
// gpgsig header, over the object without it), and returns its id.
func (r *Relay) writeSignedCommit(ctx context.Context, rt gitRoute, tree string, parents []string, author, committer, msg string, at time.Time) (string, error) {
	var hdr bytes.Buffer
	fmt.Fprintf(&hdr, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&hdr, "parent %s\n", p)
	}
	fmt.Fprintf(&hdr, "author %s\ncommitter %s\n", author, committer)
	payload := append(append(slices.Clone(hdr.Bytes()), '\n'), msg...)
	key, err := nostrkey.ParseSecret(r.secret)
	if err != nil {
		return "", fmt.Errorf("merge commit: the relay's key: %w", err)
	}
	defer key.Zero()
	t, err := nipgs.SigTime(at.Unix())
	if err != nil {
		return "", fmt.Errorf("merge commit: %w", err)
	}
	h := nipgs.NewHash(t, nil)
	h.Write(payload)
	e, err := nipgs.Seal(key, h, t, nil)
	if err != nil {
		return "", fmt.Errorf("merge commit: sign: %w", err)
	}
	armor := e.Armor()
	// The header's value is the armor, each line after the first
	// continued with a leading space, as git writes gpgsig.
	hdr.WriteString("gpgsig ")
	hdr.WriteString(strings.ReplaceAll(strings.TrimSuffix(string(armor), "\n"), "\n", "\n "))
	hdr.WriteString("\n\n")
	hdr.WriteString(msg)
	out, err := r.gitIn(ctx, rt, &hdr, "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		return "", fmt.Errorf("merge commit: %w", err)
	}
	return strings.TrimSpace(out), nil
}
