package harness

import (
	"context"
	"slices"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// Stop: a person asks the harness to stop the turn handling a message
// with a signed workspace.KindTurnStop event (h = channel, e = the
// message), from the web client's Stop button or `buzz turns stop`. The
// harness obeys the agent's owner and the channel's admins (role owner or
// admin in the relay's 39002 members list); anyone else's stop is ignored
// with a warning. A running turn is cancelled like an owner's !cancel
// (session/cancel, then the cancel drain); a message still queued is
// taken out. Either way its status becomes cancelled, naming who stopped it.

// stopSub is the subscription of stop requests.
const stopSub = "turn-stop"

// stopMaxAge is how old a stop request may be: stops are ephemeral and
// come live, so an older one is a replay of a request already obeyed.
const stopMaxAge = time.Minute

// stopFilter is what stopSub asks the relay for: every stop request in
// the channels the agent may read, from now on (the relay serves an
// h-tagged event to the channel's readers only).
func stopFilter() nostr.Filter {
	since := nostr.Now()
	return nostr.Filter{Kinds: []int{workspace.KindTurnStop}, Since: &since}
}

// stopRequest vets one stop request (on the intake goroutine; the relay
// client checked its signature) and hands an obeyed one to the loop.
func (h *harness) stopRequest(ctx context.Context, ev *nostr.Event) {
	channel, target := "", ""
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch {
		case t[0] == "h" && channel == "":
			channel = t[1]
		case t[0] == "e" && target == "":
			target = t[1]
		}
	}
	log := h.log.With("channel", channel, "event_id", target, "by", ev.PubKey)
	if !workspace.IsChannelID(channel) || !nostr.IsValid32ByteHex(target) || ev.PubKey == h.cfg.AgentHex {
		return
	}
	if age := time.Since(ev.CreatedAt.Time()); age > stopMaxAge {
		log.Warn("stop request too old; ignored", "age", age.Round(time.Second))
		return
	}
	if h.cfg.Owner != "" && ev.PubKey == h.cfg.Owner {
		h.do(func() { h.stopTurn(ctx, channel, target, ev.PubKey) })
		return
	}
	go func() { // one relay query, bounded by httpTimeout; hands the stop to the loop
		qctx, cancel := context.WithTimeout(ctx, httpTimeout)
		defer cancel()
		if !h.channelAdmin(qctx, channel, ev.PubKey) {
			log.Warn("stop request from neither the agent's owner nor a channel admin; ignored")
			return
		}
		h.do(func() { h.stopTurn(ctx, channel, target, ev.PubKey) })
	}()
}

// channelAdmin reports whether pubkey is an owner or admin of channel by
// the relay's newest members list (39002, which only the relay may sign).
func (h *harness) channelAdmin(ctx context.Context, channel, pubkey string) bool {
	evs, err := h.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {channel}}})
	if err != nil {
		h.log.Warn("could not read the channel's admins; stop request ignored", "channel", channel, "err", err)
		return false
	}
	var newest *nostr.Event
	for _, ev := range evs {
		if ev.Tags.GetD() == channel && (newest == nil || ev.CreatedAt > newest.CreatedAt) {
			newest = ev
		}
	}
	if newest == nil {
		return false
	}
	for _, t := range newest.Tags {
		if len(t) >= 4 && t[0] == "p" && t[1] == pubkey && (t[3] == "owner" || t[3] == "admin") {
			return true
		}
	}
	return false
}

// stopTurn stops what the harness does with message target of channel,
// on the loop goroutine: the running turn that handles it is cancelled;
// a queued message is taken out of the queue.
func (h *harness) stopTurn(ctx context.Context, channel, target, by string) {
	cs := h.queues[channel]
	if cs == nil {
		return
	}
	if t := cs.turn; t != nil && t.handles(target) {
		h.log.Info("turn stopped", "channel", channel, "event_id", target, "by", by)
		t.stoppedBy = by
		t.cancel("stop")
		return
	}
	if i := slices.IndexFunc(cs.queue, func(e *Event) bool { return e.ID == target }); i >= 0 {
		ev := cs.queue[i]
		cs.queue = slices.Delete(cs.queue, i, i+1)
		h.log.Info("queued message stopped", "channel", channel, "event_id", target, "by", by)
		h.reacts.clear(ctx, []*Event{ev})
		h.status.state(channel, []*Event{ev}, turnStatusContent{State: turnCancelled, By: by})
	}
}

// handles reports whether message id is one the turn answers.
func (t *turnHandle) handles(id string) bool {
	for _, evs := range [][]*Event{t.batch, t.parked, t.extra} {
		if slices.ContainsFunc(evs, func(e *Event) bool { return e.ID == id }) {
			return true
		}
	}
	return false
}
