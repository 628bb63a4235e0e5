package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
)

// TestBrowserFilesLive: Ann attaches an image with the button, a log by
// dropping it and a note by pasting it, watches the progress bars, and
// sends; Ben, in a second browser, sees the image's thumbnail appear live,
// opens it in the lightbox at full size, and sees the other files as
// cards with name, size and type.
func TestBrowserFilesLive(t *testing.T) {
	ann, annErrors := browser(t)
	ben, benErrors := browser(t)
	benSent := watchOutbound(t, ben)
	base := startBinary(t, "--open", "--max-blob-bytes", "1048576")
	shots := t.TempDir()
	signInNew(t, ann, base, "Ann")
	id := createChannel(t, ann, "pics", false)
	signInNew(t, ben, base, "Ben")
	waitJS(t, ben, "#pics listed", textIn("nav a", "pics"))
	openChannel(t, ben, "pics")
	do(t, ben, "Ben joins", chromedp.Click(button("Join channel")))
	waitJS(t, ben, "Ben's composer", `document.querySelector('#composer-slot textarea') !== null`)

	img := image.NewNRGBA(image.Rect(0, 0, 1200, 800))
	for y := range 800 {
		for x := range 1200 {
			img.Set(x, y, color.NRGBA{uint8(x / 5), uint8(y / 4), 160, 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	pic := filepath.Join(t.TempDir(), "graph.png")
	os.WriteFile(pic, buf.Bytes(), 0o644)

	do(t, ann, "Ann picks the image", chromedp.SetUploadFiles(chromedp.CSS(`#composer-slot input[type=file]`), []string{pic}))
	do(t, ann, "Ann drops a log and pastes a note", chromedp.Evaluate[chromedp.Void](`(() => {
		const form = document.querySelector('#composer-slot form');
		const drop = new DataTransfer();
		drop.items.add(new File(['ok 1\nok 2\nFAIL 3\n'], 'build.log', { type: 'text/plain' }));
		form.dispatchEvent(new DragEvent('drop', { dataTransfer: drop, bubbles: true, cancelable: true }));
		const paste = new DataTransfer();
		paste.items.add(new File(['remember the milk'], 'note.txt', { type: 'text/plain' }));
		form.querySelector('textarea').dispatchEvent(new ClipboardEvent('paste', { clipboardData: paste, bubbles: true, cancelable: true }));
	})()`))
	waitJS(t, ann, "three uploads done", `document.querySelectorAll('#composer-slot .pending-file.done').length === 3 &&
		[...document.querySelectorAll('#composer-slot .pending-file progress')].every((p) => p.value === 1)`)
	// A file over the relay's limit is refused before it is sent, with
	// the relay's reason, and can be taken off the list.
	do(t, ann, "Ann drops a 2 MB file", chromedp.Evaluate[chromedp.Void](`(() => {
		const drop = new DataTransfer();
		drop.items.add(new File([new Uint8Array(2 * 1024 * 1024)], 'big.bin'));
		document.querySelector('#composer-slot form').dispatchEvent(new DragEvent('drop', { dataTransfer: drop, bubbles: true, cancelable: true }));
	})()`))
	waitJS(t, ann, "the refusal naming the limit", textIn(`#composer-slot .pending-file.failed`, "the limit is 1 MB"))
	shot(t, ann, shots, "files-uploaded")
	do(t, ann, "Ann removes it", chromedp.Click(button("Remove big.bin")))
	waitJS(t, ann, "three files left", `document.querySelectorAll('#composer-slot .pending-file').length === 3`)
	do(t, ann, "Ann sends", chromedp.SendKeys(labelled("Message #pics"), "the build graph"), chromedp.KeyEvent(kb.Enter))
	const thumb = `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('the build graph'))?.querySelector('img.attachment-thumb')`
	waitJS(t, ann, "Ann's thumbnail", thumb+`?.complete && `+thumb+`.naturalWidth === 320`)
	waitJS(t, ann, "the composer cleared", `document.querySelectorAll('#composer-slot .pending-file').length === 0`)

	waitJS(t, ben, "Ben sees the thumbnail live", thumb+`?.complete && `+thumb+`.naturalWidth === 320 && `+thumb+`.src.startsWith('blob:')`)
	waitJS(t, ben, "Ben sees the files as cards", textIn(`#feed .file-card`, "build.log")+` && `+textIn(`#feed .file-card`, "note.txt")+` && `+textIn(`#feed .file-card`, "17 B · text/plain"))
	waitJS(t, ben, "no URL in the text", `![...document.querySelectorAll('#feed .msg-body')].some((b) => b.textContent.includes('/upload') || /[0-9a-f]{64}/.test(b.textContent))`)
	shot(t, ben, shots, "files-second-browser")
	do(t, ben, "phone width", chromedp.EmulateViewport(390, 844))
	shot(t, ben, shots, "files-second-browser-390x844")
	do(t, ben, "desktop width", chromedp.EmulateViewport(1280, 800))
	do(t, ben, "Ben opens the image", chromedp.Click(button("Open image graph.png")))
	waitJS(t, ben, "the lightbox at full size", `document.querySelector('dialog.lightbox')?.open && document.querySelector('.lightbox-image').naturalWidth === 1200`)
	shot(t, ben, shots, "files-lightbox")
	do(t, ben, "Escape closes it", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ben, "the lightbox gone", `!document.querySelector('dialog.lightbox')`)

	// A message whose imeta names another host: the page fetches the
	// file from its own relay by hash, never from the named URLs.
	sum := sha256.Sum256(buf.Bytes())
	hash := hex.EncodeToString(sum[:])
	mal := newPeer(t, base)
	mal.publish(0, `{"name":"Mal"}`)
	mal.publish(9021, "", nostr.Tag{"h", id})
	mal.publish(9, "same picture", nostr.Tag{"h", id}, nostr.Tag{"imeta", "url https://evil.example/" + hash + ".png", "m image/png", "x " + hash,
		"dim 1200x800", "thumb https://evil.example/t.png", "alt again.png"})
	const again = `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('same picture'))?.querySelector('img.attachment-thumb')`
	waitJS(t, ben, "the other message's thumbnail, from this relay", again+`?.complete && `+again+`.naturalWidth === 320`)
	if s := benSent.find("evil.example"); s != "" {
		t.Errorf("the page fetched a URL a message named: %s", s)
	}
	// A file in a thread reply, from the thread's own composer.
	do(t, ben, "Ben opens the thread", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('the build graph')).querySelector('button[aria-label="Reply in thread"]').click()`))
	waitJS(t, ben, "the thread composer", `document.querySelector('#thread-composer input[type=file]') !== null`)
	do(t, ben, "Ben drops a file in the thread", chromedp.Evaluate[chromedp.Void](`(() => {
		const drop = new DataTransfer();
		drop.items.add(new File(['fixed in 1f3a'], 'fix.txt', { type: 'text/plain' }));
		document.querySelector('#thread-composer form').dispatchEvent(new DragEvent('drop', { dataTransfer: drop, bubbles: true, cancelable: true }));
	})()`))
	waitJS(t, ben, "the thread upload done", `document.querySelectorAll('#thread-composer .pending-file.done').length === 1`)
	do(t, ben, "Ben replies", chromedp.SendKeys(labelled("Thread reply"), "see the fix"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ann, "Ann sees one reply", `(() => { const b = [...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('the build graph'))?.querySelector('.replies'); return b && b.textContent.includes('1 reply'); })()`)
	waitJS(t, ben, "the reply's file card in the thread", textIn(`#thread .file-card`, "fix.txt"))

	for _, e := range append(annErrors(), benErrors()...) {
		if !strings.Contains(e, "413") { // the refused preflight is logged by the browser
			t.Errorf("browser console: %s", e)
		}
	}
}
