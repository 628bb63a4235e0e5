package relay

import (
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

type callerKey struct{}

// caller is who a request acts for: the authenticated pubkey (empty when
// none) and, for an agent logged in with a NIP-OA attestation, its owner.
type caller struct{ pubkey, owner string }

func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf finds the caller of a websocket or bridge request.
func callerOf(ctx context.Context) caller {
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		return c
	}
	if c := connOf(ctx); c != nil {
		pk, owner := c.identity()
		return caller{pk, owner}
	}
	return caller{}
}

// member reports whether c may use the relay: a member (members.go), or
// an agent whose attesting owner is one.
func (r *Relay) member(c caller) bool {
	return r.isMember(c.pubkey) || (c.owner != "" && r.isMember(c.owner))
}

// gate answers whether c may use the relay at all, with the NIP-01 reason
// prefix when not.
func (r *Relay) gate(c caller) string {
	if r.banned(c) {
		return banReason
	}
	if r.cfg.Open {
		return ""
	}
	if c.pubkey == "" {
		return "auth-required: this relay only serves authenticated members"
	}
	if !r.member(c) {
		return "restricted: not a relay member"
	}
	return ""
}

// revoke ends every live subscription of the given pubkeys that names
// channel id with CLOSED "restricted: channel access revoked".
func (r *Relay) revoke(id string, pubkeys []string) {
	gone := make(map[string]bool, len(pubkeys))
	for _, pk := range pubkeys {
		gone[pk] = true
	}
	r.mu.Lock()
	conns := make([]*conn, 0, len(r.live))
	for c := range r.live {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		pk, _ := c.identity()
		if !gone[pk] {
			continue
		}
		for _, sub := range c.revoked(id) {
			c.send(closedMsg(sub, "restricted: channel access revoked"))
		}
	}
}

// checkCreatedAt refuses an event dated outside the window MaxFuture and
// MaxAge allow around the relay's clock.
func (r *Relay) checkCreatedAt(ev *nostr.Event) string {
	now := r.cfg.Now()
	at := ev.CreatedAt.Time()
	if r.cfg.MaxFuture > 0 && at.After(now.Add(r.cfg.MaxFuture)) {
		return fmt.Sprintf("invalid: created_at %d is more than %s in the future (--max-future); check the clock", ev.CreatedAt, r.cfg.MaxFuture)
	}
	if r.cfg.MaxAge > 0 && at.Before(now.Add(-r.cfg.MaxAge)) {
		return fmt.Sprintf("invalid: created_at %d is more than %s in the past (--max-age); check the clock", ev.CreatedAt, r.cfg.MaxAge)
	}
	return ""
}

// rejectEvent is the write gate for websocket and bridge alike.
func (r *Relay) rejectEvent(ctx context.Context, ev *nostr.Event) (bool, string) {
	if isInternal(ctx) {
		return false, ""
	}
	c := callerOf(ctx)
	if msg := r.grantVerdict(ctx, c, ev); msg != "" {
		return true, msg
	}
	if msg := r.gate(c); msg != "" {
		return true, msg
	}
	if n := eventJSONLen(ev); n > r.cfg.MaxEventBytes {
		return true, fmt.Sprintf("invalid: event of %d bytes is over the %d byte limit (--max-event-bytes)", n, r.cfg.MaxEventBytes)
	}
	if msg := r.checkCreatedAt(ev); msg != "" {
		return true, msg
	}
	switch ev.Kind {
	case workspace.KindAuth:
		return true, "invalid: AUTH events go in AUTH messages"
	case nip98.Kind:
		return true, "invalid: NIP-98 events are HTTP headers, not posts"
	case workspace.KindMemberRecord, workspace.KindInviteRecord, workspace.KindWorkflowRun:
		// A run record from anyone but the relay would show in clients
		// as a run that never happened (approved by whom it names).
		return true, "invalid: kind " + strconv.Itoa(ev.Kind) + " is kept by the relay itself"
	}
	if ev.PubKey != c.pubkey {
		if msg := r.authorVerdict(ev); msg != "" {
			return true, msg
		}
	}
	key := c.pubkey
	if key == "" {
		key = ev.PubKey
	}
	if ctx.Value(checkedKey{}) != nil {
		return false, ""
	}
	if !r.limiter.allow(key, r.cfg.Now()) {
		return true, "rate-limited: more than " + strconv.FormatFloat(r.cfg.EventsPerSecond, 'f', -1, 64) + " events/s; retry in 1s"
	}
	if msg := r.checkRefs(ctx, ev); msg != "" {
		return true, msg
	}
	if msg := r.checkRepoAnnouncement(ev); msg != "" {
		return true, msg
	}
	if msg := r.checkRepoEvent(ctx, c, ev); msg != "" {
		return true, msg
	}
	if msg := checkWorkflowDef(ev); msg != "" {
		return true, msg
	}
	if msg := r.checkChannelWrite(ctx, c, ev); msg != "" {
		return true, msg
	}
	if r.deleted(ctx, ev) {
		return true, "blocked: this event was deleted by its author"
	}
	return false, ""
}

