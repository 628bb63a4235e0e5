package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// mdMessage exercises what a person types in chat: emphasis, links,
// lists, quotes, a table, strikethrough and a fenced block with a
// language.
const mdMessage = "Release **notes** for _today_, see [the docs](https://example.com/docs) ~~not this~~\n\n" +
	"- first\n- second with `code`\n\n1. one\n2. two\n\n> quoted line\n\n" +
	"| name | state |\n| --- | :-: |\n| relay | up |\n\n" +
	"```go\nfunc main() {}\n```\n\n[bad](javascript:alert(1)) and &copy; &#x1F600;"

// TestBrowserMarkdown: a markdown message renders as markup built from
// DOM nodes (bold, links that open in a new tab, lists, quote, table,
// strikethrough), the code block has its language label and a copy
// button that copies the code, and a javascript: link is inert text.
// A very long message shows folded until Show more. Screenshots at
// 1440×900 and 390×844.
func TestBrowserMarkdown(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	shots := t.TempDir()
	signInAsOwner(t, ctx, w)
	id := createChannel(t, ctx, "notes", false)
	pub := w.join(t, "Hal").publish
	pub(9021, "", nostr.Tag{"h", id})
	pub(9, mdMessage, nostr.Tag{"h", id})
	waitJS(t, ctx, "the markdown message", textIn(`#feed .msg-body strong`, "notes"))
	checks := map[string]string{
		"bold":           `document.querySelector('#feed .msg-body strong').textContent === 'notes'`,
		"emphasis":       `document.querySelector('#feed .msg-body em').textContent === 'today'`,
		"link":           `(() => { const a = document.querySelector('#feed .msg-body a[href="https://example.com/docs"]'); return a && a.textContent === 'the docs' && a.target === '_blank' && a.rel.includes('noopener'); })()`,
		"strikethrough":  `document.querySelector('#feed .msg-body del').textContent === 'not this'`,
		"bullet list":    `document.querySelectorAll('#feed .msg-body ul > li').length === 2`,
		"ordered list":   `document.querySelectorAll('#feed .msg-body ol > li').length === 2`,
		"inline code":    `document.querySelector('#feed .msg-body li code').textContent === 'code'`,
		"quote":          `document.querySelector('#feed .msg-body blockquote').textContent.trim() === 'quoted line'`,
		"table":          `document.querySelectorAll('#feed .msg-body table th').length === 2 && document.querySelector('#feed .msg-body td[align=center]').textContent === 'up'`,
		"code label":     `document.querySelector('#feed .codeblock .lang').textContent === 'go'`,
		"code":           `document.querySelector('#feed .codeblock pre code').textContent === 'func main() {}'`,
		"copy button":    `!!document.querySelector('#feed .codeblock button[aria-label="Copy go code"]')`,
		"inert link":     `document.querySelector('#feed .msg-body .unsafe-link').textContent === 'bad' && !document.querySelector('#feed a[href^="javascript"]')`,
		"entities":       `document.querySelector('#feed .msg-body').textContent.endsWith('and © 😀')`,
		"no raw markers": `!document.querySelector('#feed .msg-body').textContent.includes('**')`,
	}
	for what, js := range checks {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil || !ok {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#feed .msg-body').innerHTML`))
			t.Errorf("%s: %s is false (%v)\nbody: %s", what, js, err, body)
		}
	}
	// The copy button hands the code to the clipboard (caught on its way:
	// headless chromium has no clipboard to read back).
	do(t, ctx, "watch the clipboard", chromedp.Evaluate[chromedp.Void](`void (navigator.clipboard.writeText = (s) => { window.copied = s; return Promise.resolve(); })`))
	do(t, ctx, "copy the code", chromedp.Click(button("Copy go code")))
	waitJS(t, ctx, "copied", textIn(`#feed .codeblock button`, "Copied"))
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.copied`)); err != nil || got != "func main() {}\n" {
		t.Errorf("copied %q, %v; want the code", got, err)
	}
	// A very long message shows folded until Show more.
	pub(9, "start of a long log\n"+strings.Repeat("log line\n", 400)+"end of the long log", nostr.Tag{"h", id})
	const long = `[...document.querySelectorAll('#feed article')].find((a) => a.textContent.includes('start of a long log'))`
	waitJS(t, ctx, "the long message folded", long+`?.querySelector('.msg-body.folded') != null && `+long+`.querySelector('.msg-body').getBoundingClientRect().height <= 400`)
	do(t, ctx, "show more", chromedp.Click(chromedp.Search(`//article[contains(., "start of a long log")]//button[normalize-space(.)="Show more"]`)))
	waitJS(t, ctx, "the whole message", `!`+long+`.querySelector('.msg-body.folded') && `+long+`.querySelector('.msg-body').getBoundingClientRect().height > 2000 && `+long+`.querySelector('.show-more').getAttribute('aria-expanded') === 'true'`)
	do(t, ctx, "show less", chromedp.Click(chromedp.Search(`//article[contains(., "start of a long log")]//button[normalize-space(.)="Show less"]`)))
	waitJS(t, ctx, "folded again", `!!`+long+`.querySelector(".msg-body.folded")`)
	for _, vp := range [][2]int64{{1440, 900}, {390, 844}} {
		do(t, ctx, "viewport", chromedp.EmulateViewport(vp[0], vp[1]))
		shot(t, ctx, shots, fmt.Sprintf("markdown-%dx%d", vp[0], vp[1]))
	}
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
