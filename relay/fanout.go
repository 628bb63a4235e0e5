package relay

import (
	"buzzbox/internal/workspace"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/postgresql"
	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"
)

// Fan-out between instances. Several buzz-relay processes on one
// PostgreSQL database (--db) are one relay: each stores into the shared
// event table, and a trigger (sharedSchema) sends every inserted id on
// notifyChannel with the inserting instance's name. Each instance LISTENs
// on a connection of its own (lib/pq's Listener), skips its own
// notifications, fetches the others' events by id, a batch per query, and
// hands them to the relay's broadcast, so remote events reach local
// subscribers through the same read checks as local ones.
// Relay-signed state arriving that way (channel 39000/39002/tombstones,
// member records, invite records) updates this instance's memory first.
//
// Ephemeral events are not stored. They travel whole in the payload
// ("e <instance> <event JSON>") when that fits PostgreSQL's 8000-byte
// notification limit, else they are dropped with a warning: they are
// fire-and-forget by NIP-01 (typing indicators, presence), a table to
// carry them would cost a write per keystroke, and a client loses nothing
// it could not lose to a dropped websocket.
//
// When the listening connection drops, lib/pq reconnects with backoff
// (fanoutMinReconnect to fanoutMaxReconnect) and this instance replays
// from the store every event dated since the last notification it saw
// (less replaySlack, for publishers' clocks), skipping ids it already
// delivered (seenIDs), so a subscriber misses nothing a database blip hid.
// Events stored during the blip yet dated more than replaySlack before
// the last notification are in the store but not delivered live.
const notifyChannel = "buzz_events"

// fanout is one instance's side of the fan-out; nil without --db.
type fanout struct {
	r    *Relay
	pg   *postgresql.PostgresBackend
	name string // this instance's application_name
	l    *pq.Listener
	seen *seenIDs
	log  *slog.Logger

	mu     sync.Mutex
	lastAt nostr.Timestamp // created_at of the newest notification seen
	lostAt time.Time       // when the listening connection dropped; zero while up

	claims atomic.Int64 // NIP-98 tokens claimed, for sweeping

	stop context.CancelFunc
	done chan struct{}
}

// instanceName makes this process's application_name.
func instanceName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "buzz-relay-" + hex.EncodeToString(b)
}

// newFanout starts listening on notifyChannel. Notifications queue until
// run starts, so events stored while the relay loads its state are not
// missed.
func newFanout(r *Relay, pg *postgresql.PostgresBackend, name string) (*fanout, error) {
	f := &fanout{r: r, pg: pg, name: name, seen: newSeenIDs(), log: r.log.With("component", "fanout"), lastAt: nostr.Now()}
	f.l = pq.NewListener(pg.DatabaseURL, fanoutMinReconnect, fanoutMaxReconnect, f.listenerEvent)
	if err := f.l.Listen(notifyChannel); err != nil {
		f.l.Close()
		return nil, fmt.Errorf("buzz-relay: listen on PostgreSQL channel %s: %w", notifyChannel, err)
	}
	return f, nil
}

func (f *fanout) listenerEvent(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventDisconnected:
		f.mu.Lock()
		if f.lostAt.IsZero() {
			f.lostAt = time.Now()
		}
		f.mu.Unlock()
		f.log.Warn("lost the PostgreSQL notification connection; reconnecting", "err", err)
	case pq.ListenerEventReconnected:
		f.log.Info("PostgreSQL notification connection back; replaying what was missed")
	case pq.ListenerEventConnectionAttemptFailed:
		f.log.Debug("PostgreSQL notification reconnect failed", "err", err)
	}
}

// start runs the receiving loop until close.
func (f *fanout) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.done = make(chan struct{})
	// Ends when close cancels ctx.
	go func() {
		defer close(f.done)
		f.run(ctx)
	}()
}

func (f *fanout) close() {
	if f.stop != nil {
		f.stop()
		<-f.done
	}
	f.l.Close()
}

// run reads notifications, a batch at a time, and delivers them in order.
func (f *fanout) run(ctx context.Context) {
	for {
		var n *pq.Notification
		select {
		case <-ctx.Done():
			return
		case n = <-f.l.Notify:
		}
		var ids []string
		replay := n == nil
		if n != nil {
			ids = f.take(ctx, n, ids)
		}
	drain:
		for !replay && len(ids) < fanoutBatch {
			select {
			case n = <-f.l.Notify:
				if n == nil {
					replay = true
					break drain
				}
				ids = f.take(ctx, n, ids)
			default:
				break drain
			}
		}
		f.deliver(ctx, ids)
		if replay {
			f.replay(ctx)
		}
	}
}

