package harness

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// seenStatus is one turn status event as a channel member received it.
type seenStatus struct {
	turnStatusContent
	ids []string
	at  time.Time
}

// memberConn connects to the world's relay and logs in as key.
func (w *world) memberConn(t testing.TB, key *nostrkey.Secret) *nostr.Relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rel, err := nostr.RelayConnect(context.Background(), w.relay.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { rel.Close() })
	probe, err := rel.Subscribe(ctx, nostr.Filters{{Kinds: []int{workspace.KindStream}, Limit: 1}})
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	select {
	case <-probe.ClosedReason:
	case <-probe.EndOfStoredEvents:
	case <-ctx.Done():
	}
	probe.Unsub()
	sk, _ := key.AppendHex(nil)
	if err := rel.Auth(ctx, func(ev *nostr.Event) error { return ev.Sign(string(sk)) }); err != nil {
		t.Fatalf("auth: %v", err)
	}
	return rel
}

// watchStatus subscribes rel to the turn status events of channels.
func (w *world) watchStatus(t testing.TB, rel *nostr.Relay, channels ...string) <-chan seenStatus {
	t.Helper()
	sub, err := rel.Subscribe(context.Background(), nostr.Filters{{Kinds: []int{workspace.KindTurnStatus}, Tags: nostr.TagMap{"h": channels}}})
	if err != nil {
		t.Fatalf("subscribe to turn status: %v", err)
	}
	t.Cleanup(sub.Unsub)
	out := make(chan seenStatus, 256)
	go func() { // ends when the subscription does (test cleanup)
		for ev := range sub.Events {
			var s seenStatus
			s.at = time.Now()
			if json.Unmarshal([]byte(ev.Content), &s.turnStatusContent) != nil || ev.PubKey != w.agent.Public().Hex() {
				continue
			}
			for _, tg := range ev.Tags {
				if len(tg) >= 2 && tg[0] == "e" {
					s.ids = append(s.ids, tg[1])
				}
			}
			out <- s
		}
	}()
	return out
}

// awaitState reads statuses of message id until one in state want.
func awaitState(t testing.TB, c <-chan seenStatus, id, want string, d time.Duration) seenStatus {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case s := <-c:
			if len(s.ids) > 0 && s.ids[len(s.ids)-1] == id && s.State == want {
				return s
			}
			if len(s.ids) > 0 && s.ids[len(s.ids)-1] == id && (s.State == turnFailed || s.State == turnDone || s.State == turnCancelled) {
				t.Fatalf("message %s went %s (cause %q, by %q) waiting for %s", id[:8], s.State, s.Cause, s.By, want)
			}
		case <-timer.C:
			t.Fatalf("no %s status of %s within %v", want, id[:8], d)
		}
	}
}

