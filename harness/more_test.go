package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
)

func (w *world) sessionNews() []map[string]any {
	var out []map[string]any
	for _, l := range w.agentLog() {
		if l.Method == "session/new" {
			var m map[string]any
			json.Unmarshal(l.Params, &m)
			out = append(out, m)
		}
	}
	return out
}

func TestSystemPromptDelivery(t *testing.T) {
	for _, tc := range []struct {
		name, protocol string
		check          func(t *testing.T, w *world)
	}{
		{"goose", "1", func(t *testing.T, w *world) {
			if w.count("_goose/unstable/session/system-prompt/set") != 1 {
				t.Errorf("goose got no system-prompt extension call")
			}
			if sp := w.sessionNews()[0]["systemPrompt"]; sp != nil {
				t.Errorf("goose session/new carried systemPrompt")
			}
			if p := w.prompts()[0]; !strings.Contains(p, "[Base]\n") {
				t.Errorf("goose without the extension: prompt lacks [Base]")
			}
		}},
		{"@agentclientprotocol/claude-agent-acp", "1", func(t *testing.T, w *world) {
			meta, _ := w.sessionNews()[0]["_meta"].(map[string]any)
			sp, _ := meta["systemPrompt"].(map[string]any)
			if a, _ := sp["append"].(string); !strings.Contains(a, "[Base]") {
				t.Errorf("claude _meta = %v", meta)
			}
		}},
		{"old-agent", "1", func(t *testing.T, w *world) {
			if sp := w.sessionNews()[0]["systemPrompt"]; sp != nil {
				t.Errorf("protocol 1 agent got a top-level systemPrompt")
			}
			p := w.prompts()[0]
			if !strings.Contains(p, "[Base]\n") || strings.Contains(p, "[Workspace]") || strings.Index(p, "[Base]") > strings.Index(p, "[Context]") {
				t.Errorf("legacy prompt sections wrong:\n%.300s", p)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.startHarness(w.harnessEnv("echo", envFakeName+"="+tc.name, envFakeProtocol+"="+tc.protocol))
			w.mention("hi")
			waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
			tc.check(t, w)
		})
	}
}

func TestSessionRotation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		turns int
		news  int
	}{
		{"max_tokens rotates", []string{envFakeStop + "=max_tokens"}, nil, 2, 2},
		{"end_turn keeps", nil, nil, 2, 1},
		{"max turns per session", nil, []string{"--max-turns-per-session", "2"}, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.startHarness(w.harnessEnv("echo", tc.env...), tc.args...)
			for i := 1; i <= tc.turns; i++ {
				w.mention("turn " + strconv.Itoa(i))
				waitFor(t, "turn end", 15*time.Second, func() bool { return w.count("permission-answer") == i })
			}
			if got := w.count("session/new"); got != tc.news {
				t.Errorf("session/new = %d; want %d", got, tc.news)
			}
		})
	}
}

func TestAgentErrorDeadLetter(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo", envFakeError+"=API Error: 401 {\"type\":\"authentication_error\"}"))
	ev := w.mention("needs login")
	waitFor(t, "a failure notice in the thread", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
		return len(evs) == 1 && strings.Contains(evs[0].Content, "log")
	})
	if n := w.count("session/prompt"); n != 1 {
		t.Errorf("%d prompts; a 401 must not be retried", n)
	}
}

func TestRetriesThenDeadLetter(t *testing.T) {
	w := newWorld(t)
	w.startHarnessTiming(w.harnessEnv("echo", envFakeError+"=model overloaded"), timing{retryBase: time.Millisecond, respawn: time.Millisecond})
	ev := w.mention("keeps failing")
	// Two notices: the cause after the first failure, and the give-up.
	waitFor(t, "a failure notice after the retries", 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
		gaveUp := false
		for _, e := range evs {
			gaveUp = gaveUp || strings.Contains(e.Content, "Please send it again")
		}
		return len(evs) == 2 && gaveUp
	})
	if n := w.count("session/prompt"); n != maxRetries+1 {
		t.Errorf("%d prompts; want %d (first try and %d retries)", n, maxRetries+1, maxRetries)
	}
}

