package harness

import (
	"buzzbox/internal/workspace/relayclient"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func TestMentionBecomesPrompt(t *testing.T) {
	w := newWorld(t)
	// Watch the agent's reactions live.
	watch := newRelayConn(w.relay.URL(), w.owner, nil, 1000, testLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watch.Run(ctx)
	<-watch.Connected()
	watch.Subscribe(ctx, "r", nostr.Filter{Kinds: []int{7, 5}, Authors: []string{w.agent.Public().Hex()}}, relayclient.SubOptions{Floor: time.Now().Unix()})

	w.startHarness(w.harnessEnv("echo"), "--session-title", "A\tB  C")
	ev := w.mention("hello @agent please look")
	waitFor(t, "a prompt", 15*time.Second, func() bool { return len(w.prompts()) >= 1 })
	p := w.prompts()[0]
	for _, want := range []string{"[Context]", "Scope: channel", "Channel: general (#" + w.channel + ")",
		"--reply-to " + ev.ID, "[Buzz event: @mention]", "Event ID: " + ev.ID, "Kind: 9", "From: ", "hex: " + w.owner.Public().Hex(),
		"Content: hello @agent please look", `Tags: [["h","` + w.channel + `"]`} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	// session/new: top-level systemPrompt (protocol 2), title, permission mode.
	var newParams map[string]any
	for _, l := range w.agentLog() {
		if l.Method == "session/new" {
			json.Unmarshal(l.Params, &newParams)
		}
	}
	sp, _ := newParams["systemPrompt"].(string)
	if !strings.HasPrefix(sp, "[Workspace]\n") || !strings.Contains(sp, "\n\n[Base]\n") {
		t.Errorf("systemPrompt = %.200q", sp)
	}
	if meta, _ := newParams["_meta"].(map[string]any); meta["sessionTitle"] != "A B C · #general" {
		t.Errorf("_meta = %v", newParams["_meta"])
	}
	// The fake logs the permission answer after the prompt; wait for it.
	waitFor(t, "the permission answer", 15*time.Second, func() bool { return w.count("permission-answer") >= 1 })
	var perm, mode bool
	for _, l := range w.agentLog() {
		if l.Method == "permission-answer" && strings.HasPrefix(l.Note, "a1") {
			perm = true
		}
		if l.Method == "session/set_config_option" && strings.Contains(string(l.Params), `"bypassPermissions"`) {
			mode = true
		}
	}
	if !perm || !mode {
		t.Errorf("permission answered a1: %v; bypassPermissions set: %v", perm, mode)
	}
	// Reactions: 👀 and 💬 added, then both deleted.
	var added, deleted int
	waitFor(t, "reactions added and removed", 10*time.Second, func() bool {
		for {
			select {
			case re := <-watch.Events():
				// The relay serves them only to the channel's readers.
				if re.Ev.Tags.FindWithValue("h", w.channel) == nil {
					t.Errorf("kind %d %v has no h tag of the channel", re.Ev.Kind, re.Ev.Tags)
				}
				switch re.Ev.Kind {
				case 7:
					if re.Ev.Tags.FindWithValue("e", ev.ID) != nil {
						added++
					}
				case 5:
					deleted++
				}
				continue
			default:
			}
			return added == 2 && deleted == 2
		}
	})
	if n := len(w.prompts()); n != 1 {
		t.Errorf("%d prompts; want 1", n)
	}
}
