package web_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// feedTexts is a JS expression: the texts of the channel's messages, top
// to bottom, joined by "|".
const feedTexts = `[...document.querySelectorAll('#feed article .msg-body')].map((b) => b.textContent).join('|')`

// TestBrowserOrderAfterReload: 50 messages typed in quick succession and
// 320 sent by another client as fast as the relay takes them (many in
// each second, as `buzz` sends them) show in the order they were sent,
// live and after a reload. Nostr timestamps are seconds: the tie-break is
// the relay's order, never the id.
func TestBrowserOrderAfterReload(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	shots := t.TempDir()
	signInAsOwner(t, ctx, w)
	createChannel(t, ctx, "quick", false)
	steps := []chromedp.Action[chromedp.Void]{}
	var want []string
	for i := range 50 {
		want = append(want, fmt.Sprintf("q%02d", i))
		steps = append(steps, chromedp.SendKeys(labelled("Message #quick"), want[i]), chromedp.KeyEvent(kb.Enter))
	}
	do(t, ctx, "type 50 messages", steps...)
	waitJS(t, ctx, "the 50 messages", fmt.Sprintf(`document.querySelectorAll('#feed article').length === 50 && %s`, textIn("#feed article", "q49")))
	// ordered checks that the feed shows a run of want, in want's order,
	// ending with want's last and at least least of them.
	ordered := func(what string, want []string, least int) {
		t.Helper()
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedTexts))
		shown := strings.Split(got, "|")
		tail := want[max(0, len(want)-len(shown)):]
		if len(shown) < least || strings.Join(tail, "|") != got {
			for i := range shown {
				if i >= len(tail) || shown[i] != tail[i] {
					t.Errorf("%s: %d shown, want %d or more in send order; first out of place at %d: %q, want %q", what, len(shown), least, i, shown[i], tail[min(i, len(tail)-1)])
					return
				}
			}
			t.Errorf("%s: %d shown, want %d or more", what, len(shown), least)
		}
	}
	ordered("typed, live", want, 50)
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the 50 messages after the reload", `document.querySelectorAll('#feed article').length === 50`)
	ordered("typed, after a reload", want, 50)

	// Another client sends 320 into a second channel, 40 to a second.
	cli := w.join(t, "Carl")
	busy := "2b3c4d5e-0000-4000-8000-000000000320"
	at := nostr.Now() - 60
	cli.publishAt(at, 9007, "", nostr.Tag{"h", busy}, nostr.Tag{"name", "fast"}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	var sent []string
	for i := range 320 {
		sent = append(sent, fmt.Sprintf("c%03d", i))
		cli.publishAt(at+nostr.Timestamp(i/40), 9, sent[i], nostr.Tag{"h", busy})
	}
	openChannel(t, ctx, "fast")
	waitJS(t, ctx, "the newest of the 320", textIn("#feed article", "c319"))
	ordered("sent by a client, live", sent, 150)
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the 320 after the reload", textIn("#feed article", "c319")+` && document.querySelectorAll('#feed article').length >= 150`)
	ordered("sent by a client, after a reload", sent, 150)
	shot(t, ctx, shots, "order-desktop")
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserOfflineQueue: the owner stops `buzzbox up` (Ctrl-C); the
// page says so in a banner with "Retry now", and what is typed meanwhile
// is kept, shown as sending, and sent once when up runs again, which the
// visible page finds within 5 s.
func TestBrowserOfflineQueue(t *testing.T) {
	w := startTeam(t)
	ctx, _ := browser(t)
	shots := t.TempDir()
	signInAsOwner(t, ctx, w)
	id := createChannel(t, ctx, "outage", false)
	post(t, ctx, "outage", "before the outage")
	tries := watchSockets(ctx, "ws://"+w.addr)
	w.stop()
	waitJS(t, ctx, "the offline banner", `!document.getElementById('net-banner').hidden && document.getElementById('net-banner').textContent.includes('You are offline')`)
	words := []string{"written while away 1", "written while away 2", "written while away 3"}
	for _, w := range words {
		do(t, ctx, "type "+w, chromedp.SendKeys(labelled("Message #outage"), w), chromedp.KeyEvent(kb.Enter))
		waitJS(t, ctx, w+" in the feed, sending", fmt.Sprintf(`[...document.querySelectorAll('#feed article[data-outbox=queued]')].some((a) => a.textContent.includes(%q))`, w))
	}
	left, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('textarea[aria-label="Message #outage"]').value`))
	if left != "" {
		t.Errorf("composer holds %q after sending offline; want it cleared (the words are in the outbox)", left)
	}
	waitJS(t, ctx, "the banner to count them", textIn("#net-banner", "3 messages will be sent when it is back"))
	waitJS(t, ctx, "a retry button", `[...document.querySelectorAll('#net-banner button')].some((b) => b.textContent === 'Retry now')`)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "offline-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "offline-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	// Far enough into the backoff that a plain doubling would wait long.
	time.Sleep(8 * time.Second)
	w.start(t)
	back := time.Now()
	waitJS(t, ctx, "the outbox to empty", `document.getElementById('status').dataset.state !== 'offline' && !document.querySelector('#feed article[data-outbox=queued]') && document.getElementById('net-banner').hidden`)
	if d := time.Since(back); d > 5*time.Second {
		t.Errorf("the page took %v to reconnect and send after the relay returned; want within 5 s", d.Round(100*time.Millisecond))
	}
	// Whenever the relay comes back, the visible page finds it within 5 s
	// only if it never waits longer than that between two tries.
	at := tries.times()
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap > 5*time.Second {
			t.Errorf("the visible page waited %v between its tries %d and %d to reach the relay; want at most 5 s", gap.Round(100*time.Millisecond), i, i+1)
		}
	}
	if len(at) < 3 {
		t.Errorf("the page tried to reach the relay %d times in the outage; want several", len(at))
	}
	w.wantEachOnce(t, id, words)
	// A reload sends nothing again: the outbox is empty.
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the channel after the reload", textIn("#feed article", words[2]))
	if q, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('buzz.outbox.' + window.buzz.me) || ''`)); q != "[]" && q != "" {
		t.Errorf("outbox after delivery = %s; want empty", q)
	}
}

