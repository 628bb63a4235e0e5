package relay

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// Channels are NIP-29-style groups named by a UUID. Every channel event
// carries ["h", uuid]. Members change through group commands; after each
// change the relay signs and publishes the channel's kind 39000 metadata
// and kind 39002 member list, and a 44100/44101 notification naming the
// member who came or went.
const (
	kindAddUser      = 9000
	kindRemoveUser   = 9001
	kindEditMetadata = 9002
	kindCreateGroup  = 9007
	kindDeleteGroup  = 9008
	kindJoinRequest  = 9021
	kindLeaveRequest = 9022

	kindGroupMetadata = 39000
	kindGroupAdmins   = 39001
	kindGroupMembers  = 39002
	kindGroupRoles    = 39003

	kindMemberAdded   = 44100
	kindMemberRemoved = 44101
)

// Roles a member can hold. Owners and admins run group commands.
const (
	roleOwner  = "owner"
	roleAdmin  = "admin"
	roleMember = "member"
)

type channel struct {
	id                          string
	name, about, topic, purpose string
	typ                         string // channel_type: stream, forum, dm
	private, archived           bool
	members                     map[string]string // pubkey → role
	createdAt                   nostr.Timestamp
}

// channels is the relay's view of every channel, rebuilt at start from the
// 39000/39002 events it signed.
type channels struct {
	mu   sync.RWMutex
	byID map[string]*channel
}

func newChannels() *channels { return &channels{byID: make(map[string]*channel)} }

// isUUID accepts the lower-case hyphenated form 8-4-4-4-12.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// channelOf returns the channel an event belongs to: its first h tag, or
// the d tag of the relay's own channel state kinds.
func channelOf(ev *nostr.Event) string {
	if ev.Kind >= kindGroupMetadata && ev.Kind <= kindGroupRoles {
		return ev.Tags.GetD()
	}
	if t := ev.Tags.Find("h"); t != nil {
		return t[1]
	}
	return ""
}

func (cs *channels) get(id string) (channel, bool) {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	ch, ok := cs.byID[id]
	if !ok {
		return channel{}, false
	}
	return *ch, true
}

// anyPrivate reports whether some channel is private, i.e. whether reads
// need filtering at all.
func (cs *channels) anyPrivate() bool {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	for _, ch := range cs.byID {
		if ch.private {
			return true
		}
	}
	return false
}

func (cs *channels) role(id, pubkey string) string {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	if ch, ok := cs.byID[id]; ok {
		return ch.members[pubkey]
	}
	return ""
}

// channelReadable reports whether c may read ev as far as channels go:
// events of a private channel are for its members and the relay owner;
// a member notification is also for the member it names.
func (r *Relay) channelReadable(c caller, ev *nostr.Event) bool {
	id := channelOf(ev)
	if id == "" {
		return true
	}
	r.chans.mu.RLock()
	ch, ok := r.chans.byID[id]
	private := ok && ch.private
	isMember := ok && ch.members[c.pubkey] != ""
	r.chans.mu.RUnlock()
	if !private || isMember || (c.pubkey != "" && c.pubkey == r.owner) || ev.PubKey == c.pubkey && c.pubkey != "" {
		return true
	}
	if ev.Kind == kindMemberAdded || ev.Kind == kindMemberRemoved {
		return c.pubkey != "" && ev.Tags.FindWithValue("p", c.pubkey) != nil
	}
	return false
}

// admin reports whether pubkey may run group commands on channel id.
func (r *Relay) admin(id, pubkey string) bool {
	if pubkey == r.owner && r.owner != "" {
		return true
	}
	switch r.chans.role(id, pubkey) {
	case roleOwner, roleAdmin:
		return true
	}
	return false
}

// checkChannelWrite applies the channel rules to an event about to be
// stored; it returns the OK reason when the event is refused.
func (r *Relay) checkChannelWrite(ctx context.Context, c caller, ev *nostr.Event) string {
	id := channelOf(ev)
	if ev.Kind >= kindGroupMetadata && ev.Kind <= kindGroupRoles || ev.Kind == kindMemberAdded || ev.Kind == kindMemberRemoved {
		return "restricted: only the relay publishes channel state"
	}
	if id == "" {
		if ev.Kind == nostr.KindReaction {
			return r.checkReaction(ctx, ev)
		}
		if ev.Kind >= kindAddUser && ev.Kind <= kindLeaveRequest {
			return "invalid: group commands need an h tag naming the channel"
		}
		return ""
	}
	if !isUUID(id) {
		return "invalid: h tag must be a lower-case channel UUID"
	}
	ch, exists := r.chans.get(id)
	switch ev.Kind {
	case kindCreateGroup:
		if exists {
			return "invalid: channel " + id + " already exists"
		}
		return ""
	case kindJoinRequest:
		switch {
		case !exists:
			return "invalid: no channel " + id
		case ch.private && ch.members[ev.PubKey] == "":
			return "restricted: channel is private; ask an admin to add you"
		}
		return ""
	case kindLeaveRequest:
		if !exists || ch.members[ev.PubKey] == "" {
			return "invalid: not a member of channel " + id
		}
		return ""
	case kindAddUser, kindRemoveUser, kindEditMetadata, kindDeleteGroup:
		if !exists {
			return "invalid: no channel " + id
		}
		if !r.admin(id, ev.PubKey) {
			return "restricted: only the channel's owner or admins may do that"
		}
		if ev.Kind != kindEditMetadata && ev.Kind != kindDeleteGroup && len(tagValues(ev, "p")) == 0 {
			return "invalid: add and remove need a p tag"
		}
		return ""
	}
	if !exists {
		return "restricted: not a channel member"
	}
	if ch.members[ev.PubKey] == "" && ev.PubKey != r.owner {
		return "restricted: not a channel member"
	}
	if ch.archived {
		return "restricted: channel is archived"
	}
	return ""
}

