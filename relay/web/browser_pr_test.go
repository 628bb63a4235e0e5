package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace/nip98"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// prGit runs real git in dir with no personal or system configuration,
// with a NIP-98 header for repoURL signed by sk when repoURL is set.
func prGit(t testing.TB, dir, sk, repoURL string, args ...string) string {
	t.Helper()
	if repoURL != "" {
		sec, err := nostrkey.ParseSecret(sk)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := nip98.Token(sec, repoURL, "GET", nip98.Options{})
		if err != nil {
			t.Fatal(err)
		}
		args = append([]string{"-c", "http.extraHeader=Authorization: Nostr " + tok}, args...)
	}
	home := t.TempDir()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// authedURL connects to the relay at ws URL as sk and answers its AUTH
// challenge.
func authedURL(t testing.TB, ctx context.Context, url, sk string) *nostr.Relay {
	t.Helper()
	rel, err := nostr.RelayConnect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rel.Close() })
	probe, err := rel.Subscribe(ctx, nostr.Filters{{Kinds: []int{1}, Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-probe.ClosedReason:
	case <-probe.EndOfStoredEvents:
	case <-ctx.Done():
		t.Fatal("no answer to the probe REQ")
	}
	probe.Unsub()
	if err := rel.Auth(ctx, func(ev *nostr.Event) error { return ev.Sign(sk) }); err != nil {
		t.Fatalf("auth: %v", err)
	}
	return rel
}

// publisher returns a function that signs an event of kind with content
// and tags as key and publishes it on rel within ctx, failing t if the
// relay refuses it.
func publisher(t testing.TB, ctx context.Context) func(rel *nostr.Relay, key string, kind int, content string, tags ...nostr.Tag) nostr.Event {
	return func(rel *nostr.Relay, key string, kind int, content string, tags ...nostr.Tag) nostr.Event {
		t.Helper()
		ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Content: content, Tags: tags}
		ev.Sign(key)
		if err := rel.Publish(ctx, ev); err != nil {
			t.Fatalf("publish kind %d: %v", kind, err)
		}
		return ev
	}
}

// signInToChannel opens the page at base in ctx signed in with nsec and
// opens the channel.
func signInToChannel(t testing.TB, ctx context.Context, base, nsec, channel string) {
	t.Helper()
	openSignIn(t, ctx, base)
	do(t, ctx, "import the owner's nsec", chromedp.SetValue(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), nsec), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open #proj", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, channel)))
}

// prWorld is the built buzz-relay owned by a fresh key, with an agent
// key (bot) and a work tree holding main's first commit (README), not
// yet pushed to owner/proj.
type prWorld struct {
	base, sk, pk, nsec, bot, botPK, repoURL, work, ws string
	// The fields below are set by openChannel.
	ctx     context.Context // the relay connections' context, ended with the test
	channel string
	owner   *nostr.Relay
	pub     func(rel *nostr.Relay, key string, kind int, content string, tags ...nostr.Tag) nostr.Event
}

