package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/acp"
	"buzzbox/internal/workspace"
)

// NIP-AM turn metrics (spec §10 step 7, §9.7): after a turn in which the
// agent reported token usage, and when an owner is known, the harness
// publishes one kind 44200 event whose content is a usage record NIP-44 v2
// encrypted to the owner, tagged ["p", owner] and ["agent", agent]. The
// channel the turn served is inside the encrypted record, never in a tag.
//
// Usage comes from goose's usage notification, which buzz-agent sends too:
// _goose/unstable/session/update with sessionUpdate "usage_update" and the
// session's cumulative counters. A turn's usage is the change in those
// counters since the end of the session's previous turn. Usage that ACP
// agents report in the session/prompt response is not read (a later
// upstream addition, spec §18).

// metricHarness names this harness in every record.
const metricHarness = "buzz-acp"

// turnMetric is the decrypted content of a kind 44200 event, in NIP-AM's
// field names (consumers ignore fields they do not know, such as
// durationMs). Counters are null when the agent did not report them: null
// means unknown, never zero.
type turnMetric struct {
	Harness    string  `json:"harness"`    // always "buzz-acp"
	Model      *string `json:"model"`      // model named by the agent's usage report, else --model; null when unknown
	ChannelID  *string `json:"channelId"`  // channel UUID the turn served; null for a heartbeat turn
	SessionID  string  `json:"sessionId"`  // ACP session id; cumulative counters form a series only within one
	TurnSeq    int     `json:"turnSeq"`    // metrics published for this session, counting this one (from 1)
	Timestamp  string  `json:"timestamp"`  // end of the turn, RFC 3339 UTC with milliseconds
	DurationMs int64   `json:"durationMs"` // wall time of the turn in milliseconds: claim of the agent to its answer

	Turn       usageCounters `json:"turn"`       // this turn: cumulative now minus at the end of the previous turn
	Cumulative usageCounters `json:"cumulative"` // the session's totals as last reported by the agent
	// DeltaReliable is false when a counter went backwards since the
	// previous turn; that counter's turn value is then null.
	DeltaReliable bool   `json:"deltaReliable"`
	StopReason    string `json:"stopReason"` // end_turn, max_tokens, cancelled, error or unknown
}

// usageCounters are token counts as the agent reported them.
type usageCounters struct {
	InputTokens     *int64   `json:"inputTokens"`               // input side, cache reads included
	OutputTokens    *int64   `json:"outputTokens"`              // generated tokens
	TotalTokens     *int64   `json:"totalTokens"`               // the agent's own total; never derived from the other two
	CostUSD         *float64 `json:"costUsd"`                   // the agent's cost estimate in US dollars
	CacheReadTokens *int64   `json:"cacheReadTokens,omitempty"` // informational subset of inputTokens
}

// usageSnapshot is the latest usage_update of one session.
type usageSnapshot struct {
	counters usageCounters
	model    string
	seq      uint64 // agentProc.usageSeq when it arrived
}

// noteUsage records a usage_update notification (spec §9.7). Updates
// without any counter, or with a negative one, are ignored.
func (a *agentProc) noteUsage(params json.RawMessage) {
	var p struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string   `json:"sessionUpdate"`
			Input         *int64   `json:"accumulatedInputTokens"`
			Output        *int64   `json:"accumulatedOutputTokens"`
			Total         *int64   `json:"accumulatedTotalTokens"`
			Cached        *int64   `json:"accumulatedCachedInputTokens"`
			Cost          *float64 `json:"accumulatedCost"`
			Model         string   `json:"model"`
		} `json:"update"`
	}
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
	if len(model) > maxModelBytes {
		model = ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.usage == nil || len(a.usage) >= maxUsageSessions {
		a.usage = map[string]*usageSnapshot{}
	}
	a.usageSeq++
	a.usage[p.SessionID] = &usageSnapshot{
		counters: usageCounters{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Total, CostUSD: u.Cost, CacheReadTokens: u.Cached},
		model:    model, seq: a.usageSeq,
	}
}

// usageMark is where usage reports stand now; usageSince(mark) then tells
// whether any arrived after it.
func (a *agentProc) usageMark() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usageSeq
}

// usageSince returns the session's latest usage if it was reported after
// mark, else nil.
func (a *agentProc) usageSince(sessionID string, mark uint64) *usageSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.usage[sessionID]; u != nil && u.seq > mark {
		return u
	}
	return nil
}

