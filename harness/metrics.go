package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"buzzbox/harness/acpclient"

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

	Turn       acpclient.UsageCounters `json:"turn"`       // this turn: cumulative now minus at the end of the previous turn
	Cumulative acpclient.UsageCounters `json:"cumulative"` // the session's totals as last reported by the agent
	// DeltaReliable is false when a counter went backwards since the
	// previous turn; that counter's turn value is then null.
	DeltaReliable bool   `json:"deltaReliable"`
	StopReason    string `json:"stopReason"` // end_turn, max_tokens, cancelled, error or unknown
}

// delta is cur minus prev per counter; prev nil means the session's start.
// A counter that went backwards is null and makes the delta unreliable.
func delta(cur acpclient.UsageCounters, prev *acpclient.UsageCounters) (acpclient.UsageCounters, bool) {
	if prev == nil {
		prev = &acpclient.UsageCounters{}
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
	out := acpclient.UsageCounters{
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
func metricStop(o acpclient.Outcome) string {
	switch o.Result {
	case acpclient.TurnOK:
		switch o.Stop {
		case acp.StopEndTurn, acp.StopMaxTokens, acp.StopCancelled:
			return string(o.Stop)
		}
		return "unknown"
	case acpclient.TurnSignalled:
		return "cancelled"
	}
	return "error"
}

// reportUsage publishes the NIP-AM metric of a turn on ss that started at
// start, when the agent reported usage after mark and an owner is known,
// and returns what the turn spent (zero when nothing was reported).
// channel is "" for a heartbeat. It runs on the turn's goroutine, which
// owns ss; the publish itself runs in the background.
func (h *harness) reportUsage(ctx context.Context, a *acpclient.Agent, ss *sessionState, channel string, start time.Time, mark uint64, o acpclient.Outcome) spend {
	u := a.UsageSince(ss.id, mark)
	if u == nil {
		return spend{}
	}
	turn, reliable := delta(u.Counters, ss.usage)
	ss.usage = &u.Counters
	spent := h.cfg.Budget.spendOf(turn)
	if u.Model != "" && h.live != nil {
		h.live.set(func(l *liveState) { l.model = u.Model }) // the agents panel's model, when --model names none
	}
	if h.cfg.Owner == "" {
		return spent
	}
	ss.metricSeq++
	end := time.Now()
	m := turnMetric{Harness: metricHarness, SessionID: ss.id, TurnSeq: ss.metricSeq,
		Timestamp: end.UTC().Format("2006-01-02T15:04:05.000Z07:00"), DurationMs: end.Sub(start).Milliseconds(),
		Turn: turn, Cumulative: u.Counters, DeltaReliable: reliable, StopReason: metricStop(o)}
	if model := u.Model; model != "" {
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
		return spent
	}
	h.pubs.Add(1)
	go func() { // one publish, bounded by httpTimeout; shutdown waits for it
		defer h.pubs.Done()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpTimeout)
		defer cancel()
		if _, err := h.io.Publish(pctx, ev); err != nil {
			h.log.Warn("turn metric not published", "session", m.SessionID, "err", err)
			return
		}
		h.log.Debug("turn metric published", "session", m.SessionID, "event_id", ev.ID)
	}()
	return spent
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
