package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"buzzbox/internal/workspace/nipgs"
)

// The repository view's read-only endpoints, for the web client: GET
// /git/<owner>/<name>.git/<endpoint>?… with a NIP-98 token for that exact
// URL (authRepoRequest, as the diff endpoint: whoever may read the
// repository; anyone else gets the git route's 404). Answers are JSON:
//
//   - buzz-refs: {head, branches: [{name, commit}], tags: [{name, commit}]}
//   - buzz-tree?ref=R&path=P: one directory, {ref, commit, path,
//     entries: [{name, type}], truncated, limit}; type is dir, file, link
//     or submodule; directories first (no sizes: they would cost a look
//     at every blob of a large directory; the file's answer has its size)
//   - buzz-blob?ref=R&path=P: one file, {ref, commit, path, size, limit,
//     binary, truncated, text}; text holds at most limit bytes of a file
//     that is not binary (a NUL in its first 8000 bytes, or not UTF-8)
//   - buzz-log?ref=R[&base=B][&path=P][&skip=N]: {ref, commit, base,
//     base_commit, commits: [{id, parents, author, committer, subject,
//     body, signature}], more}; with B (checked as R is) the commits of
//     B..R, those of R that B does not have: a pull request's; the
//     signature is the relay's check of the commit's NIP-GS signature
//     (nipgs): status signed (with signer, and owner when a NIP-OA
//     attestation in it holds), unsigned, invalid (with reason) or unknown
//     (signed some other way, OpenPGP say, which the relay does not check)
//
// R is a branch, a tag or a 40-hex commit, HEAD's branch when absent; P
// is a path inside the tree, relative, without . or .. elements. Every
// git command runs under repoViewTimeout and every answer is bounded
// (limits.go).
//
// What it does not do: blame, search, diffs between arbitrary commits,
// raw downloads, or verify signed tags.

// The view's endpoints, the last path element after <name>.git/.
const (
	refsPath = "buzz-refs"
	treePath = "buzz-tree"
	blobPath = "buzz-blob"
	logPath  = "buzz-log"
)

// viewEndpoint reports whether the last path element names one of the
// view's endpoints.
func viewEndpoint(last string) bool {
	switch last {
	case refsPath, treePath, blobPath, logPath:
		return true
	}
	return false
}

// serveView answers one of the view's endpoints.
func (r *Relay) serveView(w http.ResponseWriter, req *http.Request, endpoint string) {
	if req.Method != http.MethodGet {
		http.Error(w, endpoint+" is GET", http.StatusMethodNotAllowed)
		return
	}
	_, rt, ok := r.authRepoRequest(w, req, endpoint, false, nil)
	if !ok {
		return
	}
	if _, err := os.Stat(r.repoDir(rt)); err != nil {
		http.Error(w, "repository not found", http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), repoViewTimeout)
	defer cancel()
	q := req.URL.Query()
	var ans any
	var err error
	switch endpoint {
	case refsPath:
		ans, err = r.viewRefs(ctx, rt)
	case treePath:
		ans, err = r.viewTree(ctx, rt, q.Get("ref"), q.Get("path"))
	case blobPath:
		ans, err = r.viewBlob(ctx, rt, q.Get("ref"), q.Get("path"))
	case logPath:
		ans, err = r.viewLog(ctx, rt, q.Get("ref"), q.Get("base"), q.Get("path"), q.Get("skip"))
	}
	var ve *mergeError
	switch {
	case errors.As(err, &ve):
		http.Error(w, ve.msg, ve.status)
		return
	case err != nil && ctx.Err() != nil && req.Context().Err() == nil:
		http.Error(w, fmt.Sprintf("%s of %s took longer than %s; the repository is too large for the view", endpoint, repoD(rt), repoViewTimeout), http.StatusServiceUnavailable)
		return
	case err != nil:
		r.log.Error("repository view", "repo", repoD(rt), "endpoint", endpoint, "err", err)
		http.Error(w, endpoint+" failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(ans)
}

// refEntry is a branch or tag in the refs answer.
type refEntry struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

type refsAnswer struct {
	Head     string     `json:"head"`
	Branches []refEntry `json:"branches"`
	Tags     []refEntry `json:"tags"`
}

func (r *Relay) viewRefs(ctx context.Context, rt gitRoute) (refsAnswer, error) {
	refs, head, err := r.repoRefs(ctx, rt)
	if err != nil {
		return refsAnswer{}, err
	}
	ans := refsAnswer{Head: strings.TrimPrefix(head, "refs/heads/"), Branches: []refEntry{}, Tags: []refEntry{}}
	for name, id := range refs {
		if b, ok := strings.CutPrefix(name, "refs/heads/"); ok {
			ans.Branches = append(ans.Branches, refEntry{b, id})
		} else if t, ok := strings.CutPrefix(name, "refs/tags/"); ok {
			ans.Tags = append(ans.Tags, refEntry{t, id})
		}
	}
	byName := func(l []refEntry) { sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name }) }
	byName(ans.Branches)
	byName(ans.Tags)
	return ans, nil
}