// deleted reports whether ev's author has published a NIP-09 deletion
// naming ev's id or, for a replaceable or addressable kind, ev's address
// at or after ev's time.
func (r *Relay) deleted(ctx context.Context, ev *nostr.Event) bool {
	byID := nostr.Filter{
		Kinds: []int{workspace.KindDeletion}, Authors: []string{ev.PubKey},
		Tags: nostr.TagMap{"e": []string{ev.ID}}, Limit: 1,
	}
	if r.storeHas(ctx, byID) {
		return true
	}
	if !nostr.IsReplaceableKind(ev.Kind) && !nostr.IsAddressableKind(ev.Kind) {
		return false
	}
	since := ev.CreatedAt
	byAddress := nostr.Filter{
		Kinds: []int{workspace.KindDeletion}, Authors: []string{ev.PubKey},
		Tags:  nostr.TagMap{"a": []string{fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())}},
		Since: &since, Limit: 1,
	}
	return r.storeHas(ctx, byAddress)
}

// storeHas reports whether the store holds an event matching f.
func (r *Relay) storeHas(ctx context.Context, f nostr.Filter) bool {
	ch, err := r.store.QueryEvents(ctx, f)
	if err != nil {
		return false
	}
	found := false
	for ev := range ch {
		found = found || f.Matches(ev)
	}
	return found
}

// channelFilterVerdict refuses a filter naming (#h) a private channel the
// caller is not in, with the reason a harness takes as "drop this channel".
func (r *Relay) channelFilterVerdict(c caller, f *nostr.Filter) string {
	for _, id := range f.Tags["h"] {
		ch, ok := r.chans.get(id)
		if ok && ch.private && ch.members[c.pubkey] == "" && (c.pubkey == "" || c.pubkey != r.owner) {
			return "restricted: not a channel member"
		}
	}
	return ""
}

// canRead reports whether c may see ev.
func (r *Relay) canRead(c caller, ev *nostr.Event) bool {
	if r.gate(c) != "" || (ownOnly(ev.Kind) && ev.PubKey != c.pubkey) || !addressedTo(c, ev) {
		return false
	}
	return r.channelReadable(c, ev) && r.repoReadable(c, ev)
}

// addressedTo reports whether c may see ev as far as its addressees go: a
// NIP-AO observer frame (an agent's transcript, encrypted to its owner) is
// for its author and the keys it p-tags only; its tags and timing say who
// owns which agent and when it works, which other members need not learn.
func addressedTo(c caller, ev *nostr.Event) bool {
	if ev.Kind != workspace.KindObserverFrame {
		return true
	}
	return c.pubkey != "" && (ev.PubKey == c.pubkey || ev.Tags.FindWithValue("p", c.pubkey) != nil)
}

// readCheck returns the test an event the store found for f must pass
// before the caller of ctx sees it, or nil when every event passes. The
// store indexes tag values without their names, so a #h query also finds
// a 39000 whose d tag holds the same id: tag filters are checked against
// each event. Events of channels the caller may not read are dropped.
func (r *Relay) readCheck(ctx context.Context, f nostr.Filter) func(*nostr.Event) bool {
	c := callerOf(ctx)
	recheck := len(f.Tags) > 0
	hide := !isInternal(ctx) && r.chans.anyPrivate() && (c.pubkey == "" || c.pubkey != r.owner)
	secret := !isInternal(ctx) && mayMatchHidden(f) // the relay's own member and invite records
	own := !isInternal(ctx) && mayMatchOwnOnly(f)   // read markers: their author's only
	repo := !isInternal(ctx) && mayMatchRepoKind(f) // hosted repositories' NIP-34 events
	if !recheck && !hide && !secret && !own && !repo {
		return nil
	}
	named := nameTags(f)
	return func(ev *nostr.Event) bool {
		return (!recheck || named.Matches(ev)) && !(secret && hiddenKind(ev.Kind)) &&
			!(own && ownOnly(ev.Kind) && ev.PubKey != c.pubkey) && (!hide || r.canRead(c, ev)) &&
			(!repo || r.repoReadable(c, ev))
	}
}

// readRefused reports whether ctx's caller gets nothing from the store: a
// query that comes after Close, or a caller who may not read at all, gets
// nothing without a store query.
func (r *Relay) readRefused(ctx context.Context) bool {
	return r.storeClosed.Load() || (!isInternal(ctx) && r.gate(callerOf(ctx)) != "")
}

