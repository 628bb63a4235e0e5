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
	"buzzbox/internal/workspace/nip98"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// prGit runs real git in dir with no personal or system configuration,
// with a NIP-98 header for repoURL signed by sk when repoURL is set.
func prGit(t *testing.T, dir, sk, repoURL string, args ...string) string {
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
func authedURL(t *testing.T, ctx context.Context, url, sk string) *nostr.Relay {
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

// TestBrowserPullRequest: an agent pushes a branch of a repository the
// relay hosts and opens a pull request; in a real browser the owner finds
// it in her inbox as a review requested of her (it opens on its page),
// sees its card in the repository's channel, opens the page (the diff by file),
// comments on a line, approves and merges; the relay's git moved main to
// the tip and the card says merged.
func TestBrowserPullRequest(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	ctx, consoleErrors := browser(t)
	sk, bot := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	botPK, _ := nostr.GetPublicKey(bot)
	npub, _ := nip19.EncodePublicKey(pk)
	nsec, _ := nip19.EncodePrivateKey(sk)
	base := startBinary(t, "--owner", npub)
	repoURL := base + "/git/" + pk + "/proj.git"

	work := t.TempDir()
	prGit(t, work, "", "", "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	prGit(t, work, "", "", "add", "README")
	prGit(t, work, "", "", "commit", "--quiet", "-m", "first")
	prGit(t, work, sk, repoURL, "push", "--quiet", repoURL, "main")

	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(base, "http")
	owner := authedURL(t, rctx, ws, sk)
	ch := "7a1c2d4e-2222-4000-8000-0000000000cd"
	pub := func(rel *nostr.Relay, key string, kind int, content string, tags ...nostr.Tag) nostr.Event {
		t.Helper()
		ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Content: content, Tags: tags}
		ev.Sign(key)
		if err := rel.Publish(rctx, ev); err != nil {
			t.Fatalf("publish kind %d: %v", kind, err)
		}
		return ev
	}
	pub(owner, sk, 9007, "", nostr.Tag{"h", ch}, nostr.Tag{"name", "proj"})
	pub(owner, sk, 9000, "", nostr.Tag{"h", ch}, nostr.Tag{"p", botPK, "", "bot"})
	pub(owner, sk, 30617, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", ch})

	// The agent pushes a branch and opens a pull request.
	clone := filepath.Join(t.TempDir(), "c")
	prGit(t, "", bot, repoURL, "clone", "--quiet", repoURL, clone)
	prGit(t, clone, "", "", "checkout", "--quiet", "-b", "fix")
	os.WriteFile(filepath.Join(clone, "FIX"), []byte("fixed\n"), 0o644)
	prGit(t, clone, "", "", "add", "FIX")
	prGit(t, clone, "", "", "commit", "--quiet", "-m", "fix it")
	prGit(t, clone, bot, repoURL, "push", "--quiet", repoURL, "fix")
	tip := strings.TrimSpace(prGit(t, clone, "", "", "rev-parse", "HEAD"))
	req, _ := http.NewRequest("GET", base+"/", nil)
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
	agent := authedURL(t, rctx, ws, bot)
	pr := pub(agent, bot, 1618, "Fixes the **thing**.", nostr.Tag{"a", "30617:" + info.PubKey + ":" + pk + "/proj"}, nostr.Tag{"p", pk}, nostr.Tag{"h", ch},
		nostr.Tag{"subject", "Fix it"}, nostr.Tag{"c", tip}, nostr.Tag{"branch-name", "fix"}, nostr.Tag{"buzz-base", "main"}, nostr.Tag{"clone", repoURL})

	openSignIn(t, ctx, base)
	do(t, ctx, "import the owner's nsec", chromedp.SetValue(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), nsec), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	// The pull request names the owner: a review requested of her, in her
	// inbox, opening on the pull request's page.
	do(t, ctx, "open the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, ctx, "the review request, unread", `[...document.querySelectorAll('#inbox-view .inbox-item.unread')].some((i) => i.dataset.why === 'review' && i.textContent.includes('Review requested') && i.textContent.includes('Fix it'))`)
	do(t, ctx, "open it", chromedp.Click(chromedp.CSS(`#inbox-view .inbox-item[data-why=review] .inbox-open`)))
	waitJS(t, ctx, "the pull request's page", `!!document.querySelector('dialog.pr-page[open]') && `+textIn("dialog.pr-page .pr-description strong", "thing"))
	do(t, ctx, "close it", chromedp.Click(button("Close pull request page")))
	do(t, ctx, "open #proj", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, ch)))
	waitJS(t, ctx, "the pull request's card", textIn("#feed .pr-card", "Fix it")+` && `+textIn("#feed .pr-card", "fix → main"))
	do(t, ctx, "open the pull request", chromedp.Click(button("View pull request")))
	waitJS(t, ctx, "the page with its diff", `!!document.querySelector('dialog.pr-page[open] .pr-file[data-path="FIX"][open]') && `+textIn("dialog.pr-page .dl.add", "+fixed")+` && `+textIn("dialog.pr-page .pr-description strong", "thing"))

	do(t, ctx, "comment on a line", chromedp.SendKeys(labelled("Review comment"), "why this line?"), chromedp.SendKeys(labelled("File (optional)"), "FIX"),
		chromedp.SendKeys(labelled("Line (optional)"), "1"), chromedp.Click(button("Comment")))
	waitJS(t, ctx, "the line comment", textIn("dialog.pr-page .pr-comment", "why this line?")+` && `+textIn("dialog.pr-page .pr-comment code", "FIX line 1"))
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

	// The relay took the comment anchored to the line, and the merged status signed by the owner.
	evs, err := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1111, 1631}, Tags: nostr.TagMap{"E": {pr.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	anchored := false
	for _, ev := range evs {
		if ev.Kind == 1111 && ev.Tags.FindWithValue("buzz-line", "1") != nil && ev.Tags.FindWithValue("buzz-commit", tip) != nil {
			anchored = true
		}
	}
	if !anchored {
		t.Errorf("no comment anchored to FIX line 1 at %s among %d events", tip, len(evs))
	}
	merged, _ := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{1631}, Tags: nostr.TagMap{"e": {pr.ID}}})
	if len(merged) != 1 || merged[0].PubKey != pk {
		t.Errorf("merged statuses = %d; want one signed by the merger", len(merged))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
