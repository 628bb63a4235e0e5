package web_test

import (
	"fmt"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// TestBrowserGroupingAndAgentBadge: consecutive messages of one author
// within minutes show as one group (avatar and name once); a profile
// with bot: true gets the agent badge, and an agent attested by a person
// (NIP-OA) says in words whom it is owned by. On a phone a message's
// actions show on a long press.
func TestBrowserGroupingAndAgentBadge(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t)
	shots := t.TempDir()
	sk := signInNew(t, ctx, base, "Lee")
	id := createChannel(t, ctx, "standup", false)
	bob := newPeer(t, base)
	bob.publish(0, `{"name":"Bob"}`)
	bob.publish(9021, "", nostr.Tag{"h", id})
	now := nostr.Now()
	bob.publishAt(now-600, 9, "yesterday I fixed the build", nostr.Tag{"h", id})
	bob.publishAt(now-590, 9, "and wrote the tests", nostr.Tag{"h", id})
	bob.publishAt(now-580, 9, "today: review", nostr.Tag{"h", id})
	bot := newPeer(t, base)
	bot.publish(0, `{"name":"ci-bot","bot":true}`)
	bot.publish(9021, "", nostr.Tag{"h", id})
	bot.publishAt(now-300, 9, "build passed", nostr.Tag{"h", id})

	// An agent attested by Lee.
	leeSec, _ := nostrkey.ParseSecret(sk)
	agent := newPeer(t, base)
	agentKey, _ := nostrkey.ParseSecret(agent.sk)
	att, err := nipoa.Sign(leeSec, agentKey.Public(), "")
	if err != nil {
		t.Fatal(err)
	}
	agent.publish(0, `{"name":"Helper"}`, att.Nostr())
	agent.publish(9021, "", nostr.Tag{"h", id})
	agent.publish(9, "I can take the review", nostr.Tag{"h", id}, att.Nostr())

	waitJS(t, ctx, "all messages", `document.querySelectorAll('#feed article').length === 5`)
	grouped := func(text string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes(%q))?.classList.contains('grouped')`, text)
	}
	for text, want := range map[string]bool{"yesterday I fixed the build": false, "and wrote the tests": true, "today: review": true, "build passed": false, "I can take the review": false} {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](grouped(text)))
		if got != want {
			t.Errorf("%q grouped = %v; want %v", text, got, want)
		}
	}
	waitJS(t, ctx, "the bot profile's badge", `[...document.querySelectorAll('#feed article.agent')].some((a) => a.textContent.includes('build passed') && a.querySelector('.badge').textContent === 'agent')`)
	waitJS(t, ctx, "owned by, in words", `[...document.querySelectorAll('#feed article.agent')].some((a) => a.textContent.includes('I can take the review') && a.querySelector('.owned')?.textContent === 'owned by Lee')`)
	// On a phone the actions stay out of the way until a long press.
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	const art = `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('build passed'))`
	do(t, ctx, "blur", chromedp.Evaluate[chromedp.Void](`document.activeElement?.blur()`))
	waitJS(t, ctx, "actions hidden on a phone", `getComputedStyle(`+art+`.querySelector('.actions')).display === 'none'`)
	do(t, ctx, "long-press a message", chromedp.Evaluate[chromedp.Void](art+`.dispatchEvent(new PointerEvent('pointerdown', { pointerType: 'touch', bubbles: true }))`))
	waitJS(t, ctx, "actions after the long press", `getComputedStyle(`+art+`.querySelector('.actions')).display === 'flex'`)
	shot(t, ctx, shots, "long-press-390x844")
	do(t, ctx, "long-press again", chromedp.Evaluate[chromedp.Void](art+`.dispatchEvent(new PointerEvent('pointerdown', { pointerType: 'touch', bubbles: true }))`))
	waitJS(t, ctx, "actions hidden again", `getComputedStyle(`+art+`.querySelector('.actions')).display === 'none'`)
	for _, vp := range [][2]int64{{1440, 900}, {390, 844}} {
		do(t, ctx, "viewport", chromedp.EmulateViewport(vp[0], vp[1]))
		shot(t, ctx, shots, fmt.Sprintf("channel-%dx%d", vp[0], vp[1]))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
