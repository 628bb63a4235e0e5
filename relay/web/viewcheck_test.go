package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"buzzbox/relay/web"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// viewCheckLimit bounds one view module's checks in the browser: they
// take one to three seconds; the rest is room for a loaded machine.
const viewCheckLimit = 60 * time.Second

// viewServer serves the page and its modules as the relay does (web.New,
// with its Content-Security-Policy) and, under /viewtest/, the view
// checks in testdata/views with the same headers: the checks' modules
// load the client's own from /static/js, in a page under the page's CSP.
func viewServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", web.New())
	checks := http.StripPrefix("/viewtest/", http.FileServer(http.Dir(filepath.Join("testdata", "views"))))
	mux.Handle("/viewtest/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.SetHeaders(w, r.Host)
		w.Header().Set("Cache-Control", "no-store")
		checks.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// viewAsk is what testdata/views/frame.mjs leaves in window.viewTest: a
// request for real input (keys to press or text to insert into the
// focused element, as a person types and pastes; a finger resting on
// the screen; a window size), or the checks' result.
type viewAsk struct {
	Done     bool     `json:"done"`
	Checked  int      `json:"checked"`
	Failures []string `json:"failures"`
	N        int      `json:"n"`
	Keys     []struct {
		Key   string `json:"key"`
		Shift bool   `json:"shift"`
	} `json:"keys"`
	Text  string `json:"text"`
	Touch *struct {
		X, Y   float64
		HoldMs int `json:"holdMs"`
	} `json:"touch"`
	Viewport *[2]int64 `json:"viewport"`
}

// viewKeys are the key names the checks may press, as chromedp sends them.
var viewKeys = map[string]string{"Enter": kb.Enter, "Escape": kb.Escape, "Tab": kb.Tab, "ArrowDown": kb.ArrowDown, "ArrowUp": kb.ArrowUp, "Backspace": kb.Backspace}

// viewChecks opens testdata/views/page.html in a real headless Chromium
// with testdata/views/script as its check module, which builds a view
// module of the client against a real document and store. Real input the
// checks ask for is given through the DevTools protocol, as trusted
// events (keys, inserted text, touch). Each failure is a test error,
// fewer than min checks means the script stopped early, and every console
// error fails the test.
func viewChecks(t *testing.T, script string, min int) {
	t.Helper()
	ctx, consoleErrors := browser(t)
	base := viewServer(t)
	ctx, cancel := context.WithTimeout(ctx, viewCheckLimit)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/viewtest/page.html?t="+script)); err != nil {
		t.Fatalf("open the %s page: %v", script, err)
	}
	for {
		ask, err := chromedp.Run(ctx, chromedp.Poll[viewAsk](`window.viewTest && (window.viewTest.result || window.viewTest.ask)`,
			chromedp.WithPollingInterval(10*time.Millisecond)))
		if err != nil {
			text, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s did not finish: %v\nconsole errors: %q\npage text:\n%s", script, err, consoleErrors(), text)
		}
		if ask.Done {
			t.Logf("%s: %d checks, %d failed", script, ask.Checked, len(ask.Failures))
			if ask.Checked < min {
				t.Errorf("%s checked %d things; want every one run (%d)", script, ask.Checked, min)
			}
			for _, f := range ask.Failures {
				t.Error(f)
			}
			break
		}
		for _, k := range ask.Keys {
			key, ok := viewKeys[k.Key]
			if !ok {
				t.Fatalf("%s asks for key %q; known: Enter, Escape, Tab, ArrowDown, ArrowUp, Backspace", script, k.Key)
			}
			var opts []chromedp.KeyOption
			if k.Shift {
				opts = append(opts, chromedp.KeyModifiers(chromedp.ModifierShift))
			}
			if err := chromedp.Do(ctx, chromedp.KeyEvent(key, opts...)); err != nil {
				t.Fatalf("%s: press %s: %v", script, k.Key, err)
			}
		}
		if ask.Text != "" {
			if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: ask.Text}); err != nil {
				t.Fatalf("%s: insert %d characters: %v", script, len(ask.Text), err)
			}
		}
		if tp := ask.Touch; tp != nil {
			if _, err := chromedp.Call(ctx, input.DispatchTouchEvent, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchStart, TouchPoints: []*input.TouchPoint{{X: tp.X, Y: tp.Y}}}); err != nil {
				t.Fatalf("%s: touch at %v,%v: %v", script, tp.X, tp.Y, err)
			}
			time.Sleep(time.Duration(tp.HoldMs) * time.Millisecond) // a finger resting on the screen
			if _, err := chromedp.Call(ctx, input.DispatchTouchEvent, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchEnd, TouchPoints: []*input.TouchPoint{}}); err != nil {
				t.Fatalf("%s: lift the finger: %v", script, err)
			}
		}
		if vp := ask.Viewport; vp != nil {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(vp[0], vp[1])); err != nil {
				t.Fatalf("%s: window size %dx%d: %v", script, vp[0], vp[1], err)
			}
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.viewTest.answer(`+strconv.Itoa(ask.N)+`)`)); err != nil {
			t.Fatalf("%s: answer ask %d: %v", script, ask.N, err)
		}
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// TestFeedView runs testdata/views/feed.mjs: the feed (feed.js) shows a
// channel's messages in the order they were sent, groups one author's
// run, puts day separators and the "New" line in, rebuilds a message only
// when what it shows changed (never while it is being edited), drops
// deleted ones and marks what the outbox still holds or the relay refused.
// A long message the reader opened stays open when it is rebuilt.
func TestFeedView(t *testing.T) { viewChecks(t, "feed.mjs", 26) }

// TestMessageView runs testdata/views/message.mjs: one message
// (message.js): author, agent badge and owner, markup shown as text, a
// long message folded behind Show more, reactions, replies, and the
// actions a person has on their own message (edit with Enter, cancel with
// Escape, no empty edit), shown on a phone by a long press of a finger.
func TestMessageView(t *testing.T) { viewChecks(t, "message.mjs", 38) }

// TestComposerView runs testdata/views/composer.mjs: the composer
// (composer.js) sends on Enter and takes Shift+Enter as a new line,
// refuses a paste over the relay's event size limit naming the limit,
// keeps the text when sending fails, and completes @mentions from the
// keyboard.
func TestComposerView(t *testing.T) { viewChecks(t, "composer.mjs", 23) }

// TestTurnCardView runs testdata/views/turncard.mjs: an agent's turn
// statuses through a real store show as cards under the message
// (turncard.js): state, the time ticking in place, the step, Stop for the
// agent's owner and the channel's admins only, waiting for approval, the
// final line, and the feed redrawing a message whose card changed.
func TestTurnCardView(t *testing.T) { viewChecks(t, "turncard.mjs", 20) }

// TestThreadView runs testdata/views/thread.mjs in the client's own page
// markup: a thread (thread.js) opens with its root and its replies in
// order, takes live replies and shows who types in it, sends a reply on
// Enter, and closes on Escape (not while a dialog is open) with the focus
// back on its message in the channel; on a phone it is a modal dialog.
func TestThreadView(t *testing.T) { viewChecks(t, "thread.mjs", 18) }

// TestChannelView runs testdata/views/channel.mjs in the client's own page
// markup: a channel (channel.js) shows its header, its messages but not
// its threads' replies, a composer for a member and, instead, Join for a
// public channel, who to ask for a private one and a word for a deleted
// one; the filter box, the "New" line, an empty channel's opening lines,
// the members dialog with only what the person may do, and the feed's
// window over a long channel, older messages coming as the reader scrolls
// up without moving what they read.
func TestChannelView(t *testing.T) { viewChecks(t, "channel.mjs", 30) }
