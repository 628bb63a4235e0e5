package relay

import (
	"buzzbox/internal/workspace"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// The write pipeline shared by the websocket and the HTTP bridge: the
// write gate, then by kind: ephemeral events go to live subscribers only
// (and to other instances), regular ones are stored, replaceable and
// addressable ones replace their older versions (kinds past NIP-01's
// ranges are stored as regular, kinds.go); a NIP-09 deletion that has
// passed every check deletes its author's targets, then is stored. That
// is the one deletion path, for websocket and bridge alike. Live
// delivery is broadcast's job.

// addEvent runs ev through the write gate and stores it (ephemeral
// events are handed to other instances instead). skipBroadcast is true
// when ev was refused or is a duplicate; err's text is the OK reason,
// with its NIP-01 prefix.
func (r *Relay) addEvent(ctx context.Context, ev *nostr.Event) (skipBroadcast bool, err error) {
	if reject, msg := r.rejectEvent(ctx, ev); reject {
		if msg == "" {
			return true, errors.New("blocked: no reason")
		}
		return true, errors.New(nostr.NormalizeOKMessage(msg, "blocked"))
	}
	if ev.Kind == workspace.KindDeletion {
		if err := r.handleDeletion(ctx, ev); err != nil {
			return true, err
		}
	}
	if nostr.IsEphemeralKind(ev.Kind) {
		if r.fan != nil && !isInternal(ctx) {
			r.fan.publishEphemeral(ctx, ev)
		}
		return false, nil
	}
	if nostr.IsRegularKind(ev.Kind) {
		err = r.saveEvent(ctx, ev)
	} else {
		err = r.replaceEvent(ctx, ev)
	}
	if errors.Is(err, eventstore.ErrDupEvent) {
		return true, nil
	}
	if err != nil {
		return false, errors.New(nostr.NormalizeOKMessage(err.Error(), "error"))
	}
	r.onEventSaved(ctx, ev)
	r.onRepoEvent(ctx, ev)
	r.expiry.track(ev)
	if !isInternal(ctx) {
		r.flows.saw(ev)
	}
	return false, nil
}

// handleDeletion deletes the targets a NIP-09 event names (e tags by id,
// a tags by address up to its created_at), after the write gate passed
// the event. Every target must be its author's, or nothing is deleted and
// the answer is a "blocked:" error.
func (r *Relay) handleDeletion(ctx context.Context, ev *nostr.Event) error {
	ictx := internal(ctx)
	var targets []*nostr.Event
	for _, t := range ev.Tags {
		if len(t) < 2 || len(targets) == maxRefs {
			continue
		}
		var f nostr.Filter
		switch t[0] {
		case "e":
			f = nostr.Filter{IDs: []string{t[1]}}
		case "a":
			parts := strings.Split(t[1], ":")
			if len(parts) != 3 {
				continue
			}
			kind, err := strconv.Atoi(parts[0])
			if err != nil {
				continue
			}
			until := ev.CreatedAt
			f = nostr.Filter{
				Kinds: []int{kind}, Authors: []string{parts[1]},
				Tags: nostr.TagMap{"d": []string{parts[2]}}, Until: &until,
			}
		default:
			continue
		}
		target := r.firstStored(ictx, f)
		if target == nil {
			continue
		}
		if target.PubKey != ev.PubKey {
			return fmt.Errorf("blocked: you are not the author of %s", target.ID)
		}
		targets = append(targets, target)
	}
	for _, target := range targets {
		if err := r.store.DeleteEvent(ictx, target); err != nil {
			return fmt.Errorf("error: delete %s: %w", target.ID, err)
		}
		r.expiry.forget(target.ID)
	}
	return nil
}

// firstStored returns the first event the store finds for f, or nil.
func (r *Relay) firstStored(ctx context.Context, f nostr.Filter) *nostr.Event {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := r.queryEvents(ctx, f)
	if err != nil {
		return nil
	}
	var first *nostr.Event
	for ev := range ch {
		if first == nil {
			first = ev
			cancel()
		}
	}
	return first
}

// broadcast hands ev to every live subscription one of whose filters
// matches it and whose connection may read it, and returns how many got
// it at once (a subscription still sending stored events gets it after
// its EOSE). Each subscription gets it once.
func (r *Relay) broadcast(ev *nostr.Event) int {
	r.present.keep(ev)
	r.mu.Lock()
	conns := make([]*conn, 0, len(r.live))
	for c := range r.live {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	var raw []byte
	n := 0
	for _, c := range conns {
		ms := c.matched(ev)
		if len(ms) == 0 {
			continue
		}
		pk, owner := c.identity()
		if !r.canRead(caller{pk, owner}, ev) {
			continue
		}
		ids := c.deliver(ev, ms)
		if len(ids) == 0 {
			continue
		}
		if raw == nil {
			var err error
			if raw, err = ev.MarshalJSON(); err != nil {
				return n
			}
		}
		for _, id := range ids {
			c.send(eventMsg(id, raw))
			n++
		}
	}
	return n
}
