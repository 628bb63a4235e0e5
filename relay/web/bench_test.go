package web_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// benchMessages is how many messages one iteration of
// BenchmarkBrowserDelivery sends: enough for a p99 that means something.
const benchMessages = 200

// seenScript records, in the page, when each "bench-N-x" text first
// appears in the document: performance.timeOrigin + performance.now() is
// wall-clock time in milliseconds, so two browsers on one machine share it.
const seenScript = `(() => {
  window.__seen = new Map();
  const note = (node) => {
    const t = node.textContent || '';
    if (!t.includes('bench-')) return;
    const now = performance.timeOrigin + performance.now();
    for (const k of t.match(/bench-\d+-x/g) || []) if (!window.__seen.has(k)) window.__seen.set(k, now);
  };
  new MutationObserver((muts) => { for (const m of muts) { for (const n of m.addedNodes) note(n); if (m.type === 'characterData') note(m.target); } })
    .observe(document.body, { childList: true, subtree: true, characterData: true });
  return true;
})()`

// sendScript types text into the channel's composer and presses Enter,
// returning the moment it did.
const sendScript = `(() => {
  const a = document.querySelector('#composer-slot textarea');
  a.value = %q;
  a.dispatchEvent(new Event('input', { bubbles: true }));
  const t0 = performance.timeOrigin + performance.now();
  a.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
  return t0;
})()`

// BenchmarkBrowserDelivery measures what a person sees: the time from a
// message sent in one browser's channel view (Enter pressed) to its
// appearance in a second browser's view of the same channel, through the
// built buzz-relay on loopback; p50 and p99 over benchMessages messages,
// and the first load of the page (navigation start to the sign-in dialog,
// fresh profile, nothing cached). Goals: p99 ≤ 50 ms, first load ≤ 300 ms.
func BenchmarkBrowserDelivery(b *testing.B) {
	base := startBinary(b)
	sender, _ := browser(b)
	reader, _ := browser(b)
	load := firstLoad(b, reader, base)
	signInNew(b, sender, base, "alice")
	id := createChannel(b, sender, "bench", false)
	signInNew(b, reader, base, "bob")
	do(b, reader, "open the channel", chromedp.Navigate(base+"/#/c/"+id))
	waitJS(b, reader, "the reader's channel view", textIn("#channel-name", "bench"))
	if _, err := chromedp.Run(reader, chromedp.Evaluate[bool](seenScript)); err != nil {
		b.Fatal(err)
	}
	var lat []float64
	n := 0
	b.ResetTimer()
	for b.Loop() {
		for range benchMessages {
			n++
			text := fmt.Sprintf("bench-%d-x", n)
			t0, err := chromedp.Run(sender, chromedp.Evaluate[float64](fmt.Sprintf(sendScript, text)))
			if err != nil {
				b.Fatal(err)
			}
			waitJS(b, reader, text, fmt.Sprintf(`window.__seen.has(%q)`, text))
			t1, err := chromedp.Run(reader, chromedp.Evaluate[float64](fmt.Sprintf(`window.__seen.get(%q)`, text)))
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, t1-t0)
			// The composer is cleared once the message is in the outbox.
			waitJS(b, sender, "the composer to clear", `document.querySelector('#composer-slot textarea').value === ''`)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(quantile(lat, 0.5), "p50-ms")
	b.ReportMetric(quantile(lat, 0.99), "p99-ms")
	b.ReportMetric(load, "first-load-ms")
	b.ReportMetric(0, "ns/op")
}

// firstLoad opens the page in a browser that has never seen it and
// returns the navigation's load event end in milliseconds (every module
// the page imports has run by then), once the sign-in dialog is up.
func firstLoad(b *testing.B, ctx context.Context, base string) float64 {
	b.Helper()
	openURL(b, ctx, "open the page", base+"/")
	waitJS(b, ctx, "the sign-in dialog", `document.getElementById('signin').open`)
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType('navigation')[0].loadEventEnd`))
	if err != nil {
		b.Fatal(err)
	}
	return ms
}

// quantile returns the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// benchChannelSize is the channel BenchmarkBrowserOpenChannel opens.
const benchChannelSize = 10000

// BenchmarkBrowserOpenChannel measures opening a channel of 10 000
// messages through the built buzz-relay: from the click on its name in
// the channel list to the first frame painted with its newest message,
// and how many messages the page's DOM then holds. Goal: ≤ 300 ms, a
// bounded DOM.
func BenchmarkBrowserOpenChannel(b *testing.B) {
	base := startBinary(b, "--open", "--rate", "100000", "--burst", "100000")
	ctx, _ := browser(b)
	bob := newPeer(b, base)
	big, small := "6f708192-0000-4000-8000-000000010000", "6f708192-0000-4000-8000-000000000001"
	at := nostr.Now() - benchChannelSize
	for _, c := range [][2]string{{big, "big"}, {small, "small"}} {
		bob.publishAt(at-1, 9007, "", nostr.Tag{"h", c[0]}, nostr.Tag{"name", c[1]}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	}
	for i := range benchChannelSize {
		bob.publishAt(at+nostr.Timestamp(i), 9, fmt.Sprint("message ", i), nostr.Tag{"h", big})
	}
	bob.publishAt(at, 9, "small talk", nostr.Tag{"h", small})
	signInNew(b, ctx, base, "reader")
	last := fmt.Sprint("message ", benchChannelSize-1)
	var ms []float64
	dom := 0
	b.ResetTimer()
	for b.Loop() {
		openChannel(b, ctx, "small")
		waitJS(b, ctx, "the small channel", textIn("#feed article", "small talk"))
		t, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`new Promise((done) => {
  const t0 = performance.now();
  const seen = () => [...document.querySelectorAll('#feed article .msg-body')].some((e) => e.textContent === %q);
  const tick = () => { if (seen()) requestAnimationFrame(() => done(performance.now() - t0)); else requestAnimationFrame(tick); };
  document.querySelector('#channel-list a[href$="%s"]').click();
  requestAnimationFrame(tick);
})`, last, big), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, t)
		dom, _ = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#feed article').length`))
	}
	b.StopTimer()
	slices.Sort(ms)
	b.ReportMetric(quantile(ms, 0.5), "open-ms")
	b.ReportMetric(float64(dom), "dom-messages")
	b.ReportMetric(0, "ns/op")
}