// checkReaction scopes a reaction without an h tag through its target: a
// reaction to a channel event needs a member of that channel.
func (r *Relay) checkReaction(ctx context.Context, ev *nostr.Event) string {
	targets := tagValues(ev, "e")
	if len(targets) == 0 {
		return ""
	}
	res, err := r.store.QueryEvents(internal(ctx), nostr.Filter{IDs: targets[len(targets)-1:], Limit: 1})
	if err != nil {
		return ""
	}
	for target := range res {
		if id := channelOf(target); id != "" && r.chans.role(id, ev.PubKey) == "" && ev.PubKey != r.owner {
			return "restricted: not a channel member"
		}
	}
	return ""
}

func tagValues(ev *nostr.Event, name string) []string {
	var out []string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name {
			out = append(out, t[1])
		}
	}
	return out
}

func tagValue(ev *nostr.Event, name string) (string, bool) {
	if t := ev.Tags.Find(name); t != nil {
		return t[1], true
	}
	return "", false
}

func hasFlag(ev *nostr.Event, name string) bool {
	for _, t := range ev.Tags {
		if len(t) == 1 && t[0] == name {
			return true
		}
	}
	return false
}

// onEventSaved applies a stored group command to the channel state and
// publishes the new state.
func (r *Relay) onEventSaved(ctx context.Context, ev *nostr.Event) {
	if ev.Kind < kindAddUser || ev.Kind > kindLeaveRequest {
		return
	}
	id := channelOf(ev)
	if id == "" {
		return
	}
	var added, removed []string
	cs := r.chans
	cs.mu.Lock()
	ch := cs.byID[id]
	switch ev.Kind {
	case kindCreateGroup:
		if ch != nil {
			cs.mu.Unlock()
			return
		}
		ch = &channel{id: id, typ: "stream", members: map[string]string{ev.PubKey: roleOwner}, createdAt: ev.CreatedAt}
		applyMetadata(ch, ev)
		cs.byID[id] = ch
		added = append(added, ev.PubKey)
	case kindEditMetadata:
		applyMetadata(ch, ev)
	case kindAddUser:
		for _, t := range ev.Tags {
			if len(t) < 2 || t[0] != "p" || !nostr.IsValid32ByteHex(t[1]) {
				continue
			}
			role := roleMember
			if len(t) >= 3 && t[2] != "" {
				role = t[len(t)-1]
			}
			if v, ok := tagValue(ev, "role"); ok && v != "" {
				role = v
			}
			if ch.members[t[1]] == "" {
				added = append(added, t[1])
			}
			ch.members[t[1]] = role
		}
	case kindRemoveUser:
		for _, pk := range tagValues(ev, "p") {
			if ch.members[pk] != "" {
				delete(ch.members, pk)
				removed = append(removed, pk)
			}
		}
	case kindJoinRequest:
		if ch != nil && ch.members[ev.PubKey] == "" {
			ch.members[ev.PubKey] = roleMember
			added = append(added, ev.PubKey)
		}
	case kindLeaveRequest:
		if ch != nil && ch.members[ev.PubKey] != "" {
			delete(ch.members, ev.PubKey)
			removed = append(removed, ev.PubKey)
		}
	case kindDeleteGroup:
		delete(cs.byID, id)
	}
	var snapshot channel
	if ch != nil {
		snapshot = *ch
		snapshot.members = maps(ch.members)
	}
	cs.mu.Unlock()

	if ev.Kind == kindDeleteGroup {
		r.dropChannelState(ctx, id)
		r.revoke(id, keys(snapshot.members))
		return
	}
	if ch == nil {
		return
	}
	r.publishChannel(ctx, snapshot)
	for _, pk := range added {
		r.publishRelayEvent(ctx, kindMemberAdded, nostr.Tags{{"h", id}, {"p", pk}})
	}
	for _, pk := range removed {
		r.publishRelayEvent(ctx, kindMemberRemoved, nostr.Tags{{"h", id}, {"p", pk}})
	}
	r.revoke(id, removed)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// applyMetadata takes the metadata tags of a create or edit command.
func applyMetadata(ch *channel, ev *nostr.Event) {
	for _, t := range ev.Tags {
		switch {
		case len(t) == 1 && t[0] == "private":
			ch.private = true
		case len(t) == 1 && t[0] == "public":
			ch.private = false
		case len(t) < 2:
		case t[0] == "name":
			ch.name = t[1]
		case t[0] == "about":
			ch.about = t[1]
		case t[0] == "topic":
			ch.topic = t[1]
		case t[0] == "purpose":
			ch.purpose = t[1]
		case t[0] == "channel_type" || t[0] == "t":
			ch.typ = t[1]
		case t[0] == "visibility":
			ch.private = t[1] == "private"
		case t[0] == "archived":
			ch.archived = t[1] == "true"
		}
	}
}

// publishChannel signs and stores the channel's 39000 and 39002 events.
func (r *Relay) publishChannel(ctx context.Context, ch channel) {
	meta := nostr.Tags{{"d", ch.id}, {"name", ch.name}}
	for _, kv := range [][2]string{{"about", ch.about}, {"topic", ch.topic}, {"purpose", ch.purpose}} {
		if kv[1] != "" {
			meta = append(meta, nostr.Tag{kv[0], kv[1]})
		}
	}
	meta = append(meta, nostr.Tag{"t", ch.typ}, nostr.Tag{"channel_type", ch.typ})
	if ch.private {
		meta = append(meta, nostr.Tag{"private"}, nostr.Tag{"closed"})
	} else {
		meta = append(meta, nostr.Tag{"public"}, nostr.Tag{"open"})
	}
	meta = append(meta, nostr.Tag{"archived", fmt.Sprint(ch.archived)})
	r.publishRelayEvent(ctx, kindGroupMetadata, meta)

	pks := make([]string, 0, len(ch.members))
	for pk := range ch.members {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	members := nostr.Tags{{"d", ch.id}}
	for _, pk := range pks {
		members = append(members, nostr.Tag{"p", pk, "", ch.members[pk]})
	}
	r.publishRelayEvent(ctx, kindGroupMembers, members)
}

// publishRelayEvent signs an event with the relay key, stores it and
// hands it to live subscribers.
func (r *Relay) publishRelayEvent(ctx context.Context, kind int, tags nostr.Tags) {
	ev := nostr.Event{Kind: kind, Tags: tags, CreatedAt: nostr.Now(), Content: ""}
	// Replaceable state must move forward even within one second.
	r.stateMu.Lock()
	if ev.CreatedAt <= r.lastState {
		ev.CreatedAt = r.lastState + 1
	}
	r.lastState = ev.CreatedAt
	r.stateMu.Unlock()
	if err := ev.Sign(r.secret); err != nil {
		r.log.Error("sign channel state", "kind", kind, "err", err)
		return
	}
	ctx = internal(ctx)
	var err error
	if nostr.IsAddressableKind(kind) {
		err = r.store.ReplaceEvent(ctx, &ev)
	} else {
		err = r.store.SaveEvent(ctx, &ev)
	}
	if err != nil {
		r.log.Error("store channel state", "kind", kind, "err", err)
		return
	}
	r.kr.BroadcastEvent(&ev)
}

func (r *Relay) dropChannelState(ctx context.Context, id string) {
	ctx = internal(ctx)
	res, err := r.store.QueryEvents(ctx, nostr.Filter{
		Kinds: []int{kindGroupMetadata, kindGroupMembers}, Authors: []string{r.pubkey},
		Tags: nostr.TagMap{"d": []string{id}},
	})
	if err != nil {
		return
	}
	var evs []*nostr.Event
	for ev := range res {
		evs = append(evs, ev)
	}
	for _, ev := range evs {
		r.store.DeleteEvent(ctx, ev)
	}
}

// loadChannels rebuilds the channel state from the relay's own events.
func (r *Relay) loadChannels() error {
	ctx := internal(context.Background())
	res, err := r.store.QueryEvents(ctx, nostr.Filter{
		Kinds: []int{kindGroupMetadata, kindGroupMembers}, Authors: []string{r.pubkey},
	})
	if err != nil {
		return fmt.Errorf("buzz-relay: load channels: %w", err)
	}
	var metas, lists []*nostr.Event
	for ev := range res {
		if ev.CreatedAt > r.lastState {
			r.lastState = ev.CreatedAt
		}
		if ev.Kind == kindGroupMetadata {
			metas = append(metas, ev)
		} else {
			lists = append(lists, ev)
		}
	}
	cs := r.chans
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, ev := range metas {
		ch := &channel{id: ev.Tags.GetD(), typ: "stream", members: map[string]string{}, createdAt: ev.CreatedAt}
		applyMetadata(ch, ev)
		if v, _ := tagValue(ev, "t"); v != "" {
			ch.typ = v
		}
		ch.private = hasFlag(ev, "private")
		cs.byID[ch.id] = ch
	}
	for _, ev := range lists {
		ch := cs.byID[ev.Tags.GetD()]
		if ch == nil {
			continue
		}
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "p" {
				role := roleMember
				if len(t) >= 4 && t[3] != "" {
					role = t[3]
				}
				ch.members[t[1]] = role
			}
		}
	}
	return nil
}

// Members returns the pubkeys of channel id and their roles, for tests
// and for git authorisation.
func (r *Relay) Members(id string) map[string]string {
	ch, ok := r.chans.get(id)
	if !ok {
		return nil
	}
	return maps(ch.members)
}
