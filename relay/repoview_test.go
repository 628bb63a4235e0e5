package relay

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// viewGet sends a GET with a NIP-98 token for its exact URL, signed by k,
// and returns the status and body.
func viewGet(t *testing.T, k testKey, u string) (int, string) {
	t.Helper()
	return nip98Get(t, k, u, u, nip98.Options{Nonce: true})
}

// viewJSON is viewGet that must answer 200 with JSON, decoded into v.
func viewJSON(t *testing.T, k testKey, u string, v any) {
	t.Helper()
	code, body := viewGet(t, k, u)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", u, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", u, err, body)
	}
}

// viewURL is the repository's endpoint with query parameters (name, value pairs).
func viewURL(repoURL, endpoint string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	if len(q) == 0 {
		return repoURL + "/" + endpoint
	}
	return repoURL + "/" + endpoint + "?" + q.Encode()
}

// signedCommit commits what is staged in work, signed by k through the
// built git-sign-nostr, and returns the commit id.
func signedCommit(t *testing.T, env []string, work string, k testKey, msg string) string {
	t.Helper()
	sign := testexe.Link(t, "git-sign-nostr")
	gitOK(t, append(env, "NOSTR_PRIVATE_KEY="+k.sk), work, "-c", "gpg.format=x509", "-c", "gpg.x509.program="+sign,
		"-c", "user.signingkey="+k.pk, "commit", "--quiet", "-S", "-m", msg)
	return strings.TrimSpace(gitOK(t, env, work, "rev-parse", "HEAD"))
}

