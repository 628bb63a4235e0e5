package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/relay"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// waitLimit bounds one wait for the page: generous, since the machine
// may be shared by many builds; a passing run waits far less.
const waitLimit = 90 * time.Second

// browser starts Debian's chromium headless with a fresh profile and
// returns a tab context. Console errors and exceptions (CSP refusals
// among them) are collected for errs.
func browser(t testing.TB) (ctx context.Context, errs func() []string) {
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
	ctx, cancelT := context.WithTimeout(ctx, 6*time.Minute)
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
func waitJS(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitLimit), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, html)
	}
}

func do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

// shot writes a screenshot to dir (a test's own, when it looks at it)
// and to reviewDir, where they are kept for a person to look at.
func shot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range []string{dir, reviewDir(t)} {
		os.WriteFile(filepath.Join(d, name+".png"), png, 0o644)
	}
}

// createInviteLink opens the current channel's members dialog, makes an
// invite link from its Invite link tab and returns it; the dialog stays
// open.
func createInviteLink(t testing.TB, ctx context.Context) string {
	t.Helper()
	do(t, ctx, "open the members dialog", chromedp.Click(button("Members")))
	do(t, ctx, "create an invite", chromedp.Click(button("Invite link")), chromedp.Click(button("Create invite link")))
	waitJS(t, ctx, "the invite link", `document.getElementById('invite-link').value.includes('#invite=')`)
	link, err := chromedp.Run(ctx, chromedp.Value(labelled("Invite link to this channel: single use, valid 7 days; send it to the person you invite")))
	if err != nil {
		t.Fatal(err)
	}
	return link
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

	openSignIn(t, ctx, base)
	shot(t, ctx, shots, "signin-desktop")
	aliceSK := createKey(t, ctx, "Alice")
	alice, _ := nostr.GetPublicKey(aliceSK)
	nsec, _ := nip19.EncodePrivateKey(aliceSK)
	stored, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(localStorage)`))
	if strings.Contains(stored, nsec) {
		t.Errorf("localStorage holds the nsec text; want the hex key only")
	}

	channelID := createChannel(t, ctx, "general", false)
	waitJS(t, ctx, "the composer", `document.querySelector('textarea[aria-label="Message #general"]') !== null`)
	post(t, ctx, "general", "hello from the browser")

	// Another client: go-nostr, Bob, joins and posts.
	bobPeer := newPeer(t, wsURL)
	rel, rctx, bobSK, bob, publish := bobPeer.rel, bobPeer.ctx, bobPeer.sk, bobPeer.pk, bobPeer.publish
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
	// Bob reacts too; then Alice takes hers back and the count follows.
	publish(7, "👍", nostr.Tag{"h", channelID}, nostr.Tag{"e", bobMsg.ID})
	waitJS(t, ctx, "two reactions", fmt.Sprintf(`document.querySelector('article[data-id=%q] .chip[aria-pressed=true]')?.textContent === '👍2'`, bobMsg.ID))
	do(t, ctx, "remove my reaction", chromedp.Click(chromedp.Search(bobArt+`//button[contains(@aria-label,"remove your reaction")]`)))
	waitJS(t, ctx, "the count down to Bob's", fmt.Sprintf(`document.querySelector('article[data-id=%q] .chip[aria-pressed=false]')?.textContent === '👍1'`, bobMsg.ID))

	// Mention Bob through the autocomplete, by keyboard.
	do(t, ctx, "start a mention", chromedp.SendKeys(labelled("Message #general"), "thanks @Bo"))
	waitJS(t, ctx, "the mention option", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('Bob'))`)
	expanded, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('textarea[aria-label="Message #general"]').getAttribute('aria-expanded')`))
	if expanded != "true" {
		t.Errorf("combobox aria-expanded = %q while the list shows; want true", expanded)
	}
	do(t, ctx, "pick and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "for the help"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the mention message", textIn(`[role=feed] article`, "thanks @Bob for the help"))

	// Shift+Enter starts a new line; Enter sends both lines as one message.
	do(t, ctx, "two lines", chromedp.SendKeys(labelled("Message #general"), "line one"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(labelled("Message #general"), "line two"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the two-line message", `[...document.querySelectorAll('#feed article .msg-body')].some((b) => b.textContent === 'line one\nline two')`)

	order, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed > article')].map((a) => a.querySelector('.msg-body').textContent).join(' | ')`))
	if want := "hello from the browser | hi Alice, from go-nostr | thanks @Bob for the help | line one\nline two"; order != want {
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
	evs, err := rel.QuerySync(rctx, nostr.Filter{Kinds: []int{9, 40003, 7, 5}, Authors: []string{alice}})
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
		// The relay serves a reaction and its removal only to the channel's readers.
		if (ev.Kind == 7 || ev.Kind == 5) && ev.Tags.FindWithValue("h", channelID) == nil {
			t.Errorf("page's kind %d tags %v lack [h %s]", ev.Kind, ev.Tags, channelID)
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
	seen := publish(7, "👀", nostr.Tag{"h", channelID}, nostr.Tag{"e", aliceMsg.ID})
	waitJS(t, ctx, "the working state", fmt.Sprintf(`document.querySelector('article[data-id=%q] .working[role=status]')?.textContent.includes('Bob')`, aliceMsg.ID))
	shot(t, ctx, shots, "channel-desktop")
	typing := nostr.Event{Kind: 20002, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", channelID}}}
	typing.Sign(bobSK)
	tctx, tcancel := context.WithTimeout(rctx, 5*time.Second)
	rel.Publish(tctx, typing) // ephemeral: the relay passes it on; its OK is not what is tested
	tcancel()
	waitJS(t, ctx, "the typing line", textIn("#typing", "Bob is typing…"))
	publish(5, "", nostr.Tag{"h", channelID}, nostr.Tag{"e", seen.ID})
	waitJS(t, ctx, "the working state to end", fmt.Sprintf(`document.querySelector('article[data-id=%q]') && !document.querySelector('article[data-id=%q] .working')`, aliceMsg.ID, aliceMsg.ID))

	// An agent attested by Alice (NIP-OA) answers: marked as her agent.
	aliceSec, _ := nostrkey.ParseSecret(aliceSK)
	agentSK := nostr.GeneratePrivateKey()
	agentKey, _ := nostrkey.ParseSecret(agentSK)
	att, err := nipoa.Sign(aliceSec, agentKey.Public(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []nostr.Event{
		{Kind: 0, Content: `{"name":"Helper"}`, Tags: nostr.Tags{att.Nostr()}},
		{Kind: 9021, Tags: nostr.Tags{{"h", channelID}}},
		{Kind: 9, Content: "an answer from an agent", Tags: nostr.Tags{{"h", channelID}, att.Nostr()}},
	} {
		ev.CreatedAt = nostr.Now()
		ev.Sign(agentSK)
		if err := rel.Publish(rctx, ev); err != nil {
			t.Fatalf("publish kind %d as the agent: %v", ev.Kind, err)
		}
	}
	waitJS(t, ctx, "the agent's answer, marked", `[...document.querySelectorAll('#feed article.agent')].some((a) => a.textContent.includes('an answer from an agent') && a.querySelector('.badge')?.title === 'agent of Alice')`)

	// Phone width: the channel list folds behind the menu button.
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	waitJS(t, ctx, "the sidebar folded", `getComputedStyle(document.getElementById('sidebar')).display === 'none'`)
	shot(t, ctx, shots, "channel-phone")
	do(t, ctx, "open the channel list", chromedp.Click(button("Show channels")))
	waitJS(t, ctx, "the channel list", `getComputedStyle(document.getElementById('sidebar')).display !== 'none'`)
	shot(t, ctx, shots, "channels-phone")
	do(t, ctx, "close the channel list", chromedp.Click(button("Show channels")))
	// A tap focuses the message, which shows its actions (as a long press does).
	do(t, ctx, "open the thread on a phone", chromedp.Focus(chromedp.Search(bobArt)), chromedp.Click(chromedp.Search(bobArt+`//button[@aria-label="Reply in thread"]`)))
	waitJS(t, ctx, "the thread as a dialog", `document.getElementById('thread').getAttribute('role') === 'dialog' && document.getElementById('thread').getBoundingClientRect().width === 390`)
	shot(t, ctx, shots, "thread-phone")
	do(t, ctx, "close with Escape", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ctx, "the thread to close", `document.getElementById('thread').hidden`)

	// The dark theme follows prefers-color-scheme.
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 800))
	waitJS(t, ctx, "the dark theme", `getComputedStyle(document.body).backgroundColor === 'rgb(22, 24, 28)'`)
	shot(t, ctx, shots, "channel-desktop-dark")

	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// openURL loads url in a desktop-sized window.
func openURL(t testing.TB, ctx context.Context, what, url string) {
	t.Helper()
	do(t, ctx, what, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(url))
}

// openChannel opens channel name from the channel list.
func openChannel(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	// Clicked from the page until the view shows it: the channel list
	// re-renders as counts change, and a link found by one query may be
	// gone when the click lands.
	waitJS(t, ctx, "the channel view of "+name, fmt.Sprintf(`(() => {
	  if ([...document.querySelectorAll('#channel-name')].some((e) => e.textContent.includes(%[1]q))) return true;
	  const a = [...document.querySelectorAll('#channel-list a')].find((a) => (a.getAttribute('aria-label') || '').startsWith('channel ' + %[1]q));
	  if (a) a.click();
	  return false;
	})()`, name))
}

// openSignIn opens the page at base, which asks who signs in.
func openSignIn(t testing.TB, ctx context.Context, base string) {
	t.Helper()
	openURL(t, ctx, "open the page", base+"/")
	waitJS(t, ctx, "the sign-in dialog", `document.getElementById('signin').open`)
}

// signInNew opens the page and signs in with a new key; it returns the
// key's secret (hex).
func signInNew(t testing.TB, ctx context.Context, base, name string) string {
	t.Helper()
	openSignIn(t, ctx, base)
	return createKey(t, ctx, name)
}

// createKey makes a key for name in the open sign-in dialog, confirms it
// is saved, and returns its secret (hex).
func createKey(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	do(t, ctx, "create a key", chromedp.SendKeys(labelled("Your name"), name), chromedp.Click(button("Create a new key")))
	waitJS(t, ctx, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	nsec, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("new-nsec")))
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := nip19.Decode(nsec)
	if err != nil {
		t.Fatalf("the page's nsec %q does not decode: %v", nsec, err)
	}
	do(t, ctx, "confirm the key is saved", chromedp.Click(button("I have saved it")))
	waitJS(t, ctx, "the dialog to close", `!document.getElementById('signin').open`)
	return v.(string)
}

// post sends text from the composer of channel (by name) and waits for
// it in the feed.
func post(t testing.TB, ctx context.Context, channel, text string) {
	t.Helper()
	do(t, ctx, "post in #"+channel, chromedp.SendKeys(labelled("Message #"+channel), text), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the message posted in #"+channel, textIn(`#feed article`, text))
}

// createChannel makes a channel through the form and returns its id.
func createChannel(t testing.TB, ctx context.Context, name string, forum bool) string {
	t.Helper()
	do(t, ctx, "open the new channel form", chromedp.Click(button("New channel")))
	steps := []chromedp.Action[chromedp.Void]{chromedp.SendKeys(labelled("Channel name"), name)}
	if forum {
		steps = append(steps, chromedp.SetValue(labelled("Kind"), "forum"))
	}
	do(t, ctx, "create "+name, append(steps, chromedp.Click(button("Create channel")))...)
	waitJS(t, ctx, "the channel view of "+name, textIn("#channel-name", name))
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash.slice(4)`))
	if err != nil || len(id) != 36 {
		t.Fatalf("channel id from the URL = %q, %v", id, err)
	}
	return id
}

// TestBrowserAuthImportedKey runs the page against a relay that admits
// only its owner: the person imports the owner's nsec, the page answers
// the NIP-42 challenge, reads and writes; what it signed verifies.
func TestBrowserAuthImportedKey(t *testing.T) {
	ctx, consoleErrors := browser(t)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	npub, _ := nip19.EncodePublicKey(pk)
	nsec, _ := nip19.EncodePrivateKey(sk)
	base := startBinary(t, "--owner", npub)

	openSignIn(t, ctx, base)
	do(t, ctx, "a wrong key", chromedp.SendKeys(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), npub), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "the explanation", textIn("#signin-error", "that is an npub"))
	do(t, ctx, "import the nsec", chromedp.SetValue(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), nsec), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "the dialog to close", `!document.getElementById('signin').open`)
	waitJS(t, ctx, "the relay to accept the AUTH", `document.getElementById('status').dataset.state === 'authenticated'`)
	id := createChannel(t, ctx, "owners-only", false)
	post(t, ctx, "owners-only", "signed in by import")

	// A relay member with no profile yet is offered from the relay's own
	// member list (NIP-86, signed by the page) and added to the channel.
	ksk := nostr.GeneratePrivateKey()
	kim, _ := nostr.GetPublicKey(ksk)
	knpub, _ := nip19.EncodePublicKey(kim)
	manageCall(t, base, sk, "allowpubkey", kim, "a colleague")
	do(t, ctx, "open members", chromedp.Click(button("Members")))
	waitJS(t, ctx, "Kim offered", fmt.Sprintf(`[...document.querySelectorAll('#known-people option')].some((o) => o.value === %q)`, knpub))
	do(t, ctx, "add Kim", chromedp.Click(button("Add people")), chromedp.SendKeys(labelled("Add a member (npub, hex key or name of a known person)"), knpub), chromedp.Click(button("Add member")))
	waitJS(t, ctx, "Kim a member", fmt.Sprintf(`window.buzz.store.channels.get(%q).members.has(%q)`, id, kim))

	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel, err := nostr.RelayConnect(rctx, "ws"+strings.TrimPrefix(base, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	// A refused probe REQ proves the challenge, sent on connect, arrived.
	probe, err := rel.Subscribe(rctx, nostr.Filters{{Kinds: []int{1}, Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-probe.ClosedReason:
	case <-probe.EndOfStoredEvents:
	case <-rctx.Done():
		t.Fatal("no answer to the probe REQ")
	}
	probe.Unsub()
	if err := rel.Auth(rctx, func(ev *nostr.Event) error { return ev.Sign(sk) }); err != nil {
		t.Fatalf("auth as the owner: %v", err)
	}
	evs, err := rel.QuerySync(rctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {id}}})
	if err != nil || len(evs) != 1 {
		t.Fatalf("query the channel: %d events, %v; want the one the page posted", len(evs), err)
	}
	if ok, err := evs[0].CheckSignature(); !ok || evs[0].PubKey != pk {
		t.Errorf("page's event: signature ok %v (%v), pubkey %s; want a valid signature by %s", ok, err, evs[0].PubKey, pk)
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// outbound records what the page sends: websocket frames, and each HTTP
// request's URL, headers and body.
type outbound struct {
	mu  sync.Mutex
	all []string
}

func (o *outbound) add(s string) { o.mu.Lock(); o.all = append(o.all, s); o.mu.Unlock() }

func (o *outbound) find(secrets ...string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.all {
		for _, x := range secrets {
			if strings.Contains(strings.ToLower(s), strings.ToLower(x)) {
				return s
			}
		}
	}
	return ""
}

func (o *outbound) count() int { o.mu.Lock(); defer o.mu.Unlock(); return len(o.all) }

func watchOutbound(t *testing.T, ctx context.Context) *outbound {
	o := &outbound{}
	frames := chromedp.Events(ctx, network.WebSocketFrameSent)
	reqs := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() { // ends when ctx ends
		for ev, err := range frames {
			if err != nil {
				return
			}
			if ev.Response != nil {
				o.add("ws " + string(ev.Response.PayloadData))
			}
		}
	}()
	go func() { // ends when ctx ends
		for ev, err := range reqs {
			if err != nil {
				return
			}
			if r := ev.Request; r != nil {
				s := fmt.Sprintf("http %s %s %v", r.Method, r.URL, r.Headers)
				for _, p := range r.PostDataEntries {
					s += " " + string(p.Bytes)
				}
				o.add(s)
			}
		}
	}()
	return o
}

// TestAttackKeyNeverLeavesBrowser watches every websocket frame and HTTP
// request the page sends while a person signs up, creates a channel,
// posts and reacts: neither the secret key nor its nsec may be in any.
func TestAttackKeyNeverLeavesBrowser(t *testing.T) {
	ctx, _ := browser(t)
	base := startBinary(t)
	out := watchOutbound(t, ctx)
	sk := signInNew(t, ctx, base, "Carol")
	nsecText, _ := nip19.EncodePrivateKey(sk)
	createChannel(t, ctx, "secrets", false)
	post(t, ctx, "secrets", "nothing secret here")
	art := `//article[.//p[contains(.,"nothing secret here")]]`
	do(t, ctx, "react", chromedp.Focus(chromedp.Search(art)), chromedp.Click(chromedp.Search(art+`//button[@aria-label="Add reaction"]`)),
		chromedp.Click(chromedp.Search(art+`//button[@aria-label="React with 🎉"]`)))
	waitJS(t, ctx, "the reaction", `document.querySelector('.chip[aria-pressed=true]') !== null`)
	if out.count() < 5 {
		t.Fatalf("saw %d outbound messages; the watch is not working", out.count())
	}
	if leak := out.find(sk, nsecText); leak != "" {
		t.Errorf("the page sent its secret key: %.300s", leak)
	}
}

// TestAttackMessageMarkupIsText has another member post markup, script,
// a javascript: link and a hostile profile name: all of it must show as
// text, and none of it may run or make elements.
func TestAttackMessageMarkupIsText(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	signInNew(t, ctx, base, "Dave")
	id := createChannel(t, ctx, "hostile", false)

	pub := newPeer(t, base).publish
	pub(0, `{"name":"<img src=x onerror=\"window.pwned='name'\">Mallory"}`)
	pub(9021, "", nostr.Tag{"h", id})
	hostile := []string{
		`<img src=x onerror="window.pwned='img'">`,
		`<script>window.pwned='script'</script>`,
		"```\n</code></pre><img src=x onerror=\"window.pwned='fence'\">\n```",
		"`<svg onload=\"window.pwned='inline'\">`",
		`javascript:window.pwned='link' and [x](javascript:window.pwned='md')`,
		`https://example.com/"><img src=x onerror="window.pwned='href'">`,
	}
	for _, c := range hostile {
		pub(9, c, nostr.Tag{"h", id})
	}
	waitJS(t, ctx, "the hostile messages", fmt.Sprintf(`document.querySelectorAll('#feed article').length === %d`, len(hostile)))
	for _, c := range hostile {
		first := strings.Split(c, "\n")[0]
		if first == "```" {
			first = "</code></pre><img"
		}
		if strings.Contains(first, "](javascript:") {
			first = "javascript:window.pwned='link' and x" // the link's text, inert
		}
		waitJS(t, ctx, "literal text of "+first, textIn(`#feed article .msg-body`, strings.Trim(first, "`")))
	}
	pwned, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.pwned)`))
	if pwned != "undefined" {
		t.Errorf("window.pwned = %q: event content ran as code", pwned)
	}
	for _, css := range []string{"#feed img", "#feed script", "#feed svg", `a[href^="javascript"]`, `a[href*="script:"]`, "#feed [onerror]", "#feed [onload]"} {
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, css)))
		if n != 0 {
			t.Errorf("%d elements match %s: content became markup", n, css)
		}
	}
	href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#feed a')?.getAttribute('href') || ''`))
	if href != "https://example.com/" {
		t.Errorf("link href = %q; want the URL cut at the quote", href)
	}
	waitJS(t, ctx, "the hostile name as text", textIn(`#feed .author`, `<img src=x onerror="window.pwned='name'">Mallory`))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserChannelsAndRendering covers the rest of a working day: a
// forum channel with posts and comments, unread counts, a diff (kind
// 40008), the harness's failure notice, the canvas, search, the topic,
// adding a member by npub, and deleting one's own message.
func TestBrowserChannelsAndRendering(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	shots := t.TempDir()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() { // accepts every confirm(); ends when ctx ends
		for _, err := range dialogs {
			if err != nil {
				return
			}
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	erinSK := signInNew(t, ctx, base, "Erin")
	me, _ := nostr.GetPublicKey(erinSK)
	alpha := createChannel(t, ctx, "alpha", false)
	ideas := createChannel(t, ctx, "ideas", true)

	bobPeer := newPeer(t, base)
	rel, rctx, bob, pub := bobPeer.rel, bobPeer.ctx, bobPeer.pk, bobPeer.publish
	pub(0, `{"name":"Bob"}`)
	pub(9021, "", nostr.Tag{"h", alpha})

	// A forum post and a comment from the page.
	do(t, ctx, "post in the forum", chromedp.SendKeys(labelled("New post in ideas"), "a forum post"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the post", textIn(`#feed article`, "a forum post"))
	forumPost := `//article[.//p[contains(.,"a forum post")]]`
	do(t, ctx, "open the comments", chromedp.Focus(chromedp.Search(forumPost)), chromedp.Click(chromedp.Search(forumPost+`//button[@aria-label="Reply in thread"]`)))
	do(t, ctx, "comment", chromedp.SendKeys(labelled("Thread reply"), "a comment"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the comment", textIn(`#thread article`, "a comment"))
	do(t, ctx, "close the thread", chromedp.Click(button("Close thread")))

	// Unread: Bob writes in alpha while Erin reads ideas.
	pub(9, "unread one", nostr.Tag{"h", alpha})
	waitJS(t, ctx, "the unread count", `[...document.querySelectorAll('#channel-list a')].some((a) => a.getAttribute('aria-label') === 'channel alpha, 1 unread')`)
	shot(t, ctx, shots, "unread-desktop")
	do(t, ctx, "open alpha", chromedp.Click(chromedp.Search(`//a[@aria-label="channel alpha, 1 unread"]`)))
	waitJS(t, ctx, "alpha read", textIn("#channel-name", "alpha")+` && [...document.querySelectorAll('#channel-list a')].some((a) => a.getAttribute('aria-label') === 'channel alpha')`)

	// A diff, a failure notice and a canvas.
	diff := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@\n package x\n-old line\n+new line\n"
	pub(40008, diff, nostr.Tag{"h", alpha}, nostr.Tag{"repo", "buzzbox"}, nostr.Tag{"commit", "0123456789abcdef0123456789abcdef01234567"}, nostr.Tag{"file", "x.go"}, nostr.Tag{"description", "swap a line"})
	waitJS(t, ctx, "the diff", textIn(`#feed .diff .dl.add`, "+new line")+` && `+textIn(`#feed .diff .dl.del`, "-old line")+` && `+textIn(`#feed .diff-head`, "buzzbox @ 0123456 x.go"))
	pub(9, "⚠️ I could not process this message: the agent timed out. Please send it again.", nostr.Tag{"h", alpha})
	waitJS(t, ctx, "the failure notice", textIn(`#feed article.notice .badge`, "notice"))
	pub(40100, "Plan: ship the web client", nostr.Tag{"h", alpha})
	waitJS(t, ctx, "the canvas button", `!document.getElementById('canvas-btn').hidden`)
	do(t, ctx, "open the canvas", chromedp.Click(button("Canvas")))
	waitJS(t, ctx, "the canvas", textIn(`[role=region][aria-label="Channel canvas"]`, "Plan: ship the web client"))
	shot(t, ctx, shots, "rendering-desktop")

	// Search.
	do(t, ctx, "search", chromedp.SendKeys(labelled("Search messages"), "unread"))
	waitJS(t, ctx, "one match", `document.querySelectorAll('#feed article').length === 1 && `+textIn(`#feed article`, "unread one"))
	do(t, ctx, "clear the search", chromedp.SetValue(labelled("Search messages"), " "), chromedp.SendKeys(labelled("Search messages"), kb.Backspace))
	waitJS(t, ctx, "all messages again", `document.querySelectorAll('#feed article').length === 3`)

	// Topic and a member added by npub.
	fsk := nostr.GeneratePrivateKey()
	frank, _ := nostr.GetPublicKey(fsk)
	fnpub, _ := nip19.EncodePublicKey(frank)
	do(t, ctx, "open members", chromedp.Click(button("Members")))
	do(t, ctx, "set the topic", chromedp.Click(button("Topic")), chromedp.SendKeys(labelled("Topic"), "shipping"), chromedp.Click(button("Set topic")))
	waitJS(t, ctx, "the topic", textIn("#channel-topic", "shipping"))
	do(t, ctx, "open members again", chromedp.Click(button("Members")))
	do(t, ctx, "add Frank", chromedp.Click(button("Add people")), chromedp.SendKeys(labelled("Add a member (npub, hex key or name of a known person)"), fnpub), chromedp.Click(button("Add member")))
	waitJS(t, ctx, "Frank a member", fmt.Sprintf(`window.buzz.store.channels.get(%q).members.get(%q) === 'member'`, alpha, frank))

	// Delete my own message.
	post(t, ctx, "alpha", "to be deleted")
	mine := `//article[.//p[contains(.,"to be deleted")]]`
	do(t, ctx, "delete", chromedp.Focus(chromedp.Search(mine)), chromedp.Click(chromedp.Search(mine+`//button[@aria-label="Delete message"]`)))
	waitJS(t, ctx, "the message gone", `!(`+textIn(`#feed article`, "to be deleted")+`)`)

	evs, err := rel.QuerySync(rctx, nostr.Filter{Authors: []string{me}, Kinds: []int{45001, 45003, 9002, 9000, 9005}})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[int]int{}
	for _, ev := range evs {
		kinds[ev.Kind]++
		if ok, _ := ev.CheckSignature(); !ok {
			t.Errorf("event %s kind %d fails go-nostr's check", ev.ID, ev.Kind)
		}
		if ev.Kind == 45003 && ev.Tags.FindWithValue("h", ideas) == nil {
			t.Errorf("forum comment tags %v lack the channel", ev.Tags)
		}
	}
	for _, k := range []int{45001, 45003, 9002, 9000, 9005} {
		if kinds[k] != 1 {
			t.Errorf("relay holds %d kind %d events from the page; want 1 (all: %v)", kinds[k], k, kinds)
		}
	}
	_ = bob

	// Erin deletes alpha (from another client of hers): it leaves the list
	// and its view says so.
	del := nostr.Event{Kind: 9008, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", alpha}}}
	del.Sign(erinSK)
	if err := rel.Publish(rctx, del); err != nil {
		t.Fatalf("delete alpha: %v", err)
	}
	waitJS(t, ctx, "alpha gone", `![...document.querySelectorAll('#channel-list a')].some((a) => a.textContent.includes('alpha')) && `+textIn("#composer-slot", "This channel was deleted."))
	for _, e := range consoleErrors() {
		if !strings.Contains(e, "status of 403") { // the page asks once for the relay's member list; a member is refused
			t.Errorf("browser console: %s", e)
		}
	}
}

// manageCall makes a NIP-86 call to the relay at base as sk and returns
// the raw answer.
func manageCall(t testing.TB, base, sk, method string, params ...any) []byte {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"method": method, "params": params})
	sec, _ := nostrkey.ParseSecret(sk)
	hdr, err := nip98.Header(sec, base+"/", http.MethodPost, nip98.Options{Body: body, Nonce: true})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/nostr+json+rpc")
	req.Header.Set("Authorization", hdr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s = %d %s", method, res.StatusCode, b)
	}
	return b
}

// ownerRelay starts an in-process relay owned by a fresh key and returns
// it with the owner's secret.
func ownerRelay(t *testing.T) (*relay.Relay, string) {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: pk, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, sk
}

// peer is another client of the relay: go-nostr with a key of its own,
// connected until the test ends.
type peer struct {
	t      testing.TB
	ctx    context.Context // bounds everything the peer does
	rel    *nostr.Relay
	sk, pk string
}

// newPeer connects a new key to the relay at url (its http:// base or its
// ws:// URL).
func newPeer(t testing.TB, url string) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if rest, ok := strings.CutPrefix(url, "http"); ok {
		url = "ws" + rest
	}
	rel, err := nostr.RelayConnect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rel.Close() })
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	return &peer{t: t, ctx: ctx, rel: rel, sk: sk, pk: pk}
}

// auth answers the relay's NIP-42 challenge with the peer's key, once it
// has come (the relay sends it as the connection opens).
func (p *peer) auth() {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.rel.Auth(p.ctx, func(ev *nostr.Event) error { return ev.Sign(p.sk) })
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("auth as %s: %v", p.pk, err)
		}
		time.Sleep(50 * time.Millisecond) // the challenge is on its way; nothing to wait on
	}
}

// publish signs an event dated now and publishes it.
func (p *peer) publish(kind int, content string, tags ...nostr.Tag) nostr.Event {
	p.t.Helper()
	return p.publishAt(nostr.Now(), kind, content, tags...)
}

// publishAt signs an event dated at and publishes it.
func (p *peer) publishAt(at nostr.Timestamp, kind int, content string, tags ...nostr.Tag) nostr.Event {
	p.t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: at, Content: content, Tags: tags}
	if err := ev.Sign(p.sk); err != nil {
		p.t.Fatal(err)
	}
	if err := p.rel.Publish(p.ctx, ev); err != nil {
		p.t.Fatalf("publish kind %d %q: %v", kind, content, err)
	}
	return ev
}

// authed connects to r as sk and answers the AUTH challenge.
func authed(t *testing.T, ctx context.Context, r *relay.Relay, sk string) *nostr.Relay {
	t.Helper()
	rel, err := nostr.RelayConnect(ctx, r.URL())
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

// TestBrowserInviteLink: an owner makes an invite to a channel (NIP-86
// createinvite); a person opens the link, makes a key, and the page
// redeems the invite under that key's NIP-98 token, joins and posts. The
// same link a second time is refused with the relay's reason.
func TestBrowserInviteLink(t *testing.T) {
	ctx, consoleErrors := browser(t)
	r, osk := ownerRelay(t)
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel := authed(t, rctx, r, osk)
	id := "0c7f3a52-5b0e-4b8e-9d3c-2a6f1e9b7c41"
	create := nostr.Event{Kind: 9007, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", id}, {"name", "welcome"}, {"visibility", "open"}, {"channel_type", "stream"}}}
	create.Sign(osk)
	if err := rel.Publish(rctx, create); err != nil {
		t.Fatal(err)
	}
	b := manageCall(t, r.HTTPURL(), osk, "createinvite", map[string]any{"channels": []string{id}})
	var rep struct {
		Result struct{ Token, URL string }
		Error  string
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Result.URL == "" {
		t.Fatalf("createinvite = %s", b)
	}

	openURL(t, ctx, "open the invite", rep.Result.URL)
	waitJS(t, ctx, "the sign-in dialog", `document.getElementById('signin').open && document.getElementById('signin-title').textContent.includes('invited')`)
	if h, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); strings.Contains(h, rep.Result.Token) {
		t.Errorf("address bar still holds the invite token: %s", h)
	}
	do(t, ctx, "create a key", chromedp.SendKeys(labelled("Your name"), "Grace"), chromedp.Click(button("Create a new key")))
	waitJS(t, ctx, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	do(t, ctx, "saved", chromedp.Click(button("I have saved it")))
	waitJS(t, ctx, "the invite accepted", textIn("#notice", "Invite accepted"))
	waitJS(t, ctx, "the channel", textIn("#channel-name", "welcome"))
	post(t, ctx, "welcome", "glad to be here")
	evs, err := rel.QuerySync(rctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {id}}})
	if err != nil || len(evs) != 1 || evs[0].Content != "glad to be here" {
		t.Fatalf("channel holds %d messages (%v); want the invited person's", len(evs), err)
	}

	do(t, ctx, "forget the key", chromedp.Evaluate[chromedp.Void](`localStorage.clear()`), chromedp.Navigate("about:blank"), chromedp.Navigate(rep.Result.URL))
	waitJS(t, ctx, "the sign-in dialog", `document.getElementById('signin').open`)
	do(t, ctx, "create another key", chromedp.Click(button("Create a new key")))
	waitJS(t, ctx, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	do(t, ctx, "saved", chromedp.Click(button("I have saved it")))
	waitJS(t, ctx, "the refusal", textIn("#notice", "can no longer be used")+` && `+textIn("#notice", "already used"))
	for _, e := range consoleErrors() {
		if !strings.Contains(e, "410") { // the refused redemption is logged by the browser
			t.Errorf("browser console: %s", e)
		}
	}
}

// TestBrowserOwnerRevokesInvite: the channel's members dialog lists its
// pending invites (NIP-86 listinvites, not those of other channels) with
// a Revoke button; revoking one there ends the link: a browser opening it
// is told it can no longer be used.
func TestBrowserOwnerRevokesInvite(t *testing.T) {
	owner, ownerErrors := browser(t)
	r, osk := ownerRelay(t)
	tok, err := r.LoginToken(osk)
	if err != nil {
		t.Fatal(err)
	}
	openURL(t, owner, "open the sign-in link", r.HTTPURL()+"/#login="+tok)
	waitJS(t, owner, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	other := createChannel(t, owner, "elsewhere", false)
	manageCall(t, r.HTTPURL(), osk, "createinvite", map[string]any{"channels": []string{other}})
	createChannel(t, owner, "partners", false)
	link := createInviteLink(t, owner)
	waitJS(t, owner, "one pending invite listed", `!document.getElementById('invites').hidden && document.querySelectorAll('#invite-list li').length === 1`)
	if html, _ := chromedp.Run(owner, chromedp.Evaluate[string](`document.getElementById('invites').innerHTML`)); strings.Contains(html, link[strings.Index(link, "=")+1:]) {
		t.Errorf("the invite list shows the token: %s", html)
	}
	do(t, owner, "revoke it", chromedp.Click(button("Revoke")))
	waitJS(t, owner, "the list emptied", `document.getElementById('invites').hidden && document.querySelectorAll('#invite-list li').length === 0`)
	var left struct{ Result []struct{ Channels []string } }
	json.Unmarshal(manageCall(t, r.HTTPURL(), osk, "listinvites"), &left)
	if len(left.Result) != 1 || len(left.Result[0].Channels) != 1 || left.Result[0].Channels[0] != other {
		t.Errorf("listinvites after the revoke = %+v; want only the other channel's invite", left.Result)
	}

	guest, guestErrors := browser(t)
	openURL(t, guest, "open the revoked invite", link)
	waitJS(t, guest, "the sign-in dialog", `document.getElementById('signin').open`)
	do(t, guest, "create a key", chromedp.Click(button("Create a new key")))
	waitJS(t, guest, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	do(t, guest, "saved", chromedp.Click(button("I have saved it")))
	waitJS(t, guest, "the refusal", textIn("#notice", "can no longer be used")+` && `+textIn("#notice", "revoked"))
	for _, e := range ownerErrors() {
		t.Errorf("owner's browser console: %s", e)
	}
	for _, e := range guestErrors() {
		if !strings.Contains(e, "410") { // the refused redemption is logged by the browser
			t.Errorf("guest's browser console: %s", e)
		}
	}
}

// TestBrowserLoginLink: the owner's one-time link signs the browser in
// as the owner without a dialog; the link is gone from the address bar,
// and the same link again is refused.
func TestBrowserLoginLink(t *testing.T) {
	ctx, consoleErrors := browser(t)
	r, osk := ownerRelay(t)
	opk, _ := nostr.GetPublicKey(osk)
	tok, err := r.LoginToken(osk)
	if err != nil {
		t.Fatal(err)
	}
	link := r.HTTPURL() + "/#login=" + tok
	openURL(t, ctx, "open the link", link)
	waitJS(t, ctx, "signed in as the owner", fmt.Sprintf(`window.buzz && window.buzz.me === %q && document.getElementById('status').dataset.state === 'authenticated'`, opk))
	if open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('signin').open`)); open {
		t.Error("the sign-in dialog opened although the link signed in")
	}
	if h, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); strings.Contains(h, tok) {
		t.Errorf("address bar still holds the login token: %s", h)
	}
	createChannel(t, ctx, "owner-room", false)

	do(t, ctx, "forget the key", chromedp.Evaluate[chromedp.Void](`localStorage.clear()`), chromedp.Navigate("about:blank"), chromedp.Navigate(link))
	waitJS(t, ctx, "the refusal", `document.getElementById('signin').open && `+textIn("#signin-error", "already used"))
	for _, e := range consoleErrors() {
		if !strings.Contains(e, "410") {
			t.Errorf("browser console: %s", e)
		}
	}
}

// TestBrowserNIP07Extension: with window.nostr present the person signs
// in through it; the page keeps no key of its own and every event carries
// the extension's pubkey.
func TestBrowserNIP07Extension(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	ext := fmt.Sprintf(`window.nostr = {
		calls: 0,
		getPublicKey: async () => %[1]q,
		signEvent: async (e) => { window.nostr.calls++; const m = await import('/static/js/event.js'); const h = await import('/static/js/sha256.js'); return m.finalize(e, h.unhex(%[2]q)); },
	};`, pk, sk)
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: ext}); err != nil {
		t.Fatal(err)
	}
	openURL(t, ctx, "open the page", base+"/")
	waitJS(t, ctx, "the extension button", `document.getElementById('signin').open && !document.getElementById('use-extension').hidden`)
	do(t, ctx, "use the extension", chromedp.Click(button("Use my browser extension (NIP-07)")))
	waitJS(t, ctx, "signed in", fmt.Sprintf(`window.buzz && window.buzz.me === %q`, pk))
	createChannel(t, ctx, "via-extension", false)
	post(t, ctx, "via-extension", "signed by the extension")
	calls, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.nostr.calls`))
	if calls < 2 {
		t.Errorf("the extension signed %d events; want the channel and the message at least", calls)
	}
	stored, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(localStorage)`))
	if strings.Contains(stored, sk) || strings.Contains(stored, "buzz.key") {
		t.Errorf("localStorage = %s; want no key kept when an extension signs", stored)
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserReconnects: the relay goes away and comes back on the same
// address; the page says it is offline, reconnects by itself and shows
// what was published meanwhile and after, without a reload.
func TestBrowserReconnects(t *testing.T) {
	ctx, _ := browser(t)
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// start serves a relay on addr over data; the returned func stops it.
	start := func() (stop func()) {
		r, err := relay.New(relay.Config{DataDir: data, Open: true, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Serve(sctx, l) }() // ends when stop cancels sctx
		var once sync.Once
		stop = func() { once.Do(func() { cancel(); <-done; r.Close() }) }
		t.Cleanup(stop)
		return stop
	}
	stop := start()
	base := "http://" + addr
	signInNew(t, ctx, base, "Heidi")
	id := createChannel(t, ctx, "steady", false)
	stop()
	waitJS(t, ctx, "the offline state", `document.getElementById('status').dataset.state === 'offline'`)
	start()
	bob := newPeer(t, base)
	bob.publish(9021, "", nostr.Tag{"h", id})
	bob.publish(9, "after the restart", nostr.Tag{"h", id})
	waitJS(t, ctx, "the message after reconnecting", textIn(`#feed article`, "after the restart"))
	post(t, ctx, "steady", "still here")
}

// TestBrowserChannelHistory: a quiet channel's old message is outside the
// workspace-wide window that a busy channel fills, and opening the quiet
// channel still shows it; the busy channel pages back on request.
func TestBrowserChannelHistory(t *testing.T) {
	ctx, _ := browser(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Open: true, EventsPerSecond: 1e6, EventBurst: 1e6,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	author := newPeer(t, r.URL())
	quiet, busy := "1a2b3c4d-0000-4000-8000-00000000000a", "1a2b3c4d-0000-4000-8000-00000000000b"
	then := nostr.Now() - 3600
	pub := author.publishAt
	pub(then, 9007, "", nostr.Tag{"h", quiet}, nostr.Tag{"name", "quiet"}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	pub(then, 9007, "", nostr.Tag{"h", busy}, nostr.Tag{"name", "busy"}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	archive := "1a2b3c4d-0000-4000-8000-00000000000c"
	pub(then, 9007, "", nostr.Tag{"h", archive}, nostr.Tag{"name", "archive"}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	pub(then+1, 9, "the one old message", nostr.Tag{"h", quiet})
	const archived = 320
	for i := range archived {
		pub(then+2+nostr.Timestamp(i), 9, fmt.Sprintf("archive %d", i), nostr.Tag{"h", archive})
	}
	const many = 1100
	for i := range many {
		pub(then+2+archived+nostr.Timestamp(i), 9, fmt.Sprintf("busy %d", i), nostr.Tag{"h", busy})
	}

	signInNew(t, ctx, r.HTTPURL(), "Ivan")
	waitJS(t, ctx, "the channel list", `document.querySelectorAll('#channel-list a').length === 3`)
	inWindow, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...window.buzz.store.events.values()].some((e) => e.content === 'the one old message')`))
	if inWindow {
		t.Log("the old message came with the workspace-wide window; the test proves less than it should")
	}
	openChannel(t, ctx, "quiet")
	waitJS(t, ctx, "the old message", textIn(`#feed article`, "the one old message"))
	// Search: the filter sees what the page holds; Enter asks the relay.
	openChannel(t, ctx, "archive")
	waitJS(t, ctx, "the newest archive message", textIn(`#feed article`, fmt.Sprintf("archive %d", archived-1)))
	do(t, ctx, "filter", chromedp.SendKeys(labelled("Search messages"), "archive 31"))
	waitJS(t, ctx, "the matches the page holds", `document.querySelectorAll('#feed article').length === 11 && `+textIn(`#feed article`, "archive 319"))
	// Enter sends the search to the relay's bridge under the page's NIP-98
	// token. (The relay's search reads only its newest events per filter,
	// so an old match is not asserted here.)
	do(t, ctx, "search the relay", chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the relay's answer", textIn("#search-status", " matches on the relay"))
	openChannel(t, ctx, "busy")
	waitJS(t, ctx, "the newest busy message", textIn(`#feed article`, fmt.Sprintf("busy %d", many-1)))
	waitJS(t, ctx, "the older button", `!document.getElementById('older').hidden`)
	before, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#feed article').length`))
	do(t, ctx, "load older", chromedp.Click(button("Load older messages")))
	waitJS(t, ctx, "older messages", fmt.Sprintf(`document.querySelectorAll('#feed article').length > %d`, before))
}

// TestBrowserNotYetMember: a key the relay does not admit gets a clear
// explanation with the npub to hand to the owner, not an empty page, in
// a banner that can be dismissed.
func TestBrowserNotYetMember(t *testing.T) {
	ctx, _ := browser(t)
	r, _ := ownerRelay(t)
	sk := signInNew(t, ctx, r.HTTPURL(), "Judy")
	pk, _ := nostr.GetPublicKey(sk)
	npub, _ := nip19.EncodePublicKey(pk)
	waitJS(t, ctx, "the explanation", textIn("#notice", "not a member")+` && `+textIn("#notice", npub))
	// The banner is dismissible.
	do(t, ctx, "dismiss the banner", chromedp.Click(chromedp.Search(`//*[@id="notice"]//button[@aria-label="Dismiss"]`)))
	waitJS(t, ctx, "the banner gone", `document.getElementById('notice').hidden`)
}

// TestBrowserOwnerCreatesInvite: the owner, signed in by the one-time
// link, makes an invite from the channel's members dialog (NIP-86
// createinvite signed by the page); a second browser opening the link
// joins that channel and posts in it.
func TestBrowserOwnerCreatesInvite(t *testing.T) {
	owner, _ := browser(t)
	r, osk := ownerRelay(t)
	tok, err := r.LoginToken(osk)
	if err != nil {
		t.Fatal(err)
	}
	openURL(t, owner, "open the sign-in link", r.HTTPURL()+"/#login="+tok)
	waitJS(t, owner, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	createChannel(t, owner, "guests", false)
	link := createInviteLink(t, owner)

	guest, consoleErrors := browser(t)
	openURL(t, guest, "open the invite", link)
	waitJS(t, guest, "the invited sign-in", `document.getElementById('signin').open && document.getElementById('signin-title').textContent.includes('invited')`)
	do(t, guest, "create a key", chromedp.SendKeys(labelled("Your name"), "Hedy"), chromedp.Click(button("Create a new key")))
	waitJS(t, guest, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	do(t, guest, "saved", chromedp.Click(button("I have saved it")))
	waitJS(t, guest, "the invite accepted", textIn("#notice", "Invite accepted"))
	waitJS(t, guest, "the channel", textIn("#channel-name", "guests"))
	do(t, guest, "post", chromedp.SendKeys(labelled("Message #guests"), "hello from Hedy"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, owner, "the guest's message at the owner's", textIn(`#feed article`, "hello from Hedy"))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
