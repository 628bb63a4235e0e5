package web_test

import (
	"fmt"
	"testing"

	"buzzbox/agent/llm/llmtest"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserAgentsPanel runs the built `buzzbox up` with presence on:
// the owner opens the agents panel and sees the workspace's agent online,
// owned by them, in #general; pauses it, and a mention then gets the
// paused notice instead of an answer; resumes it, and the mention that
// waited is answered.
func TestBrowserAgentsPanel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	model := llmtest.New(t)
	model.SetHandler(func(map[string]any) llmtest.Reply { return llmtest.Reply{Text: "at your service"} })
	w := startUp(t, model, "BUZZ_ACP_NO_PRESENCE=false")
	owner, ownerErrors := browser(t)
	openURL(t, owner, "open the sign-in link", w.link)
	waitJS(t, owner, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, owner, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, owner, "the channel view", textIn("#channel-name", "general"))
	do(t, owner, "open the agents panel", chromedp.Click(button("Agents")))
	row := `document.querySelector('#agents-list .agent-row')`
	waitJS(t, owner, "the agent online in the panel", row+`?.dataset.state === 'online'`)
	for _, want := range []string{"Owned by", "In #general", "Idle"} {
		waitJS(t, owner, "the row says "+want, fmt.Sprintf(`%s.textContent.includes(%q)`, row, want))
	}
	shot(t, owner, t.TempDir(), "agents-panel")
	do(t, owner, "pause it", chromedp.Evaluate[chromedp.Void](`document.querySelector('#agents-list button[data-action="pause"]').click()`))
	waitJS(t, owner, "the agent paused", row+`?.dataset.state === 'paused' && !!document.querySelector('#agents-list button[data-action="resume"]')`)
	do(t, owner, "close the panel", chromedp.Evaluate[chromedp.Void](`document.getElementById('agents-close').click()`))

	do(t, owner, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
	waitJS(t, owner, "the agent in the mention list", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('agent'))`)
	do(t, owner, "pick it and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "are you there?"), chromedp.KeyEvent(kb.Enter))
	article := `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('are you there?'))`
	waitJS(t, owner, "the paused notice in the thread", fmt.Sprintf(`(() => { const a = %s; return a && a.textContent.includes('1 reply'); })()`, article))

	do(t, owner, "open the agents panel again", chromedp.Click(button("Agents")))
	do(t, owner, "resume it", chromedp.Evaluate[chromedp.Void](`document.querySelector('#agents-list button[data-action="resume"]').click()`))
	waitJS(t, owner, "the agent online again", row+`?.dataset.state === 'online'`)
	do(t, owner, "close the panel", chromedp.Evaluate[chromedp.Void](`document.getElementById('agents-close').click()`))
	waitJS(t, owner, "the waiting mention answered", fmt.Sprintf(`(() => { const a = %s; return a && a.textContent.includes('2 replies'); })()`, article))
	for _, e := range ownerErrors() {
		t.Errorf("browser console: %s", e)
	}
}
