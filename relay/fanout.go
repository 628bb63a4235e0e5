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
// Replay follows insertion, not created_at. Every stored row carries the
// id of the transaction that inserted it (buzz_xid) and the inserting
// instance (buzz_origin). Every fanoutMarkEvery each instance notifies a
// mark holding a snapshot of the database taken just before ("m
// <instance> <pg_snapshot>"). PostgreSQL delivers notifications in commit
// order, and a transaction visible in the snapshot committed before the
// mark did, so once an instance reads its own mark it has been told of
// every row that snapshot sees: the snapshot becomes its checkpoint. When
// the listening connection drops, lib/pq reconnects with backoff
// (fanoutMinReconnect to fanoutMaxReconnect) and LISTENs again before
// this instance replays every row of another instance that the
// checkpoint does not see, in transaction order, skipping ids it already
// delivered (seenIDs). Rows committed after the new LISTEN come as
// notifications as well, and seenIDs drops the second copy. A fetch that
// fails leaves the instance behind in the same way: the checkpoint stays,
// nothing more is delivered until a replay from it succeeds (tried at
// each notification, and a mark comes every fanoutMarkEvery), so nothing
// overtakes what the replay brings. So a subscriber misses nothing a
// database blip hid, whatever the events' created_at, and gets each
// event once.
//
// Order: one subscriber gets the events of one publisher connection in
// the order it sent them. The relay handles a connection's messages one
// at a time and commits each event before it reads the next, so commit
// order is send order; notifications, batches and the replay all keep
// commit order, and a replay covers a prefix of what follows it in the
// notification stream (a transaction id is taken at the insert, so for
// one connection id order is commit order). Events of different
// connections come live in commit order, replayed in the order their
// inserts began. go-nostr's client hands each event to its subscription
// from a goroutine of its own, so two events can swap on the way from its
// socket to Subscription.Events even when the relay wrote them in order:
// tests that check order read raw frames.
const notifyChannel = "buzz_events"

// fanout is one instance's side of the fan-out; nil without --db.
type fanout struct {
	r    *Relay
	pg   *postgresql.PostgresBackend
	name string // this instance's application_name
	l    *pq.Listener
	seen *seenIDs
	log  *slog.Logger

	// ck is the checkpoint: a pg_snapshot of which every row has reached
	// this instance. behind is set when a fetch failed since ck was
	// taken. Both belong to run's goroutine once it starts.
	ck     string
	behind bool

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
// missed. The first checkpoint is taken once LISTEN holds: a row it does
// not see commits later and is notified.
func newFanout(r *Relay, pg *postgresql.PostgresBackend, name string) (*fanout, error) {
	f := &fanout{r: r, pg: pg, name: name, seen: newSeenIDs(), log: r.log.With("component", "fanout")}
	f.l = pq.NewListener(pg.DatabaseURL, fanoutMinReconnect, fanoutMaxReconnect, f.listenerEvent)
	if err := f.l.Listen(notifyChannel); err != nil {
		f.l.Close()
		return nil, fmt.Errorf("buzz-relay: listen on PostgreSQL channel %s: %w", notifyChannel, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fanoutFetchTimeout)
	defer cancel()
	if err := pg.DB.QueryRowContext(ctx, `SELECT pg_current_snapshot()::text`).Scan(&f.ck); err != nil {
		f.l.Close()
		return nil, fmt.Errorf("buzz-relay: take the first fan-out checkpoint: %w", err)
	}
	return f, nil
}

func (f *fanout) listenerEvent(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventDisconnected:
		f.log.Warn("lost the PostgreSQL notification connection; reconnecting", "err", err)
	case pq.ListenerEventReconnected:
		f.log.Info("PostgreSQL notification connection back; replaying what was missed")
	case pq.ListenerEventConnectionAttemptFailed:
		f.log.Debug("PostgreSQL notification reconnect failed", "err", err)
	}
}

// start runs the receiving loop and the mark sender until close.
func (f *fanout) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.done = make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	// Both end when close cancels ctx.
	go func() {
		defer wg.Done()
		f.run(ctx)
	}()
	go func() {
		defer wg.Done()
		f.marks(ctx)
	}()
	go func() {
		wg.Wait()
		close(f.done)
	}()
}

func (f *fanout) close() {
	if f.stop != nil {
		f.stop()
		<-f.done
	}
	f.l.Close()
}

// marks notifies a mark every fanoutMarkEvery: a snapshot taken by the
// statement that sends it, so before the mark commits. A snapshot whose
// text would not fit a notification goes as its xmin alone
// ("xmin:xmin:"), which sees less and so replays more, never less.
func (f *fanout) marks(ctx context.Context) {
	t := time.NewTicker(fanoutMarkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := f.sendMark(ctx, maxNotifyPayload); err != nil && ctx.Err() == nil {
			f.log.Debug("send fan-out mark", "err", err)
		}
	}
}

