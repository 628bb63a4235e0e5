package harness

import (
	"buzzbox/harness/acpclient"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// TestBudgetTurnCap: an agent that has spent past --max-turn-tokens is
// stopped mid-turn (it would otherwise wait forever), and the thread is
// told which cap it reached and how to raise it.
func TestBudgetTurnCap(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("hang", envFakeUsage+"=fake-model-1"), "--max-turn-tokens", "100")
	m := w.mention("spend a lot")
	reply := w.awaitAgentReply(t, "the budget notice", 20*time.Second, m.ID, nil)
	for _, want := range []string{"125 tokens", "per-turn cap of 100", "--max-turn-tokens", "BUZZ_ACP_MAX_TURN_TOKENS"} {
		if !strings.Contains(reply.Content, want) {
			t.Errorf("budget notice %q does not say %q", reply.Content, want)
		}
	}
	waitFor(t, "the turn cancelled", 10*time.Second, func() bool { return w.count("session/cancel") >= 1 })
}

// TestBudgetDayCap: once the day's turns reach --max-day-tokens, the next
// mention gets no turn (the agent is not prompted again) but a notice
// naming the daily cap, and a restart keeps the day's count.
func TestBudgetDayCap(t *testing.T) {
	w := newWorld(t)
	env := w.harnessEnv("echo", envFakeUsage+"=fake-model-1")
	stop := w.startHarness(env, "--max-day-tokens", "200")
	for _, text := range []string{"turn one", "turn two"} { // 125 each: past 200 after the second
		m := w.mention(text)
		w.awaitAgentReply(t, "the answer to "+text, 20*time.Second, m.ID, nil)
	}
	refused := func(what string) {
		t.Helper()
		prompts := w.count("session/prompt")
		m := w.mention(what)
		reply := w.awaitAgentReply(t, "the day-cap notice "+what, 20*time.Second, m.ID, func(ev *nostr.Event) bool {
			return strings.Contains(ev.Content, "daily cap")
		})
		for _, want := range []string{"250 tokens today", "daily cap of 200", "--max-day-tokens", "00:00 UTC"} {
			if !strings.Contains(reply.Content, want) {
				t.Errorf("day-cap notice %q does not say %q", reply.Content, want)
			}
		}
		if n := w.count("session/prompt"); n != prompts {
			t.Errorf("the agent was prompted %d more times past the daily cap", n-prompts)
		}
	}
	refused("turn three")
	if err := stop(); err != nil {
		t.Fatalf("harness stop: %v", err)
	}
	w.startHarness(env, "--max-day-tokens", "200")
	refused("after a restart")
}

// TestBudgetFlags: bad cap values are refused with the flag named.
func TestBudgetFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-turn-cost", "lots"}, `--max-turn-cost lots: not a number`},
		{[]string{"--max-day-cost", "-1"}, `--max-day-cost -1: not above zero`},
		{[]string{"--price-per-mtok", "3"}, `--price-per-mtok 3: not two prices`},
		{[]string{"--max-turn-tokens", "x"}, `--max-turn-tokens x: not a whole number`},
	} {
		_, err := budgetConfig(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v; want %q", c.args, err, c.want)
		}
	}
	cfg, err := budgetConfig("--max-turn-cost", "0.50", "--price-per-mtok", "3,15")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Budget
	if b.TurnCost != 0.5 || b.PriceIn != 3 || b.PriceOut != 15 || !b.On() {
		t.Errorf("budget = %+v", b)
	}
	in, out := int64(1_000_000), int64(100_000)
	if s := b.spendOf(acpclient.UsageCounters{InputTokens: &in, OutputTokens: &out}); !s.CostKnown || s.Cost != 4.5 || s.Tokens != in+out {
		t.Errorf("priced spend = %+v; want 1.1M tokens costing $4.50", s)
	}
}

func budgetConfig(args ...string) (*Config, error) {
	return LoadConfig(append([]string{"--relay-url", "ws://127.0.0.1:1", "--agent-command", "x"}, args...), testEnv())
}