// delta is cur minus prev per counter; prev nil means the session's start.
// A counter that went backwards is null and makes the delta unreliable.
func delta(cur usageCounters, prev *usageCounters) (usageCounters, bool) {
	if prev == nil {
		prev = &usageCounters{}
	}
	reliable := true
	sub := func(c, p *int64) *int64 {
		if c == nil {
			return nil
		}
		base := int64(0)
		if p != nil {
			base = *p
		}
		if *c < base {
			reliable = false
			return nil
		}
		d := *c - base
		return &d
	}
	out := usageCounters{
		InputTokens:     sub(cur.InputTokens, prev.InputTokens),
		OutputTokens:    sub(cur.OutputTokens, prev.OutputTokens),
		TotalTokens:     sub(cur.TotalTokens, prev.TotalTokens),
		CacheReadTokens: sub(cur.CacheReadTokens, prev.CacheReadTokens),
	}
	if cur.CostUSD != nil {
		base := 0.0
		if prev.CostUSD != nil {
			base = *prev.CostUSD
		}
		if d := *cur.CostUSD - base; d >= 0 {
			out.CostUSD = &d
		} else {
			reliable = false
		}
	}
	return out, reliable
}

// metricStop maps a turn's outcome to NIP-AM's stop reasons.
func metricStop(o promptOutcome) string {
	switch o.result {
	case turnOK:
		switch o.stop {
		case acp.StopEndTurn, acp.StopMaxTokens, acp.StopCancelled:
			return string(o.stop)
		}
		return "unknown"
	case turnSignalled:
		return "cancelled"
	}
	return "error"
}

// reportUsage publishes the NIP-AM metric of a turn on ss that started at
// start, when the agent reported usage after mark and an owner is known.
// channel is "" for a heartbeat. It runs on the turn's goroutine, which
// owns ss; the publish itself runs in the background.
func (h *harness) reportUsage(ctx context.Context, a *agentProc, ss *sessionState, channel string, start time.Time, mark uint64, o promptOutcome) {
	u := a.usageSince(ss.id, mark)
	if u == nil {
		return
	}
	turn, reliable := delta(u.counters, ss.usage)
	ss.usage = &u.counters
	if h.cfg.Owner == "" {
		return
	}
	ss.metricSeq++
	end := time.Now()
	m := turnMetric{Harness: metricHarness, SessionID: ss.id, TurnSeq: ss.metricSeq,
		Timestamp: end.UTC().Format("2006-01-02T15:04:05.000Z07:00"), DurationMs: end.Sub(start).Milliseconds(),
		Turn: turn, Cumulative: u.counters, DeltaReliable: reliable, StopReason: metricStop(o)}
	if model := u.model; model != "" {
		m.Model = &model
	} else if h.cfg.Model != "" {
		model = h.cfg.Model
		m.Model = &model
	}
	if channel != "" {
		m.ChannelID = &channel
	}
	ev, err := h.metricEvent(m, end)
	if err != nil {
		h.log.Warn("turn metric not published", "session", ss.id, "err", err)
		return
	}
	h.pubs.Add(1)
	go func() { // one publish, bounded by httpTimeout; shutdown waits for it
		defer h.pubs.Done()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpTimeout)
		defer cancel()
		if err := h.io.publish(pctx, ev); err != nil {
			h.log.Warn("turn metric not published", "session", m.SessionID, "err", err)
			return
		}
		h.log.Debug("turn metric published", "session", m.SessionID, "event_id", ev.ID)
	}()
}

// metricEvent signs the kind 44200 event carrying m, encrypted to the owner.
func (h *harness) metricEvent(m turnMetric, at time.Time) (*nostr.Event, error) {
	plain, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode turn metric: %w", err)
	}
	if len(plain) > maxMetricBytes {
		return nil, fmt.Errorf("turn metric is %d bytes, over NIP-AM's %d", len(plain), maxMetricBytes)
	}
	key, err := h.ownerKey()
	if err != nil {
		return nil, fmt.Errorf("conversation key for owner %s: %w", h.cfg.Owner, err)
	}
	content, err := nip44.Encrypt(string(plain), key)
	if err != nil {
		return nil, fmt.Errorf("encrypt turn metric: %w", err)
	}
	ev := &nostr.Event{Kind: workspace.KindTurnMetric, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{"p", h.cfg.Owner}, {"agent", h.cfg.AgentHex}}}
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return nil, fmt.Errorf("sign turn metric: %w", err)
	}
	return ev, nil
}
