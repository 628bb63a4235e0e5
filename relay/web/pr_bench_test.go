package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The diff BenchmarkBrowserPullRequestPage opens: benchDiffFiles files of
// benchDiffLines added lines in all, one of them benchBigFileLines long.
const (
	benchDiffLines    = 5000
	benchDiffFiles    = 11
	benchBigFileLines = 4000
)

// BenchmarkBrowserPullRequestPage measures a pull request of a 5 000-line
// diff in the web client, through the built buzz-relay and its git: from
// the click on the card's "View pull request" to the first frame painted
// with the page's files (the diff fetched and parsed; past largeDiffLines
// each file starts collapsed), then from the click on the 4 000-line file
// to the first frame painted with its last line. Goal: the page ≤ 500 ms.
//
//	go test ./relay/web -run '^$' -bench BrowserPullRequestPage -benchtime 5x
func BenchmarkBrowserPullRequestPage(b *testing.B) {
	ctx, _ := browser(b)
	w := newPRWorld(b)
	work := w.work
	prGit(b, work, "", "", "checkout", "--quiet", "-b", "big")
	small := (benchDiffLines - benchBigFileLines) / (benchDiffFiles - 1)
	for i := range benchDiffFiles {
		n, name := small, fmt.Sprintf("src/f%02d.go", i)
		if i == 0 {
			n, name = benchBigFileLines, "src/big.go"
		}
		var s strings.Builder
		for j := range n {
			fmt.Fprintf(&s, "line %d of %s: some code that a reviewer reads, long enough to look like code\n", j, name)
		}
		os.MkdirAll(filepath.Join(work, "src"), 0o755)
		os.WriteFile(filepath.Join(work, name), []byte(s.String()), 0o644)
	}
	prGit(b, work, "", "", "add", "src")
	prGit(b, work, "", "", "commit", "--quiet", "-m", "a big change")
	tip := strings.TrimSpace(prGit(b, work, "", "", "rev-parse", "HEAD"))
	prGit(b, work, w.sk, w.repoURL, "push", "--quiet", w.repoURL, "main", "big")

	w.openChannel(b, "7a1c2d4e-2222-4000-8000-0000000000ce")
	w.openPR(b, "Big", "A big change.", "big", tip)

	signInToChannel(b, ctx, w.base, w.nsec, w.channel)
	waitJS(b, ctx, "the pull request's card", textIn("#feed .pr-card", "Big"))

	var page, file []float64
	for b.Loop() {
		t, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`new Promise((done) => {
  const t0 = performance.now();
  let t1 = 0;
  const painted = (sel, then) => { const tick = () => { if (document.querySelector(sel)) requestAnimationFrame(() => then(performance.now())); else requestAnimationFrame(tick); }; requestAnimationFrame(tick); };
  [...document.querySelectorAll('#feed .pr-card button')].find((x) => x.textContent.includes('View pull request')).click();
  painted('dialog.pr-page[open] .pr-file[data-path="src/big.go"]', (t) => {
    t1 = t;
    const d = document.querySelector('dialog.pr-page[open] .pr-file[data-path="src/big.go"]');
    const t2 = performance.now();
    d.open = true;
    const last = 'line %d of src/big.go';
    const tick = () => { if (d.textContent.includes(last)) requestAnimationFrame(() => done([t1 - t0, performance.now() - t2])); else requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
  });
})`, benchBigFileLines-1), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		page, file = append(page, t[0]), append(file, t[1])
		do(b, ctx, "close the page", chromedp.Click(button("Close pull request page")))
		waitJS(b, ctx, "the page closed", `!document.querySelector('dialog.pr-page[open]')`)
	}
	b.StopTimer()
	slices.Sort(page)
	slices.Sort(file)
	b.ReportMetric(quantile(page, 0.5), "page-ms")
	b.ReportMetric(page[len(page)-1], "page-max-ms")
	b.ReportMetric(quantile(file, 0.5), "big-file-ms")
	b.ReportMetric(0, "ns/op")
}
