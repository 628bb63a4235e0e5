package relay

import (
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/workspace"
)

// TestPullRequestAcrossInstances runs the build loop on two built
// buzz-relay instances sharing one PostgreSQL and one --git-dir (the set-up
// docs/scaling.md describes): a push through one is announced to both,
// a pull request opened through one is approved through the other, and
// two merges at the same moment, one through each, leave exactly one
// merge and main at the pull request's tip.
func TestPullRequestAcrossInstances(t *testing.T) {
	needGit(t)
	bob, bot := newKey(t), newKey(t)
	c := newCluster(t, "--git-dir", t.TempDir(), "--allow", bob.pk+","+bot.pk)
	alice := c.owner
	ins := c.start(2)
	wa := newPRWorld(t, &binRelay{cmd: ins[0].cmd, url: ins[0].url}, login(t, ins[0].url, alice), alice, "one\n", []testKey{bob}, []testKey{bot})
	wb := &prWorld{t: t, b: &binRelay{cmd: ins[1].cmd, url: ins[1].url}, buzz: wa.buzz, env: wa.env,
		repoURL: ins[1].http() + "/git/" + alice.pk + "/proj.git", repo: wa.repo}
	env := wa.env

	// The agent pushes through B; A's pull request command finds the branch
	// in the state B announced.
	// B learns of the channel and its sharing from A's events through
	// the database's notifications, a few milliseconds on.
	bw := t.TempDir()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := gitRun(t, env, "", append(authed(t, bot, wb.repoURL), "clone", "--quiet", wb.repoURL, bw)...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent cannot clone through B: %v\n%s", err, out)
		}
	}
	gitOK(t, env, bw, "checkout", "--quiet", "-b", "fix")
	tip := commitFile(t, env, bw, "FIX", "fixed\n", "fix it")
	wb.push(bot, bw, "fix")
	id := wa.create(bot, "fix", "Fix it")
	wb.must(bob, "", "pr", "review", "--pr", id, "--approve")
	if v := wa.view(alice, id); v.PR.Tip != tip || v.PR.Status != "open" {
		t.Fatalf("pr view through A = %+v; want tip %s, open", v.PR, tip)
	}

	// Two merges at once, one through each instance: one wins.
	type result struct {
		out, stderr string
		err         error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, w := range []*prWorld{wa, wb} {
		wg.Go(func() {
			out, stderr, err := w.run(bob, "", "pr", "merge", "--pr", id)
			results[i] = result{out, stderr, err}
		})
	}
	wg.Wait()
	won := 0
	for i, r := range results {
		if r.err == nil {
			won++
			continue
		}
		if !strings.Contains(r.stderr, "already") && !strings.Contains(r.stderr, "moved during the merge") {
			t.Errorf("merge through instance %d refused with %q; want already merged, or main moved", i, r.stderr)
		}
	}
	if won != 1 {
		t.Fatalf("%d merges succeeded of two at once; want one: %+v", won, results)
	}
	if out := gitOK(t, env, bw, append(authed(t, bot, wa.repoURL), "ls-remote", wa.repoURL, "refs/heads/main")...); !strings.HasPrefix(out, tip) {
		t.Errorf("main through A after the merge = %s; want %s", out, tip)
	}
	cb := login(t, ins[1].url, bob)
	if v, _ := tagValue(repoEvent(t, cb, workspace.KindRepoState, alice.pk+"/proj"), "refs/heads/main"); v != tip {
		t.Errorf("30618 through B after the merge: main = %q; want %s", v, tip)
	}
	if v := wb.view(alice, id); v.PR.Status != "merged" {
		t.Errorf("pr view through B after the merge: status %s; want merged", v.PR.Status)
	}
}
