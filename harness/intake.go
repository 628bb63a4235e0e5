package harness

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"buzzbox/harness/observer"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/internal/workspace/relayclient"
)

// intake runs the inbound pipeline (§6) for each relay event, in arrival
// order, until ctx ends.
func (h *harness) intake(ctx context.Context) {
	for {
		var re relayclient.Event
		select {
		case <-ctx.Done():
			return
		case re = <-h.rc.Events():
		}
		if re.EOSE {
			h.flushCatchup(ctx, strings.TrimPrefix(re.Sub, "ch-"))
			continue
		}
		ev := &Event{Event: *re.Ev, Received: time.Now(), Stored: re.Stored}
		if ev.Kind == workspace.KindMemberAdded || ev.Kind == workspace.KindMemberRemoved {
			if re.Sub == "membership-notif" {
				if ch := channelOf(&ev.Event); ev.Kind == workspace.KindMemberAdded && workspace.IsUUID(ch) {
					// Its type and members decide the subscription (a DM
					// channel hears every message): read them as they are now.
					h.chans.forget(ch)
					h.chans.get(ctx, ch)
				}
				h.do(func() { h.membership(ctx, ev) })
			}
			continue
		}
		if re.Sub == stopSub {
			h.stopRequest(ctx, re.Ev)
			continue
		}
		if re.Sub == controlSub {
			h.agentControl(ctx, re.Ev)
			continue
		}
		if re.Sub == approvalSub {
			h.approvalAnswer(ctx, re.Ev)
			continue
		}
		if re.Sub == prRootSub || re.Sub == prParentSub {
			h.prEvent(ctx, ev)
			continue
		}
		if re.Sub == observer.ControlSub {
			h.observerControl(ctx, re.Ev)
			continue
		}
		if re.Sub == ownSub {
			// The agent's own message, however it was sent (the CLI, a
			// tool): its thread is one it is in, and a reply there ends
			// the turn's typing.
			ev.Channel = channelOf(&ev.Event)
			h.threads.own(ev)
			h.do(func() { h.answeredInThread(ev) })
			continue
		}
		ch, ok := strings.CutPrefix(re.Sub, "ch-")
		if !ok {
			continue
		}
		ev.Channel = ch
		h.pipeline(ctx, ev)
	}
}

// pipeline applies steps 2–8 of §6 to a channel event.
func (h *harness) pipeline(ctx context.Context, ev *Event) {
	log := h.log.With("channel", ev.Channel, "event_id", ev.ID)
	if ev.PubKey == h.cfg.AgentHex && (ev.Kind == workspace.KindStream || ev.Kind == workspace.KindStreamV2) {
		h.threads.own(ev)
	}
	if !h.cfg.NoIgnoreSelf && ev.PubKey == h.cfg.AgentHex {
		return
	}
	if cmd := h.ownerCommand(ev); cmd != "" && h.setup == nil && ev.Stored && int64(ev.CreatedAt) < h.started.Unix() {
		// Given before this run began: a "!shutdown" that ended the last
		// run must not end this one, however far back catch-up reaches.
		log.Info("owner command from before this run; ignored", "command", cmd)
		return
	}
	if cmd := h.ownerCommand(ev); cmd != "" && h.setup == nil {
		log.Info("owner command", "command", cmd)
		h.do(func() { h.control(ctx, cmd, ev) })
		return
	}
	if !h.allowed(ctx, ev) {
		log.Debug("author not allowed", "author", ev.PubKey)
		return
	}
	ev.Woken = h.wakeUnmentioned(ctx, ev)
	tag, ok := h.matcher.match(ev)
	if !ok {
		log.Debug("no rule matched")
		return
	}
	if ev.Woken != "" {
		tag = ev.Woken
	}
	ev.Tag = tag
	if h.setup != nil {
		h.setupReply(ctx, ev)
		return
	}
	if ev.Stored && h.cfg.Catchup > 0 {
		h.catchBuf[ev.Channel] = append(h.catchBuf[ev.Channel], ev)
		return
	}
	h.do(func() { h.accept(ctx, ev) })
}

