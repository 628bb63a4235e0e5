package web_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// approvalTimeout is the harness's --approval-timeout in this test: long
// enough to click a button, short enough to wait out once.
const approvalTimeout = 20 * time.Second

// touchAnchorRE finds the event a prompt is about in a model request.
var touchAnchorRE = regexp.MustCompile(`--reply-to ([0-9a-f]{64})`)

// TestBrowserApprovesCommand runs `buzzbox up` with buzz-agent on a leash
// (an approval rule for touch) and a scripted model that asks its shell to
// touch a file named for the message it answers. In a real browser the
// owner sees the permission request in the thread, allows it once (the
// file appears), rejects the next (no file, the model is told), and leaves
// a third unanswered (rejected after the timeout, said in the card).
func TestBrowserApprovesCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	ctx, consoleErrors := browser(t)
	model := llmtest.New(t)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		if last, _ := msgs[len(msgs)-1].(map[string]any); last["role"] == "tool" {
			return llmtest.Reply{Text: "finished"}
		}
		body, _ := json.Marshal(msgs)
		all := touchAnchorRE.FindAllStringSubmatch(string(body), -1)
		if all == nil {
			return llmtest.Reply{Text: "no anchor found"}
		}
		m := all[len(all)-1] // the session's history holds the earlier prompts' anchors
		return shellCall("touch approved-" + m[1][:12])
	})
	rules := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(rules, []byte("touch\n"), 0o600)
	work := t.TempDir()
	link, channel := startUpIn(t, work, model.URL, "BUZZ_AGENT_APPROVAL_RULES="+rules,
		fmt.Sprintf("BUZZ_ACP_APPROVAL_TIMEOUT_SECS=%d", int(approvalTimeout/time.Second)))
	ran := func(id string) bool { _, err := os.Stat(filepath.Join(work, "approved-"+id[:12])); return err == nil }

	openURL(t, ctx, "open the sign-in link", link)
	waitJS(t, ctx, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, channel)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))

	// ask mentions the agent with text and returns the message's id, once
	// the channel shows that a permission request waits in its thread.
	ask := func(text string) string {
		do(t, ctx, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
		waitJS(t, ctx, "the agent in the composer's mention list", `document.activeElement?.getAttribute('aria-label') === 'Message #general' && [...document.querySelectorAll('#composer-slot [role=listbox]:not([hidden]) [role=option]')].some((o) => o.textContent.includes('agent'))`)
		do(t, ctx, "pick it and send "+text, chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), text), chromedp.KeyEvent(kb.Enter))
		find := fmt.Sprintf(`[...document.querySelectorAll('#feed article.mine')].find((x) => x.textContent.includes(%q))`, text)
		waitJS(t, ctx, "the waiting request's notice under "+text, fmt.Sprintf(`(() => { const a = %s; return !!a && !!a.querySelector('.approval-pending'); })()`, find))
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](find+`.dataset.id`))
		if err != nil || len(id) != 64 {
			t.Fatalf("read the message id: %q, %v", id, err)
		}
		open := fmt.Sprintf(`(() => { const b = %s.querySelector('.approval-pending'); if (b) b.click(); return !!b && !document.getElementById('thread').hidden; })()`, find)
		waitJS(t, ctx, "the thread to open", open)
		waitJS(t, ctx, "the card in the thread", `!!document.querySelector('#thread .approval[data-state=pending] button[data-option]')`)
		return id
	}
	card := `document.querySelector('#thread .approval')`
	click := func(option string) {
		waitJS(t, ctx, "press "+option, fmt.Sprintf(`(() => { const b = %s.querySelector('button[data-option=%q]'); if (b) b.click(); return !!b; })()`, card, option))
	}

	a := ask("touch one")
	shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](card+`.textContent`))
	for _, want := range []string{"asks to use buzz-dev-mcp__shell", "touch approved-" + a[:12], "Allow once", "Allow for this session", "Reject", "approval rule “touch”"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the card lacks %q: %s", want, shown)
		}
	}
	if ran(a) {
		t.Fatal("the command ran before anyone allowed it")
	}
	click("allow-once")
	waitJS(t, ctx, "the card to say it was allowed", textIn("#thread .approval[data-state=answered]", "Allow once by"))
	deadline := time.Now().Add(waitLimit)
	for !ran(a) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !ran(a) {
		t.Fatal("the allowed command did not run")
	}

	do(t, ctx, "close the thread", chromedp.Evaluate[chromedp.Void](`document.getElementById('thread-close').click()`))
	b := ask("touch two")
	click("reject")
	waitJS(t, ctx, "the card to say it was rejected", textIn("#thread .approval[data-state=answered]", "Reject by"))

	do(t, ctx, "close the thread", chromedp.Evaluate[chromedp.Void](`document.getElementById('thread-close').click()`))
	c := ask("touch three")
	waitJS(t, ctx, "the card to say nobody answered", textIn("#thread .approval[data-state=timeout]", "nobody answered"))
	waitJS(t, ctx, "the notice in the thread", textIn("#thread .thread-replies article", "nobody answered the request"))
	told := func(id string) bool {
		for _, body := range model.Bodies() {
			if regexp.MustCompile(`Not run: the command \W{1,8}touch approved-` + id[:12]).Match(body) {
				return true
			}
		}
		return false
	}
	if ran(b) || ran(c) || !told(b) || !told(c) {
		t.Errorf("rejected ran %v, unanswered ran %v; the model told of either: %v, %v; want false, false, true, true", ran(b), ran(c), told(b), told(c))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// startUpIn runs the built `buzzbox up` in dir against the scripted model at
// modelURL, with extra environment, until the test ends; it returns the
// owner's sign-in link and the general channel's id.
func startUpIn(t *testing.T, dir, modelURL string, extra ...string) (link, channel string) {
	t.Helper()
	w := startUpAt(t, dir, modelURL, extra...)
	return w.link, w.channel
}
