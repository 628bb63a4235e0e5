package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// reviewSizes are the window sizes every main view is shot at for review:
// a laptop and a phone.
var reviewSizes = []struct {
	name string
	w, h int64
}{{"desktop", 1440, 900}, {"phone", 390, 844}}

// reviewDirOnce makes the folder review screenshots go to.
var reviewDirOnce sync.Once

// reviewDir is where tests leave screenshots for a person to look at:
// $BUZZ_WEB_SCREENSHOTS (scripts/test.sh sets it and says where), else
// buzzbox-screenshots in the system's temporary directory. Later runs
// overwrite earlier ones of the same name.
func reviewDir(t testing.TB) string {
	dir := os.Getenv("BUZZ_WEB_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "buzzbox-screenshots")
	}
	reviewDirOnce.Do(func() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("screenshots folder: %v", err)
		}
	})
	return dir
}

// shootView saves the page as view at every review size, named
// view-desktop.png and view-phone.png, runs axe-core over it at each
// size when src holds axe, and leaves the window at the desktop size.
func shootView(t *testing.T, ctx context.Context, axeSrc, view string) {
	t.Helper()
	dir := reviewDir(t)
	for _, s := range reviewSizes {
		do(t, ctx, fmt.Sprintf("%s at %dx%d", view, s.w, s.h), chromedp.EmulateViewport(s.w, s.h))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", view, err)
		}
		name := filepath.Join(dir, view+"-"+s.name+".png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatalf("screenshot %s: %v", view, err)
		}
		if axeSrc != "" {
			axeCheck(t, ctx, axeSrc, view+", "+s.name)
		}
	}
	do(t, ctx, "desktop size", chromedp.EmulateViewport(reviewSizes[0].w, reviewSizes[0].h))
}

