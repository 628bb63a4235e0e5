package relay

import (
	"buzzbox/internal/workspace"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Relay membership. Who may use the relay comes from four places, merged:
//
//   - the owner (--owner) and the admins (--admin), always members and
//     never banned;
//   - the start-up allowlist (--allow, --allow-file), fixed for the run;
//   - run-time decisions made through NIP-86 (allowpubkey, disallowpubkey,
//     banpubkey, unbanpubkey) and invite redemptions, kept in the event
//     store as relay-signed addressable events of workspace.KindMemberRecord (d = the
//     pubkey, content = a memberRecord), so they survive restarts on the
//     badger store and on PostgreSQL alike;
//   - channel membership: a key some channel lists (kind 9000 applied by a
//     channel admin, an invite, a join) may use the relay while it stays
//     listed.
//
// disallowpubkey removes a key from all of them it can (removeMember):
// its channels list it no more, its subscriptions end and its invites
// are revoked; it may be admitted again, as a stranger may.
//
// A ban beats all of them but the owner and admins, and also cuts off an
// agent whose NIP-OA attesting owner is banned. Records of workspace.KindMemberRecord
// and workspace.KindInviteRecord are never served to clients (hiddenKind).
// hiddenKind reports whether events of kind k stay inside the relay.
func hiddenKind(k int) bool {
	return k == workspace.KindMemberRecord || k == workspace.KindInviteRecord
}

// banReason is the NIP-01 reason a banned key gets, as upstream words it.
const banReason = "blocked: banned from this community"

// memberRecord is the content of a workspace.KindMemberRecord event: the run-time
// say about one pubkey. A zero record says nothing.
type memberRecord struct {
	Allowed     bool   `json:"allowed,omitempty"`
	AllowReason string `json:"allow_reason,omitempty"`
	Banned      bool   `json:"banned,omitempty"`
	BanReason   string `json:"ban_reason,omitempty"`
	By          string `json:"by,omitempty"` // who decided last, hex
}

// membership is the relay's member table; every method is safe for
// concurrent use.
type membership struct {
	owner  string          // fixed after New
	admins map[string]bool // fixed after New
	static map[string]bool // --allow and --allow-file; fixed after New

	// change serialises read-modify-store of records (Relay.changeMember).
	change sync.Mutex

	mu      sync.RWMutex
	records map[string]memberRecord
	// removing counts the removals of each key under way
	// (Relay.removeMember): until they end, its channels do not make it
	// a member, so it cannot make a channel while it is taken out of them.
	removing map[string]int
}

func newMembership() *membership {
	return &membership{
		admins:   make(map[string]bool),
		static:   make(map[string]bool),
		records:  make(map[string]memberRecord),
		removing: make(map[string]int),
	}
}

// beingRemoved reports whether a removal of pk is under way.
func (m *membership) beingRemoved(pk string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.removing[pk] > 0
}

// markRemoving counts a removal of pk in (delta 1) or out (-1).
func (m *membership) markRemoving(pk string, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removing[pk] += delta; m.removing[pk] <= 0 {
		delete(m.removing, pk)
	}
}

// isAdmin reports whether pk may call the management API.
func (m *membership) isAdmin(pk string) bool {
	return pk != "" && (pk == m.owner || m.admins[pk])
}

func (m *membership) record(pk string) memberRecord {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.records[pk]
}

// isBanned reports whether pk is banned.
func (m *membership) isBanned(pk string) bool {
	if pk == "" || m.isAdmin(pk) {
		return false
	}
	return m.record(pk).Banned
}

// isListed reports whether pk is a member by the owner, admin, start-up
// or run-time lists (channels aside), and not banned.
func (m *membership) isListed(pk string) bool {
	if pk == "" {
		return false
	}
	if m.isAdmin(pk) {
		return true
	}
	rec := m.record(pk)
	return !rec.Banned && (rec.Allowed || m.static[pk])
}

func (m *membership) set(pk string, rec memberRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec == (memberRecord{}) {
		delete(m.records, pk)
		return
	}
	m.records[pk] = rec
}

// listEntry is one row of listallowedpubkeys / listbannedpubkeys.
type listEntry struct {
	PubKey string `json:"pubkey"`
	Reason string `json:"reason"`
}

// listAllowed returns every member by list, run-time and start-up, sorted.
func (m *membership) listAllowed() []listEntry {
	m.mu.RLock()
	rows := make(map[string]string, len(m.records)+len(m.static)+1)
	for pk := range m.static {
		rows[pk] = "allowlist"
	}
	for pk, rec := range m.records {
		if rec.Allowed {
			rows[pk] = rec.AllowReason
		}
	}
	for pk, rec := range m.records {
		if rec.Banned {
			delete(rows, pk)
		}
	}
	m.mu.RUnlock()
	for pk := range m.admins {
		rows[pk] = "admin"
	}
	if m.owner != "" {
		rows[m.owner] = "owner"
	}
	return sortedEntries(rows)
}

func (m *membership) listBanned() []listEntry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rows := make(map[string]string)
	for pk, rec := range m.records {
		if rec.Banned {
			rows[pk] = rec.BanReason
		}
	}
	return sortedEntries(rows)
}