// queryEvents reads the store and drops what the caller may not see.
func (r *Relay) queryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	if r.readRefused(ctx) {
		empty := make(chan *nostr.Event)
		close(empty)
		return empty, nil
	}
	keep := r.readCheck(ctx, f)
	sf := f
	if len(f.Tags) > 0 && f.Limit > 0 {
		// a few more, to fill the limit after the tag check; never past
		// the store's maximum, over which it falls back to its default
		// page (250) and a REQ for 1000 got a quarter of them
		sf.Limit = min(f.Limit+recheckSlack, maxQueryLimit)
	}
	ch, err := r.store.QueryEvents(ctx, sf)
	if err != nil || keep == nil {
		return ch, err
	}
	out := make(chan *nostr.Event)
	// Ends when the store closes ch, which it does when done or when ctx ends.
	go func() {
		defer close(out)
		sent := 0
		for ev := range ch {
			if !keep(ev) || (f.Limit > 0 && sent == f.Limit) {
				continue
			}
			select {
			case out <- ev:
				sent++
			case <-ctx.Done():
				for range ch {
				}
				return
			}
		}
	}()
	return out, nil
}

// nameTags returns f with its tag keys as events spell tag names: a key
// written "#e" (as NIP-01 writes it in a REQ) checks tag "e".
func nameTags(f nostr.Filter) nostr.Filter {
	tags := make(nostr.TagMap, len(f.Tags))
	for k, v := range f.Tags {
		tags[strings.TrimPrefix(k, "#")] = v
	}
	f.Tags = tags
	return f
}

// countEvents counts what f matches for the caller, however many: through
// the store's own counter when nothing must be hidden or re-checked, else
// by paging through every match (a plain query stops at the store's cap).
// The filter's limit does not bound a count; a search is a substring of
// the content, as on the bridge.
func (r *Relay) countEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	return r.countEventsExt(ctx, f, countExt{})
}

// countEventsExt is countEvents with the COUNT extensions of ext.
func (r *Relay) countEventsExt(ctx context.Context, f nostr.Filter, ext countExt) (int64, error) {
	if r.readRefused(ctx) {
		return 0, nil
	}
	f.Limit, f.LimitZero = 0, false
	if r.indexed(f) {
		return r.searchCount(ctx, f)
	}
	if f.Search != "" {
		return r.bridgeCount(ctx, []bridgeFilter{{Filter: f}})
	}
	keep := r.readCheck(ctx, f)
	if !ext.zero() {
		check := keep
		keep = func(ev *nostr.Event) bool { return (check == nil || check(ev)) && ext.keep(ev) }
	}
	if cnt, ok := r.store.(eventstore.Counter); ok && keep == nil {
		n, err := cnt.CountEvents(ctx, f)
		if !errors.Is(err, errNoCounter) {
			return n, err
		}
	}
	var n int64
	err := r.eachStored(ctx, f, func(ev *nostr.Event) {
		if keep == nil || keep(ev) {
			n++
		}
	})
	return n, err
}

// eachStored calls fn for every stored event f matches, newest first,
// paging down created_at in pages of maxQueryLimit so that the store's
// cap on one query does not end the walk. Events at a page's oldest
// second come again at the top of the next page and are skipped by id;
// should one second hold more than a page of matches, the rest of that
// second and everything older cannot be reached and the walk ends there.
func (r *Relay) eachStored(ctx context.Context, f nostr.Filter, fn func(*nostr.Event)) error {
	f.Limit, f.LimitZero = maxQueryLimit, false
	var edge map[string]bool // ids seen at the current page boundary second
	for {
		ch, err := r.store.QueryEvents(ctx, f)
		if err != nil {
			return fmt.Errorf("buzz-relay: count events: %w", err)
		}
		got, fresh := 0, 0
		var oldest nostr.Timestamp
		var atOldest []string
		for ev := range ch {
			got++
			if edge[ev.ID] {
				continue
			}
			fresh++
			fn(ev)
			switch {
			case fresh == 1 || ev.CreatedAt < oldest:
				oldest, atOldest = ev.CreatedAt, append(atOldest[:0], ev.ID)
			case ev.CreatedAt == oldest:
				atOldest = append(atOldest, ev.ID)
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("buzz-relay: count events: %w", err)
		}
		if got < maxQueryLimit || fresh == 0 {
			return nil
		}
		if f.Until == nil || *f.Until != oldest {
			edge = make(map[string]bool, len(atOldest))
		}
		for _, id := range atOldest {
			edge[id] = true
		}
		until := oldest
		f.Until = &until
	}
}
