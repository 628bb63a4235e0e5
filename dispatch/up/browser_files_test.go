package up

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// A real Chromium against `buzzbox up`: the owner signs in with the link
// up prints and attaches an image; a person invited with `buzz members
// invite`, in a second browser, sees its thumbnail appear live.

const browserWait = 90 * time.Second

var (
	loginLink  = regexp.MustCompile(`http://\S+/#login=\S+`)
	inviteLink = regexp.MustCompile(`http://\S+/#invite=[^"\s]+`)
)

// upBrowser starts a headless Chromium for the test; errs returns what its
// console reported as errors.
func upBrowser(t *testing.T) (ctx context.Context, errs func() []string) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("SKIP(loud): no chromium on PATH; the web client is not tested in a browser (apt-get install -y chromium)")
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var got []string
	messages := chromedp.Console(ctx)
	go func() { // ends when ctx ends
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				mu.Lock()
				got = append(got, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

func bwait(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(browserWait), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, text)
	}
}

func bdo(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

func bshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range []string{dir, os.Getenv("BUZZ_WEB_SCREENSHOTS")} {
		if d != "" {
			os.WriteFile(filepath.Join(d, name+".png"), b, 0o644)
		}
	}
}

func byLabel(name string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//*[@aria-label=%[1]q] | //*[@id=//label[normalize-space(.)=%[1]q]/@for]`, name))
}

func byButton(name string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//button[normalize-space(.)=%[1]q or @aria-label=%[1]q]`, name))
}

func TestUpBrowserImageLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary and two browsers")
	}
	owner, ownerErrors := upBrowser(t)
	guest, guestErrors := upBrowser(t)
	u := startUp(t, nil)
	shots := t.TempDir()
	login := loginLink.FindString(strings.Join(u.printed, "\n"))
	if login == "" {
		t.Fatalf("up printed no sign-in link:\n%s", strings.Join(u.printed, "\n"))
	}
	invite := inviteLink.FindString(u.cli("members invite --channel " + u.channel))
	if invite == "" {
		t.Fatal("buzz members invite printed no link")
	}

	bdo(t, owner, "open the sign-in link", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(login))
	bwait(t, owner, "signed in as the owner", `window.buzz && document.getElementById('status').dataset.state === 'authenticated'`)
	bdo(t, owner, "open #general", chromedp.Click(chromedp.Search(`//a[starts-with(@aria-label,"channel general")]`)))
	bwait(t, owner, "the composer of #general", `document.querySelector('#composer-slot input[type=file]') !== null`)

	bdo(t, guest, "open the invite", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(invite))
	bwait(t, guest, "the sign-in dialog", `document.getElementById('signin').open`)
	bdo(t, guest, "create a key", chromedp.SendKeys(byLabel("Your name"), "Grace"), chromedp.Click(byButton("Create a new key")))
	bwait(t, guest, "the new nsec", `document.getElementById('new-nsec').value.startsWith('nsec1')`)
	bdo(t, guest, "saved", chromedp.Click(byButton("I have saved it")))
	bwait(t, guest, "#general open", `document.getElementById('channel-name').textContent.includes('general')`)

	img := image.NewNRGBA(image.Rect(0, 0, 900, 600))
	for y := range 600 {
		for x := range 900 {
			img.Set(x, y, color.NRGBA{uint8(x / 4), 90, uint8(y / 3), 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	pic := filepath.Join(t.TempDir(), "screenshot.png")
	os.WriteFile(pic, buf.Bytes(), 0o644)
	bdo(t, owner, "attach the image", chromedp.SetUploadFiles(chromedp.CSS(`#composer-slot input[type=file]`), []string{pic}))
	bwait(t, owner, "the upload done", `document.querySelector('#composer-slot .pending-file.done progress')?.value === 1`)
	bdo(t, owner, "send", chromedp.SendKeys(byLabel("Message #general"), "this is what I see"), chromedp.KeyEvent(kb.Enter))

	const thumb = `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('this is what I see'))?.querySelector('img.attachment-thumb')`
	bwait(t, guest, "the thumbnail, live in the second browser", thumb+`?.complete && `+thumb+`.naturalWidth === 320 && `+thumb+`.src.startsWith('blob:')`)
	bshot(t, guest, shots, "up-image-second-browser")
	bshot(t, owner, shots, "up-image-owner")
	for _, e := range append(ownerErrors(), guestErrors()...) {
		t.Errorf("browser console: %s", e)
	}
}
