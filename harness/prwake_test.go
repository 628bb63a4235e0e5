package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

func TestHunkAround(t *testing.T) {
	diff := "diff --git a/A b/A\n--- a/A\n+++ b/A\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n" +
		"diff --git a/dir/F b/dir/F\nindex 1..2 100644\n--- a/dir/F\n+++ b/dir/F\n@@ -1,4 +1,5 @@ func f()\n one\n-two\n+TWO\n+extra\n three\n four\n@@ -20,2 +21,2 @@\n x\n-y\n+Y\n"
	for _, c := range []struct {
		file      string
		line, ctx int
		want      string
	}{
		{"dir/F", 3, 1, "@@ -1,4 +1,5 @@ func f()\n  +TWO\n→ +extra\n   three"},
		{"dir/F", 1, 0, "@@ -1,4 +1,5 @@ func f()\n→  one"},
		{"dir/F", 22, 5, "@@ -20,2 +21,2 @@\n   x\n  -y\n→ +Y"},
		{"A", 1, 0, "@@ -1,2 +1,2 @@\n→  a"},
		{"F", 1, 1, ""},      // a suffix of a path is not the path
		{"dir/F", 10, 1, ""}, // between hunks: not in the diff
		{"dir/F", 0, 1, ""},
	} {
		if got := hunkAround(diff, c.file, c.line, c.ctx); got != c.want {
			t.Errorf("hunkAround(%s:%d, %d) =\n%s\nwant\n%s", c.file, c.line, c.ctx, got, c.want)
		}
	}
}

func TestPRWake(t *testing.T) {
	agent, other, pr := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("1", 64)
	onAgents := func(extra ...nostr.Tag) *nostr.Event {
		return &nostr.Event{Kind: workspace.KindComment, PubKey: other, Tags: append(nostr.Tags{{"E", pr, "", agent}, {"K", "1618"}, {"P", agent},
			{"e", pr, "", agent}, {"k", "1618"}, {"p", agent}}, extra...)}
	}
	onOthers := func(extra ...nostr.Tag) *nostr.Event {
		return &nostr.Event{Kind: workspace.KindComment, PubKey: other, Tags: append(nostr.Tags{{"E", pr, "", other}, {"K", "1618"}, {"P", other},
			{"e", strings.Repeat("2", 64), "", agent}, {"k", "1111"}, {"p", agent}}, extra...)}
	}
	own := onAgents()
	own.PubKey = agent
	notPR := onAgents()
	notPR.Tags[1] = nostr.Tag{"K", "1"}
	for _, c := range []struct {
		what string
		ev   *nostr.Event
		want string
	}{
		{"a comment on the agent's pull request", onAgents(nostr.Tag{workspace.TagCommentFile, "F"}), wakePRComment},
		{"changes requested", onAgents(nostr.Tag{workspace.TagReview, workspace.ReviewRequestChanges}), wakePRReview},
		{"an approval", onAgents(nostr.Tag{workspace.TagReview, workspace.ReviewApprove}), ""},
		{"a resolve mark", onAgents(nostr.Tag{workspace.TagCommentResolved, workspace.ResolvedYes}), ""},
		{"the agent's own comment", own, ""},
		{"a comment on something else", notPR, ""},
		{"a reply to the agent's comment on another's pull request", onOthers(), wakePRComment},
		{"changes requested of another's pull request", onOthers(nostr.Tag{workspace.TagReview, workspace.ReviewRequestChanges}), ""},
		{"a review request", onOthers(nostr.Tag{workspace.TagReviewRequest, agent}), wakeReviewRequest},
	} {
		if got := prWake(c.ev, agent); got != c.want {
			t.Errorf("%s: prWake = %q; want %q", c.what, got, c.want)
		}
	}
}