// resolveRef turns the ref parameter into a commit id: a branch, then a
// tag of that name (peeled), or a 40-hex commit; "" is HEAD. Nothing
// else reaches git, so no revision expression or option can.
func (r *Relay) resolveRef(ctx context.Context, rt gitRoute, ref string) (string, error) {
	var tries []string
	switch {
	case ref == "":
		tries = []string{"HEAD"}
	case isObjectID(ref):
		tries = []string{ref}
	case validRefName(ref):
		tries = []string{"refs/heads/" + ref, "refs/tags/" + ref}
	default:
		return "", refuse(http.StatusBadRequest, "ref %q is not a branch, a tag or a 40-hex commit id", ref)
	}
	for _, t := range tries {
		out, err := r.gitIn(ctx, rt, nil, "rev-parse", "--verify", "--quiet", t+"^{commit}")
		if err == nil {
			return strings.TrimSpace(out), nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if ref == "" {
		return "", refuse(http.StatusNotFound, "%s has no commits yet; push one", repoD(rt))
	}
	return "", refuse(http.StatusNotFound, "no branch, tag or commit %q in %s", ref, repoD(rt))
}

// cleanViewPath checks the path parameter: a relative path inside the
// tree, or "" for its root. Absolute paths, . and .. elements, empty
// elements and control characters are refused rather than cleaned, so
// what reaches git is exactly what was asked for.
func cleanViewPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if len(p) > maxViewPath {
		return "", refuse(http.StatusBadRequest, "path is %d bytes, over %d", len(p), maxViewPath)
	}
	if !utf8.ValidString(p) {
		return "", refuse(http.StatusBadRequest, "path is not UTF-8")
	}
	for _, c := range p {
		if c < ' ' || c == 0x7f {
			return "", refuse(http.StatusBadRequest, "path %q has a control character", p)
		}
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return "", refuse(http.StatusBadRequest, "path %q must be relative to the repository's root, without empty, . or .. elements", p)
		}
	}
	return p, nil
}

// treeEntry is one entry of a directory.
type treeEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // dir, file, link, submodule
}

type treeAnswer struct {
	Ref       string      `json:"ref"`
	Commit    string      `json:"commit"`
	Path      string      `json:"path"`
	Entries   []treeEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
	Limit     int         `json:"limit"`
}

