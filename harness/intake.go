package harness

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// intake runs the inbound pipeline (§6) for each relay event, in arrival
// order, until ctx ends.
func (h *harness) intake(ctx context.Context) {
	for {
		var re relayEvent
		select {
		case <-ctx.Done():
			return
		case re = <-h.rc.out:
		}
		ev := &Event{Event: *re.ev, Received: time.Now()}
		if ev.Kind == kindMemberAdded || ev.Kind == kindMemberRemoved {
			if re.sub == "membership-notif" {
				h.do(func() { h.membership(ctx, ev) })
			}
			continue
		}
		if re.sub == observerControlSub {
			h.observerControl(ctx, re.ev)
			continue
		}
		ch, ok := strings.CutPrefix(re.sub, "ch-")
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
	if !h.cfg.NoIgnoreSelf && ev.PubKey == h.cfg.AgentHex {
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
	tag, ok := h.matcher.match(ev)
	if !ok {
		log.Debug("no rule matched")
		return
	}
	ev.Tag = tag
	if h.setup != nil {
		h.setupReply(ctx, ev)
		return
	}
	h.do(func() { h.accept(ctx, ev) })
}

// ownerCommand returns the command an event carries, or "" (§6.3).
func (h *harness) ownerCommand(ev *Event) string {
	if ev.Kind != kindStream || h.cfg.Owner == "" || ev.PubKey != h.cfg.Owner || !ev.mentions(h.cfg.AgentHex) {
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
		return ev.PubKey == h.cfg.Owner || h.siblings.is(ctx, ev.PubKey, h.cfg.Owner)
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

// siblingCache remembers which pubkeys are agents of the same owner (§6.1).
type siblingCache struct {
	io *relayIO
	mu sync.Mutex
	m  map[string]bool
}

// siblingCacheMax bounds the cache; it is cleared when full.
const siblingCacheMax = 256

// siblingFetchTO bounds the kind 0 lookup of a possible sibling.
const siblingFetchTO = 2 * time.Second

func (c *siblingCache) is(ctx context.Context, pubkey, owner string) bool {
	c.mu.Lock()
	v, ok := c.m[pubkey]
	c.mu.Unlock()
	if ok {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, siblingFetchTO)
	defer cancel()
	evs, err := c.io.query(ctx, nostr.Filter{Kinds: []int{kindProfile}, Authors: []string{pubkey}, Limit: 1})
	if err != nil {
		return false
	}
	sib := false
	if len(evs) > 0 {
		sortEvents(evs)
		p := profileOf(evs[len(evs)-1])
		sib = p.Owner == owner
	}
	c.mu.Lock()
	if len(c.m) >= siblingCacheMax {
		c.m = map[string]bool{}
	}
	c.m[pubkey] = sib
	c.mu.Unlock()
	return sib
}
