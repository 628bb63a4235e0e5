package web_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// agentReply is what the scripted model answers, in plain text: the
// harness posts a turn's final text into the thread when the agent wrote
// nothing there itself.
const agentReply = "pong from the agent"

var (
	loginLinkRE = regexp.MustCompile(`http://\S+/#login=\S+`)
	channelRE   = regexp.MustCompile(`channel #general \(([0-9a-f-]{36})\)`)
)

// TestBrowserTalksToAgent runs the whole product as a person meets it:
// the built `buzzbox up` (relay, harness, buzz-agent against a scripted
// model), the owner's one-time sign-in link in a real browser, a message
// mentioning the agent picked from the autocomplete by keyboard, and the
// agent's reply appearing live in the message's thread, without a reload.
func TestBrowserTalksToAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up and a browser")
	}
	ctx, consoleErrors := browser(t)
	model := llmtest.New(t)
	model.SetHandler(func(map[string]any) llmtest.Reply { return llmtest.Reply{Text: agentReply} })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	home := t.TempDir()
	up := exec.Command(testexe.Path(t), "up", "--listen", addr)
	up.Dir = t.TempDir()
	up.Env = []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m",
		"OPENAI_COMPAT_BASE_URL=" + model.URL, "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"PATH=" + os.Getenv("PATH"), "BUZZ_ACP_NO_PRESENCE=true"}
	up.Stderr = t.Output()
	out, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		up.Process.Signal(syscall.SIGINT) // Ctrl-C, as a person stops it
		done := make(chan struct{})
		go func() { up.Wait(); close(done) }() // ends when up exits
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			up.Process.Kill()
			<-done
		}
	})
	var link, channel string
	found := make(chan struct{})
	go func() { // reads up's stdout until it exits
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			if m := channelRE.FindStringSubmatch(l); m != nil && channel == "" {
				channel = m[1]
			}
			if m := loginLinkRE.FindString(l); m != "" && link == "" {
				link = m
			}
			if link != "" && channel != "" && found != nil {
				close(found)
				found = nil
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(waitLimit):
		t.Fatal("buzzbox up printed no sign-in link and channel")
	}

	openURL(t, ctx, "open the sign-in link", link)
	waitJS(t, ctx, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, channel)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "general"))
	do(t, ctx, "start a mention", chromedp.SendKeys(labelled("Message #general"), "@ag"))
	waitJS(t, ctx, "the agent in the mention list", `[...document.querySelectorAll('[role=option]')].some((o) => o.textContent.includes('agent'))`)
	do(t, ctx, "pick it and send", chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(labelled("Message #general"), "ping"), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the message in the channel", textIn(`[role=feed] article`, "ping"))
	// The message's own "Reply in thread" button, pressed from the page:
	// the agent's 👀 re-renders the message as it lands, so a button found
	// by one query may be gone by the next.
	open := `(() => {
	  const a = [...document.querySelectorAll('#feed article.mine')].find((x) => x.textContent.includes('ping'));
	  const b = a && a.querySelector('button[aria-label="Reply in thread"]');
	  if (b) b.click();
	  return !!b && !document.getElementById('thread').hidden;
	})()`
	waitJS(t, ctx, "the message's thread to open", open)
	waitJS(t, ctx, "the thread panel", `!document.getElementById('thread').hidden`)
	waitJS(t, ctx, "the agent's reply, live in the thread", textIn(`#thread .thread-replies article`, agentReply))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
	if !strings.Contains(string(model.Bodies()[0]), "ping") {
		t.Errorf("the model was not asked about the message")
	}
}