// take reads one notification: a stored event's id is added to ids, an
// ephemeral event is broadcast at once (after the ids before it).
func (f *fanout) take(ctx context.Context, n *pq.Notification, ids []string) []string {
	note, err := parseNote(n.Extra)
	if err != nil {
		f.log.Warn("skipping a notification", "bytes", len(n.Extra), "err", err)
		return ids
	}
	if note.at > 0 {
		f.mu.Lock()
		if note.at > f.lastAt {
			f.lastAt = note.at
		}
		f.mu.Unlock()
	}
	if note.origin == f.name {
		return ids
	}
	if note.ev == nil {
		return append(ids, note.id)
	}
	f.deliver(ctx, ids)
	f.r.broadcast(note.ev)
	return ids[:0]
}

// note is one notification on notifyChannel: a stored event's id and
// created_at, or a whole ephemeral event.
type note struct {
	origin string
	at     nostr.Timestamp
	id     string
	ev     *nostr.Event
}

// parseNote reads a notification payload: "s <origin> <created_at> <id>"
// from the trigger, or "e <origin> <event JSON>" from publishEphemeral.
func parseNote(payload string) (note, error) {
	kind, rest, _ := strings.Cut(payload, " ")
	origin, rest, ok := strings.Cut(rest, " ")
	if !ok || origin == "" {
		return note{}, errors.New("no origin")
	}
	switch kind {
	case "s":
		at, id, _ := strings.Cut(rest, " ")
		sec, err := strconv.ParseInt(at, 10, 64)
		if err != nil || sec < 0 {
			return note{}, fmt.Errorf("created_at %.20q is not a number", at)
		}
		if !nostr.IsValid32ByteHex(id) {
			return note{}, fmt.Errorf("id %.70q is not 64 hex characters", id)
		}
		return note{origin: origin, at: nostr.Timestamp(sec), id: id}, nil
	case "e":
		var ev nostr.Event
		if err := json.Unmarshal([]byte(rest), &ev); err != nil {
			return note{}, fmt.Errorf("ephemeral event: %w", err)
		}
		if !nostr.IsEphemeralKind(ev.Kind) || !nostr.IsValid32ByteHex(ev.ID) {
			return note{}, fmt.Errorf("ephemeral event of kind %d and id %.70q", ev.Kind, ev.ID)
		}
		return note{origin: origin, id: ev.ID, ev: &ev}, nil
	}
	return note{}, fmt.Errorf("unknown form %.10q", kind)
}

// deliver fetches the events of ids in one query and hands each, in the
// order of ids, to local subscribers.
func (f *fanout) deliver(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(internal(ctx), fanoutFetchTimeout)
	defer cancel()
	ch, err := f.r.store.QueryEvents(qctx, nostr.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		f.log.Error("fetch notified events", "n", len(ids), "err", err)
		return
	}
	byID := make(map[string]*nostr.Event, len(ids))
	for ev := range ch {
		byID[ev.ID] = ev
	}
	for _, id := range ids {
		if ev := byID[id]; ev != nil { // gone: deleted or replaced since
			f.apply(ev)
		}
	}
}

// apply takes one event stored by another instance: relay-signed state
// first updates memory, then the event goes to local subscribers, once.
func (f *fanout) apply(ev *nostr.Event) {
	if !f.seen.add(ev.ID) {
		return
	}
	r := f.r
	if ev.PubKey == r.pubkey {
		r.sawState(ev.CreatedAt)
		switch ev.Kind {
		case workspace.KindMemberRecord:
			r.applyMemberRecord(ev)
		case workspace.KindInviteRecord:
			r.applyInviteRecord(ev)
		case workspace.KindGroupMetadata, workspace.KindGroupMembers, workspace.KindChannelTombstone:
			r.applyChannelState(ev)
		}
	}
	if hiddenKind(ev.Kind) {
		return
	}
	r.broadcast(ev)
}

// replay delivers what the store got while notifications were lost.
func (f *fanout) replay(ctx context.Context) {
	f.mu.Lock()
	since := f.lastAt
	if !f.lostAt.IsZero() && nostr.Timestamp(f.lostAt.Unix()) < since {
		since = nostr.Timestamp(f.lostAt.Unix())
	}
	f.lostAt = time.Time{}
	f.mu.Unlock()
	since -= nostr.Timestamp(replaySlack / time.Second)
	var evs []*nostr.Event
	err := f.r.eachStored(internal(ctx), nostr.Filter{Since: &since}, func(ev *nostr.Event) {
		if len(evs) < maxReplay && !f.seen.has(ev.ID) {
			evs = append(evs, ev)
		}
	})
	if err != nil {
		f.log.Error("replay after reconnect", "err", err)
	}
	if len(evs) == maxReplay {
		f.log.Warn("replay after reconnect stopped at its cap; older events are in the store but were not delivered live", "cap", maxReplay)
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].CreatedAt != evs[j].CreatedAt {
			return evs[i].CreatedAt < evs[j].CreatedAt
		}
		return evs[i].ID < evs[j].ID
	})
	for _, ev := range evs {
		f.apply(ev)
	}
	f.log.Info("replayed after reconnect", "since", since, "events", len(evs))
}

