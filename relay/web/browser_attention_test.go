package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
)

// notificationHook is installed in the page before its scripts run: it
// keeps every Notification the page makes (window.__notes: title, body,
// the notification itself, to click) and every permission request with
// whether a user gesture was active (window.__asks). The real
// constructor and request still run; the browser's permission is granted
// through DevTools, as a person's "Allow" would.
const notificationHook = `(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  window.__asks = [];
  class Hooked extends Real {
    constructor(title, opts = {}) { super(title, opts); window.__notes.push({ title, body: opts.body || '', tag: opts.tag || '', n: this }); }
    static get permission() { return Real.permission; }
    static requestPermission(...a) { window.__asks.push({ gesture: navigator.userActivation.isActive }); return Real.requestPermission(...a); }
  }
  window.Notification = Hooked;
})()`

// hookNotifications installs notificationHook in every document ctx loads.
func hookNotifications(t testing.TB, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: notificationHook}); err != nil {
		t.Fatalf("install the notification hook: %v", err)
	}
}

// grantNotifications answers the browser's permission prompt for origin with Allow.
func grantNotifications(t testing.TB, ctx context.Context, origin string) {
	t.Helper()
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin,
	}); err != nil {
		t.Fatalf("grant notifications: %v", err)
	}
}

// setWindow minimizes (hidden) or restores (visible) the tab's window:
// a minimized window's page is hidden (document.visibilityState), as
// when a person switches to another application.
func setWindow(t testing.TB, ctx context.Context, minimized bool) {
	t.Helper()
	win, err := chromedp.CallBrowser(ctx, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{TargetID: chromedp.FromContext(ctx).Target.TargetID})
	if err != nil {
		t.Fatalf("the tab's window: %v", err)
	}
	state, want := cdpbrowser.WindowStateNormal, "visible"
	if minimized {
		state, want = cdpbrowser.WindowStateMinimized, "hidden"
	}
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetWindowBounds, cdpbrowser.SetWindowBoundsParams{WindowID: win.WindowID, Bounds: &cdpbrowser.Bounds{WindowState: state}}); err != nil {
		t.Fatalf("set the window %s: %v", state, err)
	}
	waitJS(t, ctx, "the page "+want, `document.visibilityState === '`+want+`'`)
}

// authenticated waits for the page's NIP-42 login: until then the relay
// treats it as a stranger, and a private channel's events made meanwhile
// do not reach it live.
func authenticated(t testing.TB, ctx context.Context) {
	t.Helper()
	waitJS(t, ctx, "the page signed in to the relay", `document.getElementById('status').dataset.state === 'authenticated'`)
}

// within waits up to d for a page expression to be truthy.
func within(t testing.TB, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s within %v: %v\npage text:\n%s", what, d, err, text)
	}
}

// mentionsOf is a JS expression: the mention badge the channel list
// shows for the channel named name (0 for none).
func mentionsOf(name string) string {
	return fmt.Sprintf(`(() => { const a = [...document.querySelectorAll('#channel-list a')].find((a) => a.querySelector('.chan-name')?.textContent === %q); const n = a?.parentElement.querySelector('.mention-count'); return a ? (n ? Number(n.textContent.slice(1)) : 0) : -1; })()`, name)
}

// faviconBadge is a JS promise: the favicon's count and whether its
// badge corner is painted red, read back from the drawn image.
const faviconBadge = `new Promise((resolve) => {
  const link = document.querySelector('link[rel=icon]');
  const img = new Image();
  img.onload = () => {
    const c = document.createElement('canvas');
    c.width = c.height = 64;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const [r, gr, b] = g.getImageData(58, 8, 1, 1).data;
    resolve(JSON.stringify({ count: link.dataset.count, data: link.href.startsWith('data:image/png'), red: r > 180 && gr < 60 && b < 60 }));
  };
  img.onerror = () => resolve('{"error":true}');
  img.src = link.href;
})`

