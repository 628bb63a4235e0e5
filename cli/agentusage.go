package cli

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// agentUsageLimit bounds the NIP-AM turn metrics one `buzz agents usage`
// reads: a busy agent's month of turns at a few hundred a day.
const agentUsageLimit = 10000

// maxUsageDays bounds --days: a month of metrics stays under the limit.
const maxUsageDays = 31

// usageRow is one agent's usage on one UTC day, summed over its turns'
// NIP-AM metrics (kind 44200, encrypted to the owner).
type usageRow struct {
	Agent        string   `json:"agent"`
	Day          string   `json:"day"`
	Turns        int      `json:"turns"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	TotalTokens  int64    `json:"total_tokens"`
	CostUSD      *float64 `json:"cost_usd"` // null when no turn reported a cost
	Models       []string `json:"models,omitempty"`
}

// metricRecord is the part of a NIP-AM metric this command reads.
type metricRecord struct {
	Model     *string `json:"model"`
	Timestamp string  `json:"timestamp"`
	Turn      struct {
		InputTokens  *int64   `json:"inputTokens"`
		OutputTokens *int64   `json:"outputTokens"`
		TotalTokens  *int64   `json:"totalTokens"`
		CostUSD      *float64 `json:"costUsd"`
	} `json:"turn"`
}

func runAgentsUsage(in *inv) error {
	days, err := in.p.nonNegative("days", 1)
	if err != nil {
		return err
	}
	if days < 1 || days > maxUsageDays {
		return userErr("--days must be 1..%d, got %d", maxUsageDays, days)
	}
	f := nostr.Filter{Kinds: []int{workspace.KindTurnMetric}, Tags: nostr.TagMap{"p": {in.pubkey}}, Limit: agentUsageLimit}
	if v := in.p.str("agent"); v != "" {
		hex, err := parsePubkey(v)
		if err != nil {
			return err
		}
		f.Authors = []string{hex}
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -int(days-1))
	ts := nostr.Timestamp(since.Unix())
	f.Since = &ts
	evs, err := in.c.Query(in.ctx, f)
	if err != nil {
		return err
	}
	sk, err := in.key.AppendHex(nil)
	if err != nil {
		return otherErr("read key: %v", err)
	}
	defer clear(sk)
	keys := map[string][32]byte{}
	rows := map[[2]string]*usageRow{}
	for _, ev := range evs {
		if !nostrkey.IsLowerHex(ev.PubKey, 64) {
			continue
		}
		k, ok := keys[ev.PubKey]
		if !ok {
			if k, err = nip44.GenerateConversationKey(ev.PubKey, string(sk)); err != nil {
				continue
			}
			keys[ev.PubKey] = k
		}
		plain, err := nip44.Decrypt(ev.Content, k)
		if err != nil {
			continue // not ours to read, or damaged
		}
		var m metricRecord
		if json.Unmarshal([]byte(plain), &m) != nil {
			continue
		}
		at := time.Unix(int64(ev.CreatedAt), 0)
		if t, err := time.Parse(time.RFC3339, m.Timestamp); err == nil {
			at = t
		}
		if at.Before(since) {
			continue
		}
		day := at.UTC().Format(time.DateOnly)
		r := rows[[2]string{ev.PubKey, day}]
		if r == nil {
			r = &usageRow{Agent: ev.PubKey, Day: day}
			rows[[2]string{ev.PubKey, day}] = r
		}
		r.Turns++
		in, out := val(m.Turn.InputTokens), val(m.Turn.OutputTokens)
		r.InputTokens += in
		r.OutputTokens += out
		if m.Turn.TotalTokens != nil {
			r.TotalTokens += *m.Turn.TotalTokens
		} else {
			r.TotalTokens += in + out
		}
		if c := m.Turn.CostUSD; c != nil {
			sum := *c
			if r.CostUSD != nil {
				sum += *r.CostUSD
			}
			r.CostUSD = &sum
		}
		if m.Model != nil && *m.Model != "" && !slices.Contains(r.Models, *m.Model) {
			r.Models = append(r.Models, *m.Model)
		}
	}
	out := []usageRow{}
	for _, r := range rows {
		sort.Strings(r.Models)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Day != out[j].Day {
			return out[i].Day > out[j].Day
		}
		return out[i].Agent < out[j].Agent
	})
	return writeJSON(in.out, out)
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// runAgentsControl pauses or resumes one of your agents: a signed
// workspace.KindAgentControl naming it. Its harness obeys its owner only,
// and says "paused" in its presence until resumed.
func runAgentsControl(word string) func(*inv) error {
	return func(in *inv) error {
		v, err := need(in, "agent")
		if err != nil {
			return err
		}
		agent, err := parsePubkey(v)
		if err != nil {
			return err
		}
		return publishAndPrint(in, &nostr.Event{Kind: workspace.KindAgentControl, Content: word, Tags: nostr.Tags{{"p", agent}}})
	}
}