// TestBrowserOutboxKeptAcrossClose: what is typed while the relay is
// away stays in the browser when the tab is closed, and the page opened
// again once the relay is back sends it from its outbox, once each, and
// then holds nothing more to send.
func TestBrowserOutboxKeptAcrossClose(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	signInAsOwner(t, ctx, w)
	id := createChannel(t, ctx, "closing", false)
	w.stop()
	waitJS(t, ctx, "the offline state", `document.getElementById('status').dataset.state === 'offline'`)
	words := []string{"typed before closing 1", "typed before closing 2"}
	for _, word := range words {
		do(t, ctx, "type "+word, chromedp.SendKeys(labelled("Message #closing"), word), chromedp.KeyEvent(kb.Enter))
		waitJS(t, ctx, word+" sending", fmt.Sprintf(`[...document.querySelectorAll('#feed article[data-outbox=queued]')].some((a) => a.textContent.includes(%q))`, word))
	}
	do(t, ctx, "close the page", chromedp.Navigate("about:blank"))
	w.start(t)
	openURL(t, ctx, "open the page again", w.base()+"/#/c/"+id)
	for _, word := range words {
		waitJS(t, ctx, word+" sent", fmt.Sprintf(`[...document.querySelectorAll('#feed article')].some((a) => a.textContent.includes(%q) && !a.dataset.outbox)`, word))
	}
	waitJS(t, ctx, "the outbox empty", `(localStorage.getItem('buzz.outbox.' + window.buzz.me) || '[]') === '[]'`)
	w.wantEachOnce(t, id, words)
	for _, e := range consoleErrors() {
		// The page may try the stopped relay before it is closed.
		if !strings.Contains(e, "ERR_CONNECTION_REFUSED") {
			t.Errorf("browser console: %s", e)
		}
	}
}

// sockets keeps the times at which a page opened a websocket.
type sockets struct {
	mu sync.Mutex
	at []time.Time
}

