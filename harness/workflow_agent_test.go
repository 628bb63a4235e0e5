package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// TestWorkflowAskAgentStep runs a workflow on buzz-relay whose ask_agent
// step mentions the agent (buzz-agent against a scripted model, through
// this harness answering anyone); the agent's reply is the step's output
// and reaches the next step's message.
func TestWorkflowAskAgentStep(t *testing.T) {
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
	llm.SetHandler(shellReplyModel(func() string { return "standup: all green " + string(rune('0'+calls.Add(1))) }))
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(), "BUZZ_ACP_RESPOND_TO=anyone",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	w.runHarness(t, env, timing{})

	const id = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"
	w.publish(&nostr.Event{Kind: workspace.KindWorkflowDef, Tags: nostr.Tags{{"d", id}, {"h", w.channel}}, Content: `name: standup
trigger: {on: manual}
steps:
  - id: ask
    action: ask_agent
    agent: ` + w.agent.Public().Hex() + `
    prompt: "Summarise the day as a standup."
    timeout: 60s
  - action: send_message
    text: "Summary: {{steps.ask.output}}"
`})
	w.publish(&nostr.Event{Kind: workspace.KindWorkflowTrigger, Tags: nostr.Tags{{"d", id}}})
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{w.channel}}})
		cancel()
		for _, ev := range evs {
			if strings.HasPrefix(ev.Content, "Summary: standup: all green") && ev.PubKey == w.relay.PublicKey() {
				t.Logf("workflow message: %q", ev.Content)
				return
			}
		}
		if time.Now().After(deadline) {
			for _, ev := range evs {
				t.Logf("message %s: %q", ev.PubKey[:8], ev.Content)
			}
			t.Fatal("the agent's reply never reached the workflow's next step")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
