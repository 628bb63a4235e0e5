package harness

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"buzzbox/harness/acpclient"
)

// Budgets (issue: agents as members of the team): caps on what an agent
// may spend, per turn and per UTC day, in tokens and, where a cost is
// known, in US dollars. A turn's spend comes from the usage the agent
// reports during the turn (acpclient's usage reports, the same numbers
// NIP-AM metrics carry); a cost is the agent's own figure, else the
// tokens priced by --price-per-mtok. Passing a turn cap cancels the turn;
// passing the day cap, during a turn or before one, ends the turn and
// refuses new ones until 00:00 UTC. Each time, the thread is told which
// cap was reached and how to raise it. The day's spend is kept in the
// harness's state file, so a restart does not reset it.

// maxBudgetDollars bounds a cost cap or price: a typing slip of a few
// zeros should be refused, not turn the cap off.
const maxBudgetDollars = 1e6

// Budget is the configured caps; a zero field caps nothing.
type Budget struct {
	TurnTokens, DayTokens int64
	TurnCost, DayCost     float64 // US dollars
	// PriceIn and PriceOut are US dollars per million input and output
	// tokens; 0 when not configured.
	PriceIn, PriceOut float64
}

// On reports whether any cap is set.
func (b Budget) On() bool {
	return b.TurnTokens > 0 || b.DayTokens > 0 || b.TurnCost > 0 || b.DayCost > 0
}

// spend is what usage cost: tokens, and dollars when known.
type spend struct {
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost,omitempty"`
	CostKnown bool    `json:"costKnown,omitempty"`
}

func (s spend) plus(o spend) spend {
	return spend{Tokens: s.Tokens + o.Tokens, Cost: s.Cost + o.Cost, CostKnown: s.CostKnown || o.CostKnown}
}

