package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserSearchInboxDM runs the built `buzzbox up` in Chromium: the
// owner searches every channel from the top bar (results grouped by
// channel, matches marked) and opens a result in its channel; results
// follow the box while typing, in:#channel and from:@name too; opens a
// direct message with the workspace's agent from its name, listed under
// "Direct messages", which the agent answers without a mention; the
// answer, come while the DM is not open, waits in the inbox unread and
// opens in place, which reads it.
func TestBrowserSearchInboxDM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	model := llmtest.New(t)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		if b, _ := json.Marshal(req); strings.Contains(string(b), "in private") {
			// Answer a second later: read markers are whole seconds.
			time.Sleep(1500 * time.Millisecond)
			return llmtest.Reply{Text: "noted, quokka fan"}
		}
		return llmtest.Reply{Text: "noted, quokka fan"}
	})
	w := startUp(t, model)
	shots := t.TempDir()
	owner, ownerErrors := browser(t)
	openURL(t, owner, "open the sign-in link", w.link)
	waitJS(t, owner, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, owner, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, owner, "the channel view", textIn("#channel-name", "general"))
	for _, text := range []string{"the quokka release is on friday", "lunch plans", "a quokka photo later"} {
		do(t, owner, "post "+text, chromedp.SendKeys(labelled("Message #general"), text), chromedp.KeyEvent(kb.Enter))
		waitJS(t, owner, "the message in the feed", textIn("#feed article", text))
	}

	// Search from the top bar.
	do(t, owner, "search quokka", chromedp.SendKeys(chromedp.CSS(`#global-search`), "quokka"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, owner, "two results in #general, matches marked", `(() => {
		const g = document.querySelector('#search-view .search-group');
		return g && g.querySelector('h3').textContent.startsWith('#general') && g.querySelectorAll('.search-hit').length === 2 &&
			[...g.querySelectorAll('mark')].every((m) => m.textContent.toLowerCase() === 'quokka');
	})()`)
	waitJS(t, owner, "the channel hidden while searching", `document.getElementById('channel').hidden && !document.getElementById('search-view').hidden`)
	shot(t, owner, shots, "search-results")
	do(t, owner, "open the friday result", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.search-hit')].find((b) => b.textContent.includes('friday')).click()`))
	waitJS(t, owner, "the message in its channel, focused", fmt.Sprintf(`location.hash === '#/c/%s' && document.activeElement?.closest?.('article')?.textContent.includes('friday')`, w.channel))

	// Results follow the box while typing, in:#channel and from:@name too;
	// the box keeps its focus, and a name still being typed is not searched.
	do(t, owner, "type a search with in:", chromedp.Evaluate[chromedp.Void](`document.getElementById("global-search").value = ""`),
		chromedp.SendKeys(chromedp.CSS(`#global-search`), "friday in:#general"))
	waitJS(t, owner, "live results: the friday message, the box focused", `(() => {
		const hits = document.querySelectorAll('#search-view .search-hit');
		return !document.getElementById('search-view').hidden && location.hash === '#/search/' + encodeURIComponent('friday in:#general') &&
			hits.length === 1 && hits[0].textContent.includes('friday') && document.activeElement.id === 'global-search';
	})()`)
	ownerName, err := chromedp.Run(owner, chromedp.Evaluate[string](`buzz.store.name(buzz.me)`))
	if err != nil || ownerName == "" || strings.ContainsAny(ownerName, " \"") {
		t.Fatalf("the owner's name: %q %v", ownerName, err)
	}
	do(t, owner, "type from:", chromedp.SendKeys(chromedp.CSS(`#global-search`), " quokka from:@"+ownerName))
	waitJS(t, owner, "live results narrowed by from:", fmt.Sprintf(`(() => {
		const hits = document.querySelectorAll('#search-view .search-hit');
		return location.hash === '#/search/' + encodeURIComponent('friday in:#general quokka from:@%s') && hits.length === 1 &&
			document.activeElement.id === 'global-search' && document.getElementById('global-search').value.endsWith('from:@%s');
	})()`, ownerName, ownerName))
	shot(t, owner, shots, "search-live")
	do(t, owner, "back to the channel", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))

	// A direct message with the agent, from its name.
	agentName, err := chromedp.Run(owner, chromedp.Evaluate[string](fmt.Sprintf(`buzz.store.members(%q).find((m) => m.pk !== buzz.me).name`, w.channel)))
	if err != nil || agentName == "" {
		t.Fatalf("the agent's name: %q %v", agentName, err)
	}
	do(t, owner, "new direct message", chromedp.Click(chromedp.CSS(`#new-dm`)))
	do(t, owner, "to the agent", chromedp.SendKeys(chromedp.CSS(`#dm-people`), agentName), chromedp.Click(chromedp.CSS(`#dm-open`)))
	waitJS(t, owner, "the conversation under Direct messages, open", fmt.Sprintf(`(() => { const a = document.querySelector('#dm-list a.dm'); return a && a.textContent.includes(%q) && location.hash === a.getAttribute('href'); })()`, agentName))
	waitJS(t, owner, "its composer", `!!document.querySelector('#composer-slot textarea')`)
	// Write, then straight to the inbox: the answer comes while the DM is
	// not open, and waits there unread.
	do(t, owner, "write to the agent and open the inbox", chromedp.Evaluate[chromedp.Void](`buzz.post(location.hash.slice(4), 'hello agent, in private', []); location.hash = '#/inbox'`))
	waitJS(t, owner, "the answer unread in the inbox", `[...document.querySelectorAll('#inbox-view .inbox-item.unread')].some((i) => i.dataset.why === 'dm' && i.textContent.includes('noted, quokka fan'))`)
	waitJS(t, owner, "the inbox link counts it", `document.getElementById('inbox-link').textContent === 'Inbox (1)'`)
	shot(t, owner, shots, "inbox")
	do(t, owner, "open it in place", chromedp.Click(chromedp.CSS(`#inbox-view .inbox-item.unread .inbox-open`)))
	waitJS(t, owner, "the DM titled after the agent", textIn("#channel-name", agentName))
	waitJS(t, owner, "the agent's answer in the DM", `!!document.activeElement?.closest?.('article')?.textContent.includes('noted, quokka fan') || [...document.querySelectorAll('#thread-feed article')].some((a) => a.textContent.includes('noted, quokka fan'))`)
	shot(t, owner, shots, "direct-message")
	do(t, owner, "back to the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, owner, "read by opening it", `document.querySelectorAll('#inbox-view .inbox-item.unread').length === 0 && document.getElementById('inbox-link').textContent === 'Inbox' && document.getElementById('inbox-read').disabled`)
	for _, e := range ownerErrors() {
		t.Errorf("browser console: %s", e)
	}
}
