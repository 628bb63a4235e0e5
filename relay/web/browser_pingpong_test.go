package web_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// TestBrowserAgentsDoNotPingPong runs the built `buzzbox up` (its agent)
// and a second agent of the owner's under the built buzz-acp, both
// following the threads they answer in, on one scripted model that always
// answers in the thread with the buzz CLI. The owner, in the browser,
// mentions the first agent, then asks the second in the same thread:
// each answers once, and neither is woken by the other's answer (their
// profiles say bot), so the thread does not fill with agents answering
// each other.
func TestBrowserAgentsDoNotPingPong(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up, a second harness and a browser")
	}
	var asked atomic.Int32
	model := llmtest.New(t)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		last := lastMessage(req)
		if afterTool(last) {
			return llmtest.Reply{Text: "sent"}
		}
		anchors := replyAnchorRE.FindAllSubmatch(last, -1)
		if anchors == nil {
			return llmtest.Reply{Text: "no anchor found"}
		}
		asked.Add(1)
		a := anchors[len(anchors)-1]
		return shellCall(fmt.Sprintf(`buzz messages send --channel %s --reply-to %s --content 'my two cents'`, a[1], a[2]))
	})
	w := startUp(t, model)
	owner, ownerErrors := signInOwner(t, w)
	me, err := chromedp.Run(owner, chromedp.Evaluate[string](`buzz.me`))
	if err != nil {
		t.Fatal(err)
	}

	// The second agent: the owner adds its key to #general; its profile
	// says it is a bot; its harness follows threads.
	beeSK := nostr.GeneratePrivateKey()
	bee, _ := nostr.GetPublicKey(beeSK)
	do(t, owner, "add the second agent to #general", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`buzz.send({ kind: 9000, tags: [['h', %q], ['p', %q], ['role', 'member']], content: '' })`, w.channel, bee)))
	waitJS(t, owner, "the second agent a member", fmt.Sprintf(`buzz.store.channels.get(%q).members.has(%q)`, w.channel, bee))
	p := newPeer(t, "ws://"+w.addr)
	p.sk, p.pk = beeSK, bee
	p.auth()
	p.publish(0, `{"name":"bee","bot":true}`)
	home := t.TempDir()
	h := exec.Command(testexe.Link(t, "buzz-acp"), "--relay-url", "ws://"+w.addr, "--agent-owner", me,
		"--agent-command", "buzz-agent", "--mcp-command", "buzz-dev-mcp", "--follow-threads", "--no-presence")
	h.Dir = t.TempDir()
	h.Env = []string{"BUZZ_PRIVATE_KEY=" + beeSK, "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH"),
		"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL=" + model.URL}
	h.Stderr = t.Output()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Process.Kill(); h.Wait() })
	waitJS(t, owner, "the second agent shown as an agent", fmt.Sprintf(`buzz.store.isAgent(%q)`, bee))
	time.Sleep(2 * time.Second) // the second harness subscribed; it says so only on its log

	mentionAgent(t, owner, "Message #general", "what do you think?")
	openThreadOf(t, owner, "what do you think?")
	agentReplies := `[...document.querySelectorAll('#thread .thread-replies article')].filter((a) => a.textContent.includes('my two cents')).length`
	waitJS(t, owner, "the first agent's answer", agentReplies+` === 1`)
	do(t, owner, "ask the second agent in the thread", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`buzz.reply(buzz.thread.root, 'and you?', [%q])`, bee)))
	waitJS(t, owner, "the second agent's answer", agentReplies+` === 2`)
	time.Sleep(6 * time.Second) // room for a ping-pong to start
	if n, _ := chromedp.Run(owner, chromedp.Evaluate[int](agentReplies)); n != 2 {
		who, _ := chromedp.Run(owner, chromedp.Evaluate[string](`JSON.stringify(buzz.store.channelMessages(buzz.current, { root: buzz.thread.root.id }).map((e) => [e.pubkey.slice(0, 8), e.content, e.tags]))`))
		t.Errorf("the thread holds %d agent answers; want 2, one each (no agent woken by another's answer): %s (second agent %.8s)", n, who, bee)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the model was asked to answer %d times; want 2", n)
	}
	for _, e := range ownerErrors() {
		t.Errorf("browser console: %s", e)
	}
}