// TestBrowserMentionsStandOut: a mention shows as a badge of its own
// beside the unread count, the tab title and the favicon carry the
// total, "Turn on notifications" asks for permission only when pressed,
// and while the tab is hidden a mention, a reply in a thread the person
// wrote in and a direct message each become a browser notification (a
// plain message does not); clicking one opens that message.
func TestBrowserMentionsStandOut(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	shots := t.TempDir()
	base := w.base()
	hookNotifications(t, ctx)
	// Ana is the owner, Bob a teammate she invited; #general is up's.
	signInAsOwner(t, ctx, w)
	ana, _ := nostr.GetPublicKey(w.ownerKey(t))
	bob := w.join(t, "Bob")
	general, random, dm := w.channel, "5e6f7081-0000-4000-8000-000000000002", "5e6f7081-0000-4000-8000-000000000003"
	at := nostr.Now() - 60
	makeChannel(bob, random, "random", at, ana)
	bob.publishAt(at, 9007, "", nostr.Tag{"h", dm}, nostr.Tag{"name", "Bob and Ana"}, nostr.Tag{"visibility", "private"}, nostr.Tag{"private"}, nostr.Tag{"channel_type", "stream"})
	bob.publishAt(at, 9000, "", nostr.Tag{"h", dm}, nostr.Tag{"p", ana}, nostr.Tag{"role", "member"})
	openChannel(t, ctx, "random")
	post(t, ctx, "random", "my own message in random")

	// Unread and mentions, apart.
	bob.publish(9, "hello everyone", nostr.Tag{"h", general})
	bob.publish(9, "@Ana have a look", nostr.Tag{"h", general}, nostr.Tag{"p", ana})
	bob.publish(9, "@Ana and this one", nostr.Tag{"h", general}, nostr.Tag{"p", ana})
	waitJS(t, ctx, "2 mentions beside 3 unread", mentionsOf("general")+` === 2 && `+unreadOf("general")+` === 3`)
	waitJS(t, ctx, "the count in the title", `document.title === '(2) random · buzz'`)
	var icon struct {
		Count string `json:"count"`
		Data  bool   `json:"data"`
		Red   bool   `json:"red"`
		Error bool   `json:"error"`
	}
	waitJS(t, ctx, "the favicon's count", `document.querySelector('link[rel=icon]').dataset.count === '2'`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](faviconBadge, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &icon); err != nil || !icon.Data || !icon.Red || icon.Error {
		t.Errorf("favicon = %s; want a data:image/png with a red badge", got)
	}
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#channel-list a[href$="`+general+`"]').getAttribute('aria-label')`))
	if label != "channel general, 3 unread, 2 mentions" {
		t.Errorf("general's label = %q; want the mentions named apart", label)
	}
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "mentions-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844), chromedp.Click(button("Show channels")))
	shot(t, ctx, shots, "mentions-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	// Permission: asked for only on the person's click.
	waitJS(t, ctx, "the Turn on notifications control", `!document.getElementById('notify-on').hidden`)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__asks.length`)); n != 0 {
		t.Errorf("the page asked for notification permission %d times before the person pressed anything", n)
	}
	do(t, ctx, "turn on notifications", chromedp.Click(button("Turn on notifications")))
	waitJS(t, ctx, "one request, on the click", `window.__asks.length === 1 && window.__asks[0].gesture`)
	grantNotifications(t, ctx, base)
	waitJS(t, ctx, "permission granted", `Notification.permission === 'granted'`)

	// Hidden: a plain message stays quiet; a mention, a reply in Ana's
	// thread and a direct message notify.
	mine, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed article.mine')].pop().dataset.id`))
	setWindow(t, ctx, true)
	bob.publish(9, "nothing for Ana", nostr.Tag{"h", general})
	mention := bob.publish(9, "@Ana are you there?", nostr.Tag{"h", general}, nostr.Tag{"p", ana})
	reply := bob.publish(9, "answering your message", nostr.Tag{"h", random}, nostr.Tag{"e", mine, "", "reply"})
	direct := bob.publish(9, "psst, just between us", nostr.Tag{"h", dm})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.__notes.length >= 3`, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		notes, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__notes.map((n) => n.title).join('; ')`))
		t.Fatalf("waiting for three notifications: %v; got %s", err, notes)
	}
	notes, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__notes.map((n) => n.tag + ' ' + n.title + ': ' + n.body).join('\n')`))
	for _, want := range []string{
		mention.ID + " Bob mentioned you in #general: @Ana are you there?",
		reply.ID + " Bob replied in a thread in #random: answering your message",
		direct.ID + " Bob (direct message): psst, just between us",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notifications:\n%s\nwant one %q", notes, want)
		}
	}
	if strings.Contains(notes, "nothing for Ana") || strings.Count(notes, "\n") != 2 {
		t.Errorf("notifications:\n%s\nwant exactly the three", notes)
	}
	waitJS(t, ctx, "the hidden tab's title counts on", `document.title === '(4) random · buzz'`)

	// Clicking a notification opens its message.
	setWindow(t, ctx, false)
	do(t, ctx, "click the direct message's notification", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__notes.find((n) => n.tag === %q).n.onclick()`, direct.ID)))
	waitJS(t, ctx, "the direct message, open and focused", fmt.Sprintf(`location.hash === '#/c/%s' && document.activeElement?.dataset?.id === %q`, dm, direct.ID))
	do(t, ctx, "click the thread reply's notification", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__notes.find((n) => n.tag === %q).n.onclick()`, reply.ID)))
	waitJS(t, ctx, "the reply, in its open thread", fmt.Sprintf(`location.hash === '#/c/%s' && !document.getElementById('thread').hidden && document.activeElement?.closest('#thread-feed')?.querySelector('article[data-id=%q]') === document.activeElement`, random, reply.ID))
	shot(t, ctx, shots, "notification-opened-desktop")
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserNotifySettingSyncs: two browsers signed in with the same key
// agree on a channel's notification setting: muted on one, the other
// shows it muted without a reload (no unread count, mentions still
// counted), and a reload keeps it: it is the person's own event on the
// relay, not browser state.
func TestBrowserNotifySettingSyncs(t *testing.T) {
	w := startTeam(t)
	phone, phoneErrors := browser(t)
	laptop, laptopErrors := browser(t)
	base := w.base()
	member := w.join(t, "Vic")
	sk, vic := member.sk, member.pk
	bob := w.join(t, "Bob")
	noisy, lobby := "6f708192-0000-4000-8000-000000000001", "6f708192-0000-4000-8000-000000000002"
	at := nostr.Now() - 60
	makeChannel(bob, noisy, "noisy", at, vic)
	makeChannel(bob, lobby, "lobby", at, vic)
	signInKey(t, phone, base, sk)
	signInKey(t, laptop, base, sk)
	openChannel(t, laptop, "noisy")
	waitJS(t, laptop, "the setting, at its default", `document.getElementById('notify-level').value === 'mentions' && !document.getElementById('notify-level').hidden`)
	do(t, laptop, "mute noisy", chromedp.SetValue(labelled("Notifications for this channel"), "mute"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('notify-level').dispatchEvent(new Event('change'))`))
	openChannel(t, laptop, "lobby")
	waitJS(t, phone, "muted on the other device, live", `window.buzz.prefs.level('`+noisy+`') === 'mute' && document.querySelector('#channel-list a[href$="`+noisy+`"]').classList.contains('muted')`)
	for i := range 3 {
		bob.publish(9, fmt.Sprint("chatter ", i), nostr.Tag{"h", noisy})
	}
	bob.publish(9, "@Vic one for you", nostr.Tag{"h", noisy}, nostr.Tag{"p", vic})
	for _, ctx := range []context.Context{phone, laptop} {
		waitJS(t, ctx, "the mention counted, the unread hidden", mentionsOf("noisy")+` === 1 && `+unreadOf("noisy")+` === 0`)
	}
	label, _ := chromedp.Run(phone, chromedp.Evaluate[string](`document.querySelector('#channel-list a[href$="`+noisy+`"]').getAttribute('aria-label')`))
	if label != "channel noisy, muted, 1 mention" {
		t.Errorf("noisy's label = %q; want it muted with its mention", label)
	}
	do(t, phone, "reload", chromedp.Reload())
	waitJS(t, phone, "still muted after a reload", `window.buzz && window.buzz.prefs.level('`+noisy+`') === 'mute' && `+mentionsOf("noisy")+` === 1`)
	openChannel(t, phone, "noisy")
	waitJS(t, phone, "the channel's setting shows muted", `document.getElementById('notify-level').value === 'mute'`)
	do(t, phone, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, phone, t.TempDir(), "notify-setting-desktop")
	for _, e := range append(phoneErrors(), laptopErrors()...) {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserTypingAndPresence: two people in two browsers (the owner of
// the built `buzzbox up` and a teammate he invites). Each sees the
// other online (member list, a dot on their avatar); Ana's typing shows
// in Bo's channel, at most one typing event every 3 s, and ends the
// moment her message arrives (not seconds later); typing in a thread
// shows in that thread, not in the channel; a hidden tab turns to away
// and back to online when it shows again.
func TestBrowserTypingAndPresence(t *testing.T) {
	w := startTeam(t)
	shots := t.TempDir()
	// Bo is the owner; he invites Ana from the members dialog.
	boCtx, boErrors := signInOwner(t, w)
	anaCtx, anaErrors := inviteMember(t, boCtx, "Ana", "general")
	bo, _ := nostr.GetPublicKey(w.ownerKey(t))
	ana, _ := chromedp.Run(anaCtx, chromedp.Evaluate[string](`window.buzz.me`))
	if len(ana) != 64 {
		t.Fatalf("Ana's key from her page = %q", ana)
	}
	authenticated(t, anaCtx)
	cy := w.join(t, "Cy")
	team := "708192a3-0000-4000-8000-000000000001"
	makeChannel(cy, team, "team", nostr.Now()-60, ana, bo)
	// A third client counts Ana's typing events, as any member could.
	watch, err := cy.rel.Subscribe(cy.ctx, nostr.Filters{{Kinds: []int{20002}, Authors: []string{ana}}})
	if err != nil {
		t.Fatal(err)
	}
	typed := func(d time.Duration) (n int) {
		deadline := time.After(d)
		for {
			select {
			case ev := <-watch.Events:
				if ev.Tags.FindWithValue("h", team) == nil {
					t.Errorf("Ana's typing event %v lacks the channel's h tag", ev.Tags)
				}
				n++
			case <-deadline:
				return n
			}
		}
	}
	for _, ctx := range []context.Context{anaCtx, boCtx} {
		openChannel(t, ctx, "team")
	}
	post(t, anaCtx, "team", "hello Bo")
	waitJS(t, boCtx, "Ana's message", textIn("#feed article", "hello Bo"))
	// Presence is not stored: Bo, who came second, learns of Ana at once
	// because her page answers his, not at her next minute.
	within(t, boCtx, 15*time.Second, "Ana online, a dot on her avatar", `[...document.querySelectorAll('#feed article')].some((a) => a.textContent.includes('hello Bo') && a.querySelector('.avatar .presence-dot.online'))`)
	do(t, boCtx, "open the members", chromedp.Click(button("Members")))
	member := func(pk, status string) string {
		return fmt.Sprintf(`document.querySelector('#members-list li[data-pk=%q] .presence-word')?.textContent === %q`, pk, status)
	}
	waitJS(t, boCtx, "Ana online in the member list", member(ana, "online"))
	do(t, boCtx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, boCtx, shots, "members-presence-desktop")
	do(t, boCtx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, boCtx, shots, "members-presence-phone")
	do(t, boCtx, "desktop size", chromedp.EmulateViewport(1440, 900), chromedp.Click(chromedp.ID("members-close")))

	// Ana types for about 4 s: Bo sees it; at most two events go out.
	typed(200 * time.Millisecond) // drain
	do(t, anaCtx, "start typing", chromedp.SendKeys(labelled("Message #team"), "I am wri"))
	waitJS(t, boCtx, "Ana is typing", `document.getElementById('typing').textContent === 'Ana is typing…'`)
	shot(t, boCtx, shots, "typing-desktop")
	stop := make(chan struct{})
	go func() { // keeps typing for 4 s; ends then
		defer close(stop)
		for range 8 {
			chromedp.Do(anaCtx, chromedp.SendKeys(labelled("Message #team"), "t"))
			time.Sleep(500 * time.Millisecond)
		}
	}()
	n := typed(4500 * time.Millisecond)
	<-stop
	if n < 1 || n > 2 {
		t.Errorf("Ana sent %d typing events while typing for 4 s; want 1 or 2 (one per 3 s)", n)
	}
	// Sent: the line ends with the message, and nothing more is typed.
	do(t, anaCtx, "send", chromedp.KeyEvent("\r"))
	waitJS(t, boCtx, "the message", textIn("#feed article", "I am wri"))
	within(t, boCtx, 1500*time.Millisecond, "the typing line ended by the message", `document.getElementById('typing').textContent === ''`)
	if n := typed(3500 * time.Millisecond); n != 0 {
		t.Errorf("Ana's page sent %d typing events after her message was sent", n)
	}

	// Typing in a thread shows in that thread.
	hello, _ := chromedp.Run(anaCtx, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('hello Bo')).dataset.id`))
	for _, ctx := range []context.Context{anaCtx, boCtx} {
		art := fmt.Sprintf(`//article[@data-id=%q]`, hello)
		do(t, ctx, "open the thread", chromedp.Focus(chromedp.Search(art)), chromedp.Click(chromedp.Search(art+`//button[@aria-label="Reply in thread"]`)))
		waitJS(t, ctx, "the thread", `!document.getElementById('thread').hidden`)
	}
	do(t, anaCtx, "type in the thread", chromedp.SendKeys(labelled("Thread reply"), "a thought"))
	waitJS(t, boCtx, "Ana typing in the thread", `document.getElementById('thread-typing').textContent === 'Ana is typing…'`)
	if line, _ := chromedp.Run(boCtx, chromedp.Evaluate[string](`document.getElementById('typing').textContent`)); line != "" {
		t.Errorf("the channel's typing line says %q while Ana types in a thread", line)
	}
	shot(t, boCtx, shots, "thread-typing-desktop")

	// Away while hidden, online again when shown.
	do(t, anaCtx, "a short away delay", chromedp.Evaluate[chromedp.Void](`window.buzz.presence.awayAfterMs = 300`))
	setWindow(t, anaCtx, true)
	do(t, boCtx, "close the thread, open the members", chromedp.Click(button("Close thread")), chromedp.Click(button("Members")))
	waitJS(t, boCtx, "Ana away", member(ana, "away"))
	setWindow(t, anaCtx, false)
	waitJS(t, boCtx, "Ana online again", member(ana, "online"))
	waitJS(t, anaCtx, "Bo online in Ana's page", `window.buzz.store.status(`+fmt.Sprintf("%q", bo)+`) === 'online'`)
	for _, e := range append(anaErrors(), boErrors()...) {
		if !strings.Contains(e, "403") { // the page asks NIP-86 once whether Ana manages the relay
			t.Errorf("browser console: %s", e)
		}
	}
}

// TestBrowserAgentTypingEndsWithReply: in the built `buzzbox up`, the
// agent's model takes a few seconds, so the harness's typing events
// (every 3 s) show "agent is typing…" in the message's thread, where it
// will answer, not on the channel's line; the moment the agent's reply
// arrives the line is gone, and so is the working line on the message,
// instead of lingering the seven seconds a typing event is shown for.
func TestBrowserAgentTypingEndsWithReply(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	model := llmtest.New(t)
	model.SetHandler(func(map[string]any) llmtest.Reply {
		time.Sleep(4 * time.Second) // a model thinking: the harness types meanwhile
		return llmtest.Reply{Text: agentReply}
	})
	w := startUp(t, model)
	ctx, consoleErrors := browser(t)
	openURL(t, ctx, "open the sign-in link", w.link)
	authenticated(t, ctx)
	do(t, ctx, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))
	do(t, ctx, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
	waitJS(t, ctx, "the agent in the mention list", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('agent'))`)
	do(t, ctx, "pick it and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "ping"), chromedp.KeyEvent(kb.Enter))
	// The agent answers in the message's thread, so it types there.
	open := `(() => {
	  const a = [...document.querySelectorAll('#feed article.mine')].find((x) => x.textContent.includes('ping'));
	  const b = a && a.querySelector('button[aria-label="Reply in thread"]');
	  if (b) b.click();
	  return !!b && !document.getElementById('thread').hidden;
	})()`
	waitJS(t, ctx, "the message's thread to open", open)
	waitJS(t, ctx, "the agent typing in the thread", `/is typing…$/.test(document.getElementById('thread-typing').textContent)`)
	if line, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('typing').textContent`)); line != "" {
		t.Errorf("the channel's typing line says %q while the agent types in a thread", line)
	}
	shot(t, ctx, t.TempDir(), "agent-typing-desktop")
	waitJS(t, ctx, "the agent's reply", `window.buzz.store.channelMessages(`+fmt.Sprintf("%q", w.channel)+`).some((e) => e.content === `+fmt.Sprintf("%q", agentReply)+`)`)
	within(t, ctx, 1500*time.Millisecond, "the typing and working lines gone with the reply",
		`document.getElementById('thread-typing').textContent === '' && !document.querySelector('#feed .working')`)
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