// flushCatchup hands the events a channel's REQ replayed to the loop in
// one step, so that they become one batch: oldest first, the newest
// --catchup-max of them, none older than --catchup.
func (h *harness) flushCatchup(ctx context.Context, channel string) {
	evs := h.catchBuf[channel]
	delete(h.catchBuf, channel)
	h.log.Debug("channel replay done", "channel", channel, "stored", len(evs))
	if len(evs) == 0 {
		h.do(func() { h.store.replayed(channel, nil) })
		return
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].CreatedAt < evs[j].CreatedAt })
	oldest := nostr.Timestamp(time.Now().Add(-h.cfg.Catchup).Unix())
	for len(evs) > 0 && evs[0].CreatedAt < oldest {
		evs = evs[1:]
	}
	if len(evs) > h.cfg.CatchupMax {
		h.log.Warn("more missed events than --catchup-max; the oldest are skipped", "channel", channel,
			"missed", len(evs), "catchup_max", h.cfg.CatchupMax)
		evs = evs[len(evs)-h.cfg.CatchupMax:]
	}
	h.do(func() {
		var taken []*Event
		for _, ev := range evs {
			if h.accept(ctx, ev) {
				taken = append(taken, ev)
			}
		}
		if len(taken) > 0 {
			h.log.Info("caught up", "channel", channel, "events", len(taken))
		}
		h.store.replayed(channel, taken)
	})
}

// ownerCommand returns the command an event carries, or "" (§6.3).
func (h *harness) ownerCommand(ev *Event) string {
	if ev.Kind != workspace.KindStream || h.cfg.Owner == "" || ev.PubKey != h.cfg.Owner || !ev.mentions(h.cfg.AgentHex) {
		return ""
	}
	switch c := strings.TrimSpace(ev.Content); c {
	case "!shutdown", "!cancel", "!rotate":
		return c
	}
	return ""
}

// allowed is the author gate (§6.2).
func (h *harness) allowed(ctx context.Context, ev *Event) bool {
	mode := h.cfg.RespondTo
	if mode == "nobody" {
		return false
	}
	ownerOrSibling := func() bool {
		if h.cfg.Owner == "" {
			return false
		}
		return ev.PubKey == h.cfg.Owner || h.siblings.is(ctx, ev, h.cfg.Owner)
	}
	if mode == "owner-only" {
		return ownerOrSibling()
	}
	info, resolved := h.chans.get(ctx, ev.Channel)
	dm := !resolved || info.isDM()
	if dm {
		return ownerOrSibling()
	}
	switch mode {
	case "anyone":
		return true
	case "allowlist":
		return h.cfg.Allowlist[ev.PubKey] || ownerOrSibling()
	}
	return false
}

// siblingCache remembers which pubkeys are agents of the same owner (§6.1):
// the owner attestation on each one's profile, nil for none.
type siblingCache struct {
	io *relayclient.Client
	mu sync.Mutex
	m  map[string]*nipoa.Tag
}

// siblingCacheMax bounds the cache; it is cleared when full.
const siblingCacheMax = 256

// siblingFetchTO bounds the kind 0 lookup of a possible sibling.
const siblingFetchTO = 2 * time.Second

// is reports whether ev's author is a sibling of owner's and its
// attestation covers ev (see attestationAdmits): a kind-limited sibling
// passes the gate only with events of its kinds, an expired one with none.
func (c *siblingCache) is(ctx context.Context, ev *Event, owner string) bool {
	c.mu.Lock()
	a, ok := c.m[ev.PubKey]
	c.mu.Unlock()
	if !ok {
		a = c.fetch(ctx, ev.PubKey, owner)
	}
	return attestationAdmits(a, ev.Kind, int64(ev.CreatedAt), time.Now())
}

// fetch looks up pubkey's profile and caches its attestation by owner.
func (c *siblingCache) fetch(ctx context.Context, pubkey, owner string) *nipoa.Tag {
	ctx, cancel := context.WithTimeout(ctx, siblingFetchTO)
	defer cancel()
	evs, err := c.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindProfile}, Authors: []string{pubkey}, Limit: 1})
	if err != nil {
		return nil
	}
	var a *nipoa.Tag
	if len(evs) > 0 {
		sortEvents(evs)
		if p := profileOf(evs[len(evs)-1]); p.Owner == owner {
			a = p.Attestation
		}
	}
	c.mu.Lock()
	if len(c.m) >= siblingCacheMax {
		c.m = map[string]*nipoa.Tag{}
	}
	c.m[pubkey] = a
	c.mu.Unlock()
	return a
}