func sortedEntries(rows map[string]string) []listEntry {
	out := make([]listEntry, 0, len(rows))
	for pk, why := range rows {
		out = append(out, listEntry{pk, why})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PubKey < out[j].PubKey })
	return out
}

// inChannel reports whether some channel lists pk; a deleted one does not count.
func (cs *channels) inChannel(pk string) bool {
	if pk == "" {
		return false
	}
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	for _, ch := range cs.byID {
		if !ch.deleted && ch.members[pk] != "" {
			return true
		}
	}
	return false
}

// isMember reports whether pk may use the relay on its own account: listed
// or in a channel, and not banned.
func (r *Relay) isMember(pk string) bool {
	if r.mem.isListed(pk) {
		return true
	}
	return !r.mem.isBanned(pk) && !r.mem.beingRemoved(pk) && r.chans.inChannel(pk)
}

// listing returns the channels that list pk, deleted ones aside.
func (cs *channels) listing(pk string) []string {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	var ids []string
	for id, ch := range cs.byID {
		if !ch.deleted && ch.members[pk] != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// removedReason is the CLOSED reason of the subscriptions a removal ends.
const removedReason = "restricted: removed from this relay"

// removeMember is disallowpubkey, by admin who: pk's run-time allowance
// goes, and with it all that membership gave. Its channel memberships end
// through relay-signed 9001s (so 39002 and 44101 show them like any
// removal), its pending invites are revoked, and its open subscriptions,
// and those of agents it attests that are no members themselves, are
// closed. It holds nothing a stranger lacks: it may be admitted again
// (allowpubkey, an invite, a channel admin's 9000), which a ban refuses.
func (r *Relay) removeMember(ctx context.Context, pk, who string) error {
	r.mem.markRemoving(pk, 1)
	defer r.mem.markRemoving(pk, -1)
	err := r.changeMember(ctx, pk, func(rec *memberRecord) {
		rec.By, rec.Allowed, rec.AllowReason = who, false, ""
	})
	if err != nil {
		return err
	}
	// A channel pk was creating as the removal began is applied after
	// the first pass; passes end when none lists pk.
	for range maxRemovalPasses {
		ids := r.chans.listing(pk)
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			if err := r.channelCommand(ctx, workspace.KindRemoveUser, id, nostr.Tags{{"h", id}, {"p", pk}}); err != nil {
				return err
			}
		}
	}
	if err := r.revokeInvitesBy(ctx, pk, who); err != nil {
		return err
	}
	r.endSubscriptions(pk)
	return nil
}

// endSubscriptions closes, with removedReason, every subscription of a
// live websocket authenticated as pk, or as an agent pk attests that is
// no member on its own, once pk is no member. On an open relay a
// stranger reads too, so nothing is closed there.
func (r *Relay) endSubscriptions(pk string) {
	if r.cfg.Open || r.isMember(pk) {
		return
	}
	r.mu.Lock()
	var conns []*conn
	for c := range r.live {
		if who, owner := c.identity(); who == pk || owner == pk && !r.isMember(who) {
			conns = append(conns, c)
		}
	}
	r.mu.Unlock()
	for _, c := range conns {
		for _, sub := range c.endAll() {
			c.send(closedMsg(sub, removedReason))
		}
	}
}

// banned reports whether c is banned, directly or through its attesting
// owner.
func (r *Relay) banned(c caller) bool {
	return r.mem.isBanned(c.pubkey) || (c.owner != "" && r.mem.isBanned(c.owner))
}

// saveRecord signs and stores a relay-internal addressable event: a member
// record or an invite. It is never broadcast.
func (r *Relay) saveRecord(ctx context.Context, kind int, d string, content any) error {
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("buzz-relay: encode record %d:%s: %w", kind, d, err)
	}
	ev := nostr.Event{Kind: kind, Tags: nostr.Tags{{"d", d}}, Content: string(b)}
	if err := r.signState(&ev); err != nil {
		return fmt.Errorf("buzz-relay: sign record %d:%s: %w", kind, d, err)
	}
	if err := r.store.ReplaceEvent(internal(ctx), &ev); err != nil {
		return fmt.Errorf("buzz-relay: store record %d:%s: %w", kind, d, err)
	}
	return nil
}