// publishEphemeral sends an ephemeral event to the other instances.
func (f *fanout) publishEphemeral(ctx context.Context, ev *nostr.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	payload := "e " + f.name + " " + string(b)
	if len(payload) > maxNotifyPayload {
		f.log.Warn("ephemeral event too large to reach other instances; delivered here only", "id", ev.ID, "bytes", len(payload), "limit", maxNotifyPayload)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fanoutFetchTimeout)
	defer cancel()
	if _, err := f.pg.DB.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, payload); err != nil {
		f.log.Warn("send ephemeral event to other instances", "id", ev.ID, "err", err)
	}
}

// claimInvite records in the database that token hash key is spent by pk.
// Of two instances redeeming one token at once, one wins.
func (f *fanout) claimInvite(ctx context.Context, key, pk string, at int64) error {
	res, err := f.pg.DB.ExecContext(ctx, `INSERT INTO buzz_invite_spent (token_hash, pubkey, spent_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, key, pk, at)
	if err != nil {
		return fmt.Errorf("buzz-relay: claim invite: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errInviteSpent
	}
	return nil
}

// claimShared reports whether ev, a NIP-98 token this instance has just
// accepted, was not used on another instance: its id is claimed in the
// database, and claims older than replayWindow are swept now and then.
// Without --db it reports true (the in-process cache has judged it).
func (r *Relay) claimShared(ctx context.Context, ev *nostr.Event) bool {
	f := r.fan
	if f == nil || ev == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, fanoutFetchTimeout)
	defer cancel()
	now := time.Now().Unix()
	if f.claims.Add(1)%tokenSweepEvery == 0 {
		f.pg.DB.ExecContext(ctx, `DELETE FROM buzz_nip98_seen WHERE at < $1`, now-int64(replayWindow/time.Second))
	}
	res, err := f.pg.DB.ExecContext(ctx, `INSERT INTO buzz_nip98_seen (id, at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, ev.ID, now)
	if err != nil {
		f.log.Error("claim NIP-98 token", "err", err)
		return false // refuse rather than let a replay through
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1
}

// lockChannel takes a PostgreSQL advisory lock on channel id, so that
// group commands on one channel are applied one at a time across
// instances, each on the state the one before left. It returns the
// unlock; when the lock cannot be had the command goes ahead unlocked,
// with an error in the log.
func (f *fanout) lockChannel(ctx context.Context, id string) func() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fanoutFetchTimeout)
	defer cancel()
	conn, err := f.pg.DB.Conn(ctx)
	if err != nil {
		f.log.Error("lock channel", "channel", id, "err", err)
		return func() {}
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	key := int32(h.Sum32())
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, channelLockClass, key); err != nil {
		f.log.Error("lock channel", "channel", id, "err", err)
		conn.Close()
		return func() {}
	}
	return func() {
		conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, channelLockClass, key)
		conn.Close()
	}
}

// refreshChannel reads channel id's newest state from the store, as
// another instance may have signed it, and takes it into memory.
func (r *Relay) refreshChannel(ctx context.Context, id string) {
	ch, err := r.store.QueryEvents(internal(ctx), nostr.Filter{
		Kinds: []int{workspace.KindGroupMetadata, workspace.KindGroupMembers, workspace.KindChannelTombstone}, Authors: []string{r.pubkey},
		Tags: nostr.TagMap{"d": []string{id}},
	})
	if err != nil {
		r.log.Error("refresh channel", "channel", id, "err", err)
		return
	}
	var evs []*nostr.Event
	for ev := range ch {
		if ev.Tags.GetD() == id {
			evs = append(evs, ev)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].CreatedAt < evs[j].CreatedAt })
	for _, ev := range evs {
		r.sawState(ev.CreatedAt)
		r.applyChannelState(ev)
	}
}

// channelLockClass is the first key of channel advisory locks
// (pg_advisory_lock(class, hash of the id)); schemaLockKey is a one-key
// lock and cannot collide with two-key ones.
const channelLockClass = 0x62757a63

