package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// TestEndToEnd runs the real chain: relay → harness → buzz-agent (against
// a loopback fake LLM) → buzz-dev-mcp shell → `buzz messages send` → relay.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	exe := testexe.Path(t)
	w := newWorld(t)
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "buzz")); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	llm := llmtest.New(t)
	llm.SetHandler(shellReplyModel(func() string { return "pong " + string(rune('0'+calls.Add(1))) }))
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	w.runHarness(t, env, timing{})

	mention := w.mention("ping")
	reply := w.awaitAgentReply(t, "the agent's reply in the thread", 60*time.Second, mention.ID, nil)
	if !strings.HasPrefix(reply.Content, "pong") {
		t.Errorf("reply content = %q", reply.Content)
	}
	// The prompt the model saw carried the sections in order.
	first := string(llm.Bodies()[0])
	// ([Workspace] rides only in a session-level system prompt, which
	// needs an agent answering protocolVersion >= 2.)
	for _, want := range []string{"[Base]", "[Context]", "[Buzz event: @mention]", "Event ID: " + mention.ID} {
		if !strings.Contains(first, want) {
			t.Errorf("model request lacks %q", want)
		}
	}
	if strings.Index(first, "[Context]") > strings.Index(first, "[Buzz event") {
		t.Errorf("[Context] comes after the event section")
	}
	t.Log("reply seen")
	checkSidecarEnviron(t, w)
	// Nothing sent twice: give the chain a moment to misbehave, then count.
	waitFor(t, "reactions cleaned up", 20*time.Second, func() bool { return w.seenReactions() == 0 })
	t.Log("reactions gone")
	qctx, qcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer qcancel()
	evs, _ := w.io.Query(qctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}})
	if len(evs) != 1 || calls.Load() != 1 {
		t.Errorf("agent posted %d messages, model asked to send %d times; want 1 and 1", len(evs), calls.Load())
	}
}

// checkSidecarEnviron is TestAttackKeyInSidecarEnviron's check: the
// buzz-dev-mcp the harness's agent started (found by its relay URL) has
// the agent key in no variable of /proc/PID/environ, which shows a
// process's environment for its whole life. It needs root to read a
// non-dumpable process's environ, as CI has.
func checkSidecarEnviron(t *testing.T, w *world) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("SKIP(loud): reading buzz-dev-mcp's /proc/PID/environ needs root; the key hand-over is not checked")
		return
	}
	hex, _ := w.agent.AppendHex(nil)
	nsec, _ := nip19.EncodePrivateKey(string(hex))
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	found := 0
	for _, d := range dirs {
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		environ, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !strings.Contains(string(cmdline), "buzz-dev-mcp") || !strings.Contains(string(environ), "BUZZ_RELAY_URL="+w.relay.URL()+"\x00") {
			continue
		}
		found++
		if strings.Contains(string(environ), string(hex)) || strings.Contains(string(environ), nsec) {
			t.Errorf("%s (buzz-dev-mcp) has the agent key in its environment", d)
		}
		if !strings.Contains(string(environ), "NOSTR_PRIVATE_KEY_FILE=") {
			t.Errorf("%s (buzz-dev-mcp) got no NOSTR_PRIVATE_KEY_FILE", d)
		}
	}
	if found == 0 {
		t.Error("no buzz-dev-mcp of this harness found under /proc")
	}
}

func withoutKey(environ []string, key string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestEndToEndReplyThroughTypedTool: a model whose shell cannot run buzz
// (some agents' sandboxes strip BUZZ_* or reset PATH) answers with
// buzz-dev-mcp's send_message tool and never touches the shell. The reply
// reaches the thread, signed with the agent's key, and the reply guard
// sees it: the model's closing text is not posted as a second message.
func TestEndToEndReplyThroughTypedTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	w := newWorld(t)
	anchor := replyAnchor()
	var sends atomic.Int32
	llm := llmtest.New(t)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		if lastIsTool(req) {
			return llmtest.Reply{Text: "I posted the answer in the thread."}
		}
		body, _ := json.Marshal(req)
		if !strings.Contains(string(body), "buzz-dev-mcp__send_message") {
			return llmtest.Reply{Text: "no send_message tool offered"}
		}
		if strings.Contains(string(body), "buzz-dev-mcp___Stop") {
			return llmtest.Reply{Text: "a hook was offered as a tool"}
		}
		ch, ev, ok := findAnchor(anchor, string(body))
		if !ok {
			return llmtest.Reply{Text: "no anchor found"}
		}
		sends.Add(1)
		args, _ := json.Marshal(map[string]string{"channel": ch, "reply_to": ev, "content": "pong from the typed tool"})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__send_message", Args: string(args)}}}
	})
	// No buzz on PATH for anyone: only the typed tool can answer.
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(), "PATH="+t.TempDir())
	stop := w.runHarness(t, env, timing{})

	mention := w.mention("ping")
	agentMessages := func() []*nostr.Event {
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(qctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"h": {w.channel}}})
		return evs
	}
	reply := w.awaitAgentReply(t, "the agent's reply in the thread", 60*time.Second, mention.ID, nil)
	if reply.Content != "pong from the typed tool" {
		t.Errorf("reply content = %q; want the typed tool's message (the model said: %s)", reply.Content, llm.Bodies()[len(llm.Bodies())-1])
	}
	// The turn is over once its reactions are gone; the harness's
	// shutdown waits for the reply guard it started.
	waitFor(t, "reactions cleaned up", 20*time.Second, func() bool { return w.seenReactions() == 0 })
	stop()
	if evs := agentMessages(); len(evs) != 1 || sends.Load() != 1 {
		var texts []string
		for _, e := range evs {
			texts = append(texts, e.Content)
		}
		t.Errorf("agent posted %d messages %q, model sent %d times; want 1 and 1 (no duplicate from the reply guard)", len(evs), texts, sends.Load())
	}
}
