package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
)

// guideDone is a JS expression: the guide's steps marked done, in order,
// as "channel=true invite=false agent=false".
const guideDone = `[...document.querySelectorAll('#empty .guide-step')].map((s) => s.dataset.step + '=' + s.dataset.done).join(' ')`

// TestBrowserFirstRunGuide: a new person in an empty workspace gets the
// guide's three steps; each button does its step (the new-channel dialog,
// the members dialog at the tab they may use, the agent's @name in the
// message box), a step shows done once it is, an empty channel's feed
// says who is there and offers the invite and the mention, and the guide,
// once hidden, stays hidden after a reload.
func TestBrowserFirstRunGuide(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t, "--open")
	shots := t.TempDir()
	signInNew(t, ctx, base, "Lea")
	waitJS(t, ctx, "the guide", `document.querySelectorAll('#empty .guide-step').length === 3 && !document.getElementById('empty').hidden`)
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](guideDone)); got != "channel=false invite=false agent=false" {
		t.Errorf("a new workspace's guide: %s; want nothing done", got)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#empty button.primary')].map((b) => b.textContent).join()`)); got != "Create a channel" {
		t.Errorf("primary buttons %q; want the first step's alone", got)
	}
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "guide-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "guide-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	do(t, ctx, "invite with no channel", chromedp.Click(button("Invite a teammate")))
	waitJS(t, ctx, "the advice to make a channel first", textIn(`#empty [data-step=invite] .guide-note`, "Create or pick a channel first"))
	do(t, ctx, "create a channel from the guide", chromedp.Click(button("Create a channel")))
	waitJS(t, ctx, "the new-channel dialog", `document.getElementById('channel-dialog').open`)
	do(t, ctx, "name it", chromedp.SendKeys(labelled("Channel name"), "general"), chromedp.Click(button("Create channel")))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))

	// The empty channel: who is here, the invite, no agent yet.
	waitJS(t, ctx, "the empty channel's opening lines", textIn("#feed .feed-intro", "This is the start of #general")+` && `+textIn("#feed .feed-intro", "Only you are here so far.")+` && `+textIn("#feed .feed-intro", "No agent in this workspace yet"))
	shot(t, ctx, shots, "empty-channel-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "empty-channel-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	do(t, ctx, "invite from the empty channel", chromedp.Click(button("Invite people")))
	waitJS(t, ctx, "the add tab", `document.getElementById('members-dialog').open && document.getElementById('tab-add').getAttribute('aria-selected') === 'true'`)
	do(t, ctx, "close the members dialog", chromedp.Click(chromedp.ID("members-close")))

	// An agent joins: the channel offers to mention it.
	id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.buzz.current`))
	agent := newPeer(t, base)
	agent.publish(0, `{"name":"Builder","bot":true}`)
	agent.publish(9021, "", nostr.Tag{"h", id})
	waitJS(t, ctx, "the agent in the opening lines", textIn("#feed .feed-intro", "Here: you and @Builder."))
	do(t, ctx, "mention it from the empty channel", chromedp.Click(button("Mention @Builder")))
	waitJS(t, ctx, "@Builder in the message box", `document.activeElement === document.querySelector('#composer-slot textarea') && document.activeElement.value === '@Builder '`)
	do(t, ctx, "clear the message box", chromedp.Evaluate[chromedp.Void](`document.querySelector('#composer-slot textarea').value = ''`))

	// Back to no channel: the first step is done; the invite goes to #general.
	do(t, ctx, "leave the channel", chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`))
	waitJS(t, ctx, "the guide again", `!document.getElementById('empty').hidden && `+guideDone+` === 'channel=true invite=false agent=false'`)
	do(t, ctx, "invite from the guide", chromedp.Click(button("Invite a teammate")))
	waitJS(t, ctx, "#general's members dialog at the add tab", textIn("#channel-name", "general")+` && !document.getElementById('channel').hidden && document.getElementById('members-dialog').open && document.getElementById('tab-add').getAttribute('aria-selected') === 'true'`)
	do(t, ctx, "close the members dialog", chromedp.Click(chromedp.ID("members-close")))
	do(t, ctx, "leave the channel", chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`))
	waitJS(t, ctx, "the mention step", textIn(`#empty [data-step=agent]`, "Ask @Builder something in #general"))
	do(t, ctx, "mention from the guide", chromedp.Click(chromedp.Search(`//*[@id="empty"]//button[.="Mention @Builder"]`)))
	waitJS(t, ctx, "@Builder in #general's message box", textIn("#channel-name", "general")+` && !document.getElementById('channel').hidden && document.activeElement.value === '@Builder '`)
	do(t, ctx, "ask", chromedp.SendKeys(labelled("Message #general"), "what is in the repo?"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the question posted, the opening lines gone", textIn("#feed article", "what is in the repo?")+` && !document.querySelector('#feed .feed-intro')`)

	// A teammate joins: every step done.
	pat := newPeer(t, base)
	pat.publish(0, `{"name":"Pat"}`)
	pat.publish(9021, "", nostr.Tag{"h", id})
	do(t, ctx, "leave the channel", chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`))
	waitJS(t, ctx, "every step done", guideDone+` === 'channel=true invite=true agent=true' && `+textIn("#empty", "Your workspace is set up"))
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#empty .guide-step h3')].map((h) => h.textContent).join('|')`)); strings.Count(got, "(done)") != 3 {
		t.Errorf("step headings %q; want each to say it is done", got)
	}
	shot(t, ctx, shots, "guide-done-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "guide-done-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	// Hidden for good.
	do(t, ctx, "hide the guide", chromedp.Click(button("Hide this guide")))
	waitJS(t, ctx, "the plain welcome", `!document.querySelector('#empty .guide-steps') && `+textIn("#empty", "Pick a channel on the left"))
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "signed in again", `document.getElementById('status').dataset.state === 'authenticated' && window.buzz.loaded`)
	waitJS(t, ctx, "still the plain welcome", `!document.getElementById('empty').hidden && `+textIn("#empty", "Pick a channel on the left"))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#empty .guide-step').length`)); n != 0 {
		t.Errorf("the hidden guide came back after a reload (%d steps)", n)
	}
	for _, e := range consoleErrors() {
		if !strings.Contains(e, "403") { // the members dialog asks NIP-86 once whether Lea manages the relay
			t.Errorf("browser console: %s", e)
		}
	}
}