// inviteSpent reports whether the database records token hash key as
// spent.
func (f *fanout) inviteSpent(ctx context.Context, key string) bool {
	var one int
	err := f.pg.DB.QueryRowContext(ctx, `SELECT 1 FROM buzz_invite_spent WHERE token_hash = $1`, key).Scan(&one)
	return err == nil
}

// seenIDs remembers the ids delivered lately, in two generations of
// seenGeneration ids each, so that a replay does not deliver one twice.
type seenIDs struct {
	mu        sync.Mutex
	cur, prev map[string]bool
}

func newSeenIDs() *seenIDs { return &seenIDs{cur: make(map[string]bool)} }

// add records id and reports whether it was new.
func (s *seenIDs) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur[id] || s.prev[id] {
		return false
	}
	if len(s.cur) >= seenGeneration {
		s.prev, s.cur = s.cur, make(map[string]bool, seenGeneration)
	}
	s.cur[id] = true
	return true
}

func (s *seenIDs) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur[id] || s.prev[id]
}

// markStore notes the ids this instance stores itself, so that a replay
// after a database blip does not send them to local subscribers again.
type markStore struct {
	eventstore.Store
	seen *seenIDs
}

func (m markStore) SaveEvent(ctx context.Context, ev *nostr.Event) error {
	err := m.Store.SaveEvent(ctx, ev)
	if err == nil {
		m.seen.add(ev.ID)
	}
	return err
}

func (m markStore) ReplaceEvent(ctx context.Context, ev *nostr.Event) error {
	err := m.Store.ReplaceEvent(ctx, ev)
	if err == nil {
		m.seen.add(ev.ID)
	}
	return err
}

func (m markStore) CountEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	c, ok := m.Store.(eventstore.Counter)
	if !ok {
		return 0, errNoCounter
	}
	return c.CountEvents(ctx, f)
}

// applyMemberRecord takes a member record another instance stored; a ban
// cuts the key off here too.
func (r *Relay) applyMemberRecord(ev *nostr.Event) {
	pk, rec, ok := r.readMemberRecord(ev)
	if !ok {
		return
	}
	r.mem.set(pk, rec)
	if rec.Banned {
		r.cutOff(pk)
	}
}

// applyInviteRecord takes an invite record another instance stored.
func (r *Relay) applyInviteRecord(ev *nostr.Event) {
	var rec inviteRecord
	if json.Unmarshal([]byte(ev.Content), &rec) != nil {
		r.log.Warn("skipping unreadable invite record", "id", ev.ID)
		return
	}
	r.inv.mu.Lock()
	r.inv.byKey[ev.Tags.GetD()] = rec
	r.inv.mu.Unlock()
}

// applyChannelState takes a 39000, 39002 or tombstone another instance
// signed, as loadChannels would at start, and closes the subscriptions of
// members it drops.
func (r *Relay) applyChannelState(ev *nostr.Event) {
	id := ev.Tags.GetD()
	if !isUUID(id) {
		return
	}
	var gone []string
	cs := r.chans
	cs.mu.Lock()
	ch := cs.byID[id]
	switch ev.Kind {
	case workspace.KindGroupMetadata:
		if ch == nil || ch.deleted && ev.CreatedAt > ch.createdAt {
			ch = &channel{id: id, typ: workspace.ChannelTypeStream, members: map[string]string{}, createdAt: ev.CreatedAt}
			cs.byID[id] = ch
		}
		if ch.deleted {
			break // older than the tombstone
		}
		applyMetadata(ch, ev)
		if v, _ := tagValue(ev, "t"); v != "" {
			ch.typ = v
		}
		ch.private = hasFlag(ev, workspace.TagPrivate)
	case workspace.KindGroupMembers:
		if ch == nil || ch.deleted {
			break
		}
		old := ch.members
		ch.members = map[string]string{}
		loadMemberTags(ch, ev)
		for pk := range old {
			if ch.members[pk] == "" {
				gone = append(gone, pk)
			}
		}
	case workspace.KindChannelTombstone:
		if ch != nil && !ch.deleted && ch.createdAt > ev.CreatedAt {
			break // created again since
		}
		ch = &channel{id: id, typ: workspace.ChannelTypeStream, members: map[string]string{}, createdAt: ev.CreatedAt, deleted: true}
		ch.private = hasFlag(ev, workspace.TagPrivate)
		loadMemberTags(ch, ev)
		cs.byID[id] = ch
		gone = keys(ch.members)
	}
	cs.mu.Unlock()
	r.revoke(id, gone)
}