func (s *sockets) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

// watchSockets records each websocket the page in ctx opens to url from
// now on, each try to reach the relay.
func watchSockets(ctx context.Context, url string) *sockets {
	s := &sockets{}
	created := chromedp.Events(ctx, network.WebSocketCreated)
	go func() { // ends when ctx ends
		for ev, err := range created {
			if err != nil {
				return
			}
			if strings.TrimSuffix(ev.URL, "/") == url {
				s.mu.Lock()
				s.at = append(s.at, time.Now())
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// signInKey opens the page and signs in with an existing secret key.
func signInKey(t testing.TB, ctx context.Context, base, sk string) {
	t.Helper()
	nsec, _ := nip19.EncodePrivateKey(sk)
	openSignIn(t, ctx, base)
	do(t, ctx, "import the nsec", chromedp.SetValue(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), nsec), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "the dialog to close", `!document.getElementById('signin').open`)
}

// unreadOf is a JS expression: the unread count the channel list shows
// for the channel named name (0 for none).
func unreadOf(name string) string {
	return fmt.Sprintf(`(() => { const a = [...document.querySelectorAll('#channel-list a')].find((a) => a.querySelector('.chan-name')?.textContent === %q); const n = a?.parentElement.querySelector('.unread-count'); return a ? (n ? Number(n.textContent) : 0) : -1; })()`, name)
}

// makeChannel has p create an open channel and add members.
func makeChannel(p *peer, id, name string, at nostr.Timestamp, members ...string) {
	p.publishAt(at, 9007, "", nostr.Tag{"h", id}, nostr.Tag{"name", name}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	for _, m := range members {
		p.publishAt(at, 9000, "", nostr.Tag{"h", id}, nostr.Tag{"p", m}, nostr.Tag{"role", "member"})
	}
}

// TestBrowserUnreadCounts: counts are exact past the page's window (1 500
// unread in one channel, 320 in another), thread replies are counted on
// their thread, not in the channel, and a channel the person never
// joined shows none.
func TestBrowserUnreadCounts(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	shots := t.TempDir()
	uma := w.join(t, "Uma")
	// Five people write what Uma has not read, each within the relay's
	// per-person rate; bob is the first of them.
	team := w.team(t, "Bob", 5)
	bob := team[0]
	var writers []string
	for _, p := range team {
		writers = append(writers, p.pk)
	}
	big, mid, other := "3c4d5e6f-0000-4000-8000-000000001500", "3c4d5e6f-0000-4000-8000-000000000320", "3c4d5e6f-0000-4000-8000-0000000000ff"
	at := nostr.Now() - 3000
	makeChannel(bob, big, "big", at, append(writers[1:], uma.pk)...)
	makeChannel(bob, mid, "mid", at, append(writers[1:], uma.pk)...)
	makeChannel(bob, other, "other", at, writers[1:]...)
	var bigRoot nostr.Event
	for i := range 1500 {
		ev := team.publishAt(i, at+1+nostr.Timestamp(i/3), 9, fmt.Sprint("big ", i), nostr.Tag{"h", big})
		if i == 0 {
			bigRoot = ev
		}
	}
	var root nostr.Event
	for i := range 320 {
		ev := team.publishAt(i, at+1+nostr.Timestamp(i/3), 9, fmt.Sprint("mid ", i), nostr.Tag{"h", mid})
		if i == 0 {
			root = ev
		}
	}
	for i := range 7 {
		bob.publishAt(at+600, 9, fmt.Sprint("reply ", i), nostr.Tag{"h", mid}, nostr.Tag{"e", root.ID, "", "root"})
	}
	for i := range 40 {
		team.publishAt(i, at+1+nostr.Timestamp(i), 9, fmt.Sprint("other ", i), nostr.Tag{"h", other})
	}

	signInKey(t, ctx, w.base(), uma.sk)
	waitJS(t, ctx, "the exact counts", fmt.Sprintf(`%s === 1500 && %s === 320`, unreadOf("big"), unreadOf("mid")))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](unreadOf("other"))); n != 0 {
		t.Errorf("channel other, never joined, shows %d unread; want none", n)
	}
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#channel-list a[href$="`+big+`"]').getAttribute('aria-label')`))
	if label != "channel big, 1500 unread" {
		t.Errorf("big's label = %q; want %q", label, "channel big, 1500 unread")
	}
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "unread-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844), chromedp.Click(button("Show channels")))
	shot(t, ctx, shots, "unread-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	// Reading a channel clears its count; what comes after counts again,
	// a thread reply does not.
	openChannel(t, ctx, "big")
	openChannel(t, ctx, "mid")
	waitJS(t, ctx, "big read", unreadOf("big")+` === 0`)
	bob.publish(9, "big after", nostr.Tag{"h", big})
	bob.publish(9, "big after 2", nostr.Tag{"h", big})
	bob.publish(9, "a reply in big", nostr.Tag{"h", big}, nostr.Tag{"e", bigRoot.ID, "", "root"})
	waitJS(t, ctx, "two new in big", unreadOf("big")+` === 2`)
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestBrowserReadStateAcrossDevices: two browsers signed in with the same
// key agree on what was read: one reads a channel, the other's count
// goes to zero without a reload, and a third started afterwards starts
// from the same place, not from zero.
func TestBrowserReadStateAcrossDevices(t *testing.T) {
	w := startTeam(t)
	phone, _ := browser(t)
	laptop, _ := browser(t)
	base := w.base()
	member := w.join(t, "Vic")
	sk, vic := member.sk, member.pk
	bob := w.join(t, "Bob")
	ch := "4d5e6f70-0000-4000-8000-000000000010"
	at := nostr.Now() - 100
	makeChannel(bob, ch, "shared", at, vic)
	makeChannel(bob, "4d5e6f70-0000-4000-8000-000000000011", "lobby", at, vic)
	for i := range 12 {
		bob.publishAt(at+1, 9, fmt.Sprint("news ", i), nostr.Tag{"h", ch})
	}
	signInKey(t, phone, base, sk)
	signInKey(t, laptop, base, sk)
	for _, ctx := range []context.Context{phone, laptop} {
		waitJS(t, ctx, "12 unread", unreadOf("shared")+` === 12`)
	}
	openChannel(t, laptop, "shared")
	waitJS(t, laptop, "the news", textIn("#feed article", "news 11"))
	openChannel(t, laptop, "lobby")
	waitJS(t, phone, "the other device's reading, live", unreadOf("shared")+` === 0`)
	bob.publish(9, "one more", nostr.Tag{"h", ch})
	for _, ctx := range []context.Context{phone, laptop} {
		waitJS(t, ctx, "1 unread on both", unreadOf("shared")+` === 1`)
	}
	third, _ := browser(t)
	signInKey(t, third, base, sk)
	waitJS(t, third, "a new device starts where the others are", unreadOf("shared")+` === 1 && `+unreadOf("lobby")+` === 0`)
	shot(t, third, t.TempDir(), "readstate-third-device")
}

// TestBrowserScrollBack: a long channel over three days opens at its
// newest page; scrolling up to its first message loads older messages
// without moving what the reader looks at, the feed sliding (never more
// than feedBound messages) rather than growing; a live message meanwhile
// leaves the reader where they are, and scrolling back down, the newer
// messages come back below them without moving them either, the live one
// last. Days are separated, times are absolute on hover, a "New" line
// marks the first message since the last reading, and "Jump to latest"
// goes back down to the newest window.
func TestBrowserScrollBack(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	shots := t.TempDir()
	reader := w.join(t, "Wen")
	wen := reader.pk
	// Four people wrote the channel's history, each within the relay's
	// per-person rate; bob is the first of them.
	team := w.team(t, "Bob", 4)
	bob := team[0]
	var writers []string
	for _, p := range team[1:] {
		writers = append(writers, p.pk)
	}
	long := "5e6f7081-0000-4000-8000-000000001500"
	const total = 1500 // past the workspace-wide window of 1 000
	start := nostr.Now() - 3*86400
	makeChannel(bob, long, "long", start-10, append(writers, wen)...)
	makeChannel(bob, "5e6f7081-0000-4000-8000-000000000001", "side", start-10, wen)
	var sent []string
	for i := range total {
		sent = append(sent, fmt.Sprintf("old %04d", i))
		team.publishAt(i, start+nostr.Timestamp(i*(3*86400-600)/total), 9, sent[i], nostr.Tag{"h", long})
	}
	signInKey(t, ctx, w.base(), reader.sk)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	openChannel(t, ctx, "long")
	waitJS(t, ctx, "the newest page", textIn("#feed article", sent[total-1])+` && document.querySelectorAll('#feed article').length >= 100`)
	atBottom, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const f = document.getElementById('feed'); return f.scrollHeight - f.scrollTop - f.clientHeight < 40; })()`))
	if !atBottom {
		t.Errorf("the channel opened away from its newest message")
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#feed > .day-sep').length`)); n < 1 {
		t.Errorf("%d day separators; want one per day shown", n)
	}
	title, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#feed article time').title`))
	if !strings.ContainsAny(title, "0123456789") {
		t.Errorf("a message's time has title %q; want the absolute time", title)
	}

	// Scroll up to the channel's first message: each page comes above what
	// the reader looks at, which stays put, and the feed slides rather than
	// grows.
	days := map[string]bool{}
	for round := 0; ; round++ {
		if top, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#feed article .msg-body').textContent`)); top == sent[0] {
			break
		}
		if round > 20 {
			t.Fatalf("after %d scrolls up the feed does not reach the first message", round)
		}
		before := inView(t, ctx, `f.scrollTop = 0`)
		waitJS(t, ctx, "older messages", `document.querySelector('#feed article').dataset.id !== window.__edge`)
		settle(t, ctx)
		keptInView(t, ctx, fmt.Sprintf("scroll up %d", round), before)
		feedWindow(t, ctx, fmt.Sprintf("scroll up %d", round), sent, days)
	}
	if len(days) < 3 {
		t.Errorf("day separators %v over three days; want 3 or 4", days)
	}

	// A live message while the reader is up in history: it does not move
	// them, and it is at the bottom once they scroll back down to it.
	before := inView(t, ctx, ``)
	sent = append(sent, bob.publish(9, "live while up", nostr.Tag{"h", long}).Content)
	waitJS(t, ctx, "the live message in the page", `[...window.buzz.store.events.values()].some((e) => e.content === 'live while up')`)
	settle(t, ctx)
	keptInView(t, ctx, "a live message", before)
	for round := 0; ; round++ {
		if bottom, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed article .msg-body')].at(-1).textContent`)); bottom == sent[len(sent)-1] {
			break
		}
		if round > 20 {
			t.Fatalf("after %d scrolls down the feed does not reach the newest message", round)
		}
		before := inView(t, ctx, `f.scrollTop = f.scrollHeight`)
		waitJS(t, ctx, "newer messages", `[...document.querySelectorAll('#feed article')].at(-1).dataset.id !== window.__edge`)
		settle(t, ctx)
		keptInView(t, ctx, fmt.Sprintf("scroll down %d", round), before)
		feedWindow(t, ctx, fmt.Sprintf("scroll down %d", round), sent, nil)
	}
	do(t, ctx, "scroll to the bottom", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('feed'); f.scrollTop = f.scrollHeight; })()`))
	sent = append(sent, bob.publish(9, "live at the bottom", nostr.Tag{"h", long}).Content)
	waitJS(t, ctx, "a live message followed at the bottom", `[...document.querySelectorAll('#feed article .msg-body')].at(-1).textContent === 'live at the bottom' && (() => { const f = document.getElementById('feed'); return f.scrollHeight - f.scrollTop - f.clientHeight < 40; })()`)
	feedWindow(t, ctx, "back at the newest", sent, nil)

	// Up a window's worth, then "Jump to latest": the newest window, at its bottom.
	for range 4 {
		before := inView(t, ctx, `f.scrollTop = 0`)
		waitJS(t, ctx, "older messages", `document.querySelector('#feed article').dataset.id !== window.__edge`)
		settle(t, ctx)
		keptInView(t, ctx, "scroll up again", before)
	}
	waitJS(t, ctx, "jump to latest", `!document.querySelector('.jump-latest').hidden`)
	shot(t, ctx, shots, "history-desktop")
	do(t, ctx, "jump", chromedp.Click(button("Jump to latest ↓")))
	waitJS(t, ctx, "the newest in view", `(() => { const f = document.getElementById('feed'); return f.scrollHeight - f.scrollTop - f.clientHeight < 40; })() && [...document.querySelectorAll('#feed article .msg-body')].at(-1).textContent === 'live at the bottom'`)
	feedWindow(t, ctx, "after the jump", sent, nil)

	// Leave, let five come, come back: the New line is above the first.
	openChannel(t, ctx, "side")
	waitJS(t, ctx, "the marker published", `window.buzz.reads.lastRead(`+fmt.Sprintf("%q", long)+`).at > 0`)
	var fresh []nostr.Event
	for i := range 5 {
		fresh = append(fresh, bob.publish(9, fmt.Sprint("new ", i), nostr.Tag{"h", long}))
	}
	waitJS(t, ctx, "5 unread", unreadOf("long")+` === 5`)
	openChannel(t, ctx, "long")
	waitJS(t, ctx, "the New line above the first new message", fmt.Sprintf(`document.querySelector('#feed > .new-sep')?.nextElementSibling?.dataset.id === %q`, fresh[0].ID))
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	settle(t, ctx)
	chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('#feed > .new-sep').scrollIntoView({block: 'center'}), true)`))
	shot(t, ctx, shots, "history-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "history-new-desktop")
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// feedBound is the most messages the channel's feed holds (history.js
// windowMax: three pages of 150).
const feedBound = 450

// inView runs scroll (JS with the feed as f; the page has not seen the
// scroll event yet), then returns the id and top of the first message in
// view, as history.js anchors it; the feed's
// first message when the scroll went up, its last when it went down, is
// window.__edge, to wait for it to change.
func inView(t *testing.T, ctx context.Context, scroll string) string {
	t.Helper()
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
  const f = document.getElementById('feed');
  `+scroll+`;
  const arts = [...f.querySelectorAll(':scope > article')];
  const top = f.getBoundingClientRect().top;
  const at = arts.find((a) => a.getBoundingClientRect().bottom > top);
  window.__edge = (f.scrollTop === 0 ? arts[0] : arts.at(-1)).dataset.id;
  return at.dataset.id + ' ' + at.getBoundingClientRect().top;
})()`))
	if err != nil {
		t.Fatalf("the message in view: %v", err)
	}
	return pos
}

// keptInView fails the test if the message inView returned has moved by
// more than 2 px (or left the feed).
func keptInView(t *testing.T, ctx context.Context, what, before string) {
	t.Helper()
	var id string
	var y1 float64
	fmt.Sscan(before, &id, &y1)
	y2, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`document.querySelector('#feed article[data-id=%q]')?.getBoundingClientRect().top ?? -1e9`, id)))
	if err != nil {
		t.Fatal(err)
	}
	if d := y2 - y1; d > 2 || d < -2 {
		t.Errorf("%s: the message in view moved by %.0f px", what, d)
	}
}

// feedWindow fails the test unless the channel's feed holds at most
// feedBound messages, a run of sent in send order; it adds the day
// separators shown to days, if not nil.
func feedWindow(t *testing.T, ctx context.Context, what string, sent []string, days map[string]bool) {
	t.Helper()
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedTexts))
	shown := strings.Split(got, "|")
	if len(shown) > feedBound {
		t.Errorf("%s: %d messages in the feed; want at most %d", what, len(shown), feedBound)
	}
	i := slices.Index(sent, shown[0])
	if i < 0 || i+len(shown) > len(sent) || !slices.Equal(sent[i:i+len(shown)], shown) {
		t.Errorf("%s: the feed is not a run of the channel in send order (from %q, %d messages)", what, shown[0], len(shown))
	}
	if days == nil {
		return
	}
	labels, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#feed > .day-sep')].map((d) => d.textContent)`))
	for _, l := range labels {
		days[l] = true
	}
}