func (r *Relay) viewTree(ctx context.Context, rt gitRoute, ref, path string) (treeAnswer, error) {
	path, err := cleanViewPath(path)
	if err != nil {
		return treeAnswer{}, err
	}
	commit, err := r.resolveRef(ctx, rt, ref)
	if err != nil {
		return treeAnswer{}, err
	}
	if path != "" {
		typ, err := r.gitIn(ctx, rt, nil, "cat-file", "-t", commit+":"+path)
		if err != nil || strings.TrimSpace(typ) != "tree" {
			if ctx.Err() != nil {
				return treeAnswer{}, ctx.Err()
			}
			return treeAnswer{}, refuse(http.StatusNotFound, "no directory %s at %s", path, shortRef(ref, commit))
		}
	}
	out, cut, err := r.gitCapped(ctx, rt, nil, maxTreeBytes, "ls-tree", "-z", commit+":"+path)
	if err != nil {
		return treeAnswer{}, err
	}
	ans := treeAnswer{Ref: ref, Commit: commit, Path: path, Entries: []treeEntry{}, Truncated: cut, Limit: maxTreeEntries}
	recs := bytes.Split(out, []byte{0})
	if cut && len(recs) > 0 {
		recs = recs[:len(recs)-1] // the last one may be cut short
	}
	for _, rec := range recs {
		e, ok := parseTreeRecord(rec)
		if !ok {
			continue
		}
		if len(ans.Entries) == maxTreeEntries {
			ans.Truncated = true
			break
		}
		ans.Entries = append(ans.Entries, e)
	}
	sort.SliceStable(ans.Entries, func(i, j int) bool {
		di, dj := ans.Entries[i].Type == "dir", ans.Entries[j].Type == "dir"
		if di != dj {
			return di
		}
		return ans.Entries[i].Name < ans.Entries[j].Name
	})
	return ans, nil
}

// parseTreeRecord reads one `ls-tree -z` record: "<mode> <type>
// <object>\t<name>".
func parseTreeRecord(rec []byte) (treeEntry, bool) {
	meta, name, ok := bytes.Cut(rec, []byte{'\t'})
	if !ok || len(name) == 0 {
		return treeEntry{}, false
	}
	f := strings.Fields(string(meta))
	if len(f) != 3 {
		return treeEntry{}, false
	}
	e := treeEntry{Name: string(name)}
	switch {
	case f[1] == "tree":
		e.Type = "dir"
	case f[1] == "commit":
		e.Type = "submodule"
	case f[0] == "120000":
		e.Type = "link"
	default:
		e.Type = "file"
	}
	return e, true
}

// shortRef names a ref for a message: the ref asked for, else the commit.
func shortRef(ref, commit string) string {
	if ref != "" {
		return ref
	}
	return commit[:12]
}

type blobAnswer struct {
	Ref       string `json:"ref"`
	Commit    string `json:"commit"`
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Limit     int    `json:"limit"`
	Binary    bool   `json:"binary"`
	Truncated bool   `json:"truncated"`
	Text      string `json:"text"`
}

func (r *Relay) viewBlob(ctx context.Context, rt gitRoute, ref, path string) (blobAnswer, error) {
	path, err := cleanViewPath(path)
	if err != nil {
		return blobAnswer{}, err
	}
	if path == "" {
		return blobAnswer{}, refuse(http.StatusBadRequest, "path is missing: name the file to show")
	}
	commit, err := r.resolveRef(ctx, rt, ref)
	if err != nil {
		return blobAnswer{}, err
	}
	// One cat-file: the header line "<oid> <type> <size>", then the content.
	name := commit + ":" + path
	out, _, err := r.gitCapped(ctx, rt, strings.NewReader(name+"\n"), maxBlobView+len(name)+100, "cat-file", "--batch")
	if err != nil {
		return blobAnswer{}, err
	}
	head, content, _ := bytes.Cut(out, []byte{'\n'})
	f := strings.Fields(string(head))
	if len(f) != 3 || f[1] != "blob" {
		return blobAnswer{}, refuse(http.StatusNotFound, "no file %s at %s", path, shortRef(ref, commit))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return blobAnswer{}, fmt.Errorf("cat-file header %q: %w", head, err)
	}
	content = content[:min(int64(len(content)), size, maxBlobView)]
	ans := blobAnswer{Ref: ref, Commit: commit, Path: path, Size: size, Limit: maxBlobView, Truncated: size > maxBlobView}
	if bytes.IndexByte(content[:min(len(content), maxBinarySniff)], 0) >= 0 {
		ans.Binary = true
		return ans, nil
	}
	if ans.Truncated {
		// The cut may fall inside a character.
		for i := 0; i < utf8.UTFMax && len(content) > 0 && !utf8.Valid(content); i++ {
			content = content[:len(content)-1]
		}
	}
	if !utf8.Valid(content) {
		ans.Binary = true
		return ans, nil
	}
	ans.Text = string(content)
	return ans, nil
}