// TestRepositoryView reads a repository shared with a private channel
// through the view's endpoints of the built relay, with real git and a
// commit signed by the built git-sign-nostr: refs, directories, files
// (text, binary, over the size cap), the log with each commit's signature
// checked (signed, unsigned, and one whose message was changed after
// signing), a branch and a tag.
func TestRepositoryView(t *testing.T) {
	needGit(t)
	alice, bob := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", bob.pk)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	env := gitEnv(t)
	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	commitFile(t, env, work, "README.md", "# Proj\n\nSome **words**.\n", "first")
	os.MkdirAll(filepath.Join(work, "src", "deep"), 0o755)
	os.WriteFile(filepath.Join(work, "src", "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(work, "src", "deep", "x.txt"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(work, "bin.dat"), []byte("GIF\x00\x01\x02"), 0o644)
	big := strings.Repeat("é", maxBlobView/2+10) // two bytes each: the cap falls inside one
	os.WriteFile(filepath.Join(work, "big.txt"), []byte(big), 0o644)
	os.WriteFile(filepath.Join(work, "latin1.txt"), []byte("caf\xe9\n"), 0o644)
	gitOK(t, env, work, "add", ".")
	signedID := signedCommit(t, env, work, alice, "signed work")
	unsignedID := commitFile(t, env, work, "NOTES", "n\n", "unsigned work")
	gitOK(t, env, work, "tag", "v1")
	gitOK(t, env, work, "checkout", "--quiet", "-b", "dev")
	commitFile(t, env, work, "DEV", "dev\n", "on dev")
	// A signed commit whose message was changed after signing.
	gitOK(t, env, work, "add", "README.md")
	os.WriteFile(filepath.Join(work, "README.md"), []byte("# Proj\n\nchanged\n"), 0o644)
	gitOK(t, env, work, "add", "README.md")
	signedCommit(t, env, work, alice, "honest message")
	raw := gitOK(t, env, work, "cat-file", "commit", "HEAD")
	forged := strings.Replace(raw, "honest message", "forged message", 1)
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Env, cmd.Dir, cmd.Stdin = env, work, strings.NewReader(forged)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	forgedID := strings.TrimSpace(string(out))
	gitOK(t, env, work, "update-ref", "refs/heads/dev", forgedID)
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main", "dev", "v1")...)

	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, chanA}))

	var refs refsAnswer
	viewJSON(t, bob, viewURL(repoURL, refsPath), &refs)
	if refs.Head != "main" || len(refs.Branches) != 2 || refs.Branches[0].Name != "dev" || refs.Branches[1].Name != "main" || len(refs.Tags) != 1 || refs.Tags[0].Name != "v1" {
		t.Errorf("refs = %+v", refs)
	}

	var root treeAnswer
	viewJSON(t, bob, viewURL(repoURL, treePath), &root)
	var names []string
	for _, e := range root.Entries {
		names = append(names, e.Type+":"+e.Name)
	}
	if got, want := strings.Join(names, " "), "dir:src file:NOTES file:README.md file:big.txt file:bin.dat file:latin1.txt"; got != want {
		t.Errorf("root tree = %s; want %s", got, want)
	}
	var sub treeAnswer
	viewJSON(t, bob, viewURL(repoURL, treePath, "path", "src", "ref", "main"), &sub)
	if len(sub.Entries) != 2 || sub.Entries[0] != (treeEntry{"deep", "dir"}) || sub.Entries[1] != (treeEntry{"main.go", "file"}) || sub.Path != "src" {
		t.Errorf("src tree = %+v", sub.Entries)
	}
	var devRoot treeAnswer
	viewJSON(t, bob, viewURL(repoURL, treePath, "ref", "dev"), &devRoot)
	if !strings.Contains(string(jsonOf(t, devRoot.Entries)), `"DEV"`) {
		t.Errorf("dev's tree lacks DEV: %+v", devRoot.Entries)
	}

	var readme blobAnswer
	viewJSON(t, bob, viewURL(repoURL, blobPath, "path", "README.md", "ref", "v1"), &readme)
	if readme.Binary || readme.Truncated || readme.Text != "# Proj\n\nSome **words**.\n" {
		t.Errorf("README.md at v1 = %+v", readme)
	}
	var bin blobAnswer
	viewJSON(t, bob, viewURL(repoURL, blobPath, "path", "bin.dat"), &bin)
	if !bin.Binary || bin.Text != "" || bin.Size != 6 {
		t.Errorf("bin.dat = %+v; want binary, no text", bin)
	}
	var latin blobAnswer
	viewJSON(t, bob, viewURL(repoURL, blobPath, "path", "latin1.txt"), &latin)
	if !latin.Binary {
		t.Errorf("latin1.txt (not UTF-8) = %+v; want binary", latin)
	}
	var bigAns blobAnswer
	viewJSON(t, bob, viewURL(repoURL, blobPath, "path", "big.txt"), &bigAns)
	if !bigAns.Truncated || bigAns.Binary || bigAns.Limit != maxBlobView || bigAns.Size != int64(len(big)) || len(bigAns.Text) > maxBlobView || !strings.HasPrefix(big, bigAns.Text) || len(bigAns.Text) < maxBlobView-4 {
		t.Errorf("big.txt: truncated %v binary %v limit %d size %d text %d bytes", bigAns.Truncated, bigAns.Binary, bigAns.Limit, bigAns.Size, len(bigAns.Text))
	}

	var mainLog logAnswer
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "main"), &mainLog)
	if len(mainLog.Commits) != 3 || mainLog.More {
		t.Fatalf("main's log = %+v", mainLog)
	}
	if c := mainLog.Commits[0]; c.ID != unsignedID || c.Signature.Status != sigUnsigned || c.Subject != "unsigned work" || c.Author.Name != "T" || c.Author.Time == 0 {
		t.Errorf("newest commit = %+v; want %s unsigned", c, unsignedID)
	}
	if c := mainLog.Commits[1]; c.ID != signedID || c.Signature.Status != sigSigned || c.Signature.Signer != alice.pk || c.Signature.OAStatus != "none" {
		t.Errorf("second commit = %+v; want %s signed by %s", c, signedID, alice.pk)
	}
	var devLog logAnswer
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "dev"), &devLog)
	if c := devLog.Commits[0]; c.ID != forgedID || c.Signature.Status != sigInvalid || c.Signature.Signer != alice.pk || c.Subject != "forged message" {
		t.Errorf("forged commit = %+v; want invalid", c)
	}
	// base..ref: the commits of dev that main lacks, as a pull request of dev into main has.
	var prLog logAnswer
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "dev", "base", "main"), &prLog)
	if len(prLog.Commits) != 2 || prLog.Commits[0].ID != forgedID || prLog.Commits[1].Subject != "on dev" || prLog.Base != "main" || prLog.BaseCommit != unsignedID || prLog.More {
		t.Errorf("main..dev = %+v; want the forged commit and on dev", prLog)
	}
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "main", "base", "dev"), &prLog)
	if len(prLog.Commits) != 0 {
		t.Errorf("dev..main = %+v; want none: dev has all of main", prLog.Commits)
	}
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "dev", "base", signedID), &prLog)
	if len(prLog.Commits) != 3 || prLog.Commits[2].ID != unsignedID {
		t.Errorf("%s..dev = %+v; want three commits, the oldest %s", signedID, prLog.Commits, unsignedID)
	}
	var paged logAnswer
	viewJSON(t, bob, viewURL(repoURL, logPath, "ref", "main", "skip", "1", "path", "README.md"), &paged)
	if len(paged.Commits) != 0 {
		t.Errorf("README.md's log past its one commit = %+v", paged.Commits)
	}
	viewJSON(t, bob, viewURL(repoURL, logPath, "path", "README.md"), &paged)
	if len(paged.Commits) != 1 || paged.Commits[0].Subject != "first" {
		t.Errorf("README.md's log = %+v", paged.Commits)
	}

	// Refusals say what was wrong.
	for _, c := range []struct {
		u    string
		code int
		says string
	}{
		{viewURL(repoURL, treePath, "ref", "nope"), 404, `no branch, tag or commit "nope"`},
		{viewURL(repoURL, treePath, "path", "README.md"), 404, "no directory README.md"},
		{viewURL(repoURL, blobPath, "path", "src"), 404, "no file src"},
		{viewURL(repoURL, blobPath), 400, "path is missing"},
		{viewURL(repoURL, logPath, "skip", "-1"), 400, "skip"},
		{viewURL(repoURL, logPath, "ref", "dev", "base", "nope"), 404, `base: no branch, tag or commit "nope"`},
	} {
		if code, body := viewGet(t, bob, c.u); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("GET %s = %d %s; want %d saying %q", c.u, code, body, c.code, c.says)
		}
	}
}