// sendMark notifies one mark of at most limit bytes.
func (f *fanout) sendMark(ctx context.Context, limit int) error {
	head := "m " + f.name + " "
	ctx, cancel := context.WithTimeout(ctx, fanoutFetchTimeout)
	defer cancel()
	_, err := f.pg.DB.ExecContext(ctx, `SELECT pg_notify($1, $2 || CASE WHEN length(s::text) <= $3 THEN s::text
  ELSE pg_snapshot_xmin(s)::text || ':' || pg_snapshot_xmin(s)::text || ':' END) FROM pg_current_snapshot() AS s`,
		notifyChannel, head, limit-len(head))
	return err
}

// run reads notifications, a batch at a time, and delivers them in order.
func (f *fanout) run(ctx context.Context) {
	for {
		var n *pq.Notification
		var open bool
		select {
		case <-ctx.Done():
			return
		case n, open = <-f.l.Notify:
			if !open {
				return
			}
		}
		var ids []string
		replay := n == nil
		if n != nil {
			ids = f.take(ctx, n, ids)
		}
	drain:
		for !replay && len(ids) < fanoutBatch {
			select {
			case n, open = <-f.l.Notify:
				if n == nil {
					replay = open
					break drain
				}
				ids = f.take(ctx, n, ids)
			default:
				break drain
			}
		}
		// Notified after the last mark read, the ids are not in the
		// checkpoint's snapshot: a replay covers them, in order.
		f.behind = f.behind || replay
		f.flush(ctx, ids)
	}
}

// flush delivers ids, after a replay when f is behind. While the replay
// fails nothing is delivered, so nothing overtakes what it would bring:
// the ids stay in the store and the checkpoint where it was.
func (f *fanout) flush(ctx context.Context, ids []string) {
	if f.behind {
		if f.replay(ctx) != nil {
			return
		}
		f.behind = false
	}
	f.deliver(ctx, ids)
}

// take reads one notification: a stored event's id is added to ids, an
// ephemeral event is broadcast at once and this instance's own mark moves
// the checkpoint (each after the ids before it).
func (f *fanout) take(ctx context.Context, n *pq.Notification, ids []string) []string {
	note, err := parseNote(n.Extra)
	if err != nil {
		f.log.Warn("skipping a notification", "bytes", len(n.Extra), "err", err)
		return ids
	}
	switch {
	case note.snapshot != "":
		if note.origin != f.name {
			return ids
		}
		f.flush(ctx, ids)
		if !f.behind {
			f.ck = note.snapshot
		}
		return ids[:0]
	case note.origin == f.name:
		return ids
	case note.ev == nil:
		return append(ids, note.id)
	}
	f.flush(ctx, ids)
	f.r.broadcast(note.ev)
	return ids[:0]
}

// note is one notification on notifyChannel: a stored event's id and
// created_at, a whole ephemeral event, or a mark's snapshot.
type note struct {
	origin   string
	at       nostr.Timestamp
	id       string
	ev       *nostr.Event
	snapshot string
}

// parseNote reads a notification payload: "s <origin> <created_at> <id>"
// from the trigger, "e <origin> <event JSON>" from publishEphemeral or
// "m <origin> <pg_snapshot>" from marks.
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
	case "m":
		if !isSnapshot(rest) {
			return note{}, fmt.Errorf("mark %.40q is not a pg_snapshot", rest)
		}
		return note{origin: origin, snapshot: rest}, nil
	}
	return note{}, fmt.Errorf("unknown form %.10q", kind)
}

// isSnapshot reports whether s has pg_snapshot's text form,
// "xmin:xmax:xip,…" (decimal transaction ids, the list possibly empty).
func isSnapshot(s string) bool {
	xmin, rest, ok1 := strings.Cut(s, ":")
	xmax, xip, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !isXID(xmin) || !isXID(xmax) {
		return false
	}
	if xip == "" {
		return true
	}
	for x := range strings.SplitSeq(xip, ",") {
		if !isXID(x) {
			return false
		}
	}
	return true
}

