package relay

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// prWorld is a built buzz-relay hosting alice/proj shared with a private
// channel, and the built buzz CLI.
type prWorld struct {
	t       testing.TB
	b       *binRelay
	buzz    string
	env     []string
	repoURL string
	repo    string // OWNER/NAME for --repo
}

func (w *prWorld) run(k testKey, stdin string, args ...string) (string, string, error) {
	w.t.Helper()
	cmd := exec.CommandContext(testCtx(w.t), w.buzz, args...)
	cmd.Env = []string{"BUZZ_RELAY_URL=" + w.b.http(), "BUZZ_PRIVATE_KEY=" + k.sk}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (w *prWorld) must(k testKey, stdin string, args ...string) string {
	w.t.Helper()
	out, stderr, err := w.run(k, stdin, args...)
	if err != nil {
		w.t.Fatalf("buzz %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// refused runs a buzz command that must fail, and returns its stderr.
func (w *prWorld) refused(k testKey, args ...string) string {
	w.t.Helper()
	out, stderr, err := w.run(k, "", args...)
	if err == nil {
		w.t.Fatalf("buzz %s succeeded: %s", strings.Join(args, " "), out)
	}
	return stderr
}

// clone clones the repository as k and returns the work tree.
func (w *prWorld) clone(k testKey) string {
	w.t.Helper()
	dst := filepath.Join(w.t.TempDir(), "c")
	gitOK(w.t, w.env, "", append(authed(w.t, k, w.repoURL), "clone", "--quiet", w.repoURL, dst)...)
	return dst
}

func (w *prWorld) push(k testKey, dir string, refspec ...string) {
	w.t.Helper()
	gitOK(w.t, w.env, dir, append(authed(w.t, k, w.repoURL), append([]string{"push", "--quiet", w.repoURL}, refspec...)...)...)
}

func (w *prWorld) create(k testKey, head, title string) string {
	w.t.Helper()
	var res struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(w.must(k, "what and why\n", "pr", "create", "--repo", w.repo, "--head", head, "--title", title, "--body", "-")), &res)
	if !nostr.IsValid32ByteHex(res.ID) {
		w.t.Fatalf("pr create gave id %q", res.ID)
	}
	return res.ID
}

type prViewOut struct {
	PR       prInfoOut `json:"pr"`
	Comments []struct {
		Author string `json:"author"`
		Review string `json:"review"`
		File   string `json:"file"`
		Line   int    `json:"line"`
	} `json:"comments"`
}

type prInfoOut struct {
	ID     string `json:"id"`
	Tip    string `json:"tip"`
	Status string `json:"status"`
	Head   string `json:"head"`
	Base   string `json:"base"`
}

func (w *prWorld) view(k testKey, id string) prViewOut {
	w.t.Helper()
	var v prViewOut
	if err := json.Unmarshal([]byte(w.must(k, "", "pr", "view", "--pr", id)), &v); err != nil {
		w.t.Fatal(err)
	}
	return v
}

// TestPullRequestLoop runs the build loop against the built relay and CLI
// with real git: an agent branches, pushes and opens a pull request; a
// push to the branch updates it (1619); its diff comes from the relay; the
// agent's own approval and another agent's do not count, nor does
// anything while changes are requested; a person's approval lets a member
// merge (fast-forward, then a merge commit), a conflict is refused with
// the file named, and the merged status is taken only for a real merge.
// A stranger can neither see nor merge a pull request of the private
// channel's repository.
// newPRWorld is the build loop's world on the built relay b: alice's
// repository proj with main pushed (README, readme), shared with chanA,
// a private channel of alice's with members (people) and bots (agents,
// the bot role), all made through c, alice's connection to b.
func newPRWorld(t testing.TB, b *binRelay, c *nostr.Relay, alice testKey, readme string, members, bots []testKey) *prWorld {
	t.Helper()
	w := &prWorld{t: t, b: b, buzz: testexe.Link(t, "buzz"), env: gitEnv(t),
		repoURL: b.http() + "/git/" + alice.pk + "/proj.git", repo: alice.pk + "/proj"}
	work := t.TempDir()
	gitOK(t, w.env, work, "init", "--quiet", "-b", "main")
	commitFile(t, w.env, work, "README", readme, "first")
	w.push(alice, work, "main")
	h := nostr.Tag{"h", chanA}
	mustPublish(t, c, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	for _, m := range members {
		mustPublish(t, c, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", m.pk}))
	}
	for _, m := range bots {
		mustPublish(t, c, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", m.pk, "", "bot"}))
	}
	mustPublish(t, c, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, chanA}))
	return w
}

func TestPullRequestLoop(t *testing.T) {
	needGit(t)
	alice, bob, bot, bot2, carol := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", strings.Join([]string{bob.pk, bot.pk, bot2.pk, carol.pk}, ","))
	ca := login(t, b.url, alice)
	w := newPRWorld(t, b, ca, alice, "line one\nline two\n", []testKey{bob}, []testKey{bot, bot2})
	h := nostr.Tag{"h", chanA}

	// The agent branches, commits, pushes and opens a pull request.
	bw := w.clone(bot)
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "fix")
	commitFile(t, w.env, bw, "FIX", "fixed\n", "fix it")
	w.push(bot, bw, "fix")
	id := w.create(bot, "fix", "Fix it")

	// A stranger to the private channel sees neither the repository nor
	// the pull request, and cannot merge it.
	if msg := w.refused(carol, "pr", "list", "--repo", w.repo); !strings.Contains(msg, "no repository") {
		t.Errorf("stranger's pr list: %s", msg)
	}
	if msg := w.refused(carol, "pr", "view", "--pr", id); !strings.Contains(msg, "not found") {
		t.Errorf("stranger's pr view: %s", msg)
	}
	cc := login(t, b.url, carol)
	if evs, _ := query(t, cc, nostr.Filter{IDs: []string{id}}); len(evs) != 0 {
		t.Fatal("a stranger read the private channel's pull request")
	}
	if evs, _ := query(t, cc, nostr.Filter{Kinds: []int{workspace.KindPullRequest}}); len(evs) != 0 {
		t.Fatal("a stranger read the private channel's pull requests by kind")
	}

	// A push to the head branch updates the pull request.
	tip := commitFile(t, w.env, bw, "FIX", "fixed better\n", "fix it better")
	w.push(bot, bw, "fix")
	if v := w.view(bob, id); v.PR.Tip != tip || v.PR.Status != "open" {
		t.Fatalf("after a push to fix, pr view = %+v; want tip %s, open", v.PR, tip)
	}
	if d := w.must(bob, "", "pr", "diff", "--pr", id); !strings.Contains(d, "+fixed better") || !strings.Contains(d, "b/FIX") {
		t.Errorf("pr diff =\n%s", d)
	}

	// Self-approval and another agent's approval do not count.
	w.must(bot, "", "pr", "review", "--pr", id, "--approve")
	if msg := w.refused(bot, "pr", "merge", "--pr", id); !strings.Contains(msg, "needs an approval") || !strings.Contains(msg, bot.pk+" (the author)") {
		t.Errorf("merge after self-approval: %s", msg)
	}
	w.must(bot2, "", "pr", "review", "--pr", id, "--approve")
	if msg := w.refused(bot, "pr", "merge", "--pr", id); !strings.Contains(msg, "an agent") {
		t.Errorf("merge after another agent's approval: %s", msg)
	}
	// A stranger cannot merge even with an approval in place.
	w.must(bob, "", "pr", "comment", "--pr", id, "--file", "FIX", "--line", "1", "--commit", tip, "--body", "say why")
	w.must(bob, "", "pr", "review", "--pr", id, "--request-changes", "--body", "not yet")
	if msg := w.refused(bob, "pr", "merge", "--pr", id); !strings.Contains(msg, "changes were requested") {
		t.Errorf("merge with changes requested: %s", msg)
	}
	w.must(bob, "", "pr", "review", "--pr", id, "--approve")
	if msg := w.refused(carol, "pr", "merge", "--pr", id); !strings.Contains(msg, "not found") {
		t.Errorf("stranger's merge: %s", msg)
	}
	// and straight at the endpoint, with a good token for it: 404, as for
	// a repository that does not exist, and main has not moved.
	mergeBody := []byte(`{"pr":"` + id + `"}`)
	if code, msg := bridgeCall(t, carol, w.repoURL+"/buzz-merge", "", nip98.Options{Body: mergeBody}, "", nil, mergeBody); code != http.StatusNotFound {
		t.Errorf("stranger's POST buzz-merge = %d %s; want 404", code, msg)
	}
	if code, msg := bridgeCall(t, bot, w.repoURL+"/buzz-merge", "", nip98.Options{}, "", nil, mergeBody); code != http.StatusUnauthorized {
		t.Errorf("POST buzz-merge with a token without payload = %d %s; want 401", code, msg)
	}
	// A merged status naming no merge is refused, even from a member.
	cb := login(t, b.url, bob)
	addr := "30617:" + repoEventAuthor(t, cb, alice.pk+"/proj") + ":" + alice.pk + "/proj"
	fake := signed(t, bob, workspace.KindStatusMerged, "", nostr.Tag{"e", id, "", "root"}, nostr.Tag{"a", addr}, h,
		nostr.Tag{workspace.TagMergeCommit, tip})
	if err := cb.Publish(testCtx(t), fake); err == nil || !strings.Contains(err.Error(), "not a merge") {
		t.Errorf("fake merged status = %v; want refused", err)
	}

	var merged struct {
		MergeCommit string `json:"merge_commit"`
		FastForward bool   `json:"fast_forward"`
	}
	json.Unmarshal([]byte(w.must(bob, "", "pr", "merge", "--pr", id)), &merged)
	if merged.MergeCommit != tip || !merged.FastForward {
		t.Fatalf("merge = %+v; want fast-forward to %s", merged, tip)
	}
	if v := w.view(alice, id); v.PR.Status != "merged" || len(v.Comments) < 4 {
		t.Errorf("after merge, pr view = %+v", v)
	}
	if out := gitOK(t, w.env, bw, append(authed(t, bot, w.repoURL), "ls-remote", w.repoURL, "refs/heads/main")...); !strings.HasPrefix(out, tip) {
		t.Errorf("main after merge = %s; want %s", out, tip)
	}

	// A person's approval of their own pull request does not count either.
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "mine", "main")
	commitFile(t, w.env, bw, "MINE", "mine\n", "bob's change")
	w.push(bob, bw, "mine")
	own := w.create(bob, "mine", "Mine")
	w.must(bob, "", "pr", "review", "--pr", own, "--approve")
	if msg := w.refused(bob, "pr", "merge", "--pr", own); !strings.Contains(msg, bob.pk+" (the author)") {
		t.Errorf("merge after a person's self-approval: %s", msg)
	}
	w.must(bob, "", "pr", "close", "--pr", own)

	// A branch from the old main merges with a merge commit.
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "other", "main")
	commitFile(t, w.env, bw, "OTHER", "other\n", "other change")
	w.push(bot, bw, "other")
	id2 := w.create(bot, "other", "Other")
	w.must(bob, "", "pr", "review", "--pr", id2, "--approve")
	json.Unmarshal([]byte(w.must(bob, "", "pr", "merge", "--pr", id2)), &merged)
	if merged.FastForward || len(merged.MergeCommit) != 40 {
		t.Fatalf("second merge = %+v; want a merge commit", merged)
	}
	gitOK(t, w.env, bw, append(authed(t, bot, w.repoURL), "fetch", "--quiet", w.repoURL, "main")...)
	if parents := strings.Fields(gitOK(t, w.env, bw, "log", "-1", "--format=%P", "FETCH_HEAD")); len(parents) != 2 {
		t.Errorf("merge commit parents = %v", parents)
	}
	if msg := gitOK(t, w.env, bw, "log", "-1", "--format=%B", "FETCH_HEAD"); !strings.Contains(msg, "Merged-by: npub1") {
		t.Errorf("merge commit message does not name the merger:\n%s", msg)
	}
	// The merge commit is signed with the relay's key: git checks it with
	// git-sign-nostr as it checks a person's commits.
	relayKey := repoEventAuthor(t, login(t, b.url, bob), alice.pk+"/proj")
	verify := gitOK(t, w.env, bw, "-c", "gpg.format=x509", "-c", "gpg.x509.program="+testexe.Link(t, "git-sign-nostr"),
		"verify-commit", "--raw", "FETCH_HEAD")
	if !strings.Contains(verify, "GOODSIG "+relayKey) {
		t.Errorf("git verify-commit of the merge commit:\n%s\nwant a good signature by the relay's key %s", verify, relayKey)
	}

	// A conflicting change is refused with the file named.
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "clash", "HEAD~1")
	commitFile(t, w.env, bw, "README", "line one\nclash\n", "clash")
	w.push(bot, bw, "clash")
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "clash2", "FETCH_HEAD")
	commitFile(t, w.env, bw, "README", "line one\nother clash\n", "clash on main")
	w.push(bot, bw, "clash2")
	id3 := w.create(bot, "clash2", "Clash two")
	w.must(bob, "", "pr", "review", "--pr", id3, "--approve")
	w.must(bob, "", "pr", "merge", "--pr", id3)
	id4 := w.create(bot, "clash", "Clash")
	w.must(bob, "", "pr", "review", "--pr", id4, "--approve")
	if msg := w.refused(bob, "pr", "merge", "--pr", id4); !strings.Contains(msg, "merge conflict in README") {
		t.Errorf("conflicting merge: %s", msg)
	}

	// nostr-tools reads the pull request, the comment and the status.
	evs, _ := query(t, cb, nostr.Filter{IDs: []string{id}}, nostr.Filter{Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"E": {id}}, Limit: 1},
		nostr.Filter{Kinds: []int{workspace.KindStatusMerged}, Tags: nostr.TagMap{"e": {id}}})
	if len(evs) < 3 {
		t.Fatalf("read back %d of the pull request's events", len(evs))
	}
	for _, p := range nostrToolsParse(t, evs...) {
		if !p.Valid {
			t.Errorf("nostr-tools: %s does not verify", p.ID)
		}
		switch p.Kind {
		case "GitPullRequest":
			if p.Tags["subject"][0] != "Fix it" || p.Tags["branch-name"][0] != "fix" || len(p.Tags["c"]) == 0 || len(p.Tags["clone"]) == 0 {
				t.Errorf("pull request tags = %v", p.Tags)
			}
		case "Comment":
			if p.Root != id || p.RootKind != workspace.KindPullRequest {
				t.Errorf("nostr-tools nip22 root = %s kind %d; want %s 1618", p.Root, p.RootKind, id)
			}
		case "StatusApplied":
			if p.Tags["merge-commit"][0] != tip {
				t.Errorf("merged status tags = %v", p.Tags)
			}
		default:
			t.Errorf("nostr-tools kind %s", p.Kind)
		}
	}

	// and the update the relay signed when fix moved, and the statuses a
	// draft, a close and a reopen make, each with the tags NIP-34 names:
	// the update's root (E), author (P), tip (c) and repository (a); a
	// status's e root and its repository.
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "later", "main")
	commitFile(t, w.env, bw, "LATER", "later\n", "a later change")
	w.push(bot, bw, "later")
	var draft struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(w.must(bot, "", "pr", "create", "--repo", w.repo, "--head", "later", "--title", "Later", "--draft")), &draft)
	w.must(bot, "", "pr", "reopen", "--pr", draft.ID)
	addrPrefix := "30617:"
	evs, _ = query(t, cb, nostr.Filter{Kinds: []int{workspace.KindPullRequestUpdate}, Tags: nostr.TagMap{"E": {id}}},
		nostr.Filter{Kinds: []int{workspace.KindStatusClosed}, Tags: nostr.TagMap{"e": {own}}},
		nostr.Filter{Kinds: []int{workspace.KindStatusDraft, workspace.KindStatusOpen}, Tags: nostr.TagMap{"e": {draft.ID}}})
	seen := map[string]bool{}
	for _, p := range nostrToolsParse(t, evs...) {
		seen[p.Kind] = true
		if !p.Valid {
			t.Errorf("nostr-tools: %s (%s) does not verify", p.ID, p.Kind)
		}
		if a := p.Tags["a"]; len(a) == 0 || !strings.HasPrefix(a[0], addrPrefix) {
			t.Errorf("%s names no repository: %v", p.Kind, p.Tags)
		}
		switch p.Kind {
		case "GitPullRequestUpdate":
			first := func(k string) string {
				if v := p.Tags[k]; len(v) > 0 {
					return v[0]
				}
				return ""
			}
			if first("E") != id || first("P") != bot.pk || first("c") != tip {
				t.Errorf("pull request update tags = %v; want E %s, P %s, c %s", p.Tags, id, bot.pk, tip)
			}
		case "StatusClosed", "StatusDraft", "StatusOpen":
			want := draft.ID
			if p.Kind == "StatusClosed" {
				want = own
			}
			if e := p.Tags["e"]; len(e) < 3 || e[0] != want || e[2] != "root" {
				t.Errorf("%s e tag = %v; want [%s \"\" root]", p.Kind, e, want)
			}
		default:
			t.Errorf("nostr-tools kind %s", p.Kind)
		}
	}
	for _, k := range []string{"GitPullRequestUpdate", "StatusClosed", "StatusDraft", "StatusOpen"} {
		if !seen[k] {
			t.Errorf("no %s read back for nostr-tools", k)
		}
	}
}

// repoEventAuthor returns the pubkey that signed the 30617 for d.
func repoEventAuthor(t *testing.T, c *nostr.Relay, d string) string {
	t.Helper()
	ev := repoEvent(t, c, workspace.KindRepoAnnouncement, d)
	if ev == nil {
		t.Fatalf("no 30617 for %s", d)
	}
	return ev.PubKey
}