func stopEvent(t testing.TB, key *nostrkey.Secret, channel, id string) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: workspace.KindTurnStop, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", channel}, {"e", id}}}
	if err := key.SignEvent(&ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestTurnStatusAndStop runs the real agent (the built buzz-agent, a
// scripted model whose tool call sleeps, one agent process): a plain
// channel member sees the mention go working, then working with the tool
// call's title as the step; a mention in another channel meanwhile is
// seen (no agent is free). The member's own stop is ignored (the attack:
// a member is neither the owner nor an admin); the owner's stop cancels
// the turn within 1 s and names the owner; the other channel's mention
// then runs and ends done. A third is stopped from the CLI.
func TestTurnStatusAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	w := newWorld(t)
	bin := t.TempDir()
	if err := os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz")); err != nil {
		t.Fatal(err)
	}
	llm := llmtest.New(t)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		last, _ := json.Marshal(msgs[len(msgs)-1])
		if !lastIsTool(req) && strings.Contains(string(last), "sleep on it") {
			args, _ := json.Marshal(map[string]any{"command": "sleep 60"})
			return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
		}
		return llmtest.Reply{Text: "all done"}
	})
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	w.runHarness(t, env, timing{})

	other := "6f1c2d4e-1111-4000-8000-0000000000cd"
	w.addChannel(other, "other")
	member := w.memberConn(t, w.stranger)
	statuses := w.watchStatus(t, member, w.channel, other)
	owner := w.memberConn(t, w.owner)

	mention := w.mention("sleep on it")
	working := awaitState(t, statuses, mention.ID, turnWorking, 60*time.Second)
	if working.StartedAt == 0 || working.Owner != w.owner.Public().Hex() {
		t.Errorf("working status = %+v; want startedAt and the owner", working.turnStatusContent)
	}
	for working.Step == "" {
		working = awaitState(t, statuses, mention.ID, turnWorking, 60*time.Second)
	}
	if working.Step != "buzz-dev-mcp__shell" {
		t.Errorf("step = %q; want the tool call's title", working.Step)
	}

	second := w.publish(&nostr.Event{Kind: 9, Content: "say done", Tags: nostr.Tags{{"h", other}, {"p", w.agent.Public().Hex()}}})
	awaitState(t, statuses, second.ID, turnSeen, 30*time.Second)

	// A plain member's stop is not obeyed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := member.Publish(ctx, stopEvent(t, w.stranger, w.channel, mention.ID)); err != nil {
		t.Fatalf("member's stop refused by the relay: %v", err)
	}
	quiet := time.NewTimer(2 * time.Second)
	for waiting := true; waiting; {
		select {
		case s := <-statuses:
			if s.State == turnCancelled || s.ids[0] == second.ID && s.State == turnWorking {
				t.Fatalf("a plain member's stop cancelled the turn (%+v)", s.turnStatusContent)
			}
		case <-quiet.C:
			waiting = false
		}
	}

	sent := time.Now()
	if err := owner.Publish(ctx, stopEvent(t, w.owner, w.channel, mention.ID)); err != nil {
		t.Fatalf("owner's stop refused by the relay: %v", err)
	}
	done := awaitState(t, statuses, mention.ID, turnCancelled, 10*time.Second)
	if took := done.at.Sub(sent); took > time.Second {
		t.Errorf("stop took %v to cancel the turn; want at most 1s", took)
	}
	if done.By != w.owner.Public().Hex() {
		t.Errorf("cancelled by %q; want the owner", done.By)
	}

	// It runs and ends done; its working may not be sent at all, since a
	// turn that answers within statusWorkingHold goes straight to done.
	awaitState(t, statuses, second.ID, turnDone, 60*time.Second)

	// The same from the CLI: `buzz turns stop --event ID`, as the owner.
	third := w.mention("sleep on it again")
	for s := awaitState(t, statuses, third.ID, turnWorking, 60*time.Second); s.Step == ""; {
		s = awaitState(t, statuses, third.ID, turnWorking, 60*time.Second)
	}
	sk, _ := w.owner.AppendHex(nil)
	cmd := exec.Command(filepath.Join(bin, "buzz"), "turns", "stop", "--event", third.ID)
	cmd.Env = append(os.Environ(), workspace.EnvRelayURL+"="+w.relay.URL(), workspace.EnvPrivateKey+"="+string(sk))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buzz turns stop: %v\n%s", err, out)
	}
	if s := awaitState(t, statuses, third.ID, turnCancelled, 10*time.Second); s.By != w.owner.Public().Hex() {
		t.Errorf("CLI stop: cancelled by %q; want the owner", s.By)
	}

	// A channel admin who is not the agent's owner may stop it too.
	w.publish(&nostr.Event{Kind: 9000, Tags: nostr.Tags{{"h", w.channel}, {"p", w.sibling.Public().Hex(), "", "admin"}}})
	admin := w.memberConn(t, w.sibling)
	fourth := w.mention("sleep on it once more")
	for s := awaitState(t, statuses, fourth.ID, turnWorking, 60*time.Second); s.Step == ""; {
		s = awaitState(t, statuses, fourth.ID, turnWorking, 60*time.Second)
	}
	sent = time.Now()
	if err := admin.Publish(ctx, stopEvent(t, w.sibling, w.channel, fourth.ID)); err != nil {
		t.Fatalf("admin's stop refused by the relay: %v", err)
	}
	s := awaitState(t, statuses, fourth.ID, turnCancelled, 10*time.Second)
	if s.By != w.sibling.Public().Hex() || s.at.Sub(sent) > time.Second {
		t.Errorf("admin's stop: cancelled by %q after %v; want the admin within 1s", s.By, s.at.Sub(sent))
	}
}

// TestTurnStatusFailed: a model that refuses the request (HTTP 400) ends
// the turn failed, and the status carries the cause a person can act on.
func TestTurnStatusFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	w := newWorld(t)
	llm := llmtest.New(t)
	llm.SetHandler(func(map[string]any) llmtest.Reply {
		return llmtest.Reply{Status: 400, Body: `{"error":{"message":"model m does not exist","type":"invalid_request_error"}}`}
	})
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir())
	w.runHarness(t, env, timing{})
	statuses := w.watchStatus(t, w.memberConn(t, w.stranger), w.channel)
	mention := w.mention("hello")
	// No working first: a turn that fails within statusWorkingHold goes
	// straight to failed.
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	for {
		select {
		case s := <-statuses:
			if s.ids[0] != mention.ID || s.State != turnFailed {
				continue
			}
			if s.Cause == "" {
				t.Errorf("failed without a cause: %+v", s.turnStatusContent)
			}
			t.Logf("cause: %s", s.Cause)
			return
		case <-timer.C:
			t.Fatal("no failed status within 60s")
		}
	}
}
