package web_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nbd-wtf/go-nostr"
)

// feedTexts is a JS expression: the texts of the channel's messages, top
// to bottom, joined by "|".
const feedTexts = `[...document.querySelectorAll('#feed article .msg-body')].map((b) => b.textContent).join('|')`

// TestBrowserOrderAfterReload: 50 messages typed in quick succession and
// 320 sent by another client as fast as the relay takes them (many in
// each second, as `buzz` sends them) show in the order they were sent,
// live and after a reload. Nostr timestamps are seconds: the tie-break is
// the relay's order, never the id.
func TestBrowserOrderAfterReload(t *testing.T) {
	ctx, consoleErrors := browser(t)
	base := startBinary(t, "--open", "--rate", "10000", "--burst", "10000")
	shots := t.TempDir()
	signInNew(t, ctx, base, "Olga")
	createChannel(t, ctx, "quick", false)
	steps := []chromedp.Action[chromedp.Void]{}
	var want []string
	for i := range 50 {
		want = append(want, fmt.Sprintf("q%02d", i))
		steps = append(steps, chromedp.SendKeys(labelled("Message #quick"), want[i]), chromedp.KeyEvent(kb.Enter))
	}
	do(t, ctx, "type 50 messages", steps...)
	waitJS(t, ctx, "the 50 messages", fmt.Sprintf(`document.querySelectorAll('#feed article').length === 50 && %s`, textIn("#feed article", "q49")))
	// ordered checks that the feed shows a run of want, in want's order,
	// ending with want's last and at least least of them.
	ordered := func(what string, want []string, least int) {
		t.Helper()
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedTexts))
		shown := strings.Split(got, "|")
		tail := want[max(0, len(want)-len(shown)):]
		if len(shown) < least || strings.Join(tail, "|") != got {
			for i := range shown {
				if i >= len(tail) || shown[i] != tail[i] {
					t.Errorf("%s: %d shown, want %d or more in send order; first out of place at %d: %q, want %q", what, len(shown), least, i, shown[i], tail[min(i, len(tail)-1)])
					return
				}
			}
			t.Errorf("%s: %d shown, want %d or more", what, len(shown), least)
		}
	}
	ordered("typed, live", want, 50)
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the 50 messages after the reload", fmt.Sprintf(`document.querySelectorAll('#feed article').length === 50`))
	ordered("typed, after a reload", want, 50)

	// Another client sends 320 into a second channel, 40 to a second.
	cli := newPeer(t, base)
	busy := "2b3c4d5e-0000-4000-8000-000000000320"
	at := nostr.Now() - 60
	cli.publishAt(at, 9007, "", nostr.Tag{"h", busy}, nostr.Tag{"name", "fast"}, nostr.Tag{"visibility", "open"}, nostr.Tag{"channel_type", "stream"})
	var sent []string
	for i := range 320 {
		sent = append(sent, fmt.Sprintf("c%03d", i))
		cli.publishAt(at+nostr.Timestamp(i/40), 9, sent[i], nostr.Tag{"h", busy})
	}
	openChannel(t, ctx, "fast")
	waitJS(t, ctx, "the newest of the 320", textIn("#feed article", "c319"))
	ordered("sent by a client, live", sent, 300)
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the 320 after the reload", textIn("#feed article", "c319")+` && document.querySelectorAll('#feed article').length >= 300`)
	ordered("sent by a client, after a reload", sent, 300)
	shot(t, ctx, shots, "order-desktop")
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// relayProc is the built buzz-relay on a fixed address and data dir, to
// be stopped and started again.
type relayProc struct {
	t    *testing.T
	addr string
	data string
	args []string
	cmd  *exec.Cmd
}

func newRelayProc(t *testing.T, args ...string) *relayProc {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &relayProc{t: t, addr: ln.Addr().String(), data: t.TempDir(), args: args}
	ln.Close()
	t.Cleanup(p.stop)
	return p
}