// TestAttackRepositoryView attacks the view's endpoints of the built
// relay from outside: a relay member who is not in the private channel a
// repository is shared with gets the same 404 as for a repository that
// does not exist, for every endpoint, with a good token; no token gets a
// challenge; a token for another URL is refused; path traversal, option
// injection through ref and revision expressions are refused before git
// sees them, and what the owner may read stays inside the repository.
func TestAttackRepositoryView(t *testing.T) {
	needGit(t)
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	data := t.TempDir()
	b := runBinary(t, data, "--owner", alice.pk, "--allow", bob.pk+","+carol.pk)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	env := gitEnv(t)
	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	commitFile(t, env, work, "README.md", "secret plans\n", "first")
	commitFile(t, env, work, "b.txt", "b\n", "second")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)
	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, chanA}))

	// The member reads; the stranger to the channel gets 404 everywhere,
	// worded as for a repository that does not exist.
	missingURL := b.http() + "/git/" + alice.pk + "/nothing.git"
	for _, ep := range []string{viewURL(repoURL, refsPath), viewURL(repoURL, treePath), viewURL(repoURL, blobPath, "path", "README.md"), viewURL(repoURL, logPath)} {
		if code, body := viewGet(t, bob, ep); code != http.StatusOK {
			t.Errorf("member GET %s = %d %s", ep, code, body)
		}
		code, body := viewGet(t, carol, ep)
		if code != http.StatusNotFound || strings.Contains(body, "secret") || strings.Contains(body, "README") {
			t.Errorf("non-member GET %s = %d %s; want 404 and nothing of the repository", ep, code, body)
		}
		_, missing := viewGet(t, carol, strings.Replace(ep, repoURL, missingURL, 1))
		if body != missing {
			t.Errorf("non-member's 404 %q differs from a missing repository's %q", body, missing)
		}
	}
	// No token: a challenge. A token for another URL: refused.
	resp, err := http.Get(viewURL(repoURL, treePath))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("GET without a token = %d; want 401 with a challenge", resp.StatusCode)
	}
	sec, _ := nostrkey.ParseSecret(bob.sk)
	auth, _ := nip98.Header(sec, viewURL(repoURL, treePath), "GET", nip98.Options{Nonce: true})
	req, _ := http.NewRequest("GET", viewURL(repoURL, blobPath, "path", "README.md"), nil)
	req.Header.Set("Authorization", auth)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET with a token for the tree's URL on the blob's = %d; want 401", resp.StatusCode)
	}

	// Traversal and injection, as the owner, who may read everything of the
	// repository and nothing beside it.
	for _, d := range []string{data, filepath.Join(data, "git"), filepath.Join(data, "git", alice.pk)} {
		os.WriteFile(filepath.Join(d, "outside.txt"), []byte("outside"), 0o644)
	}
	for _, c := range []struct{ endpoint, ref, path string }{
		{blobPath, "", "../outside.txt"},
		{blobPath, "", "../../../../../../etc/passwd"},
		{blobPath, "", "/etc/passwd"},
		{blobPath, "", "src/../README.md"},
		{blobPath, "", "./README.md"},
		{blobPath, "", "a//b"},
		{blobPath, "", "README.md\nHEAD"},
		{treePath, "", ".."},
		{treePath, "", "."},
		{logPath, "", "../x"},
		{treePath, "--output=/tmp/x", ""},
		{treePath, "HEAD~1", ""},
		{treePath, "main^", ""},
		{blobPath, "main:README.md", "b.txt"},
		{logPath, "-n1", ""},
		{treePath, "@{-1}", ""},
	} {
		u := viewURL(repoURL, c.endpoint, "ref", c.ref, "path", c.path)
		code, body := viewGet(t, alice, u)
		if code != http.StatusBadRequest {
			t.Errorf("GET %s (ref %q path %q) = %d %s; want 400", c.endpoint, c.ref, c.path, code, body)
		}
		if strings.Contains(body, "outside") && !strings.Contains(body, "outside.txt") || strings.Contains(body, "root:") {
			t.Errorf("GET %s (ref %q path %q) leaked: %s", c.endpoint, c.ref, c.path, body)
		}
	}
	// The log's base is checked as ref is: no option or revision expression reaches git.
	for _, base := range []string{"--output=/tmp/x", "main^", "HEAD~1", "main..dev", "^main", "@{-1}", "-n1"} {
		u := viewURL(repoURL, logPath, "ref", "main", "base", base)
		if code, body := viewGet(t, alice, u); code != http.StatusBadRequest || !strings.Contains(body, "base: ref") {
			t.Errorf("GET buzz-log base %q = %d %s; want 400 naming the base", base, code, body)
		}
	}
	// A POST is not a read.
	if code, body := bridgeCall(t, bob, viewURL(repoURL, treePath), "", nip98.Options{}, "", nil, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST buzz-tree = %d %s; want 405", code, body)
	}
	// The bodies of the refusals name the problem.
	if _, body := viewGet(t, alice, viewURL(repoURL, blobPath, "path", "../outside.txt")); !strings.Contains(body, "without empty, . or .. elements") {
		t.Errorf("traversal refusal = %q", body)
	}
	if _, body := viewGet(t, alice, viewURL(repoURL, treePath, "ref", "--output=/tmp/x")); !strings.Contains(body, "not a branch, a tag or a 40-hex commit") {
		t.Errorf("option refusal = %q", body)
	}
}
