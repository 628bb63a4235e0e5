package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
)

// press dispatches a keydown on the focused element (or the document).
func press(key string, ctrl, alt bool) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(document.activeElement || document).dispatchEvent(new KeyboardEvent('keydown', { key: ` + jsq(key) + `, ctrlKey: ` + map[bool]string{true: "true", false: "false"}[ctrl] + `, altKey: ` + map[bool]string{true: "true", false: "false"}[alt] + `, bubbles: true, cancelable: true }))`)
}

// TestBrowserKeyboard: Ctrl+K opens a switcher over channels and people,
// Alt+↑/↓ move between channels, ↑ in the empty composer edits one's last
// message, Ctrl+/ lists the shortcuts.
func TestBrowserKeyboard(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	shots := t.TempDir()
	signInNew(t, ctx, base, "Max")
	createChannel(t, ctx, "alpha", false)
	beta := createChannel(t, ctx, "beta", false)
	quinn := newPeer(t, base)
	quinn.publish(0, `{"name":"Quinn"}`)
	quinn.publish(9021, "", nostr.Tag{"h", beta})
	waitJS(t, ctx, "Quinn in beta", `window.buzz.store.channels.get(`+jsq(beta)+`)?.members.size === 2 && window.buzz.store.profiles.size >= 1`)

	do(t, ctx, "Ctrl+K", press("k", true, false))
	waitJS(t, ctx, "the switcher", `document.getElementById('switcher').open && document.activeElement.id === 'switcher-input'`)
	do(t, ctx, "type a channel", chromedp.SendKeys(chromedp.ID("switcher-input"), "alp"))
	waitJS(t, ctx, "one match", `document.querySelectorAll('#switcher-list [role=option]').length === 1`)
	shot(t, ctx, shots, "switcher-desktop")
	do(t, ctx, "pick it", chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "alpha", `!document.getElementById('switcher').open && `+textIn("#channel-name", "alpha"))

	do(t, ctx, "Ctrl+K for a person", press("k", true, false))
	waitJS(t, ctx, "the switcher again", `document.getElementById('switcher').open`)
	do(t, ctx, "type a person", chromedp.SendKeys(chromedp.ID("switcher-input"), "quin"))
	waitJS(t, ctx, "the person, with the channel shared", textIn("#switcher-list [role=option]", "Quinn (in #beta)"))
	do(t, ctx, "pick them", chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "beta", textIn("#channel-name", "beta"))

	do(t, ctx, "Alt+↑", press("ArrowUp", false, true))
	waitJS(t, ctx, "alpha again", textIn("#channel-name", "alpha"))
	do(t, ctx, "Alt+↓", press("ArrowDown", false, true))
	waitJS(t, ctx, "beta again", textIn("#channel-name", "beta"))

	post(t, ctx, "beta", "my first")
	post(t, ctx, "beta", "my last")
	do(t, ctx, "↑ in the empty composer", chromedp.Focus(labelled("Message #beta")), chromedp.KeyEvent(kb.ArrowUp))
	waitJS(t, ctx, "editing the last message", `document.activeElement.classList.contains('edit-input') && document.activeElement.value === 'my last'`)
	do(t, ctx, "cancel the edit", chromedp.KeyEvent(kb.Escape))

	do(t, ctx, "Ctrl+/", press("/", true, false))
	waitJS(t, ctx, "the shortcut list", `document.getElementById('shortcuts').open && `+textIn("#shortcuts", "Edit your last message"))
	shot(t, ctx, shots, "shortcuts-desktop")
	do(t, ctx, "close it", chromedp.Click(chromedp.ID("shortcuts-close")))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
