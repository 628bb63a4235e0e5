package relay

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// TestPullRequestLineThreads: a comment on a line, a reply that keeps the
// line without naming it, a resolve mark and a reopen, as the built CLI
// writes them and pr view reads them; a reply to a comment of another
// pull request is refused.
func TestPullRequestLineThreads(t *testing.T) {
	w, bob, bot, bw, tip, id := smallPRWithFix(t)

	var c1 struct {
		ID string `json:"event_id"`
	}
	json.Unmarshal([]byte(w.must(bob, "", "pr", "comment", "--pr", id, "--file", "FIX", "--line", "1", "--commit", tip, "--body", "why?")), &c1)
	w.must(bot, "", "pr", "comment", "--pr", id, "--reply-to", c1.ID, "--body", "because")
	w.must(bob, "", "pr", "resolve", "--pr", id, "--comment", c1.ID)
	var v struct {
		Comments []struct {
			Author   string `json:"author"`
			Body     string `json:"body"`
			File     string `json:"file"`
			Line     int    `json:"line"`
			Commit   string `json:"commit"`
			ReplyTo  string `json:"reply_to"`
			Resolved string `json:"resolved"`
		} `json:"comments"`
	}
	if err := json.Unmarshal([]byte(w.must(bob, "", "pr", "view", "--pr", id)), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Comments) != 3 {
		t.Fatalf("pr view comments = %+v; want 3", v.Comments)
	}
	for i, c := range v.Comments {
		if c.File != "FIX" || c.Line != 1 || c.Commit != tip {
			t.Errorf("comment %d (%q) at %s:%d@%s; want every comment of the thread at FIX:1@%s", i, c.Body, c.File, c.Line, c.Commit, tip)
		}
	}
	for _, c := range v.Comments { // one second holds them all: by what they say
		switch c.Body {
		case "because":
			if c.ReplyTo != c1.ID || c.Author != bot.pk {
				t.Errorf("reply = %+v; want the agent's, answering %s", c, c1.ID)
			}
		case "Resolved.":
			if c.Resolved != workspace.ResolvedYes || c.ReplyTo != c1.ID || c.Author != bob.pk {
				t.Errorf("resolve mark = %+v", c)
			}
		}
	}

	// bob asks the agent to review; pr view says whom.
	w.must(bob, "", "pr", "request-review", "--pr", id, "--reviewer", bot.pk)
	var rr struct {
		Comments []struct {
			ReviewRequest string `json:"review_request"`
		} `json:"comments"`
	}
	json.Unmarshal([]byte(w.must(bob, "", "pr", "view", "--pr", id)), &rr)
	asked := false
	for _, c := range rr.Comments {
		asked = asked || c.ReviewRequest == bot.pk
	}
	if !asked {
		t.Errorf("pr view shows no review request of %s: %+v", bot.pk, rr.Comments)
	}

	// A comment of another pull request is no reply here.
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "other", "main")
	commitFile(t, w.env, bw, "OTHER", "o\n", "other")
	w.push(bot, bw, "other")
	other := w.create(bot, "other", "Other")
	if msg := w.refused(bob, "pr", "comment", "--pr", other, "--reply-to", c1.ID, "--body", "x"); !strings.Contains(msg, "is not on pull request") {
		t.Errorf("a reply across pull requests: %s", msg)
	}
}

