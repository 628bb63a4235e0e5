package acpclient

import (
	"encoding/json"

	"buzzbox/internal/acp"
)

// Usage reports (spec §9.7): goose's _goose/unstable/session/update with
// sessionUpdate "usage_update", which buzz-agent sends too, carries a
// session's cumulative counters. The agent keeps the latest per session;
// the harness turns the change across a turn into its NIP-AM metric.

// UsageCounters are token counts as the agent reported them, in NIP-AM's
// field names; nil is unknown, never zero.
type UsageCounters struct {
	InputTokens     *int64   `json:"inputTokens"`               // input side, cache reads included
	OutputTokens    *int64   `json:"outputTokens"`              // generated tokens
	TotalTokens     *int64   `json:"totalTokens"`               // the agent's own total; never derived from the other two
	CostUSD         *float64 `json:"costUsd"`                   // the agent's cost estimate in US dollars
	CacheReadTokens *int64   `json:"cacheReadTokens,omitempty"` // informational subset of inputTokens
}

// UsageSnapshot is the latest usage_update of one session.
type UsageSnapshot struct {
	Counters UsageCounters
	Model    string // the model the report named; "" when none, or one over maxUsageModelBytes
	seq      uint64 // Agent.usageSeq when it arrived
}

// noteUsage records a usage_update notification (spec §9.7). Updates
// without any counter, or with a negative one, are ignored.
func (a *Agent) noteUsage(params json.RawMessage) {
	var p acp.UsageNotification
	if json.Unmarshal(params, &p) != nil || p.Update.SessionUpdate != acp.UpdateUsage || p.SessionID == "" {
		return
	}
	u := p.Update
	if u.Input == nil && u.Output == nil && u.Total == nil {
		return
	}
	for _, n := range []*int64{u.Input, u.Output, u.Total, u.Cached} {
		if n != nil && *n < 0 {
			a.log.Warn("agent reported negative token usage; ignored", "session", p.SessionID)
			return
		}
	}
	if u.Cost != nil && *u.Cost < 0 {
		u.Cost = nil
	}
	model := u.Model
	if len(model) > maxUsageModelBytes {
		model = ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.usage == nil || len(a.usage) >= maxUsageSessions {
		a.usage = map[string]*UsageSnapshot{}
	}
	a.usageSeq++
	if a.usageCh != nil {
		close(a.usageCh)
		a.usageCh = nil
	}
	a.usage[p.SessionID] = &UsageSnapshot{
		Counters: UsageCounters{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Total, CostUSD: u.Cost, CacheReadTokens: u.Cached},
		Model:    model, seq: a.usageSeq,
	}
}

// UsageMark is where usage reports stand now; UsageSince(mark) then tells
// whether any arrived after it.
func (a *Agent) UsageMark() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usageSeq
}

// UsageSince returns the session's latest usage if it was reported after
// mark, else nil.
func (a *Agent) UsageSince(sessionID string, mark uint64) *UsageSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.usage[sessionID]; u != nil && u.seq > mark {
		return u
	}
	return nil
}

// UsageChanged returns a channel closed when the next usage report
// arrives, for a caller that watches usage during a turn (budgets).
func (a *Agent) UsageChanged() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.usageCh == nil {
		a.usageCh = make(chan struct{})
	}
	return a.usageCh
}
