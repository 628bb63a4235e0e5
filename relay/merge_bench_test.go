package relay

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// mergeBenchCommits is the length of the branch BenchmarkMerge merges:
// the "merge of a 1 000-commit branch ≤ 2 s".
const mergeBenchCommits = 1000

// BenchmarkMerge times `buzz pr merge` of a pull request whose head is a
// branch of mergeBenchCommits commits (each adding a file) that main has
// moved away from, so the built buzz-relay's git writes a merge commit:
// from the command's start to its exit (the NIP-98 POST, the approval
// check, git merge-tree and commit-tree, the ref update, the repository
// state re-announced, and the merged status the CLI then signs and
// publishes). Goal: ≤ 2 s.
//
//	go test ./relay -run '^$' -bench Merge -benchtime 3x
func BenchmarkMerge(b *testing.B) {
	needGit(b)
	alice, bob, bot := newKey(b), newKey(b), newKey(b)
	rb := runBinary(b, b.TempDir(), "--owner", alice.pk, "--allow", bob.pk+","+bot.pk)
	w := newPRWorld(b, rb, login(b, rb.url, alice), alice, "one\n", []testKey{bob}, []testKey{bot})
	bw := w.clone(bot)

	var ms []float64
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		gitOK(b, w.env, bw, append(authed(b, bot, w.repoURL), "fetch", "--quiet", w.repoURL, "main")...)
		side, long := fmt.Sprintf("side%d", n), fmt.Sprintf("long%d", n)
		gitOK(b, w.env, bw, "branch", side, "FETCH_HEAD")
		gitOK(b, w.env, bw, "branch", long, "FETCH_HEAD")
		gitOK(b, w.env, bw, "checkout", "--quiet", side)
		commitFile(b, w.env, bw, "SIDE"+side, "side\n", "a change on main's side")
		fastImport(b, w.env, bw, long, mergeBenchCommits)
		w.push(bot, bw, side, long)
		first := w.create(bot, side, "Side")
		w.must(bob, "", "pr", "review", "--pr", first, "--approve")
		w.must(bob, "", "pr", "merge", "--pr", first)
		pr := w.create(bot, long, "Long")
		w.must(bob, "", "pr", "review", "--pr", pr, "--approve")
		b.StartTimer()
		t0 := time.Now()
		out := w.must(bob, "", "pr", "merge", "--pr", pr)
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		b.StopTimer()
		if !strings.Contains(out, `"fast_forward":false`) {
			b.Fatalf("merge of %s = %s; want a merge commit", long, out)
		}
		b.StartTimer()
	}
	slices.Sort(ms)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms[len(ms)/2], "merge-p50-ms")
	b.ReportMetric(ms[len(ms)-1], "merge-max-ms")
}

// fastImport adds n commits, each adding one file, to branch in the work
// tree dir through git fast-import, a second or so for a thousand.
func fastImport(tb testing.TB, env []string, dir, branch string, n int) {
	tb.Helper()
	var s strings.Builder
	at := time.Now().Unix() - int64(n)
	for i := range n {
		fmt.Fprintf(&s, "commit refs/heads/%s\ncommitter T <t@x> %d +0000\ndata <<END\nchange %d\nEND\n", branch, at+int64(i), i)
		if i == 0 {
			fmt.Fprintf(&s, "from refs/heads/%s^0\n", branch)
		}
		fmt.Fprintf(&s, "M 100644 inline %s/f%04d.txt\ndata <<END\nline %d\nEND\n\n", branch, i, i)
	}
	cmd := gitCmd(tb, env, dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(s.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
}
