package harness

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
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