// spendOf turns usage counters into a spend: tokens are the total the
// agent reported, else input plus output; cost is the agent's figure,
// else the priced tokens when a price is configured.
func (b Budget) spendOf(u acpclient.UsageCounters) spend {
	var s spend
	in, out := deref(u.InputTokens), deref(u.OutputTokens)
	if u.TotalTokens != nil {
		s.Tokens = *u.TotalTokens
	} else {
		s.Tokens = in + out
	}
	switch {
	case u.CostUSD != nil:
		s.Cost, s.CostKnown = *u.CostUSD, true
	case b.PriceIn > 0 || b.PriceOut > 0:
		s.Cost, s.CostKnown = (float64(in)*b.PriceIn+float64(out)*b.PriceOut)/1e6, true
	}
	return s
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// overTurn names the cap a turn's spend (turn) together with the day's
// spend before it (day) has reached, in words for the thread; "" none.
func (b Budget) overTurn(turn, day spend) string {
	switch {
	case b.TurnTokens > 0 && turn.Tokens >= b.TurnTokens:
		return fmt.Sprintf("this turn used %d tokens, reaching the per-turn cap of %d (raise it with --max-turn-tokens or BUZZ_ACP_MAX_TURN_TOKENS)", turn.Tokens, b.TurnTokens)
	case b.TurnCost > 0 && turn.CostKnown && turn.Cost >= b.TurnCost:
		return fmt.Sprintf("this turn cost $%.2f, reaching the per-turn cap of $%.2f (raise it with --max-turn-cost or BUZZ_ACP_MAX_TURN_COST)", turn.Cost, b.TurnCost)
	}
	return b.overDay(day.plus(turn))
}

// overDay names the day cap the day's spend has reached; "" none.
func (b Budget) overDay(day spend) string {
	switch {
	case b.DayTokens > 0 && day.Tokens >= b.DayTokens:
		return fmt.Sprintf("the agent has used %d tokens today (UTC), reaching its daily cap of %d (raise it with --max-day-tokens or BUZZ_ACP_MAX_DAY_TOKENS, or wait until 00:00 UTC)", day.Tokens, b.DayTokens)
	case b.DayCost > 0 && day.CostKnown && day.Cost >= b.DayCost:
		return fmt.Sprintf("the agent's turns have cost $%.2f today (UTC), reaching its daily cap of $%.2f (raise it with --max-day-cost or BUZZ_ACP_MAX_DAY_COST, or wait until 00:00 UTC)", day.Cost, b.DayCost)
	}
	return ""
}

// budgetDay is the UTC day usage counts against.
func budgetDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// budget reads the budget rows of the plan.
func (p *plan) budget() (Budget, error) {
	b := Budget{TurnTokens: int64(p.ints["max-turn-tokens"]), DayTokens: int64(p.ints["max-day-tokens"])}
	dollars := func(name string) (float64, error) {
		text := strings.TrimSpace(p.str(name))
		if text == "" {
			return 0, nil
		}
		v, err := strconv.ParseFloat(strings.TrimPrefix(text, "$"), 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return 0, p.row(name).flagErr(text, "not a number")
		case v <= 0:
			return 0, p.row(name).flagErr(text, "not above zero")
		case v > maxBudgetDollars:
			return 0, p.row(name).flagErr(text, fmt.Sprintf("over %g dollars", maxBudgetDollars))
		}
		return v, nil
	}
	var err error
	if b.TurnCost, err = dollars("max-turn-cost"); err != nil {
		return b, err
	}
	if b.DayCost, err = dollars("max-day-cost"); err != nil {
		return b, err
	}
	if text := strings.TrimSpace(p.str("price-per-mtok")); text != "" {
		in, out, ok := strings.Cut(text, ",")
		pin, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		pout, err2 := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if !ok || err1 != nil || err2 != nil || pin < 0 || pout < 0 || pin > maxBudgetDollars || pout > maxBudgetDollars ||
			math.IsNaN(pin) || math.IsNaN(pout) {
			return b, p.row("price-per-mtok").flagErr(text, "not two prices")
		}
		b.PriceIn, b.PriceOut = pin, pout
	}
	if (b.TurnCost > 0 || b.DayCost > 0) && b.PriceIn == 0 && b.PriceOut == 0 {
		p.warnings = append(p.warnings, "cost caps count only turns whose agent reports a cost; set --price-per-mtok to price the others")
	}
	return b, nil
}

// watchBudget cancels turn t, running on session sid of agent a, once the
// usage the agent reports passes a cap. base is the session's cumulative
// usage before the turn (nil at its start), day the day's spend before
// it. It returns when ctx ends (the prompt returned) or after it cancels.
func (h *harness) watchBudget(ctx context.Context, channel string, t *turnHandle, a *acpclient.Agent, sid string, mark uint64, base *acpclient.UsageCounters, day spend) {
	b := h.cfg.Budget
	for {
		changed := a.UsageChanged()
		if u := a.UsageSince(sid, mark); u != nil {
			d, _ := delta(u.Counters, base)
			if why := b.overTurn(b.spendOf(d), day); why != "" {
				h.do(func() {
					if cs := h.queues[channel]; cs != nil && cs.turn == t && t.reason == "" {
						t.budget = why
						t.cancel(reasonBudget)
					}
				})
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// reasonBudget is the cancel reason of a turn that reached a cap.
const reasonBudget = "budget"

// overBudget is dispatch's check before a turn: when the day's cap is
// reached, cs's waiting events are answered with the cap and dropped, and
// it reports true.
func (h *harness) overBudget(ctx context.Context, cs *chanState) bool {
	why := h.cfg.Budget.overDay(h.store.daySpend(budgetDay(time.Now())))
	if why == "" {
		return false
	}
	batch := append(append([]*Event{}, cs.parked...), cs.queue...)
	cs.parked, cs.queue, cs.reason = nil, nil, ""
	h.log.Warn("daily budget reached; not starting a turn", "channel", cs.id, "events", len(batch))
	h.reacts.clear(ctx, batch) // dropped from the queue, so settled as handled: a restart does not take them up
	h.notice(ctx, cs, batch, "⛔ I did not take this on: "+why+".")
	return true
}

// addSpend counts what a turn spent against today, on the loop goroutine.
func (h *harness) addSpend(sp spend) {
	if sp == (spend{}) {
		return
	}
	day := budgetDay(time.Now())
	h.store.addSpend(day, sp)
	h.live.set(func(l *liveState) { l.day, l.spent = day, h.store.daySpend(day) })
	h.presenceNow()
}

// daySpendMemo is the day's spend kept in the state file.
type daySpendMemo struct {
	Day string `json:"day"` // UTC, YYYY-MM-DD
	spend
}

// daySpend is what the agent has spent on day.
func (s *stateStore) daySpend(day string) spend {
	if m := s.st.Spend; m != nil && m.Day == day {
		return m.spend
	}
	return spend{}
}

// addSpend counts sp against day, starting the day afresh when it changed.
func (s *stateStore) addSpend(day string, sp spend) {
	if sp == (spend{}) {
		return
	}
	if s.st.Spend == nil || s.st.Spend.Day != day {
		s.st.Spend = &daySpendMemo{Day: day}
	}
	s.st.Spend.spend = s.st.Spend.plus(sp)
	s.dirty = true
}
