package harness

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/harness/acpclient"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/acp"
	"buzzbox/internal/workspace"
)

// TestTurnMetric: a fake that reports cumulative usage gets one NIP-AM
// kind 44200 per turn on buzz-relay, which the owner decrypts into that
// turn's usage and the session's totals.
func TestTurnMetric(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo", envFakeUsage+"=fake-model-1"))
	for i := 1; i <= 2; i++ {
		w.mention("turn " + strconv.Itoa(i))
		waitFor(t, "turn end", 15*time.Second, func() bool { return w.count("permission-answer") == i })
	}
	ownerSK, _ := w.owner.AppendHex(nil)
	agentHex := w.agent.Public().Hex()
	key, err := nip44.GenerateConversationKey(agentHex, string(ownerSK))
	if err != nil {
		t.Fatal(err)
	}
	var evs []*nostr.Event
	waitFor(t, "two turn metrics on the relay", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ = w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindTurnMetric}, Tags: nostr.TagMap{"p": {w.owner.Public().Hex()}}})
		return len(evs) == 2
	})
	var ms []turnMetric
	for _, ev := range evs {
		want := nostr.Tags{{"p", w.owner.Public().Hex()}, {"agent", agentHex}}
		if ev.PubKey != agentHex || len(ev.Tags) != 2 || !slices.Equal(ev.Tags[0], want[0]) || !slices.Equal(ev.Tags[1], want[1]) {
			t.Errorf("metric event by %s with tags %v; want by the agent with %v", ev.PubKey, ev.Tags, want)
		}
		if strings.Contains(ev.Content, "fake-model-1") {
			t.Errorf("metric content is not encrypted: %s", ev.Content)
		}
		plain, err := nip44.Decrypt(ev.Content, key)
		if err != nil {
			t.Fatalf("owner cannot decrypt the metric: %v", err)
		}
		var m turnMetric
		if err := json.Unmarshal([]byte(plain), &m); err != nil {
			t.Fatalf("metric %s: %v", plain, err)
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].TurnSeq < ms[j].TurnSeq })
	u := fakeTurnUsage
	for i, m := range ms {
		n := int64(i + 1)
		if _, err := time.Parse(time.RFC3339, m.Timestamp); err != nil || m.Harness != "buzz-acp" || m.TurnSeq != i+1 ||
			m.SessionID != ms[0].SessionID || m.ChannelID == nil || *m.ChannelID != w.channel ||
			m.Model == nil || *m.Model != "fake-model-1" || m.DurationMs < 0 || !m.DeltaReliable || m.StopReason != "end_turn" {
			b, _ := json.Marshal(m)
			t.Errorf("metric %d = %s", i+1, b)
		}
		for _, c := range []struct {
			name      string
			got       *int64
			want      int64
			cumulated *int64
		}{
			{"input", m.Turn.InputTokens, u.input, m.Cumulative.InputTokens},
			{"output", m.Turn.OutputTokens, u.output, m.Cumulative.OutputTokens},
			{"total", m.Turn.TotalTokens, u.total, m.Cumulative.TotalTokens},
			{"cache read", m.Turn.CacheReadTokens, u.cached, m.Cumulative.CacheReadTokens},
		} {
			if c.got == nil || *c.got != c.want || c.cumulated == nil || *c.cumulated != n*c.want {
				t.Errorf("metric %d %s tokens: turn %v, cumulative %v; want %d and %d", i+1, c.name, ptrStr(c.got), ptrStr(c.cumulated), c.want, n*c.want)
			}
		}
		if m.Turn.CostUSD == nil || *m.Turn.CostUSD != u.cost {
			t.Errorf("metric %d turn cost %v; want %v", i+1, m.Turn.CostUSD, u.cost)
		}
	}
}

func ptrStr(p *int64) string {
	if p == nil {
		return "null"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}

func TestUsageDelta(t *testing.T) {
	i := func(n int64) *int64 { return &n }
	cur := acpclient.UsageCounters{InputTokens: i(300), OutputTokens: i(40), CacheReadTokens: i(5)}
	got, ok := delta(cur, nil)
	if !ok || *got.InputTokens != 300 || *got.OutputTokens != 40 || got.TotalTokens != nil || got.CostUSD != nil {
		t.Errorf("delta from the session start = %+v, %v", got, ok)
	}
	got, ok = delta(cur, &acpclient.UsageCounters{InputTokens: i(100), OutputTokens: i(50)})
	if ok || *got.InputTokens != 200 || got.OutputTokens != nil || *got.CacheReadTokens != 5 {
		t.Errorf("delta with output going backwards = %+v, %v; want output null and unreliable", got, ok)
	}
	for o, want := range map[acpclient.Outcome]string{
		{Result: acpclient.TurnOK, Stop: acp.StopEndTurn}:   "end_turn",
		{Result: acpclient.TurnOK, Stop: acp.StopRefusal}:   "unknown",
		{Result: acpclient.TurnSignalled}:                   "cancelled",
		{Result: acpclient.TurnIdle}:                        "error",
		{Result: acpclient.TurnOK, Stop: acp.StopMaxTokens}: "max_tokens",
	} {
		if got := metricStop(o); got != want {
			t.Errorf("metricStop(%v, %q) = %q; want %q", o.Result, o.Stop, got, want)
		}
	}
}