// newPRWorld starts the built relay and commits main in a fresh work tree.
func newPRWorld(t testing.TB) *prWorld {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	w := &prWorld{sk: nostr.GeneratePrivateKey(), bot: nostr.GeneratePrivateKey()}
	w.pk, _ = nostr.GetPublicKey(w.sk)
	w.botPK, _ = nostr.GetPublicKey(w.bot)
	npub, _ := nip19.EncodePublicKey(w.pk)
	w.nsec, _ = nip19.EncodePrivateKey(w.sk)
	w.base = startBinary(t, "--owner", npub)
	w.ws = "ws" + strings.TrimPrefix(w.base, "http")
	w.repoURL = w.base + "/git/" + w.pk + "/proj.git"
	w.work = t.TempDir()
	prGit(t, w.work, "", "", "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(w.work, "README"), []byte("hello\n"), 0o644)
	prGit(t, w.work, "", "", "add", "README")
	prGit(t, w.work, "", "", "commit", "--quiet", "-m", "first")
	return w
}

// openChannel connects as the owner, makes the channel "proj" with the
// bot a member and shares owner/proj with it.
func (w *prWorld) openChannel(t testing.TB, channel string) {
	t.Helper()
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	w.ctx, w.channel = rctx, channel
	w.owner = authedURL(t, rctx, w.ws, w.sk)
	w.pub = publisher(t, rctx)
	w.pub(w.owner, w.sk, 9007, "", nostr.Tag{"h", channel}, nostr.Tag{"name", "proj"})
	w.pub(w.owner, w.sk, 9000, "", nostr.Tag{"h", channel}, nostr.Tag{"p", w.botPK, "", "bot"})
	w.pub(w.owner, w.sk, 30617, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", channel})
}

// openPR has the bot open a pull request of branch (at tip) into main
// in the channel, as it would after pushing the branch.
func (w *prWorld) openPR(t testing.TB, subject, description, branch, tip string) nostr.Event {
	t.Helper()
	req, _ := http.NewRequest("GET", w.base+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		PubKey string `json:"pubkey"`
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	agent := authedURL(t, w.ctx, w.ws, w.bot)
	return w.pub(agent, w.bot, 1618, description, nostr.Tag{"a", "30617:" + info.PubKey + ":" + w.pk + "/proj"}, nostr.Tag{"p", w.pk}, nostr.Tag{"h", w.channel},
		nostr.Tag{"subject", subject}, nostr.Tag{"c", tip}, nostr.Tag{"branch-name", branch}, nostr.Tag{"buzz-base", "main"}, nostr.Tag{"clone", w.repoURL})
}

// TestBrowserPullRequest: an agent pushes a branch of a repository the
// relay hosts and opens a pull request; in a real browser the owner finds
// it in her inbox as a review requested of her (it opens on its page),
// sees its card in the repository's channel, opens the page (the diff by file),
// comments on a line by clicking it, answers in the line's thread from the
// keyboard, resolves the thread (it collapses), asks another member to
// review, approves and merges; the relay's git moved main to the tip and
// the card says merged.
func TestBrowserPullRequest(t *testing.T) {
	ctx, consoleErrors := browser(t)
	w := newPRWorld(t)
	sk, pk, bot, repoURL := w.sk, w.pk, w.bot, w.repoURL
	prGit(t, w.work, sk, repoURL, "push", "--quiet", repoURL, "main")
	w.openChannel(t, "7a1c2d4e-2222-4000-8000-0000000000cd")
	owner, rctx := w.owner, w.ctx
	carolPK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	w.pub(owner, sk, 9000, "", nostr.Tag{"h", w.channel}, nostr.Tag{"p", carolPK})

	// The agent pushes a branch and opens a pull request.
	clone := filepath.Join(t.TempDir(), "c")
	prGit(t, "", bot, repoURL, "clone", "--quiet", repoURL, clone)
	prGit(t, clone, "", "", "checkout", "--quiet", "-b", "fix")
	os.WriteFile(filepath.Join(clone, "FIX"), []byte("fixed\ntwice\n"), 0o644)
	prGit(t, clone, "", "", "add", "FIX")
	prGit(t, clone, "", "", "commit", "--quiet", "-m", "fix it")
	prGit(t, clone, bot, repoURL, "push", "--quiet", repoURL, "fix")
	tip := strings.TrimSpace(prGit(t, clone, "", "", "rev-parse", "HEAD"))
	pr := w.openPR(t, "Fix it", "Fixes the **thing**.", "fix", tip)

	signInToChannel(t, ctx, w.base, w.nsec, w.channel)
	// The pull request names the owner: a review requested of her, in her
	// inbox, opening on the pull request's page.
	do(t, ctx, "open the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, ctx, "the review request, unread", `[...document.querySelectorAll('#inbox-view .inbox-item.unread')].some((i) => i.dataset.why === 'review' && i.textContent.includes('Review requested') && i.textContent.includes('Fix it'))`)
	do(t, ctx, "open it", chromedp.Click(chromedp.CSS(`#inbox-view .inbox-item[data-why=review] .inbox-open`)))
	waitJS(t, ctx, "the pull request's page", `!!document.querySelector('dialog.pr-page[open]') && `+textIn("dialog.pr-page .pr-description strong", "thing"))
	do(t, ctx, "close it", chromedp.Click(button("Close pull request page")))
	do(t, ctx, "open #proj", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, ctx, "the pull request's card", textIn("#feed .pr-card", "Fix it")+` && `+textIn("#feed .pr-card", "fix → main"))
	do(t, ctx, "open the pull request", chromedp.Click(button("View pull request")))
	waitJS(t, ctx, "the page with its diff", `!!document.querySelector('dialog.pr-page[open] .pr-file[data-path="FIX"][open]') && `+textIn("dialog.pr-page .dl.add", "+fixed")+` && `+textIn("dialog.pr-page .pr-description strong", "thing"))

	// A click on a line opens its comment box; the comment shows under the line.
	do(t, ctx, "click line 2 of FIX", chromedp.Click(labelled("Comment on FIX line 2: twice")))
	do(t, ctx, "comment on it", chromedp.SendKeys(labelled("Comment on FIX line 2"), "why this line?"),
		chromedp.Click(chromedp.Search(`//form[contains(@class,'pr-newcomment')]//button[@type='submit']`)))
	thread := `document.querySelector('dialog.pr-page .pr-lines[data-path="FIX"] .dl[data-line="2"] + details.pr-thread')`
	waitJS(t, ctx, "the comment under line 2", `!!`+thread+` && `+thread+`.open && `+thread+`.textContent.includes('why this line?')`)
	// The keyboard: focus the line, Enter answers in its thread.
	do(t, ctx, "Enter on line 2", chromedp.Focus(labelled("Comment on FIX line 2: twice")), chromedp.SendKeys(labelled("Comment on FIX line 2: twice"), kb.Enter))
	do(t, ctx, "reply", chromedp.SendKeys(labelled("Reply on FIX line 2"), "because"),
		chromedp.Click(chromedp.Search(`//details[contains(@class,'pr-thread')]//form//button[@type='submit']`)))
	waitJS(t, ctx, "the reply in the thread", thread+`.querySelectorAll('.pr-comment').length === 2 && `+thread+`.textContent.includes('because')`)
	do(t, ctx, "resolve", chromedp.Click(chromedp.Search(`//details[contains(@class,'pr-thread')]//button[normalize-space(.)='Resolve']`)))
	waitJS(t, ctx, "resolved, collapsed", thread+`.dataset.resolved === 'true' && !`+thread+`.open && `+thread+`.querySelector('summary').textContent.includes('resolved by')`)
	axeSrc := ""
	if modules, _ := testexe.NodeModules(t); modules != "" {
		if b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js")); err == nil {
			axeSrc = string(b)
		}
	}
	shootView(t, ctx, axeSrc, "pr-line-thread")
	// Someone else of the channel is asked to review.
	do(t, ctx, "pick a reviewer", chromedp.SetValue(labelled("Reviewer"), carolPK), chromedp.Click(button("Request review")))
	waitJS(t, ctx, "the review request", textIn("dialog.pr-page .pr-conversation .badge", "to review"))
	do(t, ctx, "approve", chromedp.Click(button("Approve")))
	waitJS(t, ctx, "the approval", `!!document.querySelector('dialog.pr-page .pr-comment[data-review=approve]')`)
	do(t, ctx, "merge", chromedp.Click(button("Merge")))
	waitJS(t, ctx, "merged", textIn("dialog.pr-page .pr-result", "Merged (fast-forward) as "+tip[:7]))
	if out := prGit(t, clone, bot, repoURL, "ls-remote", repoURL, "refs/heads/main"); !strings.HasPrefix(out, tip) {
		t.Errorf("main after the merge = %s; want %s", out, tip)
	}
	do(t, ctx, "close the page", chromedp.Click(button("Close pull request page")))
	waitJS(t, ctx, "the card says merged", `!!document.querySelector('#feed .pr-card[data-status=merged]')`)
	do(t, ctx, "back to the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, ctx, "no review waits any more", `!document.getElementById('inbox-view').hidden && document.querySelectorAll('#inbox-view .inbox-item[data-why=review]').length === 0`)
	do(t, ctx, "back to the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, ctx, "no review waits any more", `!document.getElementById('inbox-view').hidden && document.querySelectorAll('#inbox-view .inbox-item[data-why=review]').length === 0`)

	// The relay took the comment anchored to the line, and the merged status signed by the owner.
	evs, err := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1111, 1631}, Tags: nostr.TagMap{"E": {pr.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	var root, reply, mark, asked *nostr.Event
	for _, ev := range evs {
		switch {
		case ev.Kind != 1111:
		case ev.Tags.FindWithValue("buzz-review-request", carolPK) != nil:
			asked = ev
		case ev.Tags.FindWithValue("buzz-resolved", "resolved") != nil:
			mark = ev
		case ev.Content == "why this line?":
			root = ev
		case strings.TrimSpace(ev.Content) == "because":
			reply = ev
		}
	}
	switch {
	case asked == nil || asked.Tags.FindWithValue("p", carolPK) == nil:
		t.Errorf("no review request naming and tagging the reviewer among %d events", len(evs))
	case root == nil || reply == nil || mark == nil:
		t.Fatalf("comment, reply, resolve mark = %v, %v, %v among %d events", root != nil, reply != nil, mark != nil, len(evs))
	case root.Tags.FindWithValue("buzz-file", "FIX") == nil || root.Tags.FindWithValue("buzz-line", "2") == nil || root.Tags.FindWithValue("buzz-commit", tip) == nil:
		t.Errorf("the line comment's tags = %v; want buzz-file FIX, buzz-line 2, buzz-commit %s", root.Tags, tip)
	case root.Tags.FindWithValue("e", pr.ID) == nil:
		t.Errorf("the line comment's parent is not the pull request: %v", root.Tags)
	case reply.Tags.FindWithValue("e", root.ID) == nil || reply.Tags.FindWithValue("E", pr.ID) == nil || reply.Tags.FindWithValue("buzz-line", "2") == nil:
		t.Errorf("the reply's tags = %v; want e = the comment, E = the pull request and the anchor", reply.Tags)
	}
	merged, _ := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1631}, Tags: nostr.TagMap{"e": {pr.ID}}})
	if len(merged) != 1 || merged[0].PubKey != pk {
		t.Errorf("merged statuses = %d; want one signed by the merger", len(merged))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