// TestPullRequestCommentWakesAgent: on a repository the relay hosts and
// shares with the channel, the agent's pull request gets a person's
// comment on a line: the agent is prompted with the pull request, the
// file, the line and the hunk around it as it was at the comment's
// commit, and how to push a fix and answer; the answer it left only in
// its session text is posted on the pull request as a reply. Its own
// comments, an approval, a resolve mark and another agent's comment
// wake it not; a request to review someone else's pull request does.
func TestPullRequestCommentWakesAgent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	w := newWorld(t)
	w.publishAs(w.sibling, &nostr.Event{Kind: 0, Content: `{"name":"other agent","bot":true}`})
	owner, agent := w.owner.Public().Hex(), w.agent.Public().Hex()
	repoURL := w.relay.HTTPURL() + "/git/" + owner + "/proj.git"
	work := t.TempDir()
	git := func(key *nostrkey.Secret, args ...string) string {
		t.Helper()
		if key != nil {
			tok, err := nip98.Token(key, repoURL, "GET", nip98.Options{})
			if err != nil {
				t.Fatal(err)
			}
			args = append([]string{"-c", "http.extraHeader=Authorization: Nostr " + tok}, args...)
		}
		home := t.TempDir()
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
			"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x", "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(nil, "init", "--quiet", "-b", "main")
	write("F", "one\ntwo\nthree\n")
	git(nil, "add", "F")
	git(nil, "commit", "--quiet", "-m", "first")
	git(w.owner, "push", "--quiet", repoURL, "main")
	w.publish(&nostr.Event{Kind: workspace.KindRepoAnnouncement, Tags: nostr.Tags{{"d", "proj"}, {workspace.TagRepoChannel, w.channel}}})
	git(nil, "checkout", "--quiet", "-b", "fix")
	write("F", "one\ntwo, fixed\nthree\n")
	git(nil, "commit", "--quiet", "-am", "fix two")
	git(w.agent, "push", "--quiet", repoURL, "fix")
	tip := git(nil, "rev-parse", "HEAD")
	addr := "30617:" + w.relay.PublicKey() + ":" + owner + "/proj"
	pr := w.publishAs(w.agent, &nostr.Event{Kind: workspace.KindPullRequest, Content: "fixes two", Tags: nostr.Tags{{"a", addr}, {"p", owner}, {"h", w.channel},
		{workspace.TagSubject, "Fix two"}, {workspace.TagCommit, tip}, {workspace.TagBranchName, "fix"}, {workspace.TagPRBase, "main"}, {workspace.TagRepoClone, repoURL}}})
	// A later push moves the tip: the hunk comes from the comment's commit.
	write("F", "one\ntwo, fixed\nthree\nfour\n")
	git(nil, "commit", "--quiet", "-am", "four")
	git(w.agent, "push", "--quiet", repoURL, "fix")

	w.startHarness(w.harnessEnv("echo"), "--respond-to", "anyone")
	w.awaitListening(t)
	w.logs.await(t, 20*time.Second, "channel replay done", "channel", w.channel)

	comment := func(key *nostrkey.Secret, parent *nostr.Event, content string, extra ...nostr.Tag) *nostr.Event {
		tags := nostr.Tags{{"E", pr.ID, "", agent}, {"K", "1618"}, {"P", agent}, {"e", parent.ID, "", parent.PubKey}, {"k", itoa(parent.Kind)}, {"p", parent.PubKey}, {"h", w.channel}}
		return w.publishAs(key, &nostr.Event{Kind: workspace.KindComment, Content: content, Tags: append(tags, extra...)})
	}
	anchor := []nostr.Tag{{workspace.TagCommentFile, "F"}, {workspace.TagCommentLine, "2"}, {workspace.TagCommentCommit, tip}}
	quiet := []*nostr.Event{
		comment(w.agent, pr, "a note of my own", anchor...),
		comment(w.stranger, pr, "lgtm", nostr.Tag{workspace.TagReview, workspace.ReviewApprove}),
		comment(w.sibling, pr, "another agent's view"),
	}
	c := comment(w.stranger, pr, "why a comma here?", anchor...)
	quiet = append(quiet, comment(w.stranger, c, "Resolved.", append(anchor, nostr.Tag{workspace.TagCommentResolved, workspace.ResolvedYes})...))
	waitFor(t, "the line comment prompted", 20*time.Second, func() bool { return promptsWith(w.prompts(), c.ID) == 1 })
	p := w.prompts()[len(w.prompts())-1]
	for _, want := range []string{"[Buzz event: " + wakePRComment + "]", "Scope: pull request", "Pull request: " + pr.ID + ` "Fix two"`,
		"Branch: fix into main", "File: F", "Line: 2", "Commit: " + tip, "→ +two, fixed", "-two", "   three",
		"buzz pr checkout --pr " + pr.ID, "git push", "buzz pr comment --pr " + pr.ID + " --reply-to " + c.ID} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "+four") {
		t.Errorf("the hunk is from the newer tip, not the comment's commit:\n%s", p)
	}
	// The echo agent answered only in its session text: the guard posts it on the pull request.
	waitFor(t, "the answer posted as a reply on the pull request", 20*time.Second, func() bool {
		evs, _ := w.io.Query(t.Context(), nostr.Filter{Kinds: []int{workspace.KindComment}, Authors: []string{agent}, Tags: nostr.TagMap{"e": {c.ID}}})
		return len(evs) == 1
	})

	// A request to review the stranger's pull request wakes the agent too.
	other := w.publishAs(w.stranger, &nostr.Event{Kind: workspace.KindPullRequest, Tags: nostr.Tags{{"a", addr}, {"p", owner}, {"h", w.channel},
		{workspace.TagSubject, "Other"}, {workspace.TagCommit, tip}, {workspace.TagBranchName, "fix"}}})
	req := w.publishAs(w.stranger, &nostr.Event{Kind: workspace.KindComment, Content: "please review", Tags: nostr.Tags{{"E", other.ID, "", other.PubKey}, {"K", "1618"}, {"P", other.PubKey},
		{"e", other.ID, "", other.PubKey}, {"k", "1618"}, {"p", other.PubKey}, {"p", agent}, {workspace.TagReviewRequest, agent}, {"h", w.channel}}})
	waitFor(t, "the review request prompted", 20*time.Second, func() bool { return promptsWith(w.prompts(), req.ID) == 1 })
	if n := promptHas(w.prompts(), "buzz pr review --pr "+other.ID+" --approve"); n != 1 {
		t.Errorf("%d prompts say how to review; want 1", n)
	}
	for _, ev := range quiet {
		if n := promptsWith(w.prompts(), ev.ID); n != 0 {
			t.Errorf("%q reached the agent %d times; want never", ev.Content, n)
		}
	}
}

