package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
)

// TestFollowThreads: with --follow-threads, once the agent has posted in
// a thread, a person's later reply there reaches it without a mention;
// a reply in a thread it is not in does not, and neither does another
// agent's reply in its thread (a profile saying "bot": true), so two
// agents in one thread do not answer each other for ever.
func TestFollowThreads(t *testing.T) {
	w := newWorld(t)
	w.publishAs(w.sibling, &nostr.Event{Kind: 0, Content: `{"name":"other agent","bot":true}`})
	w.startHarness(w.harnessEnv("echo"), "--follow-threads", "--respond-to", "anyone")
	w.logs.await(t, 20*time.Second, "channel replay done", "channel", w.channel)

	root := w.mention("start a thread")
	waitFor(t, "the mention prompted", 15*time.Second, func() bool { return promptsWith(w.prompts(), root.ID) == 1 })
	// The agent's reply in the thread (as its CLI would post it).
	w.publishAs(w.agent, &nostr.Event{Kind: 9, Content: "here is my answer", Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}}})
	other := w.publish(&nostr.Event{Kind: 9, Content: "an unrelated post", Tags: nostr.Tags{{"h", w.channel}}})

	// Another agent's reply in the agent's thread, then one in a thread the
	// agent is not in, then a person's reply in the agent's thread.
	bot := w.publishAs(w.sibling, &nostr.Event{Kind: 9, Content: "bot chimes in", Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}}})
	elsewhere := w.publishAs(w.stranger, &nostr.Event{Kind: 9, Content: "reply elsewhere", Tags: nostr.Tags{{"h", w.channel}, {"e", other.ID, "", "reply"}}})
	person := w.publishAs(w.stranger, &nostr.Event{Kind: 9, Content: "a follow-up without a mention", Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}}})
	waitFor(t, "the person's unmentioned reply prompted", 20*time.Second, func() bool { return promptsWith(w.prompts(), person.ID) == 1 })
	if n := promptHas(w.prompts(), "[Buzz event: "+wakeThread+"]"); n != 1 {
		t.Errorf("%d prompts tagged %q; want 1", n, wakeThread)
	}
	for _, ev := range []*nostr.Event{bot, elsewhere, other} {
		if n := promptsWith(w.prompts(), ev.ID); n != 0 {
			t.Errorf("%q reached the agent %d times; want never", ev.Content, n)
		}
	}
}

// TestDMWithoutMention: a private channel of the owner and the agent is
// their DM channel, joined at run time; a message there without a
// mention is answered.
func TestDMWithoutMention(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"))
	w.awaitListening(t)
	const dm = "6f1c2d4e-4444-4000-8000-0000000000de"
	w.publish(&nostr.Event{Kind: 9007, Tags: nostr.Tags{{"h", dm}, {"name", "owner-agent"}, {"visibility", "private"}, {"channel_type", "stream"}}})
	w.publish(&nostr.Event{Kind: 9000, Tags: nostr.Tags{{"h", dm}, {"p", w.agent.Public().Hex(), "", "member"}}})
	w.logs.await(t, 20*time.Second, "joined channel", "channel", dm)
	w.logs.await(t, 20*time.Second, "channel replay done", "channel", dm)
	msg := w.publish(&nostr.Event{Kind: 9, Content: "just between us", Tags: nostr.Tags{{"h", dm}}})
	waitFor(t, "the DM prompted", 20*time.Second, func() bool { return promptsWith(w.prompts(), msg.ID) == 1 })
	if n := promptHas(w.prompts(), "Scope: dm"); n != 1 {
		t.Errorf("the DM's prompt is not scoped as a DM")
	}
	// The general channel, with more members, still needs a mention.
	plain := w.publish(&nostr.Event{Kind: 9, Content: "not for the agent", Tags: nostr.Tags{{"h", w.channel}}})
	late := w.mention("now for the agent")
	waitFor(t, "the mention prompted", 20*time.Second, func() bool { return promptsWith(w.prompts(), late.ID) == 1 })
	if promptsWith(w.prompts(), plain.ID) != 0 {
		t.Errorf("an unmentioned message in a channel of several reached the agent")
	}
}