// TestPullRequestCheckout runs the built `buzz pr checkout` in a clone,
// with git fetching through the real git-credential-nostr as a session
// does: the head becomes a local branch tracking the repository, a later
// push to the head fast-forwards it, a plain `git push` from it updates
// the pull request, and a branch that went its own way is left as it is
// with the way out named.
func TestPullRequestCheckout(t *testing.T) {
	w, bob, bot, bw, tip, id := smallPRWithFix(t)

	// bob's clone, and an environment as a session's: the helper on PATH,
	// credential.helper=nostr with the key.
	helper := testexe.Link(t, "git-credential-nostr")
	env := append([]string{}, w.env...)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(helper) + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	env = append(env, "NOSTR_PRIVATE_KEY="+bob.sk, "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=nostr",
		"GIT_CONFIG_KEY_1=credential.useHttpPath", "GIT_CONFIG_VALUE_1=true")
	mine := filepath.Join(t.TempDir(), "mine")
	gitOK(t, env, "", "clone", "--quiet", w.repoURL, mine)
	checkout := func(dir string, args ...string) (map[string]any, string, error) {
		t.Helper()
		cmd := exec.CommandContext(testCtx(t), w.buzz, append([]string{"pr", "checkout", "--pr", id}, args...)...)
		cmd.Dir = dir
		cmd.Env = append([]string{"BUZZ_RELAY_URL=" + w.b.http(), "BUZZ_PRIVATE_KEY=" + bob.sk}, env...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ans map[string]any
		if err == nil {
			if jerr := json.Unmarshal([]byte(out.String()), &ans); jerr != nil {
				t.Fatalf("pr checkout printed %q: %v", out.String(), jerr)
			}
		}
		return ans, errb.String(), err
	}
	ans, stderr, err := checkout(mine)
	if err != nil {
		t.Fatalf("pr checkout: %v\n%s", err, stderr)
	}
	if ans["branch"] != "fix" || ans["tip"] != tip || ans["remote"] != "origin" || ans["created"] != true {
		t.Errorf("pr checkout = %v; want branch fix at %s from origin, created", ans, tip)
	}
	if head := strings.TrimSpace(gitOK(t, env, mine, "rev-parse", "--abbrev-ref", "HEAD")); head != "fix" {
		t.Errorf("on branch %s after checkout; want fix", head)
	}
	if up := strings.TrimSpace(gitOK(t, env, mine, "rev-parse", "--abbrev-ref", "@{upstream}")); up != "origin/fix" {
		t.Errorf("upstream = %s; want origin/fix", up)
	}

	// The agent pushes again: a second checkout fast-forwards.
	tip2 := commitFile(t, w.env, bw, "FIX", "fixed twice\n", "again")
	w.push(bot, bw, "fix")
	if ans, stderr, err = checkout(mine); err != nil || ans["tip"] != tip2 || ans["created"] != false {
		t.Fatalf("second checkout = %v, %v\n%s", ans, err, stderr)
	}
	// The diff as it was at an earlier commit of the pull request (a line
	// comment's buzz-commit), for whoever may read the repository.
	diffAt := func(commit string) (int, string) {
		t.Helper()
		u := w.repoURL + "/buzz-diff?pr=" + id + "&commit=" + commit
		return nip98Get(t, bob, u, u, nip98.Options{Nonce: true})
	}
	if code, d := diffAt(tip); code != http.StatusOK || !strings.Contains(d, "+fixed\n") || strings.Contains(d, "twice") {
		t.Errorf("diff at %s = %d\n%s", tip, code, d)
	}
	if code, d := diffAt(tip2); code != http.StatusOK || !strings.Contains(d, "+fixed twice") {
		t.Errorf("diff at %s = %d\n%s", tip2, code, d)
	}
	for commit, want := range map[string]int{"HEAD": http.StatusBadRequest, "--output=x": http.StatusBadRequest, strings.Repeat("0", 40): http.StatusNotFound} {
		if code, msg := diffAt(commit); code != want {
			t.Errorf("diff at %q = %d %s; want %d", commit, code, msg, want)
		}
	}

	// A plain git push from the branch updates the pull request.
	tip3 := commitFile(t, env, mine, "FIX", "fixed by bob\n", "bob's touch")
	gitOK(t, env, mine, "push", "--quiet")
	if got := w.view(bob, id).PR.Tip; got != tip3 {
		t.Errorf("after git push from the checked-out branch, the pull request's tip = %s; want %s", got, tip3)
	}

	// Diverged: the branch is left as it is and the error names --branch.
	commitFile(t, env, mine, "LOCAL", "l\n", "local only")
	gitOK(t, w.env, bw, append(authed(t, bot, w.repoURL), "pull", "--quiet", "--no-rebase", w.repoURL, "fix")...)
	commitFile(t, w.env, bw, "FIX", "agent again\n", "agent again")
	w.push(bot, bw, "fix")
	before := strings.TrimSpace(gitOK(t, env, mine, "rev-parse", "HEAD"))
	if _, stderr, err := checkout(mine); err == nil || !strings.Contains(stderr, "--branch") {
		t.Errorf("checkout over a diverged branch: err %v, stderr %s", err, stderr)
	}
	if after := strings.TrimSpace(gitOK(t, env, mine, "rev-parse", "HEAD")); after != before {
		t.Errorf("the diverged branch moved from %s to %s", before, after)
	}
	if ans, stderr, err = checkout(mine, "--branch", "fix-2"); err != nil || ans["branch"] != "fix-2" {
		t.Errorf("checkout --branch fix-2 = %v, %v\n%s", ans, err, stderr)
	}
	// Outside a repository it says how to get one.
	if _, stderr, err := checkout(t.TempDir()); err == nil || !strings.Contains(stderr, "git clone") {
		t.Errorf("checkout outside a repository: err %v, stderr %s", err, stderr)
	}
}

// smallPRWorld starts the built relay with alice's repository proj
// shared with a private channel in which bob is a member and bot an
// agent; keys are bob and bot.
func smallPRWorld(t *testing.T) (*prWorld, []testKey) {
	alice, bob, bot := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", bob.pk+","+bot.pk)
	w := newPRWorld(t, b, login(t, b.url, alice), alice, "line one\n", []testKey{bob}, []testKey{bot})
	return w, []testKey{bob, bot}
}

// smallPRWithFix is smallPRWorld with a pull request open: the agent
// (bot) committed FIX on branch fix of its clone bw, at tip, pushed it
// and opened pull request id "Fix it" of it.
func smallPRWithFix(t *testing.T) (w *prWorld, bob, bot testKey, bw, tip, id string) {
	t.Helper()
	needGit(t)
	w, keys := smallPRWorld(t)
	bob, bot = keys[0], keys[1]
	bw = w.clone(bot)
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "fix")
	tip = commitFile(t, w.env, bw, "FIX", "fixed\n", "fix it")
	w.push(bot, bw, "fix")
	id = w.create(bot, "fix", "Fix it")
	return w, bob, bot, bw, tip, id
}