// FuzzHunkAround: any diff text, file and line give no panic, and what
// comes back is the hunk header and lines of the diff, one marked.
func FuzzHunkAround(f *testing.F) {
	f.Add("diff --git a/F b/F\n--- a/F\n+++ b/F\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "F", 2)
	f.Add("diff --git a/F b/F\n@@ -1 +1 @@\n@@ +x @@\n+", "F", 1)
	f.Add("@@ -1 +1 @@\n+a\n", "F", 1)
	f.Fuzz(func(t *testing.T, diff, file string, line int) {
		got := hunkAround(diff, file, line, 3)
		if got == "" {
			return
		}
		lines := strings.Split(got, "\n")
		if !strings.HasPrefix(lines[0], "@@") || !strings.Contains(diff, lines[0]) {
			t.Fatalf("hunkAround(%q, %q, %d) starts %q, no hunk header of the diff", diff, file, line, lines[0])
		}
		marked := 0
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "→ ") {
				marked++
			}
			if len(l) < 2 || !strings.Contains(diff, strings.TrimPrefix(strings.TrimPrefix(l, "→ "), "  ")) {
				t.Fatalf("hunkAround(%q, %q, %d) has line %q not in the diff", diff, file, line, l)
			}
		}
		if marked != 1 {
			t.Fatalf("hunkAround(%q, %q, %d) marks %d lines; want 1:\n%s", diff, file, line, marked, got)
		}
	})
}