// loadRecords calls fn for every stored relay-signed event of kind, newest
// first, paging past the store's query limit. Relay-signed events have
// distinct created_at values (saveRecord and publishRelayEvent move the
// clock on), so paging by until loses none.
func (r *Relay) loadRecords(ctx context.Context, kind int, fn func(*nostr.Event)) error {
	ctx = internal(ctx)
	var until *nostr.Timestamp
	for {
		f := nostr.Filter{Kinds: []int{kind}, Authors: []string{r.pubkey}, Until: until, Limit: maxQueryLimit}
		ch, err := r.store.QueryEvents(ctx, f)
		if err != nil {
			return fmt.Errorf("buzz-relay: load records of kind %d: %w", kind, err)
		}
		n := 0
		var oldest nostr.Timestamp
		for ev := range ch {
			n++
			if n == 1 || ev.CreatedAt < oldest {
				oldest = ev.CreatedAt
			}
			r.sawState(ev.CreatedAt)
			fn(ev)
		}
		if n < maxQueryLimit || oldest == 0 {
			return nil
		}
		next := oldest - 1
		until = &next
	}
}

// loadMemberRecords reads the run-time decisions from the store.
func (r *Relay) loadMemberRecords() error {
	return r.loadRecords(context.Background(), workspace.KindMemberRecord, func(ev *nostr.Event) {
		if pk, rec, ok := r.readMemberRecord(ev); ok {
			r.mem.set(pk, rec)
		}
	})
}

// readMemberRecord reads a workspace.KindMemberRecord event: the pubkey it is about
// and its record, or ok false (logged) when it cannot be read.
func (r *Relay) readMemberRecord(ev *nostr.Event) (pk string, rec memberRecord, ok bool) {
	pk = ev.Tags.GetD()
	if !nostr.IsValid32ByteHex(pk) || json.Unmarshal([]byte(ev.Content), &rec) != nil {
		r.log.Warn("skipping unreadable member record", "id", ev.ID)
		return "", memberRecord{}, false
	}
	return pk, rec, true
}

// changeMember applies edit to pk's record, stores the result and, when
// it bans, cuts off pk's connections and those of agents it attests.
func (r *Relay) changeMember(ctx context.Context, pk string, edit func(*memberRecord)) error {
	r.mem.change.Lock()
	defer r.mem.change.Unlock()
	rec := r.mem.record(pk)
	edit(&rec)
	if err := r.saveRecord(ctx, workspace.KindMemberRecord, pk, rec); err != nil {
		return err
	}
	r.mem.set(pk, rec)
	if rec.Banned {
		r.cutOff(pk)
	}
	return nil
}

// cutOff closes every live websocket authenticated as pk or as an agent
// pk attests. Each gets a Close frame with the ban reason, then its socket
// is closed; the writes are bounded by banCloseWrite so a client that does
// not read cannot hold the caller.
func (r *Relay) cutOff(pk string) {
	r.mu.Lock()
	var victims []*conn
	for c := range r.live {
		if who, owner := c.identity(); who == pk || owner == pk {
			victims = append(victims, c)
		}
	}
	r.mu.Unlock()
	for _, c := range victims {
		c.cut(websocket.StatusPolicyViolation, banReason)
	}
}

// mayMatchHidden reports whether filter f could match a hidden kind.
func mayMatchHidden(f nostr.Filter) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if hiddenKind(k) {
			return true
		}
	}
	return false
}

// authorVerdict judges the author of an event: it must not be banned, nor
// attested by a banned owner, and on a closed relay it must be a member or
// attested by one. It returns the OK reason when the event is refused.
func (r *Relay) authorVerdict(ev *nostr.Event) string {
	owner := eventAttestation(ev, r.cfg.Now())
	if r.mem.isBanned(ev.PubKey) || (owner != "" && r.mem.isBanned(owner)) {
		return banReason
	}
	if r.cfg.Open || r.isMember(ev.PubKey) || (owner != "" && r.isMember(owner)) {
		return ""
	}
	return "restricted: event author is not a relay member"
}
