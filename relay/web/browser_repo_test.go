package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// repoWorld is the built buzz-relay hosting owner/proj, shared with a
// channel, with the repository's work tree.
type repoWorld struct {
	base, sk, pk, channel, repoURL, work string
	owner                                *nostr.Relay
	pub                                  func(rel *nostr.Relay, key string, kind int, content string, tags ...nostr.Tag) nostr.Event
}

// signedCommit commits what is staged in the work tree as Ada, signed
// with the owner's key by the built git-sign-nostr.
func (w *repoWorld) signedCommit(t testing.TB, msg string) {
	t.Helper()
	sign := testexe.Link(t, "git-sign-nostr")
	cmd := exec.Command("git", "-c", "gpg.format=x509", "-c", "gpg.x509.program="+sign, "-c", "user.signingkey="+w.pk, "commit", "--quiet", "-S", "-m", msg)
	home := t.TempDir()
	cmd.Dir, cmd.Env = w.work, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "NOSTR_PRIVATE_KEY=" + w.sk,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@x", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@x", "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("signed commit: %v\n%s", err, out)
	}
}

// newRepoWorld starts the built relay owned by a fresh key named "Ada",
// pushes main (README.md, src/main.go) to owner/proj and shares it with
// a channel "proj"; fill adds to the work tree before the first commit.
func newRepoWorld(t testing.TB, fill func(work string)) *repoWorld {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	w := &repoWorld{sk: nostr.GeneratePrivateKey(), channel: "7a1c2d4e-3333-4000-8000-0000000000ef"}
	w.pk, _ = nostr.GetPublicKey(w.sk)
	npub, _ := nip19.EncodePublicKey(w.pk)
	w.base = startBinary(t, "--owner", npub)
	w.repoURL = w.base + "/git/" + w.pk + "/proj.git"
	w.work = t.TempDir()
	git := func(args ...string) string { return prGit(t, w.work, "", "", args...) }
	git("init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(w.work, "README.md"), []byte("# Proj\n\nThe **project** readme.\n"), 0o644)
	os.MkdirAll(filepath.Join(w.work, "src"), 0o755)
	os.WriteFile(filepath.Join(w.work, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\""+strings.Repeat("long line ", 40)+"\")\n}\n"), 0o644)
	if fill != nil {
		fill(w.work)
	}
	git("add", ".")
	git("commit", "--quiet", "-m", "first, unsigned")
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ws := "ws" + strings.TrimPrefix(w.base, "http")
	w.owner = authedURL(t, rctx, ws, w.sk)
	w.pub = publisher(t, rctx)
	w.pub(w.owner, w.sk, 0, `{"name":"Ada"}`)
	w.pub(w.owner, w.sk, 9007, "", nostr.Tag{"h", w.channel}, nostr.Tag{"name", "proj"})
	w.pub(w.owner, w.sk, 30617, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", w.channel}, nostr.Tag{"description", "the project"})
	return w
}

// push pushes refs as the owner.
func (w *repoWorld) push(t testing.TB, refs ...string) {
	t.Helper()
	prGit(t, w.work, w.sk, w.repoURL, append([]string{"push", "--quiet", w.repoURL}, refs...)...)
}

// signIn opens the page in ctx signed in as the owner, in the channel.
func (w *repoWorld) signIn(t testing.TB, ctx context.Context) {
	t.Helper()
	nsec, _ := nip19.EncodePrivateKey(w.sk)
	signInToChannel(t, ctx, w.base, nsec, w.channel)
	waitJS(t, ctx, "the channel's Repository button", `!document.getElementById('repo-btn').hidden`)
}

// TestBrowserRepositoryView opens a repository from its channel in a real
// browser against the built relay: the file tree (a directory expands), a
// file with line numbers and a long line that scrolls, the README
// rendered as markdown, a switch to another branch, the commit log with a
// commit signed by the built git-sign-nostr marked "signed by" its
// author's name and an unsigned one marked unsigned, and the clone
// commands; screenshots at desktop and phone sizes, axe at both.
func TestBrowserRepositoryView(t *testing.T) {
	ctx, consoleErrors := browser(t)
	w := newRepoWorld(t, nil)
	// dev: one more file, in a commit signed with the owner's key.
	prGit(t, w.work, "", "", "checkout", "--quiet", "-b", "dev")
	os.WriteFile(filepath.Join(w.work, "DEV.txt"), []byte("on dev\n"), 0o644)
	prGit(t, w.work, "", "", "add", "DEV.txt")
	w.signedCommit(t, "signed on dev")
	w.push(t, "main", "dev")

	w.signIn(t, ctx)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	do(t, ctx, "open the repository", chromedp.Click(button("Repository")))
	waitJS(t, ctx, "the tree", `!!document.querySelector('dialog.repo-page[open] .repo-tree button[data-path="src"]') && !!document.querySelector('.repo-tree button[data-path="README.md"]')`)
	waitJS(t, ctx, "the README rendered", textIn("dialog.repo-page .repo-readme .repo-markdown strong", "project")+` && `+textIn("dialog.repo-page .repo-readme h1", "Proj"))
	do(t, ctx, "expand src", chromedp.Click(chromedp.CSS(`.repo-tree button[data-path="src"]`)))
	waitJS(t, ctx, "src's files", `!!document.querySelector('.repo-tree button[data-path="src/main.go"]')`)
	do(t, ctx, "open src/main.go", chromedp.Click(chromedp.CSS(`.repo-tree button[data-path="src/main.go"]`)))
	waitJS(t, ctx, "the file with line numbers", textIn(".repo-file .code-text", "func main()")+` && document.querySelector('.repo-file .code-nums').textContent === '1\n2\n3\n4\n5\n'`)
	if dims, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const v = document.querySelector('.repo-file .code-view'); return [v.scrollWidth > v.clientWidth, getComputedStyle(v.querySelector('.code-text')).fontFamily.includes('monospace'), v.scrollWidth, v.clientWidth].join(' '); })()`)); err != nil || !strings.HasPrefix(dims, "true true") {
		t.Errorf("the long line does not scroll in a monospace view: scrolls, monospace, scroll width, width = %s (%v)", dims, err)
	}
	shots := t.TempDir()
	shot(t, ctx, shots, "repo-desktop")

	do(t, ctx, "switch to dev", chromedp.SetValue(chromedp.CSS(`#repo-ref`), "dev"), chromedp.Evaluate[chromedp.Void](`document.getElementById('repo-ref').dispatchEvent(new Event('change'))`))
	waitJS(t, ctx, "dev's tree", `!!document.querySelector('.repo-tree button[data-path="DEV.txt"]')`)
	do(t, ctx, "the commits", chromedp.Click(chromedp.CSS(`#repo-tab-log`)))
	waitJS(t, ctx, "dev's log", `document.querySelectorAll('.repo-log .repo-commit').length === 2`)
	waitJS(t, ctx, "signed by Ada", `(() => { const c = [...document.querySelectorAll('.repo-commit')].find((c) => c.textContent.includes('signed on dev')); return c && c.dataset.signature === 'signed' && c.querySelector('.sig').textContent === 'signed by Ada'; })()`)
	waitJS(t, ctx, "unsigned", `(() => { const c = [...document.querySelectorAll('.repo-commit')].find((c) => c.textContent.includes('first, unsigned')); return c && c.dataset.signature === 'unsigned' && c.querySelector('.sig').textContent === 'unsigned'; })()`)
	shot(t, ctx, shots, "repo-log-desktop")
	do(t, ctx, "the clone tab", chromedp.Click(chromedp.CSS(`#repo-tab-clone`)))
	waitJS(t, ctx, "the clone command", textIn("#repo-panel-clone .copy-text", "git clone "+w.repoURL)+` && `+textIn("#repo-panel-clone .copy-text", "credential.helper nostr")+` && `+textIn("#repo-panel-clone .copy-text", "gpg.x509.program git-sign-nostr"))
	do(t, ctx, "copy", chromedp.Click(button("Copy Clone command")))
	waitJS(t, ctx, "copy answered", `/Copied|selected/.test(document.querySelector('.repo-status').textContent)`)

	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	do(t, ctx, "back to the code", chromedp.Click(chromedp.CSS(`#repo-tab-code`)))
	waitJS(t, ctx, "the tree on a phone", `document.querySelector('.repo-tree').getBoundingClientRect().width > 300`)
	shot(t, ctx, shots, "repo-phone")

	modules, _ := testexe.NodeModules(t)
	if b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js")); err != nil {
		t.Logf("SKIP(loud): axe-core missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	} else {
		axeCheck(t, ctx, string(b), "repository, phone")
		do(t, ctx, "the commits, phone", chromedp.Click(chromedp.CSS(`#repo-tab-log`)))
		axeCheck(t, ctx, string(b), "repository commits, phone")
		do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900), chromedp.Click(chromedp.CSS(`#repo-tab-code`)))
		axeCheck(t, ctx, string(b), "repository")
	}
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844), chromedp.Click(button("Close repository")))
	waitJS(t, ctx, "the channel again, its Repository button in view", `(() => { const r = document.getElementById('repo-btn').getBoundingClientRect(); return !document.getElementById('repo-page') && r.width > 0 && r.right <= innerWidth; })()`)
	shot(t, ctx, shots, "repo-channel-phone")
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserPullRequestForm opens a pull request from the repository
// view's form in a real browser against the built relay: the form refuses
// a head that is the base and a head the base already has, in words; a
// draft of branch feat (one unsigned commit, one signed by the built
// git-sign-nostr) into main opens the pull request's page with its two
// commits listed, the signed one "signed by Ada"; its card is in the
// channel, a draft; the relay holds the 1618 with the tags buzz pr create
// writes and the 1633. The form is shot at 1440x900 and 390x844 and axe
// finds nothing serious or critical at either.
func TestBrowserPullRequestForm(t *testing.T) {
	ctx, consoleErrors := browser(t)
	w := newRepoWorld(t, nil)
	git := func(args ...string) string { return prGit(t, w.work, "", "", args...) }
	git("branch", "old") // main's tip: nothing to merge
	git("checkout", "--quiet", "-b", "feat")
	os.WriteFile(filepath.Join(w.work, "A.txt"), []byte("a\n"), 0o644)
	git("add", "A.txt")
	git("commit", "--quiet", "-m", "plain change")
	os.WriteFile(filepath.Join(w.work, "B.txt"), []byte("b\n"), 0o644)
	git("add", "B.txt")
	w.signedCommit(t, "signed change")
	tip := strings.TrimSpace(git("rev-parse", "HEAD"))
	w.push(t, "main", "old", "feat")

	w.signIn(t, ctx)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	do(t, ctx, "open the repository", chromedp.Click(button("Repository")))
	waitJS(t, ctx, "the New pull request button", `(() => { const b = [...document.querySelectorAll('dialog.repo-page button')].find((b) => b.textContent === 'New pull request'); return b && !b.hidden; })()`)
	do(t, ctx, "open the form", chromedp.Click(button("New pull request")))
	waitJS(t, ctx, "the form, feat into main", `!!document.querySelector('dialog#pr-new[open]') && document.getElementById('pr-new-head').value === 'feat' && document.getElementById('pr-new-base').value === 'main'`)
	pick := func(id, v string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event('change')); })()`, id, v))
	}
	do(t, ctx, "head = base", pick("pr-new-head", "main"), chromedp.SendKeys(labelled("Title"), "Add A and B"), chromedp.Click(button("Open pull request")))
	waitJS(t, ctx, "refused: the same branch", textIn("#pr-new-status", "The head and the base are the same branch (main)"))
	do(t, ctx, "a head main has", pick("pr-new-head", "old"), chromedp.Click(button("Open pull request")))
	waitJS(t, ctx, "refused: nothing to merge", textIn("#pr-new-status", "main already has every commit of old: there is nothing to merge"))
	do(t, ctx, "fill the form", pick("pr-new-head", "feat"),
		chromedp.SendKeys(labelled("Description (markdown)"), "Adds **two** files."),
		chromedp.SendKeys(labelled("Labels (optional, separated by commas)"), "files, demo"),
		chromedp.Click(chromedp.CSS(`#pr-new-draft`)))
	do(t, ctx, "preview", chromedp.Click(button("Preview")))
	waitJS(t, ctx, "the preview", textIn("#pr-new .pr-description strong", "two"))
	axeSrc := ""
	if modules, _ := testexe.NodeModules(t); modules != "" {
		if b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js")); err == nil {
			axeSrc = string(b)
		}
	}
	if axeSrc == "" {
		t.Logf("SKIP(loud): axe-core missing; run scripts/test.sh (npm install in scripts/node)")
	}
	shootView(t, ctx, axeSrc, "pr-new-form")
	do(t, ctx, "open it", chromedp.Click(button("Open pull request")))
	waitJS(t, ctx, "the new pull request's page", `!document.getElementById('pr-new') && !document.getElementById('repo-page') && `+textIn("dialog.pr-page[open] h2", "Add A and B")+` && `+textIn("dialog.pr-page[open] .pr-description strong", "two"))
	commit := func(subject string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('dialog.pr-page[open] .pr-commits .repo-commit')].find((c) => c.textContent.includes(%q))`, subject)
	}
	waitJS(t, ctx, "its two commits", `document.querySelectorAll('dialog.pr-page[open] .pr-commits .repo-commit').length === 2 && `+textIn("dialog.pr-page[open] .pr-commits .hint", "2 commits main does not have"))
	waitJS(t, ctx, "the signed one signed by Ada", `(() => { const c = `+commit("signed change")+`; return c && c.dataset.signature === 'signed' && c.querySelector('.sig').textContent === 'signed by Ada' && c.querySelector('code').textContent === '`+tip[:7]+`'; })()`)
	waitJS(t, ctx, "the other unsigned", `(() => { const c = `+commit("plain change")+`; return c && c.dataset.signature === 'unsigned' && c.textContent.includes('T · '); })()`)
	waitJS(t, ctx, "the diff", `!!document.querySelector('dialog.pr-page[open] .pr-file[data-path="B.txt"]')`)
	shot(t, ctx, t.TempDir(), "pr-new-page-desktop")
	do(t, ctx, "close the page", chromedp.Click(button("Close pull request page")))
	waitJS(t, ctx, "its card in the channel, a draft", textIn("#feed .pr-card", "Add A and B")+` && `+textIn("#feed .pr-card", "feat → main · "+tip[:7])+` && !!document.querySelector('#feed .pr-card[data-status=draft]')`)

	// The relay holds the pull request as buzz pr create writes it, and its draft status.
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prs, err := w.owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1618}, Authors: []string{w.pk}})
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests = %d (%v); want 1", len(prs), err)
	}
	pr := prs[0]
	for _, want := range [][2]string{{"subject", "Add A and B"}, {"c", tip}, {"branch-name", "feat"}, {"buzz-base", "main"}, {"h", w.channel}, {"p", w.pk}, {"clone", w.repoURL}, {"t", "files"}, {"t", "demo"}} {
		if pr.Tags.FindWithValue(want[0], want[1]) == nil {
			t.Errorf("the pull request lacks tag %v: %v", want, pr.Tags)
		}
	}
	if a := pr.Tags.Find("a"); a == nil || !strings.HasPrefix(a[1], "30617:") || !strings.HasSuffix(a[1], ":"+w.pk+"/proj") {
		t.Errorf("the pull request's a tag = %v; want the relay's 30617 of %s/proj", a, w.pk)
	}
	if pr.Tags.Find("r") == nil || pr.Content != "Adds **two** files." {
		t.Errorf("the pull request's r tag, content = %v, %q", pr.Tags.Find("r"), pr.Content)
	}
	drafts, _ := w.owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1633}, Tags: nostr.TagMap{"e": {pr.ID}}})
	if len(drafts) != 1 || drafts[0].PubKey != w.pk {
		t.Errorf("draft statuses = %d; want one by the author", len(drafts))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
