package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// TestBrowserMembersDialogTabs: the relay's owner opens a channel's
// members dialog and finds it in ARIA tabs (the member list, add people,
// invite link, topic), one primary button in each; the arrow keys, Home
// and End move between the tabs; the list offers Remove, which takes a
// member out of the channel. The member added here goes through the add
// tab.
func TestBrowserMembersDialogTabs(t *testing.T) {
	ctx, consoleErrors := browser(t)
	r, osk := ownerRelay(t)
	shots := t.TempDir()
	tok, err := r.LoginToken(osk)
	if err != nil {
		t.Fatal(err)
	}
	openURL(t, ctx, "open the sign-in link", r.HTTPURL()+"/#login="+tok)
	waitJS(t, ctx, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	id := createChannel(t, ctx, "crew", false)
	rae, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	raeNpub, _ := nip19.EncodePublicKey(rae)
	manageCall(t, r.HTTPURL(), osk, "allowpubkey", rae, "a colleague")

	do(t, ctx, "open the members dialog", chromedp.Click(button("Members")))
	waitJS(t, ctx, "the invite tab, for the relay's owner", `document.getElementById('tab-invite').checkVisibility()`)
	waitJS(t, ctx, "the count of members on the tab", textIn("#tab-members", "People 1"))
	do(t, ctx, "add Rae", chromedp.Click(button("Add people")), chromedp.SendKeys(labelled("Add a member (npub, hex key or name of a known person)"), raeNpub), chromedp.Click(button("Add member")))
	waitJS(t, ctx, "Rae in the channel", fmt.Sprintf(`window.buzz.store.channels.get(%q)?.members.has(%q) && !document.getElementById('members-dialog').open`, id, rae))
	do(t, ctx, "open the members dialog again", chromedp.Click(button("Members")))
	tabs, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#members-dialog [role=tablist] [role=tab]')].filter((t) => t.checkVisibility()).map((t) => t.id + '=' + t.getAttribute('aria-selected') + '/' + t.tabIndex).join(' ')`))
	if want := "tab-members=true/0 tab-add=false/-1 tab-invite=false/-1 tab-topic=false/-1"; tabs != want {
		t.Errorf("tabs = %q; want %q", tabs, want)
	}
	waitJS(t, ctx, "the new count on the tab", textIn("#tab-members", "People 2"))
	for _, tc := range []struct{ tab, panel, primary string }{
		{"tab-members", "panel-members", ""},
		{"tab-add", "panel-add", "Add member"},
		{"tab-invite", "panel-invite", "Create invite link"},
		{"tab-topic", "panel-topic", "Set topic"},
	} {
		do(t, ctx, "select "+tc.tab, chromedp.Click(chromedp.ID(tc.tab)))
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		  const d = document.getElementById('members-dialog');
		  const panels = [...d.querySelectorAll('[role=tabpanel]')].filter((p) => !p.hidden).map((p) => p.id + ':' + p.getAttribute('aria-labelledby'));
		  const primary = [...d.querySelectorAll('button[type=submit]')].filter((b) => b.checkVisibility()).map((b) => b.textContent);
		  return panels.join(',') + ' | ' + primary.join(',');
		})()`))
		if want := tc.panel + ":" + tc.tab + " | " + tc.primary; got != want {
			t.Errorf("%s shows %q; want %q (its panel alone, one primary button)", tc.tab, got, want)
		}
	}

	// The keyboard: one tab in the Tab order, the arrows move and select.
	do(t, ctx, "back to the list", chromedp.Click(chromedp.ID("tab-members")), chromedp.Focus(chromedp.ID("tab-members")))
	for _, step := range []struct {
		key  string
		want string
	}{{kb.ArrowRight, "tab-add"}, {kb.End, "tab-topic"}, {kb.ArrowRight, "tab-members"}, {kb.ArrowLeft, "tab-topic"}, {kb.Home, "tab-members"}, {kb.ArrowRight, "tab-add"}, {kb.ArrowRight, "tab-invite"}} {
		do(t, ctx, "press a key on the tabs", chromedp.KeyEvent(step.key))
		waitJS(t, ctx, step.want+" selected and focused", fmt.Sprintf(`document.activeElement.id === %[1]q && document.getElementById(%[1]q).getAttribute('aria-selected') === 'true' && !document.getElementById(document.getElementById(%[1]q).getAttribute('aria-controls')).hidden`, step.want))
	}
	do(t, ctx, "create an invite", chromedp.Click(button("Create invite link")))
	waitJS(t, ctx, "the link and its pending invite", `document.getElementById('invite-link').value.includes('#invite=') && document.querySelectorAll('#invite-list li').length === 1`)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "members-invite-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "members-invite-phone")
	do(t, ctx, "the list", chromedp.Click(chromedp.ID("tab-members")))
	shot(t, ctx, shots, "members-list-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "members-list-desktop")

	// Remove: offered for everyone but oneself, and it takes Rae out.
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#members-list button').length`)); n != 1 {
		t.Errorf("%d Remove buttons; want one, for Rae (not the owner themself)", n)
	}
	do(t, ctx, "remove Rae", chromedp.Click(chromedp.Search(fmt.Sprintf(`//*[@id="members-list"]/li[@data-pk=%q]//button[starts-with(@aria-label, "Remove ")]`, rae))))
	waitJS(t, ctx, "Rae out of the channel", fmt.Sprintf(`!window.buzz.store.channels.get(%q).members.has(%q) && !document.querySelector('#members-list li[data-pk=%q]')`, id, rae, rae))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