// person is a commit's author or committer.
type person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Time  int64  `json:"time"`
}

// commitSignature is the relay's check of a commit's signature.
type commitSignature struct {
	Status   string `json:"status"`              // signed, unsigned, invalid, unknown
	Signer   string `json:"signer,omitempty"`    // hex, when signed or invalid
	Owner    string `json:"owner,omitempty"`     // hex, when a NIP-OA attestation holds
	OAStatus string `json:"oa_status,omitempty"` // nipgs.OA*, when signed
	Reason   string `json:"reason,omitempty"`    // why invalid or unknown
}

// Signature statuses.
const (
	sigSigned   = "signed"
	sigUnsigned = "unsigned"
	sigInvalid  = "invalid"
	sigUnknown  = "unknown"
)

type logCommit struct {
	ID        string          `json:"id"`
	Parents   []string        `json:"parents"`
	Author    person          `json:"author"`
	Committer person          `json:"committer"`
	Subject   string          `json:"subject"`
	Body      string          `json:"body"`
	Signature commitSignature `json:"signature"`
}

type logAnswer struct {
	Ref        string      `json:"ref"`
	Commit     string      `json:"commit"`
	Base       string      `json:"base,omitempty"`        // the base asked for, if any
	BaseCommit string      `json:"base_commit,omitempty"` // what it resolved to
	Path       string      `json:"path"`
	Commits    []logCommit `json:"commits"`
	More       bool        `json:"more"`
}

