package relay

import (
	"buzzbox/internal/workspace"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// Channels are NIP-29-style groups named by a UUID. Every channel event
// carries ["h", uuid]. Members change through group commands; after each
// change the relay signs and publishes the channel's kind 39000 metadata
// and kind 39002 member list, and a 44100/44101 notification naming the
// member who came or went (the kinds are internal/workspace's). A deleted
// channel leaves a workspace.KindChannelTombstone record (d = id), with
// its private flag and its members as 39002 lists them. It keeps the
// channel's events as hidden as before deletion, across restarts, and its
// UUID reserved; clients have no use for it.

// Roles a member can hold. Owners and admins run group commands.
const (
	roleOwner  = "owner"
	roleAdmin  = "admin"
	roleMember = "member"
	roleGuest  = "guest" // reads; never pushes to a shared repository
	roleBot    = "bot"
)

func knownRole(s string) bool {
	switch s {
	case roleOwner, roleAdmin, roleMember, roleGuest, roleBot:
		return true
	}
	return false
}

// tagRole reads the role one p tag of a 9000 gives, in every form the
// relay and the CLI write: ["p", pk] with ["role", r] on the event (the
// CLI; the role tag wins), ["p", pk, r] (NIP-29), ["p", pk, "", r] or
// ["p", pk, relay-url, r] (the 39002 form). No role is member. It returns
// the OK reason instead when the tag names several roles or an unknown one.
func tagRole(t nostr.Tag, roleTag string) (role, reason string) {
	if roleTag != "" {
		role = roleTag
	} else {
		for _, v := range t[2:] {
			if v == "" || strings.Contains(v, "://") {
				continue
			}
			if role != "" && v != role {
				return "", "invalid: p tag names several roles (" + role + ", " + v + "); give one"
			}
			role = v
		}
	}
	if role == "" {
		return roleMember, ""
	}
	if !knownRole(role) {
		return "", fmt.Sprintf("invalid: unknown role %q; want owner, admin, member, guest or bot", role)
	}
	return role, ""
}

type channel struct {
	id                          string
	name, about, topic, purpose string
	typ                         string // channel_type: stream, forum, dm
	private, archived           bool
	deleted                     bool              // by a 9008; kept as a tombstone
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

func isStateKind(kind int) bool {
	return kind >= workspace.KindGroupMetadata && kind <= workspace.KindGroupRoles || kind == workspace.KindChannelTombstone
}

// channelOf returns the channel an event belongs to: its first h tag, or
// the d tag of the relay's own channel state kinds. The write gate lets
// no event name more than one; channelsOf gives them all.
func channelOf(ev *nostr.Event) string {
	if isStateKind(ev.Kind) {
		return ev.Tags.GetD()
	}
	if t := ev.Tags.Find("h"); t != nil {
		return t[1]
	}
	return ""
}

// channelsOf returns every channel ev names: its h tags, and for the
// relay's state kinds the d tag too.
func channelsOf(ev *nostr.Event) []string {
	var ids []string
	if isStateKind(ev.Kind) {
		ids = append(ids, ev.Tags.GetD())
	}
	return append(ids, tagValues(ev, "h")...)
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

// role returns pubkey's role in channel id; a deleted channel has none.
func (cs *channels) role(id, pubkey string) string {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	if ch, ok := cs.byID[id]; ok && !ch.deleted {
		return ch.members[pubkey]
	}
	return ""
}

// channelReadable reports whether c may read ev as far as channels go:
// events of a private channel are for its members and the relay owner,
// also after the channel is deleted; a member notification is also for
// the member it names. An event naming several channels (stored before
// the write gate refused such events) must be readable in each; one
// naming none is read as the events it refers to are (refs.go).
func (r *Relay) channelReadable(c caller, ev *nostr.Event) bool {
	ids := channelsOf(ev)
	if len(ids) == 0 {
		// Stored before references had to carry their channel's h tag.
		return r.refsReadable(c, ev)
	}
	for _, id := range ids {
		if !r.channelReadableIn(c, ev, id) {
			return false
		}
	}
	return true
}

func (r *Relay) channelReadableIn(c caller, ev *nostr.Event, id string) bool {
	unknown := false
	if r.fan != nil && workspace.IsChannelID(id) {
		if _, ok := r.chans.get(id); !ok {
			// Made on another instance a moment ago: its notification
			// may not be here yet, but the store has it. Should the
			// store be replacing its 39000 right now, the channel stays
			// unknown, and is taken as private until it is heard of.
			r.refreshChannel(context.Background(), id)
			_, ok = r.chans.get(id)
			unknown = !ok
		}
	}
	r.chans.mu.RLock()
	ch, ok := r.chans.byID[id]
	private := ok && ch.private || unknown
	isMember := ok && ch.members[c.pubkey] != ""
	r.chans.mu.RUnlock()
	if !private || isMember || (c.pubkey != "" && c.pubkey == r.owner) || ev.PubKey == c.pubkey && c.pubkey != "" {
		return true
	}
	if ev.Kind == workspace.KindMemberAdded || ev.Kind == workspace.KindMemberRemoved {
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
// stored; it returns the OK reason when the event is refused. With
// instances sharing a database, a refusal is judged again on the
// channel's state in the store, which another instance may have changed
// a moment before its notification arrives here.
func (r *Relay) checkChannelWrite(ctx context.Context, c caller, ev *nostr.Event) string {
	msg := r.checkChannelWriteOnce(ctx, c, ev)
	if msg != "" && r.fan != nil {
		if id := channelOf(ev); workspace.IsChannelID(id) {
			// Under the channel's lock: the store replaces a 39000 by
			// deleting the old one first, and a command in progress on
			// another instance holds the lock until its state is written.
			unlock := r.fan.lockChannel(ctx, id)
			r.refreshChannel(ctx, id)
			unlock()
			msg = r.checkChannelWriteOnce(ctx, c, ev)
		}
	}
	return msg
}

func (r *Relay) checkChannelWriteOnce(ctx context.Context, c caller, ev *nostr.Event) string {
	id := channelOf(ev)
	if isStateKind(ev.Kind) || ev.Kind == workspace.KindMemberAdded || ev.Kind == workspace.KindMemberRemoved {
		return "restricted: only the relay publishes channel state"
	}
	if n := len(tagValues(ev, "h")); n > 1 {
		return fmt.Sprintf("invalid: an event belongs to one channel; this one has %d h tags", n)
	}
	if id == "" {
		if ev.Kind >= workspace.KindAddUser && ev.Kind <= workspace.KindLeaveRequest {
			return "invalid: group commands need an h tag naming the channel"
		}
		return ""
	}
	if !workspace.IsChannelID(id) {
		return "invalid: h tag must be a lower-case channel UUID"
	}
	ch, exists := r.chans.get(id)
	if exists && ch.deleted {
		if ev.Kind == workspace.KindCreateGroup && ev.PubKey == r.owner && r.owner != "" {
			return ""
		}
		if ev.Kind == workspace.KindCreateGroup {
			return "restricted: channel " + id + " was deleted; only the relay owner may create it again"
		}
		return "restricted: channel " + id + " was deleted"
	}
	switch ev.Kind {
	case workspace.KindCreateGroup:
		if exists {
			return "invalid: channel " + id + " already exists"
		}
		return ""
	case workspace.KindJoinRequest:
		switch {
		case !exists:
			return "invalid: no channel " + id
		case ch.private && ch.members[ev.PubKey] == "":
			return "restricted: channel is private; ask an admin to add you"
		}
		return ""
	case workspace.KindLeaveRequest:
		if !exists || ch.members[ev.PubKey] == "" {
			return "invalid: not a member of channel " + id
		}
		return ""
	case workspace.KindAddUser, workspace.KindRemoveUser, workspace.KindEditMetadata, workspace.KindDeleteGroup:
		if !exists {
			return "invalid: no channel " + id
		}
		if !r.admin(id, ev.PubKey) {
			return "restricted: only the channel's owner or admins may do that"
		}
		if ev.Kind != workspace.KindEditMetadata && ev.Kind != workspace.KindDeleteGroup && len(tagValues(ev, "p")) == 0 {
			return "invalid: add and remove need a p tag"
		}
		if ev.Kind == workspace.KindAddUser {
			roleTag, _ := tagValue(ev, "role")
			for _, t := range ev.Tags {
				if len(t) >= 2 && t[0] == "p" {
					if _, reason := tagRole(t, roleTag); reason != "" {
						return reason
					}
				}
			}
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
	if ev.Kind < workspace.KindAddUser || ev.Kind > workspace.KindLeaveRequest {
		return
	}
	id := channelOf(ev)
	if id == "" {
		return
	}
	if r.fan != nil {
		// Another instance may have changed the channel a moment ago.
		unlock := r.fan.lockChannel(ctx, id)
		defer unlock()
		r.refreshChannel(ctx, id)
	}
	var added, removed []string
	cs := r.chans
	cs.mu.Lock()
	ch := cs.byID[id]
	if ch != nil && ch.deleted && ev.Kind != workspace.KindCreateGroup {
		// Nothing changes a deleted channel: its members stay who may read
		// its history, and no new state would bring it back.
		cs.mu.Unlock()
		return
	}
	switch ev.Kind {
	case workspace.KindCreateGroup:
		if ch != nil && !ch.deleted {
			cs.mu.Unlock()
			return
		}
		ch = &channel{id: id, typ: workspace.ChannelTypeStream, members: map[string]string{ev.PubKey: roleOwner}, createdAt: ev.CreatedAt}
		applyMetadata(ch, ev)
		cs.byID[id] = ch
		added = append(added, ev.PubKey)
	case workspace.KindEditMetadata:
		applyMetadata(ch, ev)
	case workspace.KindAddUser:
		roleTag, _ := tagValue(ev, "role")
		for _, t := range ev.Tags {
			if len(t) < 2 || t[0] != "p" || !nostr.IsValid32ByteHex(t[1]) {
				continue
			}
			role, reason := tagRole(t, roleTag)
			if reason != "" {
				continue // refused by the write gate; not from a client
			}
			if ch.members[t[1]] == "" {
				added = append(added, t[1])
			}
			ch.members[t[1]] = role
		}
	case workspace.KindRemoveUser:
		for _, pk := range tagValues(ev, "p") {
			if ch.members[pk] != "" {
				delete(ch.members, pk)
				removed = append(removed, pk)
			}
		}
	case workspace.KindJoinRequest:
		if ch != nil && ch.members[ev.PubKey] == "" {
			ch.members[ev.PubKey] = roleMember
			added = append(added, ev.PubKey)
		}
	case workspace.KindLeaveRequest:
		if ch != nil && ch.members[ev.PubKey] != "" {
			delete(ch.members, ev.PubKey)
			removed = append(removed, ev.PubKey)
		}
	case workspace.KindDeleteGroup:
		cs.mu.Unlock()
		return // done by deleteChannel before the 9008 was stored
	}
	var snapshot channel
	if ch != nil {
		snapshot = *ch
		snapshot.members = maps(ch.members)
	}
	cs.mu.Unlock()

	if ch == nil {
		return
	}
	r.publishChannel(ctx, snapshot)
	if ev.Kind == workspace.KindCreateGroup {
		r.dropChannelState(ctx, id, workspace.KindChannelTombstone) // re-created by the relay owner
	}
	for _, pk := range added {
		r.publishRelayEvent(ctx, workspace.KindMemberAdded, nostr.Tags{{"h", id}, {"p", pk}})
	}
	for _, pk := range removed {
		r.publishRelayEvent(ctx, workspace.KindMemberRemoved, nostr.Tags{{"h", id}, {"p", pk}})
	}
	r.revoke(id, removed)
	for _, pk := range removed {
		r.endSubscriptions(pk) // if that was what made it a member
	}
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
	wasDM := ch.typ == workspace.ChannelTypeDM
	defer func() {
		// A direct-message channel stays one, and private: no edit opens it.
		if wasDM || ch.typ == workspace.ChannelTypeDM {
			ch.typ, ch.private = workspace.ChannelTypeDM, true
		}
	}()
	for _, t := range ev.Tags {
		switch {
		case len(t) == 1 && t[0] == workspace.TagPrivate:
			ch.private = true
		case len(t) == 1 && t[0] == workspace.TagPublic:
			ch.private = false
		case len(t) < 2:
		case t[0] == workspace.TagName:
			ch.name = t[1]
		case t[0] == workspace.TagAbout:
			ch.about = t[1]
		case t[0] == workspace.TagTopic:
			ch.topic = t[1]
		case t[0] == workspace.TagPurpose:
			ch.purpose = t[1]
		case t[0] == workspace.TagChannelType || t[0] == "t":
			ch.typ = t[1]
		case t[0] == workspace.TagVisibility:
			ch.private = t[1] == workspace.VisibilityPrivate
		case t[0] == workspace.TagArchived:
			ch.archived = t[1] == "true"
		}
	}
}

// publishChannel signs and stores the channel's 39000 and 39002 events.
func (r *Relay) publishChannel(ctx context.Context, ch channel) {
	meta := nostr.Tags{{"d", ch.id}, {workspace.TagName, ch.name}}
	for _, kv := range [][2]string{{workspace.TagAbout, ch.about}, {workspace.TagTopic, ch.topic}, {workspace.TagPurpose, ch.purpose}} {
		if kv[1] != "" {
			meta = append(meta, nostr.Tag{kv[0], kv[1]})
		}
	}
	meta = append(meta, nostr.Tag{"t", ch.typ}, nostr.Tag{workspace.TagChannelType, ch.typ})
	if ch.private {
		meta = append(meta, nostr.Tag{workspace.TagPrivate}, nostr.Tag{workspace.TagClosed})
	} else {
		meta = append(meta, nostr.Tag{workspace.TagPublic}, nostr.Tag{workspace.TagOpen})
	}
	meta = append(meta, nostr.Tag{workspace.TagArchived, fmt.Sprint(ch.archived)})
	meta = append(meta, nostr.Tag{workspace.TagChannelCreated, strconv.FormatInt(int64(ch.createdAt), 10)})
	r.publishRelayEvent(ctx, workspace.KindGroupMetadata, meta)

	r.publishRelayEvent(ctx, workspace.KindGroupMembers, memberTags(ch))
}

// memberTags lists ch's members as 39002 does: d, then ["p", pk, "", role]
// sorted by pubkey.
func memberTags(ch channel) nostr.Tags {
	pks := make([]string, 0, len(ch.members))
	for pk := range ch.members {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	tags := nostr.Tags{{"d", ch.id}}
	for _, pk := range pks {
		tags = append(tags, nostr.Tag{"p", pk, "", ch.members[pk]})
	}
	return tags
}

// saveEvent stores an accepted event. A 9008 deletes its channel first, so
// that no stop of the relay, however abrupt, leaves the 9008 stored and
// the channel without its tombstone.
func (r *Relay) saveEvent(ctx context.Context, ev *nostr.Event) error {
	if ev.Kind == workspace.KindDeleteGroup {
		r.deleteChannel(ctx, channelOf(ev))
	}
	return r.store.SaveEvent(ctx, ev)
}

// deleteChannel marks channel id deleted, records its tombstone, drops its
// 39000/39002 and closes its members' subscriptions of it. The tombstone
// comes before the drop: should the relay stop in between, the newer of
// tombstone and 39000 decides at the next start.
func (r *Relay) deleteChannel(ctx context.Context, id string) {
	cs := r.chans
	cs.mu.Lock()
	ch := cs.byID[id]
	if ch == nil || ch.deleted {
		cs.mu.Unlock()
		return
	}
	ch.deleted = true
	snapshot := *ch
	snapshot.members = maps(ch.members)
	cs.mu.Unlock()
	r.publishTombstone(ctx, snapshot)
	r.dropChannelState(ctx, id, workspace.KindGroupMetadata, workspace.KindGroupMembers)
	r.revoke(id, keys(snapshot.members))
}

// publishTombstone records that ch was deleted, with its private flag and
// members, so that a restart keeps its events hidden as before.
func (r *Relay) publishTombstone(ctx context.Context, ch channel) {
	tags := memberTags(ch)
	if ch.private {
		tags = append(tags, nostr.Tag{workspace.TagPrivate})
	}
	r.publishRelayEvent(ctx, workspace.KindChannelTombstone, tags)
}

// signState dates ev now, or just after the newest state the relay has
// signed, since replaceable state must move forward even within one
// second, and signs it with the relay key.
func (r *Relay) signState(ev *nostr.Event) error {
	r.stateMu.Lock()
	ev.CreatedAt = max(nostr.Now(), r.lastState+1)
	r.lastState = ev.CreatedAt
	r.stateMu.Unlock()
	return ev.Sign(r.secret)
}

// sawState notes a state event the relay signed at t (stored, or stored
// by another instance), so that the next one is dated after it.
func (r *Relay) sawState(t nostr.Timestamp) {
	r.stateMu.Lock()
	r.lastState = max(r.lastState, t)
	r.stateMu.Unlock()
}

// publishRelayEvent signs an event with the relay key, stores it and
// hands it to live subscribers.
func (r *Relay) publishRelayEvent(ctx context.Context, kind int, tags nostr.Tags) {
	ev := nostr.Event{Kind: kind, Tags: tags, Content: ""}
	if err := r.signState(&ev); err != nil {
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
	r.broadcast(&ev)
}

// dropChannelState deletes the relay's own events of the given kinds for
// channel id.
func (r *Relay) dropChannelState(ctx context.Context, id string, kinds ...int) {
	ctx = internal(ctx)
	res, err := r.store.QueryEvents(ctx, nostr.Filter{
		Kinds: kinds, Authors: []string{r.pubkey},
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

// loadChannels rebuilds the channel state from the relay's own events:
// 39000 metadata, 39002 member lists and tombstones of deleted channels
// (a tombstone newer than the channel's 39000 marks it deleted).
func (r *Relay) loadChannels() error {
	ctx := internal(context.Background())
	var metas, lists []*nostr.Event
	tombs := make(map[string]*nostr.Event)
	err := r.eachStored(ctx, nostr.Filter{
		Kinds: []int{workspace.KindGroupMetadata, workspace.KindGroupMembers, workspace.KindChannelTombstone}, Authors: []string{r.pubkey},
	}, func(ev *nostr.Event) {
		r.sawState(ev.CreatedAt)
		switch ev.Kind {
		case workspace.KindGroupMetadata:
			metas = append(metas, ev)
		case workspace.KindGroupMembers:
			lists = append(lists, ev)
		case workspace.KindChannelTombstone:
			if old := tombs[ev.Tags.GetD()]; old == nil || ev.CreatedAt > old.CreatedAt {
				tombs[ev.Tags.GetD()] = ev
			}
		}
	})
	if err != nil {
		return fmt.Errorf("buzz-relay: load channels: %w", err)
	}
	cs := r.chans
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, ev := range metas {
		ch := &channel{id: ev.Tags.GetD(), typ: workspace.ChannelTypeStream, members: map[string]string{}, createdAt: channelCreated(ev)}
		applyMetadata(ch, ev)
		if v, _ := tagValue(ev, "t"); v != "" {
			ch.typ = v
		}
		ch.private = hasFlag(ev, workspace.TagPrivate)
		cs.byID[ch.id] = ch
	}
	for _, ev := range lists {
		ch := cs.byID[ev.Tags.GetD()]
		if ch == nil {
			continue
		}
		loadMemberTags(ch, ev)
	}
	for id, ev := range tombs {
		if ch := cs.byID[id]; ch != nil && ch.createdAt > ev.CreatedAt {
			continue // re-created since
		}
		ch := &channel{id: id, typ: workspace.ChannelTypeStream, members: map[string]string{}, createdAt: ev.CreatedAt, deleted: true}
		ch.private = hasFlag(ev, workspace.TagPrivate)
		loadMemberTags(ch, ev)
		cs.byID[id] = ch
	}
	return nil
}

// channelCreated is when the channel a relay-signed 39000 describes was
// created: its TagChannelCreated, else (a 39000 from before the tag) the
// event's own date, the latest it can be.
func channelCreated(ev *nostr.Event) nostr.Timestamp {
	if v, ok := tagValue(ev, workspace.TagChannelCreated); ok {
		if t, err := strconv.ParseInt(v, 10, 64); err == nil && t > 0 && nostr.Timestamp(t) <= ev.CreatedAt {
			return nostr.Timestamp(t)
		}
	}
	return ev.CreatedAt
}

// loadMemberTags takes the members of a 39002 or tombstone the relay wrote.
func loadMemberTags(ch *channel, ev *nostr.Event) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" {
			role, reason := tagRole(t, "")
			if reason != "" {
				role = roleGuest // the relay wrote it; the least a member can be
			}
			ch.members[t[1]] = role
		}
	}
}

// Members returns the pubkeys of channel id and their roles, for tests
// and for git authorisation.
func (r *Relay) Members(id string) map[string]string {
	ch, ok := r.chans.get(id)
	if !ok || ch.deleted {
		return nil
	}
	return maps(ch.members)
}