// TestAgentsDoNotPingPong: two agents, each with the real buzz-agent and
// a model that answers every prompt in its thread through the shell, both
// following threads and answering anyone. The owner asks one, then the
// other in the same thread; each answers once, and neither is woken by the
// other's answer
// (their profiles say "bot": true), so the thread does not fill with
// agents answering each other. A person's reply afterwards, without a
// mention, is answered by both.
func TestAgentsDoNotPingPong(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real agent")
	}
	w := newWorld(t)
	bin := t.TempDir()
	if err := os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz")); err != nil {
		t.Fatal(err)
	}
	anchor := regexp.MustCompile(`--channel ([0-9a-f-]{36}) --(?:reply-to|event) ([0-9a-f]{64})`)
	var asked atomic.Int32
	llm := llmtest.New(t)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		if lastIsTool(req) {
			return llmtest.Reply{Text: "sent"}
		}
		body, _ := json.Marshal(req["messages"])
		ch, ev, ok := findAnchor(anchor, string(body))
		if !ok {
			return llmtest.Reply{Text: "no anchor found"}
		}
		// Each answer its own words: two identical answers in one second
		// would be one event, and hide an agent answering twice.
		n := asked.Add(1)
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("buzz messages send --channel %s --reply-to %s --content 'my two cents, take %d'", ch, ev, n)})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
	})
	for _, key := range []*nostrkey.Secret{w.agent, w.sibling} {
		w.publishAs(key, &nostr.Event{Kind: 0, Content: `{"name":"agent","bot":true}`})
		env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
			"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		sk, _ := key.AppendHex(nil)
		env.Environ = append(withoutKey(env.Environ, "BUZZ_PRIVATE_KEY"), "BUZZ_PRIVATE_KEY="+string(sk))
		w.runHarness(t, env, timing{}, "--follow-threads", "--respond-to", "anyone", "--no-typing")
	}
	agents := []string{w.agent.Public().Hex(), w.sibling.Public().Hex()}
	inThread := func(root string) map[string]int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: agents, Tags: nostr.TagMap{"e": {root}}})
		n := map[string]int{}
		for _, ev := range evs {
			n[ev.PubKey]++
		}
		return n
	}
	time.Sleep(2 * time.Second) // both harnesses subscribed
	// The first agent answers; then the owner asks the second in the
	// same thread, whose answer reaches the first, which is in the thread.
	root := w.mention("what do you think?")
	waitFor(t, "the first agent's answer", 60*time.Second, func() bool { return inThread(root.ID)[agents[0]] >= 1 })
	w.publish(&nostr.Event{Kind: 9, Content: "and you?", Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}, {"p", agents[1]}}})
	waitFor(t, "both agents' answers", 60*time.Second, func() bool { n := inThread(root.ID); return n[agents[0]] >= 1 && n[agents[1]] >= 1 })
	time.Sleep(5 * time.Second) // room for a ping-pong to start
	if n := inThread(root.ID); n[agents[0]] != 1 || n[agents[1]] != 1 {
		t.Fatalf("agents' messages in the thread = %v; want one each (no agent woken by another's)", n)
	}
	w.publishAs(w.stranger, &nostr.Event{Kind: 9, Content: "and what about tests?", Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}}})
	waitFor(t, "both agents' answers to the person", 60*time.Second, func() bool { n := inThread(root.ID); return n[agents[0]] >= 2 && n[agents[1]] >= 2 })
	time.Sleep(5 * time.Second)
	if n := inThread(root.ID); n[agents[0]] != 2 || n[agents[1]] != 2 {
		t.Errorf("agents' messages in the thread = %v; want two each", n)
	}
	t.Logf("model asked %d times", asked.Load())
}