// isXID reports whether s is a 64-bit transaction id in decimal.
func isXID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// deliver fetches the events of ids in one query and hands each, in the
// order of ids, to local subscribers. A failed fetch leaves f behind.
func (f *fanout) deliver(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(internal(ctx), fanoutFetchTimeout)
	defer cancel()
	ch, err := f.r.store.QueryEvents(qctx, nostr.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		f.log.Error("fetch notified events; a replay will bring them", "n", len(ids), "err", err)
		f.behind = true
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
// It reports whether the event was new here.
func (f *fanout) apply(ev *nostr.Event) bool {
	if !f.seen.add(ev.ID) {
		return false
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
	if !hiddenKind(ev.Kind) {
		r.broadcast(ev)
	}
	r.flows.saw(ev) // triggers and answers that came by another instance
	return true
}

// replaySQL pages through the rows other instances inserted that the
// checkpoint $1 does not see, in transaction order, after the row ($3,
// $4); buzz_xid's index finds them. (The text column has a name of its
// own: ORDER BY would take an output column named buzz_xid over the table's
// and sort the ids as text.)
const replaySQL = `SELECT buzz_xid::text AS xid, id, pubkey, created_at, kind, tags, content, sig FROM event
WHERE buzz_xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(buzz_xid, $1::pg_snapshot)
  AND buzz_origin IS DISTINCT FROM $2 AND (buzz_xid, id) > ($3::xid8, $4)
ORDER BY buzz_xid, id LIMIT $5`

// replay delivers, in transaction order, what other instances stored
// since the checkpoint and this one has not delivered yet.
func (f *fanout) replay(ctx context.Context) error {
	after, afterID := "0", ""
	delivered, read := 0, 0
	for read < maxReplay {
		page, err := f.replayPage(ctx, after, afterID)
		if err != nil {
			f.log.Error("replay; the next notification tries again", "delivered", delivered, "err", err)
			return err
		}
		for _, row := range page {
			if f.apply(row.ev) {
				delivered++
			}
		}
		read += len(page)
		if len(page) < fanoutBatch {
			f.log.Info("replayed what notifications missed", "events", delivered, "read", read)
			return nil
		}
		after, afterID = page[len(page)-1].xid, page[len(page)-1].ev.ID
	}
	f.log.Warn("replay stopped at its cap; later events are in the store but were not delivered live", "cap", maxReplay, "delivered", delivered)
	return nil
}

type replayRow struct {
	xid string
	ev  *nostr.Event
}

// replayPage reads one page of replaySQL.
func (f *fanout) replayPage(ctx context.Context, after, afterID string) ([]replayRow, error) {
	qctx, cancel := context.WithTimeout(ctx, fanoutFetchTimeout)
	defer cancel()
	rows, err := f.pg.DB.QueryContext(qctx, replaySQL, f.ck, f.name, after, afterID, fanoutBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var page []replayRow
	for rows.Next() {
		var row replayRow
		var ev nostr.Event
		var at int64
		if err := rows.Scan(&row.xid, &ev.ID, &ev.PubKey, &at, &ev.Kind, &ev.Tags, &ev.Content, &ev.Sig); err != nil {
			return nil, err
		}
		ev.CreatedAt = nostr.Timestamp(at)
		row.ev = &ev
		page = append(page, row)
	}
	return page, rows.Err()
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

// claimShared reports whether id, a NIP-98 token this instance has just
// accepted, was not used on another instance: it is claimed in the
// database, and claims older than replayWindow are swept now and then.
// It is the Shared claim of r.verifier; without --db that is nil (the
// in-process cache judges alone).
func (r *Relay) claimShared(ctx context.Context, id string) bool {
	f := r.fan
	ctx, cancel := context.WithTimeout(ctx, fanoutFetchTimeout)
	defer cancel()
	now := time.Now().Unix()
	if f.claims.Add(1)%tokenSweepEvery == 0 {
		f.pg.DB.ExecContext(ctx, `DELETE FROM buzz_nip98_seen WHERE at < $1`, now-int64(replayWindow/time.Second))
	}
	res, err := f.pg.DB.ExecContext(ctx, `INSERT INTO buzz_nip98_seen (id, at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, now)
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

// applyMemberRecord takes a member record another instance stored; a ban
// cuts the key off here too.
func (r *Relay) applyMemberRecord(ev *nostr.Event) {
	pk, rec, ok := r.readMemberRecord(ev)
	if !ok {
		return
	}
	r.mem.set(pk, rec)
	switch {
	case rec.Banned:
		r.cutOff(pk)
	case !rec.Allowed:
		r.endSubscriptions(pk) // removed, if no channel lists it here still
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
	if !workspace.IsChannelID(id) {
		return
	}
	var gone []string
	cs := r.chans
	cs.mu.Lock()
	ch := cs.byID[id]
	switch ev.Kind {
	case workspace.KindGroupMetadata:
		if ch == nil || ch.deleted && ev.CreatedAt > ch.createdAt {
			ch = &channel{id: id, typ: workspace.ChannelTypeStream, members: map[string]string{}, createdAt: channelCreated(ev)}
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
	for _, pk := range gone {
		r.endSubscriptions(pk) // if that was what made it a member
	}
}