// viewLog lists the commits of ref, newest first; with base, only those
// base does not have (base..ref).
func (r *Relay) viewLog(ctx context.Context, rt gitRoute, ref, base, path, skipParam string) (logAnswer, error) {
	path, err := cleanViewPath(path)
	if err != nil {
		return logAnswer{}, err
	}
	skip := 0
	if skipParam != "" {
		skip, err = strconv.Atoi(skipParam)
		if err != nil || skip < 0 || skip > maxLogSkip {
			return logAnswer{}, refuse(http.StatusBadRequest, "skip %q must be a whole number from 0 to %d", skipParam, maxLogSkip)
		}
	}
	commit, err := r.resolveRef(ctx, rt, ref)
	if err != nil {
		return logAnswer{}, err
	}
	baseCommit := ""
	if base != "" {
		// resolveRef checks base as it does ref: nothing but a branch, a
		// tag or a commit id reaches git.
		if baseCommit, err = r.resolveRef(ctx, rt, base); err != nil {
			var ve *mergeError
			if errors.As(err, &ve) {
				ve.msg = "base: " + ve.msg
			}
			return logAnswer{}, err
		}
	}
	args := []string{"rev-list", "--max-count=" + strconv.Itoa(logPage+1), "--skip=" + strconv.Itoa(skip), commit}
	if baseCommit != "" {
		args = append(args, "^"+baseCommit)
	}
	if path != "" {
		args = append(args, "--", path)
	}
	ids, err := r.gitIn(ctx, rt, nil, args...)
	if err != nil {
		return logAnswer{}, err
	}
	list := strings.Fields(ids)
	ans := logAnswer{Ref: ref, Commit: commit, Base: base, BaseCommit: baseCommit, Path: path, Commits: []logCommit{}, More: len(list) > logPage}
	list = list[:min(len(list), logPage)]
	if len(list) == 0 {
		return ans, nil
	}
	out, cut, err := r.gitCapped(ctx, rt, strings.NewReader(strings.Join(list, "\n")+"\n"), maxLogBytes, "cat-file", "--batch")
	if err != nil {
		return logAnswer{}, err
	}
	for len(out) > 0 {
		head, rest, ok := bytes.Cut(out, []byte{'\n'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 || f[1] != "commit" {
			break
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size > len(rest) {
			break // cut by maxLogBytes: the rest is the next page's
		}
		ans.Commits = append(ans.Commits, parseCommit(f[0], rest[:size]))
		out = rest[min(size+1, len(rest)):]
	}
	if cut || len(ans.Commits) < len(list) {
		ans.More = true
	}
	return ans, nil
}

// parseCommit reads a raw commit object and checks its signature.
func parseCommit(id string, obj []byte) logCommit {
	c := logCommit{ID: id, Parents: []string{}}
	hdr, msg, _ := bytes.Cut(obj, []byte("\n\n"))
	for _, line := range strings.Split(string(hdr), "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "parent":
			c.Parents = append(c.Parents, val)
		case "author":
			c.Author = parsePerson(val)
		case "committer":
			c.Committer = parsePerson(val)
		}
	}
	if len(msg) > maxLogMessage {
		msg = msg[:maxLogMessage]
	}
	text := strings.ToValidUTF8(string(msg), "\uFFFD")
	subject, body, _ := strings.Cut(text, "\n")
	c.Subject, c.Body = subject, strings.TrimSpace(body)
	c.Signature = checkCommitSignature(obj)
	return c
}

// parsePerson reads "Name <email> 1700000000 +0000".
func parsePerson(s string) person {
	var p person
	lt, gt := strings.IndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if lt < 0 || gt < lt {
		p.Name = s
		return p
	}
	p.Name, p.Email = strings.TrimSpace(s[:lt]), s[lt+1:gt]
	if f := strings.Fields(s[gt+1:]); len(f) > 0 {
		p.Time, _ = strconv.ParseInt(f[0], 10, 64)
	}
	return p
}

// splitSignedCommit takes a commit object apart as git does for
// verify-commit: the signature is the gpgsig header's value (its
// continuation lines without their leading space, each ending in a
// newline), and the payload is the object without that header.
func splitSignedCommit(obj []byte) (payload, sig []byte, signed bool) {
	hdrEnd := bytes.Index(obj, []byte("\n\n"))
	if hdrEnd < 0 {
		hdrEnd = len(obj)
	}
	var pay, s bytes.Buffer
	in := false
	rest := obj
	for len(rest) > 0 {
		line, next, found := bytes.Cut(rest, []byte{'\n'})
		end := len(line)
		if found {
			end++
		}
		inHeader := len(obj)-len(rest) < hdrEnd
		switch {
		case inHeader && bytes.HasPrefix(line, []byte("gpgsig ")):
			in, signed = true, true
			s.Write(line[len("gpgsig "):])
			s.WriteByte('\n')
		case inHeader && in && bytes.HasPrefix(line, []byte(" ")):
			s.Write(line[1:])
			s.WriteByte('\n')
		default:
			in = false
			pay.Write(rest[:end])
		}
		rest = next
		if !found {
			break
		}
	}
	return pay.Bytes(), s.Bytes(), signed
}

// checkCommitSignature checks a commit's NIP-GS signature, as
// git-sign-nostr --verify does.
func checkCommitSignature(obj []byte) commitSignature {
	payload, sig, signed := splitSignedCommit(obj)
	if !signed {
		return commitSignature{Status: sigUnsigned}
	}
	if !bytes.HasPrefix(sig, []byte(nipgs.ArmorBegin)) {
		return commitSignature{Status: sigUnknown, Reason: "not a Nostr (NIP-GS) signature; the relay does not check other kinds"}
	}
	e, err := nipgs.ParseArmor(sig)
	if err != nil {
		cs := commitSignature{Status: sigInvalid, Reason: err.Error()}
		var me *nipgs.MalformedError
		if errors.As(err, &me) {
			cs.Signer = me.PK
		}
		return cs
	}
	if !e.Verify(payload) {
		return commitSignature{Status: sigInvalid, Signer: e.PK.Hex(), Reason: "the signature does not match the commit"}
	}
	cs := commitSignature{Status: sigSigned, Signer: e.PK.Hex(), OAStatus: e.OAStatus()}
	if cs.OAStatus == nipgs.OAValid {
		cs.Owner = e.OA.Owner
	}
	return cs
}