func TestCrashLoopStopsHarness(t *testing.T) {
	w := newWorld(t)
	stop := w.startHarness(w.harnessEnv("dieall"))
	w.mention("boom")
	waitFor(t, "three crashes", 30*time.Second, func() bool { return len(w.pids()) >= 3 })
	select {
	case <-w.exited:
		err := stop()
		if err == nil || !strings.Contains(err.Error(), "no agent") {
			t.Errorf("harness ended with %v; want the no-agent error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("harness kept running with its only slot's circuit open")
	}
}

func TestMembershipJoin(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"))
	w.mention("warm")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	const ch2 = "6f1c2d4e-3333-4000-8000-0000000000cd"
	w.addChannel(ch2, "second")
	// The 44100 reaches the harness, which subscribes the new channel; a
	// mention posted once the relay has answered that REQ is seen live.
	w.logs.await(t, 20*time.Second, "joined channel", "channel", ch2)
	w.logs.await(t, 20*time.Second, "channel replay done", "channel", ch2)
	w.publish(&nostr.Event{Kind: 9, Content: "in second", Tags: nostr.Tags{{"h", ch2}, {"p", w.agent.Public().Hex()}}})
	waitFor(t, "a prompt from the joined channel", 20*time.Second, func() bool {
		return promptHas(w.prompts(), "Content: in second") >= 1
	})
	p := w.prompts()[len(w.prompts())-1]
	if !strings.Contains(p, "second (#"+ch2+")") {
		t.Errorf("joined channel prompt:\n%s", p)
	}
}

func TestThreadContext(t *testing.T) {
	w := newWorld(t)
	root := w.publish(&nostr.Event{Kind: 9, Content: "root post", Tags: nostr.Tags{{"h", w.channel}}})
	for i := 0; i < 20; i++ {
		w.publish(&nostr.Event{Kind: 9, Content: "reply", CreatedAt: nostr.Now() - 100 + nostr.Timestamp(i), Tags: nostr.Tags{{"h", w.channel}, {"e", root.ID, "", "reply"}}})
	}
	w.startHarness(w.harnessEnv("echo"))
	w.mention("what do you think?", nostr.Tag{"e", root.ID, "", "reply"})
	waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	p := w.prompts()[0]
	for _, want := range []string{"Scope: thread", "Thread root: " + root.ID, "--reply-to " + root.ID, "[Thread Context (13 of", ", truncated)]", "[1] ", "root post", "[13] "} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestNoContextWhenDisabled(t *testing.T) {
	w := newWorld(t)
	root := w.publish(&nostr.Event{Kind: 9, Content: "root post", Tags: nostr.Tags{{"h", w.channel}}})
	w.startHarness(w.harnessEnv("echo"), "--context-message-limit", "0", "--no-memory")
	w.mention("reply", nostr.Tag{"e", root.ID, "", "reply"})
	waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	if p := w.prompts()[0]; strings.Contains(p, "Thread Context") {
		t.Errorf("context fetched with limit 0")
	}
	if sp, _ := w.sessionNews()[0]["systemPrompt"].(string); strings.Contains(sp, memoryHeader) {
		t.Errorf("--no-memory still injected memory")
	}
}

func TestSetupMode(t *testing.T) {
	w := newWorld(t)
	payload := `{"agent_name":"Eva","agent_pubkey":"` + w.agent.Public().Hex() + `","requirements":[` +
		`{"surface":"env_key","key":"ANTHROPIC_API_KEY"},{"surface":"cli_login","probe_args":["claude","/login"],"setup_copy":"","availability":"available"}]}`
	w.startHarness(w.harnessEnv("echo", "BUZZ_ACP_SETUP_PAYLOAD="+payload))
	ev := w.mention("hello?")
	var replies []*nostr.Event
	waitFor(t, "a setup nudge", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		replies, _ = w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
		return len(replies) > 0
	})
	r := replies[0]
	for _, want := range []string{"`ANTHROPIC_API_KEY`", "`claude /login`", "```buzz:config-nudge\n" + payload + "\n```"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("nudge lacks %q:\n%s", want, r.Content)
		}
	}
	if r.Tags.FindWithValue("p", w.owner.Public().Hex()) == nil {
		t.Errorf("nudge does not p-tag the asker: %v", r.Tags)
	}
	if n := w.count("initialize"); n != 0 {
		t.Errorf("setup mode started %d agents", n)
	}
}

func TestSetupModeBadPayload(t *testing.T) {
	w := newWorld(t)
	stop := w.startHarness(w.harnessEnv("echo", "BUZZ_ACP_SETUP_PAYLOAD={nope"))
	<-w.exited
	if err := stop(); err == nil || !strings.Contains(err.Error(), "BUZZ_ACP_SETUP_PAYLOAD") {
		t.Errorf("bad payload: %v", err)
	}
}

func TestAuthorGate(t *testing.T) {
	w := newWorld(t)
	const dm = "6f1c2d4e-4444-4000-8000-0000000000dd"
	w.addChannelType(dm, "dm-with-owner", "dm")
	// The sibling proves its owner with a NIP-OA tag on its profile.
	cond := "kind=9"
	h := sha256.Sum256([]byte("nostr:agent-auth:" + w.sibling.Public().Hex() + ":" + cond))
	sig, err := w.owner.Sign(h[:])
	if err != nil {
		t.Fatal(err)
	}
	w.publishAs(w.sibling, &nostr.Event{Kind: 0, Content: `{"name":"sib"}`,
		Tags: nostr.Tags{{"auth", w.owner.Public().Hex(), cond, hex.EncodeToString(sig[:])}}})
	post := func(key *nostrkey.Secret, channel, text string) *nostr.Event {
		return w.publishAs(key, &nostr.Event{Kind: 9, Content: text, Tags: nostr.Tags{{"h", channel}, {"p", w.agent.Public().Hex()}}})
	}
	var nobodyPost *nostr.Event
	for _, tc := range []struct {
		mode   string
		posts  func()
		want   []string
		reject []string
	}{
		{"owner-only", func() {
			post(w.stranger, w.channel, "stranger in stream")
			post(w.sibling, w.channel, "sibling in stream")
			post(w.owner, w.channel, "owner in stream")
		}, []string{"sibling in stream", "owner in stream"}, []string{"stranger in stream"}},
		{"anyone", func() {
			post(w.stranger, dm, "stranger in dm")
			post(w.stranger, w.channel, "stranger in stream")
			post(w.owner, dm, "owner in dm")
		}, []string{"stranger in stream", "owner in dm"}, []string{"stranger in dm"}},
		{"nobody", func() { nobodyPost = post(w.owner, w.channel, "owner nobody") }, nil, []string{"owner nobody"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			os.Remove(w.logPath)
			stop := w.startHarness(w.harnessEnv("echo"), "--respond-to", tc.mode, "--multiple-event-handling", "queue")
			tc.posts()
			// A last owner post in the stream marks the end (nobody mode has none).
			if tc.mode != "nobody" {
				post(w.owner, w.channel, "marker "+tc.mode)
				waitFor(t, "the marker and every allowed post", 15*time.Second, func() bool {
					for _, s := range append([]string{"marker " + tc.mode}, tc.want...) {
						if promptHas(w.prompts(), "Content: "+s) == 0 {
							return false
						}
					}
					return true
				})
			} else {
				// The harness's gate has turned the owner's post away.
				w.logs.await(t, 15*time.Second, "author not allowed", "event_id", nobodyPost.ID)
			}
			for _, s := range tc.want {
				if promptHas(w.prompts(), "Content: "+s) != 1 {
					t.Errorf("%s: %q not prompted in %d prompts:\n%s", tc.mode, s, len(w.prompts()), strings.Join(w.prompts(), "\n=====\n"))
				}
			}
			for _, s := range tc.reject {
				if promptHas(w.prompts(), "Content: "+s) != 0 {
					t.Errorf("%s: %q was prompted", tc.mode, s)
				}
			}
			stop()
		})
	}
}

func TestModelHeartbeatLazy(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		w := newWorld(t)
		w.startHarness(w.harnessEnv("echo"), "--model", "m1", "--permission-mode", "default")
		w.mention("hi")
		waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
		if w.count("session/set_model") != 1 {
			t.Errorf("--model m1 (only in availableModels) did not use session/set_model")
		}
		if w.count("session/set_config_option") != 0 {
			t.Errorf("--permission-mode default sent a mode")
		}
	})
	t.Run("heartbeat", func(t *testing.T) {
		w := newWorld(t)
		w.startHarness(w.harnessEnv("echo"), "--heartbeat-interval", "10", "--heartbeat-prompt", "[System: Heartbeat] check the feed")
		// The first tick comes one interval after start.
		waitFor(t, "a heartbeat turn", 30*time.Second, func() bool { return promptHas(w.prompts(), "[System: Heartbeat]") >= 1 })
		news := w.sessionNews()
		if len(news) != 1 || len(news[0]["mcpServers"].([]any)) != 0 {
			t.Errorf("heartbeat sessions: %v", news)
		}
	})
	t.Run("lazy", func(t *testing.T) {
		w := newWorld(t)
		w.startHarness(w.harnessEnv("echo"), "--lazy-pool")
		// A pool that is not lazy has its agents initialized by the time
		// the harness listens.
		w.awaitListening(t)
		if n := w.count("initialize"); n != 0 {
			t.Errorf("lazy pool started %d agents before any work", n)
		}
		w.mention("wake up")
		waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	})
}

