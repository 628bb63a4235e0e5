package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/workspace"
)

// TestAgentsUsage: `buzz agents usage` sums the turn metrics the owner's
// agents encrypted to them, per agent and UTC day; metrics it cannot
// decrypt (another owner's) and days outside --days are left out.
func TestAgentsUsage(t *testing.T) {
	w := newWorkspace(t)
	metric := func(agent, owner testKey, at time.Time, in, out, total int64, cost string) {
		key, err := nip44.GenerateConversationKey(owner.pk, agent.sk)
		if err != nil {
			t.Fatal(err)
		}
		plain := fmt.Sprintf(`{"harness":"buzz-acp","model":"m1","timestamp":%q,"turn":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d,"costUsd":%s}}`,
			at.UTC().Format(time.RFC3339), in, out, total, cost)
		ct, err := nip44.Encrypt(plain, key)
		if err != nil {
			t.Fatal(err)
		}
		w.r.put(t, signed(t, agent, workspace.KindTurnMetric, ct, nostr.Tags{{"p", owner.pk}, {"agent", agent.pk}}, at.Unix()))
	}
	now := time.Now()
	metric(w.bob, w.me, now, 100, 20, 125, "0.5")
	metric(w.bob, w.me, now, 100, 20, 125, "0.25")
	metric(w.bob2, w.me, now, 10, 1, 11, "null")
	metric(w.bob, w.me, now.AddDate(0, 0, -3), 1000, 1, 1001, "null")
	metric(w.bob, w.alice, now, 5, 5, 10, "1") // encrypted to another owner: not ours
	var rows []usageRow
	w.ok(t, &rows, "", "agents", "usage")
	if len(rows) != 2 {
		t.Fatalf("usage today = %+v; want a row for each of two agents", rows)
	}
	byAgent := map[string]usageRow{}
	for _, r := range rows {
		byAgent[r.Agent] = r
	}
	if r := byAgent[w.bob.pk]; r.Turns != 2 || r.TotalTokens != 250 || r.InputTokens != 200 || r.CostUSD == nil || *r.CostUSD != 0.75 {
		t.Errorf("bob today = %+v; want 2 turns, 250 tokens, $0.75", r)
	}
	if r := byAgent[w.bob2.pk]; r.Turns != 1 || r.TotalTokens != 11 || r.CostUSD != nil {
		t.Errorf("bob2 today = %+v; want 1 turn, 11 tokens, no cost", r)
	}
	w.ok(t, &rows, "", "agents", "usage", "--days", "7", "--agent", w.bob.pk)
	if len(rows) != 2 || rows[0].TotalTokens != 250 || rows[1].TotalTokens != 1001 {
		t.Errorf("bob over 7 days = %+v; want today's 250 then 1001 three days back", rows)
	}
	if res := w.run(t, "", "agents", "usage", "--days", "99"); res.code != 1 {
		t.Errorf("--days 99 = %+v; want a user error", res)
	}
}