// TestBrowserViewsUnderUp opens every main view of the web client served
// by the built `buzzbox up` (its agent on a scripted model), as the
// owner signed in by up's link: the sign-in page, the channel with the
// agent's answer and its turn card, the thread, each dialog, the agents
// panel, search results, the inbox, a direct message, and the channel in
// dark mode. Each is shot at 1440×900 and 390×844 for review (reviewDir)
// and checked by axe-core at both sizes: no serious or critical finding.
func TestBrowserViewsUnderUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	modules, _ := testexe.NodeModules(t)
	b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js"))
	if err != nil {
		t.Skipf("SKIP(loud): axe-core missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	}
	src := string(b)
	model := llmtest.New(t)
	model.SetHandler(func(map[string]any) llmtest.Reply {
		return llmtest.Reply{Text: "Here is **the plan**:\n\n1. read the notes\n2. write the summary\n\n`buzz messages send` posts it."}
	})
	w := startUp(t, model)

	visitor, _ := browser(t)
	openURL(t, visitor, "open the workspace without a key", "http://"+w.addr+"/")
	waitJS(t, visitor, "the sign-in page", `!document.getElementById('signin').hidden`)
	shootView(t, visitor, src, "sign-in")

	ctx, consoleErrors := browser(t)
	openURL(t, ctx, "open the sign-in link", w.link)
	waitJS(t, ctx, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))
	waitJS(t, ctx, "the agent among the members", fmt.Sprintf(`buzz.store.members(%q).some((m) => m.pk !== buzz.me)`, w.channel))
	agent, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`buzz.store.members(%q).find((m) => m.pk !== buzz.me).pk`, w.channel)))
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "post notes in markdown", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`buzz.post(%q, %q, [])`, w.channel,
		"Notes for **Friday**: ship the _search_ view, then the inbox.\n\n- [docs](https://example.org/docs)\n- `make test`")))
	waitJS(t, ctx, "the notes", textIn("#feed article", "ship the search view"))
	do(t, ctx, "mention the agent", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`buzz.post(%q, 'please plan the week', [%q])`, w.channel, agent)))
	waitJS(t, ctx, "the agent's answer and its card", `[...document.querySelectorAll('#feed article')].some((a) => a.textContent.includes('please plan the week') && a.querySelector('.turn-card[data-state=done]') && a.querySelector('.replies'))`)
	shootView(t, ctx, src, "channel")

	do(t, ctx, "open the thread", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('please plan the week')).querySelector('.replies').click()`))
	waitJS(t, ctx, "the thread with the answer", `!document.getElementById('thread').hidden && [...document.querySelectorAll('#thread-feed article')].some((a) => a.textContent.includes('the plan'))`)
	shootView(t, ctx, src, "thread")
	do(t, ctx, "close the thread", chromedp.Evaluate[chromedp.Void](`document.getElementById('thread-close').click()`))

	for _, d := range []struct{ view, open, close string }{
		{"members", `document.getElementById('members-btn').click()`, `document.getElementById('members-dialog').close()`},
		{"account", `document.getElementById('me').click()`, `document.getElementById('profile-dialog').close()`},
		{"new-channel", `document.getElementById('new-channel').click()`, `document.getElementById('channel-dialog').close()`},
		{"agents", `document.getElementById('agents-btn').click()`, `document.getElementById('agents-dialog').close()`},
		{"switcher", `document.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true, bubbles: true }))`, `document.getElementById('switcher').close()`},
		{"shortcuts", `document.dispatchEvent(new KeyboardEvent('keydown', { key: '/', ctrlKey: true, bubbles: true }))`, `document.getElementById('shortcuts').close()`},
	} {
		do(t, ctx, "open "+d.view, chromedp.Evaluate[chromedp.Void](d.open))
		waitJS(t, ctx, d.view+" open", `!!document.querySelector('dialog[open]')`)
		shootView(t, ctx, src, d.view)
		do(t, ctx, "close "+d.view, chromedp.Evaluate[chromedp.Void](d.close))
	}

	do(t, ctx, "search friday", chromedp.SendKeys(chromedp.CSS(`#global-search`), "friday"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the result", `!document.getElementById('search-view').hidden && document.querySelectorAll('.search-hit').length > 0`)
	shootView(t, ctx, src, "search")

	do(t, ctx, "open the inbox", chromedp.Evaluate[chromedp.Void](`location.hash = '#/inbox'`))
	waitJS(t, ctx, "the inbox", `!document.getElementById('inbox-view').hidden`)
	shootView(t, ctx, src, "inbox")

	name, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`buzz.store.members(%q).find((m) => m.pk !== buzz.me).name`, w.channel)))
	if err != nil || name == "" {
		t.Fatalf("the agent's name: %q %v", name, err)
	}
	do(t, ctx, "new direct message", chromedp.Click(chromedp.CSS(`#new-dm`)))
	do(t, ctx, "to the agent", chromedp.SendKeys(chromedp.CSS(`#dm-people`), name), chromedp.Click(chromedp.CSS(`#dm-open`)))
	waitJS(t, ctx, "the conversation's composer", `location.hash.startsWith('#/c/') && !!document.querySelector('#composer-slot textarea')`)
	do(t, ctx, "write to the agent", chromedp.Evaluate[chromedp.Void](`buzz.post(location.hash.slice(4), 'a word in private', [])`))
	waitJS(t, ctx, "the agent's answer in the conversation", `[...document.querySelectorAll('#feed article')].some((a) => a.textContent.includes('a word in private') && a.querySelector('.turn-card[data-state=done]') && a.querySelector('.replies'))`)
	shootView(t, ctx, src, "direct-message")

	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatalf("dark mode: %v", err)
	}
	do(t, ctx, "back to #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, w.channel)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))
	shootView(t, ctx, src, "channel-dark")
	t.Logf("screenshots for review in %s", reviewDir(t))
	for _, e := range consoleErrors() {
		if !strings.Contains(e, "favicon") {
			t.Errorf("browser console: %s", e)
		}
	}
}
