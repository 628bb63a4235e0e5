package harness

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// What the harness tests that run a real agent (buzz-agent, codex-acp,
// the npm adapters) share: the environment and in-process run of the
// harness, and the fake models' way of finding what to answer.

// agentEnv is the environment of a harness whose agent is a real program
// rather than the fake: the world's, without the fake's switch, with the
// built buzzbox as the executable (buzz-dev-mcp, buzz).
func (w *world) agentEnv(t testing.TB, extra ...string) proc.Env {
	t.Helper()
	env := w.harnessEnv("", extra...)
	env.Environ = withoutKey(env.Environ, envFakeAgent)
	env.Exe = testexe.Path(t)
	return env
}

// runHarness runs the harness in this process on the world's relay, for
// its owner and without presence, with flags after those, until stop;
// the test's end stops it too.
func (w *world) runHarness(t testing.TB, env proc.Env, tm timing, flags ...string) (stop func()) {
	t.Helper()
	base := []string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--no-presence"}
	c, err := LoadConfig(append(base, flags...), env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, c, env, testLogger(t), tm) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		select {
		case <-errc:
		case <-time.After(60 * time.Second):
			t.Error("harness did not stop within 60s")
		}
	}
	t.Cleanup(stop)
	return stop
}

// replyAnchor matches the reply command the harness puts in each prompt
// (`buzz messages send --channel C --reply-to E`): C and E.
func replyAnchor() *regexp.Regexp {
	return regexp.MustCompile(`--channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)
}

// findAnchor returns the channel and event of the first reply anchor in
// body, a model request as JSON (whose backquotes may be escaped).
func findAnchor(anchor *regexp.Regexp, body string) (channel, event string, ok bool) {
	m := anchor.FindStringSubmatch(strings.ReplaceAll(body, `\u0060`, "`"))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// lastIsTool reports whether an OpenAI chat request ends with a tool's
// result: the agent has run the call its model asked for.
func lastIsTool(req map[string]any) bool {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return false
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	return last["role"] == "tool"
}

// shellReplyModel is a fake model (OpenAI chat) that answers each prompt
// by running `buzz messages send` in buzz-dev-mcp's shell, in the thread
// of the prompt's reply anchor, with the content content gives; once the
// shell has run it ends the turn with plain text.
func shellReplyModel(content func() string) func(map[string]any) llmtest.Reply {
	anchor := replyAnchor()
	return func(req map[string]any) llmtest.Reply {
		if lastIsTool(req) {
			return llmtest.Reply{Text: "sent"}
		}
		body, _ := json.Marshal(req["messages"])
		ch, ev, ok := findAnchor(anchor, string(body))
		if !ok {
			return llmtest.Reply{Text: "no anchor found"}
		}
		cmd := "buzz messages send --channel " + ch + " --reply-to " + ev + " --content '" + content() + "'"
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
	}
}

// ownerSubscription subscribes to f as the owner, on a connection of its
// own that ends with ctx.
func (w *world) ownerSubscription(t testing.TB, ctx context.Context, what string, f nostr.Filter) *nostr.Subscription {
	t.Helper()
	rel, err := nostr.RelayConnect(ctx, w.relay.URL())
	if err != nil {
		t.Fatalf("waiting for %s: connect: %v", what, err)
	}
	context.AfterFunc(ctx, func() { rel.Close() })
	// A refused probe REQ proves the AUTH challenge, sent on connect, has
	// arrived.
	probe, err := rel.Subscribe(ctx, nostr.Filters{{Kinds: []int{workspace.KindStream}, Limit: 1}})
	if err != nil {
		t.Fatalf("waiting for %s: probe: %v", what, err)
	}
	select {
	case <-probe.ClosedReason:
	case <-probe.EndOfStoredEvents:
	case <-ctx.Done():
	}
	probe.Unsub()
	sk, _ := w.owner.AppendHex(nil)
	if err := rel.Auth(ctx, func(ev *nostr.Event) error { return ev.Sign(string(sk)) }); err != nil {
		t.Fatalf("waiting for %s: auth as the owner: %v", what, err)
	}
	sub, err := rel.Subscribe(ctx, nostr.Filters{f})
	if err != nil {
		t.Fatalf("waiting for %s: subscribe: %v", what, err)
	}
	return sub
}

// awaitEvent waits up to d for an event matching f for which match holds
// (nil: any), stored or arriving live on a subscription of the owner's,
// and returns it.
func (w *world) awaitEvent(t testing.TB, what string, d time.Duration, f nostr.Filter, match func(*nostr.Event) bool) *nostr.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	sub := w.ownerSubscription(t, ctx, what, f)
	defer sub.Unsub()
	for {
		select {
		case ev := <-sub.Events:
			if match == nil || match(ev) {
				return ev
			}
		case reason := <-sub.ClosedReason:
			t.Fatalf("waiting for %s: the relay closed the subscription: %s", what, reason)
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// awaitAgentReply waits up to d for the agent's first message in the
// thread of event id for which match holds (nil: any).
func (w *world) awaitAgentReply(t testing.TB, what string, d time.Duration, id string, match func(*nostr.Event) bool) *nostr.Event {
	t.Helper()
	return w.awaitEvent(t, what, d, nostr.Filter{Kinds: []int{workspace.KindStream}, Authors: []string{w.agent.Public().Hex()},
		Tags: nostr.TagMap{"e": {id}}}, match)
}