// settle waits for the page to render two frames.
func settle(t testing.TB, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("wait for the page to render: %v", err)
	}
}

// threadNewOf is a JS expression: how many new replies the replies link
// under the message whose text includes text says (0 when it says none,
// -1 when the message or its link is not shown).
func threadNewOf(text string) string {
	return fmt.Sprintf(`(() => { const a = [...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes(%q)); const b = a?.querySelector('.replies'); if (!b) return -1; const n = b.querySelector('.replies-new'); return n ? parseInt(n.textContent, 10) : 0; })()`, text)
}

// TestBrowserThreadUnread: a thread is counted on its thread. Replies to
// a message the person wrote show as new on its replies link (and not in
// the channel's count); reading the thread on one device clears them on
// every device (the thread's marker is the person's own event); a later
// reply shows as new again, also on a device signed in afterwards. A
// thread the person is not in shows no count.
func TestBrowserThreadUnread(t *testing.T) {
	w := startTeam(t)
	phone, _ := browser(t)
	laptop, laptopErrors := browser(t)
	base := w.base()
	vic := w.join(t, "Vic")
	sk := vic.sk
	bob := w.join(t, "Bob")
	ch := "4d5e6f70-0000-4000-8000-000000000020"
	at := nostr.Now() - 100
	makeChannel(bob, ch, "threads", at, vic.pk)
	mine := vic.publishAt(at+1, 9, "plan for the launch", nostr.Tag{"h", ch})
	other := bob.publishAt(at+1, 9, "lunch order", nostr.Tag{"h", ch})
	reply := func(p *peer, root nostr.Event, text string) {
		p.publish(9, text, nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "root"})
	}
	reply(bob, mine, "first step: the page")
	reply(bob, mine, "second step: the post")
	reply(bob, other, "noodles for me")

	signInKey(t, phone, base, sk)
	signInKey(t, laptop, base, sk)
	for _, ctx := range []context.Context{phone, laptop} {
		openChannel(t, ctx, "threads")
		waitJS(t, ctx, "two new replies in my thread", threadNewOf("plan for the launch")+` === 2`)
		waitJS(t, ctx, "none counted in a thread I am not in", threadNewOf("lunch order")+` === 0`)
	}
	shot(t, laptop, t.TempDir(), "thread-unread")
	if label, _ := chromedp.Run(laptop, chromedp.Evaluate[string](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('plan for the launch')).querySelector('.replies').textContent`)); label != "2 replies 2 new" {
		t.Errorf("the replies link says %q; want %q", label, "2 replies 2 new")
	}
	do(t, laptop, "open the thread", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('plan for the launch')).querySelector('.replies').click()`))
	waitJS(t, laptop, "the thread's replies", textIn("#thread-feed article", "second step"))
	waitJS(t, phone, "read on the other device, live", threadNewOf("plan for the launch")+` === 0`)
	do(t, laptop, "close the thread", chromedp.Evaluate[chromedp.Void](`document.getElementById('thread-close').click()`))
	waitJS(t, laptop, "read here too", threadNewOf("plan for the launch")+` === 0`)

	reply(bob, mine, "third step: the party")
	for _, ctx := range []context.Context{phone, laptop} {
		waitJS(t, ctx, "one new reply", threadNewOf("plan for the launch")+` === 1`)
	}
	third, _ := browser(t)
	signInKey(t, third, base, sk)
	openChannel(t, third, "threads")
	waitJS(t, third, "a new device starts where the others are", threadNewOf("plan for the launch")+` === 1`)
	for _, e := range laptopErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// wantEachOnce checks that the relay holds each of words as a message
// (kind 9) in the channel id exactly once: the outbox sent it, and only once.
func (w upWorkspace) wantEachOnce(t testing.TB, id string, words []string) {
	t.Helper()
	peer := w.ownerPeer(t)
	evs, err := peer.rel.QuerySync(peer.ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {id}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range words {
		n := 0
		for _, ev := range evs {
			if ev.Content == word {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the relay holds %q %d times; want once", word, n)
		}
	}
}
