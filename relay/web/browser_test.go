package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// browser starts Debian's chromium headless with a fresh profile and
// returns a tab context. Console errors and exceptions (CSP refusals
// among them) are collected for errs.
func browser(t *testing.T) (ctx context.Context, errs func() []string) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("SKIP(loud): no chromium on PATH; the web client is not tested in a browser (apt-get install -y chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	var mu sync.Mutex
	var got []string
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() { // ends when ctx ends
		for m, err := range messages {
			if err != nil {
				return
			}
			t.Logf("browser: %s", m)
			if m.IsException() || m.Type == "error" {
				mu.Lock()
				got = append(got, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// xq quotes s for XPath.
func xq(s string) string {
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return `'` + s + `'`
}

// labelled finds a control by its accessible name: aria-label or <label for>.
func labelled(name string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//*[@aria-label=%[1]s] | //*[@id=//label[normalize-space(.)=%[1]s]/@for]`, xq(name)))
}

// button finds a button by its text or aria-label.
func button(name string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//button[normalize-space(.)=%[1]s or @aria-label=%[1]s]`, xq(name)))
}

// waitJS waits until a page expression is truthy.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, html)
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

// shot writes a screenshot to the test's temp dir (and to
// $BUZZ_WEB_SCREENSHOTS when set, to keep them).
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range []string{dir, os.Getenv("BUZZ_WEB_SCREENSHOTS")} {
		if d != "" {
			os.WriteFile(filepath.Join(d, name+".png"), png, 0o644)
		}
	}
}

// textIn is a JS expression: some element matching css has text s.
func textIn(css, s string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].some((e) => e.textContent.includes(%q))`, css, s)
}

// TestBrowserWorkspace is a person's day in a real browser against the
// built relay: sign in with a key made in the page, create a channel,
// post, see another client's message arrive live, mention with the
// autocomplete, react, edit, reply in a thread, watch an agent's working
// state come and go. Every event the page signed verifies with go-nostr.
func TestBrowserWorkspace(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	wsURL := "ws" + strings.TrimPrefix(base, "http")
	shots := t.TempDir()
	t.Logf("screenshots in %s", shots)

	do(t, ctx, "open the page", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"))
	waitJS(t, ctx, "the sign-in dialog", `document.getElementById('signin').open`)
	shot(t, ctx, shots, "signin-desktop")
	do(t, ctx, "create a key", chromedp.SendKeys(labelled("Your name"), "Alice"), chromedp.Click(button("Create a new key")))
	waitJS(t, ctx, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	nsec, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("new-nsec")))
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := nip19.Decode(nsec)
	if err != nil {
		t.Fatalf("the page's nsec %q does not decode: %v", nsec, err)
	}
	alice, _ := nostr.GetPublicKey(v.(string))
	do(t, ctx, "confirm the key is saved", chromedp.Click(button("I have saved it")))
	waitJS(t, ctx, "the dialog to close", `!document.getElementById('signin').open`)
	stored, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(localStorage)`))
	if strings.Contains(stored, nsec) {
		t.Errorf("localStorage holds the nsec text; want the hex key only")
	}

	do(t, ctx, "open the new channel form", chromedp.Click(button("New channel")))
	do(t, ctx, "create #general", chromedp.SendKeys(labelled("Channel name"), "general"), chromedp.Click(button("Create channel")))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))
	waitJS(t, ctx, "the composer", `document.querySelector('textarea[aria-label="Message #general"]') !== null`)
	var channelID string
	if channelID, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash.slice(4)`)); err != nil || len(channelID) != 36 {
		t.Fatalf("channel id from the URL = %q, %v", channelID, err)
	}
	do(t, ctx, "post a message", chromedp.SendKeys(labelled("Message #general"), "hello from the browser"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the posted message", textIn(`[role=feed] article`, "hello from the browser"))

	// Another client: go-nostr, Bob, joins and posts.
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel, err := nostr.RelayConnect(rctx, wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	bobSK := nostr.GeneratePrivateKey()
	bob, _ := nostr.GetPublicKey(bobSK)
	publish := func(kind int, content string, tags ...nostr.Tag) nostr.Event {
		t.Helper()
		ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Content: content, Tags: tags}
		ev.Sign(bobSK)
		if err := rel.Publish(rctx, ev); err != nil {
			t.Fatalf("publish kind %d as bob: %v", kind, err)
		}
		return ev
	}
	publish(0, `{"name":"Bob","bot":false}`)
	publish(9021, "", nostr.Tag{"h", channelID})
	waitJS(t, ctx, "bob in the member list", `window.buzz.store.channels.get(`+fmt.Sprintf("%q", channelID)+`).members.has(`+fmt.Sprintf("%q", bob)+`)`)
	bobMsg := publish(9, "hi Alice, from go-nostr", nostr.Tag{"h", channelID})
	waitJS(t, ctx, "bob's message, live", textIn(`[role=feed] article`, "hi Alice, from go-nostr"))

	// React to Bob's message.
	bobArt := fmt.Sprintf(`//article[@data-id=%q]`, bobMsg.ID)
	do(t, ctx, "react", chromedp.Focus(chromedp.Search(bobArt)), chromedp.Click(chromedp.Search(bobArt+`//button[@aria-label="Add reaction"]`)),
		chromedp.Click(chromedp.Search(bobArt+`//button[@aria-label="React with 👍"]`)))
	waitJS(t, ctx, "the reaction chip", fmt.Sprintf(`document.querySelector('article[data-id=%q] .chip[aria-pressed=true]')?.textContent === '👍1'`, bobMsg.ID))

	// Mention Bob through the autocomplete, by keyboard.
	do(t, ctx, "start a mention", chromedp.SendKeys(labelled("Message #general"), "thanks @Bo"))
	waitJS(t, ctx, "the mention option", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('Bob'))`)
	expanded, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('textarea[aria-label="Message #general"]').getAttribute('aria-expanded')`))
	if expanded != "true" {
		t.Errorf("combobox aria-expanded = %q while the list shows; want true", expanded)
	}
	do(t, ctx, "pick and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "for the help"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the mention message", textIn(`[role=feed] article`, "thanks @Bob for the help"))

	order, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed > article')].map((a) => a.querySelector('.msg-body').textContent).join(' | ')`))
	if want := "hello from the browser | hi Alice, from go-nostr | thanks @Bob for the help"; order != want {
		t.Errorf("feed order = %q; want oldest first: %q", order, want)
	}

	// Edit my first message.
	mine := `//article[contains(@class,"mine")][.//p[contains(.,"hello from the browser")]]`
	do(t, ctx, "edit", chromedp.Focus(chromedp.Search(mine)), chromedp.Click(chromedp.Search(mine+`//button[@aria-label="Edit message"]`)))
	waitJS(t, ctx, "the edit box", `document.querySelector('textarea[aria-label="Edited text"]') !== null`)
	do(t, ctx, "save the edit", chromedp.SetValue(labelled("Edited text"), "hello, edited"), chromedp.Focus(labelled("Edited text")), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the edited text", textIn(`[role=feed] article`, "hello, edited")+` && `+textIn(`[role=feed] article .edited`, "(edited)"))

	// A thread on Bob's message.
	do(t, ctx, "open the thread", chromedp.Focus(chromedp.Search(bobArt)), chromedp.Click(chromedp.Search(bobArt+`//button[@aria-label="Reply in thread"]`)))
	waitJS(t, ctx, "the thread panel", `!document.getElementById('thread').hidden`)
	do(t, ctx, "reply", chromedp.SendKeys(labelled("Thread reply"), "a reply in the thread"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the reply", textIn(`#thread .thread-replies article`, "a reply in the thread"))
	waitJS(t, ctx, "the reply count", textIn(`#feed .replies`, "1 reply"))
	shot(t, ctx, shots, "thread-desktop")
	do(t, ctx, "close with Escape", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ctx, "the thread to close", `document.getElementById('thread').hidden`)

	// An agent's working state: the harness reacts 👀, then takes it back.
	var aliceMsg *nostr.Event
	evs, err := rel.QuerySync(rctx, nostr.Filter{Kinds: []int{9, 40003, 7}, Authors: []string{alice}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ok, err := ev.CheckSignature(); !ok {
			t.Errorf("page-signed event %s (kind %d) fails go-nostr's check: %v", ev.ID, ev.Kind, err)
		}
		if ev.Kind == 9 && ev.Content == "hello from the browser" {
			aliceMsg = ev
		}
		if ev.Kind == 9 && strings.HasPrefix(ev.Content, "thanks @Bob") && ev.Tags.FindWithValue("p", bob) == nil {
			t.Errorf("mention message tags %v lack [p %s]", ev.Tags, bob)
		}
		if ev.Kind == 9 && ev.Content == "a reply in the thread" && ev.Tags.FindWithValue("e", bobMsg.ID) == nil {
			t.Errorf("thread reply tags %v lack [e %s]", ev.Tags, bobMsg.ID)
		}
	}
	if len(evs) < 5 || aliceMsg == nil {
		t.Fatalf("relay holds %d events by the page's key (first message found: %v); want posts, an edit and a reaction", len(evs), aliceMsg != nil)
	}
	seen := publish(7, "👀", nostr.Tag{"e", aliceMsg.ID})
	waitJS(t, ctx, "the working state", fmt.Sprintf(`document.querySelector('article[data-id=%q] .working[role=status]')?.textContent.includes('Bob')`, aliceMsg.ID))
	shot(t, ctx, shots, "channel-desktop")
	publish(5, "", nostr.Tag{"e", seen.ID})
	waitJS(t, ctx, "the working state to end", fmt.Sprintf(`document.querySelector('article[data-id=%q]') && !document.querySelector('article[data-id=%q] .working')`, aliceMsg.ID, aliceMsg.ID))

	// Phone width: the channel list folds behind the menu button.
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	waitJS(t, ctx, "the sidebar folded", `getComputedStyle(document.getElementById('sidebar')).display === 'none'`)
	shot(t, ctx, shots, "channel-phone")
	do(t, ctx, "open the channel list", chromedp.Click(button("Show channels")))
	waitJS(t, ctx, "the channel list", `getComputedStyle(document.getElementById('sidebar')).display !== 'none'`)
	shot(t, ctx, shots, "channels-phone")

	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