func TestCanvasAndMemorySections(t *testing.T) {
	w := newWorld(t)
	canvas := w.publish(&nostr.Event{Kind: 40100, Content: "# Plan\n- ship", Tags: nostr.Tags{{"h", w.channel}}})
	w.startHarness(w.harnessEnv("echo"))
	w.mention("hi")
	waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	sp, _ := w.sessionNews()[0]["systemPrompt"].(string)
	for _, want := range []string{memoryHeader, "buzz mem set core", "[Channel Canvas]\nCanvas revision (event ID): " + canvas.ID,
		"buzz canvas get --channel " + w.channel} {
		if !strings.Contains(sp, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if strings.Index(sp, memoryHeader) > strings.Index(sp, "[Channel Canvas]") {
		t.Errorf("memory comes after the canvas")
	}
}

func TestOwnerInterruptAndDrop(t *testing.T) {
	t.Run("owner-interrupt", func(t *testing.T) {
		w := newWorld(t)
		gate := filepath.Join(t.TempDir(), "gate")
		w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--multiple-event-handling", "owner-interrupt", "--respond-to", "anyone")
		w.mention("first")
		waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
		stranger := w.publishAs(w.stranger, &nostr.Event{Kind: 9, Content: "from a stranger", Tags: nostr.Tags{{"h", w.channel}, {"p", w.agent.Public().Hex()}}})
		// The loop queues the mention and decides on an interrupt in one
		// step; once it is queued, the running turn must not be cancelled.
		w.logs.await(t, 15*time.Second, "event queued", "event_id", stranger.ID)
		w.inLoop(t, func(h *harness) {
			if cs := h.queues[w.channel]; cs == nil || cs.turn == nil || cs.turn.reason != "" {
				t.Errorf("a non-owner mention cancelled the turn")
			}
		})
		w.mention("owner says stop")
		waitFor(t, "the owner's interrupt", 15*time.Second, func() bool { return w.count("session/cancel") == 1 && len(w.prompts()) == 2 })
		if p := w.prompts()[1]; !strings.Contains(p, "[New request — supersedes previous") {
			t.Errorf("interrupt prompt:\n%s", p)
		}
		os.WriteFile(gate, nil, 0o600)
	})
	t.Run("drop", func(t *testing.T) {
		w := newWorld(t)
		gate := filepath.Join(t.TempDir(), "gate")
		w.startHarness(w.harnessEnv("gate", envFakeMarker+"="+gate), "--dedup", "drop", "--multiple-event-handling", "queue")
		first := w.mention("first")
		waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
		busy := w.mention("while busy")
		w.logs.await(t, 15*time.Second, "channel busy; dropped event", "event_id", busy.ID)
		os.WriteFile(gate, nil, 0o600)
		// Reactions are cleared once the harness has marked the channel idle.
		waitFor(t, "the first turn's end", 15*time.Second, func() bool { return w.seenReactions(first) == 0 })
		w.mention("after")
		waitFor(t, "the next prompt", 15*time.Second, func() bool { return len(w.prompts()) == 2 })
		if promptHas(w.prompts(), busy.ID) != 0 || w.seenReactions(busy) != 0 {
			t.Errorf("drop mode kept or reacted to the busy-channel event")
		}
	})
}

func TestInitialMessage(t *testing.T) {
	w := newWorld(t)
	// Queue handling: "two" may arrive while the first turn still runs, and
	// must wait for it rather than cancel it into a new session.
	w.startHarness(w.harnessEnv("echo"), "--initial-message", "Introduce yourself to the channel.", "--multiple-event-handling", "queue")
	w.mention("one")
	waitFor(t, "two prompts", 15*time.Second, func() bool { return len(w.prompts()) == 2 })
	w.mention("two")
	waitFor(t, "three prompts", 15*time.Second, func() bool { return len(w.prompts()) == 3 })
	p := w.prompts()
	if p[0] != "Introduce yourself to the channel." || !strings.Contains(p[1], "Content: one") || strings.Contains(p[2], "Introduce") {
		t.Errorf("prompts = %q", p)
	}
}

// TestAttackEndedSessionReprompted: once Claude Code's session died
// ("The Claude Agent session has ended. Please start a new session."),
// the harness kept the session and re-prompted it on every retry and
// every later mention, all failing. The retry must open a new session.
func TestAttackEndedSessionReprompted(t *testing.T) {
	w := newWorld(t)
	w.startHarnessTiming(w.harnessEnv("echo", envFakeError+"=Internal error: The Claude Agent session has ended. Please start a new session."),
		timing{retryBase: time.Millisecond, respawn: time.Millisecond})
	w.mention("hello")
	waitFor(t, "a retried prompt", 30*time.Second, func() bool { return len(promptSessions(w)) >= 2 })
	if ids := promptSessions(w); ids[0] == ids[1] {
		t.Errorf("the retry prompted the ended session %s again", ids[0])
	}
}

// TestChannelsRestricts: --channels is an explicit restriction. The
// agent is a member of two channels, and of a third it joins while the
// harness runs, but it answers only in the one --channels names: a
// mention elsewhere never becomes a prompt.
func TestChannelsRestricts(t *testing.T) {
	w := newWorld(t)
	const ch2, ch3 = "6f1c2d4e-3333-4000-8000-0000000000ce", "6f1c2d4e-3333-4000-8000-0000000000cf"
	w.addChannel(ch2, "second")
	w.startHarness(w.harnessEnv("echo"), "--channels", w.channel)
	w.mention("warm")
	waitFor(t, "first prompt", 15*time.Second, func() bool { return len(w.prompts()) == 1 })
	w.addChannel(ch3, "third")
	agent := w.agent.Public().Hex()
	for _, ch := range []string{ch2, ch3} {
		w.publish(&nostr.Event{Kind: 9, Content: "outside " + ch, Tags: nostr.Tags{{"h", ch}, {"p", agent}}})
	}
	// A mention in the named channel, published after the others, is
	// answered: once its prompt is there, the others had their chance.
	w.mention("inside")
	waitFor(t, "the named channel's prompt", 20*time.Second, func() bool { return promptHas(w.prompts(), "Content: inside") >= 1 })
	if n := promptHas(w.prompts(), "outside"); n != 0 {
		t.Errorf("%d prompts from channels --channels does not name; want none", n)
	}
}
