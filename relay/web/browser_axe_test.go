package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// axeFinding is one axe-core violation, cut to what a report needs.
type axeFinding struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// axeCheck runs axe-core (a test peer, injected through DevTools, never
// served) over the page as it is and fails on serious or critical
// findings.
func axeCheck(t *testing.T, ctx context.Context, src, view string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+"\n;true")); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, { resultTypes: ['violations'] }).then((r) => JSON.stringify(r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe on %s: %v", view, err)
	}
	var found []axeFinding
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("axe output: %v", err)
	}
	for _, f := range found {
		var where []string
		for _, n := range f.Nodes {
			where = append(where, strings.Join(n.Target, " "))
		}
		if f.Impact == "serious" || f.Impact == "critical" {
			t.Errorf("axe, %s: %s %s (%s) at %v", view, f.Impact, f.ID, f.Help, where)
		} else {
			t.Logf("axe, %s: %s %s (%s) at %v", view, f.Impact, f.ID, f.Help, where)
		}
	}
}

// TestBrowserAccessibility runs axe-core over every view: sign-in, the
// first-run guide, an empty channel, the channel with messages of every
// kind, each dialog (the members dialog's tabs among them), the switcher and
// the shortcut list, at desktop and phone widths, in light and dark.
func TestBrowserAccessibility(t *testing.T) {
	modules, _ := testexe.NodeModules(t)
	b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js"))
	if err != nil {
		t.Skipf("SKIP(loud): axe-core missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	}
	src := string(b)
	ctx, _ := browser(t)
	base := startBinary(t)
	openSignIn(t, ctx, base)
	axeCheck(t, ctx, src, "sign-in")
	createKey(t, ctx, "Nia")
	waitJS(t, ctx, "the first-run guide", `document.querySelectorAll('#empty .guide-step').length === 3`)
	axeCheck(t, ctx, src, "first-run guide")
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	axeCheck(t, ctx, src, "first-run guide, phone")
	do(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 800))
	id := createChannel(t, ctx, "general", false)
	waitJS(t, ctx, "the empty channel's opening lines", `!!document.querySelector('#feed .feed-intro')`)
	axeCheck(t, ctx, src, "empty channel")
	pub := newPeer(t, base).publish
	pub(0, `{"name":"Omar"}`)
	pub(9021, "", nostr.Tag{"h", id})
	pub(9, mdMessage, nostr.Tag{"h", id})
	pub(9, "a reply-worthy message", nostr.Tag{"h", id})
	post(t, ctx, "general", "hello all")
	waitJS(t, ctx, "the messages", `document.querySelectorAll('#feed article').length === 3`)
	axeCheck(t, ctx, src, "channel")
	// A mention waiting in another channel: its badge, the title, the favicon.
	nia, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.buzz.me`))
	createChannel(t, ctx, "side", false)
	pub(9, "@Nia over here", nostr.Tag{"h", id}, nostr.Tag{"p", nia})
	waitJS(t, ctx, "the mention badge", mentionsOf("general")+` === 1`)
	axeCheck(t, ctx, src, "channel list with a mention")
	openChannel(t, ctx, "general")
	for _, d := range []struct{ view, open, close string }{
		{"members", `document.getElementById('members-btn').click()`, `document.getElementById('members-dialog').close()`},
		{"members, add people", `document.getElementById('members-btn').click(); document.getElementById('tab-add').click()`, `document.getElementById('members-dialog').close()`},
		{"members, topic", `document.getElementById('members-btn').click(); document.getElementById('tab-topic').click()`, `document.getElementById('members-dialog').close()`},
		{"profile", `document.getElementById('me').click()`, `document.getElementById('profile-dialog').close()`},
		{"new channel", `document.getElementById('new-channel').click()`, `document.getElementById('channel-dialog').close()`},
		{"switcher", `document.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true, bubbles: true }))`, `document.getElementById('switcher').close()`},
		{"shortcuts", `document.dispatchEvent(new KeyboardEvent('keydown', { key: '/', ctrlKey: true, bubbles: true }))`, `document.getElementById('shortcuts').close()`},
	} {
		do(t, ctx, "open "+d.view, chromedp.Evaluate[chromedp.Void](d.open))
		waitJS(t, ctx, d.view+" open", `!!document.querySelector('dialog[open]')`)
		axeCheck(t, ctx, src, d.view)
		do(t, ctx, "close "+d.view, chromedp.Evaluate[chromedp.Void](d.close))
	}
	do(t, ctx, "open the thread", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('reply-worthy')).querySelector('button[aria-label="Reply in thread"]').click()`))
	waitJS(t, ctx, "the thread", `!document.getElementById('thread').hidden`)
	axeCheck(t, ctx, src, "thread")
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	axeCheck(t, ctx, src, "thread, phone")
}