func (p *relayProc) base() string { return "http://" + p.addr }

// start runs the relay and returns once it listens.
func (p *relayProc) start() {
	p.t.Helper()
	cmd := exec.Command(testexe.Link(p.t, "buzz-relay"), append(slices.Clone(p.args), "--data", p.data, "--listen", p.addr)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	ready := make(chan bool, 1)
	go func() { // ends when the relay's stderr closes
		sc := bufio.NewScanner(stderr)
		told := false
		for sc.Scan() {
			if !told && strings.Contains(sc.Text(), "listening") {
				told = true
				ready <- true
			}
		}
		if !told {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			p.t.Fatal("buzz-relay exited before listening")
		}
	case <-time.After(30 * time.Second):
		p.t.Fatal("buzz-relay did not start listening")
	}
}

// stop ends the relay process and waits for it.
func (p *relayProc) stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }() // ends when the process is reaped
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// TestBrowserOfflineQueue: the relay process stops; the page says so in a
// banner with "Retry now", and what is typed meanwhile is kept, shown as
// sending, and sent once when the relay is back, which the visible page
// finds within 5 s.
func TestBrowserOfflineQueue(t *testing.T) {
	ctx, _ := browser(t)
	shots := t.TempDir()
	p := newRelayProc(t, "--open")
	p.start()
	signInNew(t, ctx, p.base(), "Pia")
	id := createChannel(t, ctx, "outage", false)
	post(t, ctx, "outage", "before the outage")
	p.stop()
	waitJS(t, ctx, "the offline banner", `!document.getElementById('net-banner').hidden && document.getElementById('net-banner').textContent.includes('You are offline')`)
	words := []string{"written while away 1", "written while away 2", "written while away 3"}
	for _, w := range words {
		do(t, ctx, "type "+w, chromedp.SendKeys(labelled("Message #outage"), w), chromedp.KeyEvent(kb.Enter))
		waitJS(t, ctx, w+" in the feed, sending", fmt.Sprintf(`[...document.querySelectorAll('#feed article[data-outbox=queued]')].some((a) => a.textContent.includes(%q))`, w))
	}
	left, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('textarea[aria-label="Message #outage"]').value`))
	if left != "" {
		t.Errorf("composer holds %q after sending offline; want it cleared (the words are in the outbox)", left)
	}
	waitJS(t, ctx, "the banner to count them", textIn("#net-banner", "3 messages will be sent when it is back"))
	waitJS(t, ctx, "a retry button", `[...document.querySelectorAll('#net-banner button')].some((b) => b.textContent === 'Retry now')`)
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))
	shot(t, ctx, shots, "offline-desktop")
	do(t, ctx, "phone size", chromedp.EmulateViewport(390, 844))
	shot(t, ctx, shots, "offline-phone")
	do(t, ctx, "desktop size", chromedp.EmulateViewport(1440, 900))

	// Far enough into the backoff that a plain doubling would wait long.
	time.Sleep(8 * time.Second)
	p.start()
	back := time.Now()
	waitJS(t, ctx, "the outbox to empty", `document.getElementById('status').dataset.state !== 'offline' && !document.querySelector('#feed article[data-outbox=queued]') && document.getElementById('net-banner').hidden`)
	if d := time.Since(back); d > 5*time.Second {
		t.Errorf("the page took %v to reconnect and send after the relay returned; want within 5 s", d.Round(100*time.Millisecond))
	}
	peer := newPeer(t, p.base())
	evs, err := peer.rel.QuerySync(peer.ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {id}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		n := 0
		for _, ev := range evs {
			if ev.Content == w {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the relay holds %q %d times; want once", w, n)
		}
	}
	// A reload sends nothing again: the outbox is empty.
	do(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the channel after the reload", textIn("#feed article", words[2]))
	if q, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('buzz.outbox.' + window.buzz.me) || ''`)); q != "[]" && q != "" {
		t.Errorf("outbox after delivery = %s; want empty", q)
	}
}
