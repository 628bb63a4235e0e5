package relay

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore/postgresql"
	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"
)

// Events of the same second are sent newest stored first, in the order
// the store took them, not by id: Nostr timestamps are seconds, and a
// person who sends several messages in one second must see them in the
// order they were sent, on every device and after a reload. Clients that
// read a REQ's stored events (newest first) and then its live ones (in
// the order stored) can keep that order as the tie-break.

// insertionRanker is a store that knows the order it took events in.
type insertionRanker interface {
	// insertionRanks returns, for the ids it finds, a number that grows
	// with the time the event was stored.
	insertionRanks(ctx context.Context, ids []string) (map[string]uint64, error)
}

// orderTies puts each run of evs (newest first) that shares a created_at
// into the store's order, newest stored first. A store that cannot tell
// leaves evs as they are.
func (r *Relay) orderTies(ctx context.Context, evs []*nostr.Event) {
	var ids []string
	for i := 1; i < len(evs); i++ {
		if evs[i].CreatedAt == evs[i-1].CreatedAt {
			if len(ids) == 0 || ids[len(ids)-1] != evs[i-1].ID {
				ids = append(ids, evs[i-1].ID)
			}
			ids = append(ids, evs[i].ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	gs, ok := r.store.(*guardedStore)
	if !ok {
		return
	}
	ranks, err := gs.insertionRanks(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("order events of one second", "err", err)
		}
		return
	}
	for start := 0; start < len(evs); {
		end := start + 1
		for end < len(evs) && evs[end].CreatedAt == evs[start].CreatedAt {
			end++
		}
		if end-start > 1 {
			run := evs[start:end]
			sort.SliceStable(run, func(i, j int) bool { return ranks[run[i].ID] > ranks[run[j].ID] })
		}
		start = end
	}
}

// storedInOrder returns what the store holds for f, newest first and one
// second's events in the order they were stored. When the limit cut
// through a second, the backends chose that second's events by id; the
// second is read whole and its newest stored kept instead.
func (r *Relay) storedInOrder(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	collect := func(f nostr.Filter) ([]*nostr.Event, error) {
		ch, err := r.queryEvents(ctx, f)
		if err != nil {
			return nil, err
		}
		var evs []*nostr.Event
		for ev := range ch {
			evs = append(evs, ev)
		}
		return evs, ctx.Err()
	}
	evs, err := collect(f)
	if err != nil {
		return nil, err
	}
	if n := len(evs); f.Limit > 0 && n >= f.Limit && n > 1 && evs[n-1].CreatedAt == evs[n-2].CreatedAt {
		edge := evs[n-1].CreatedAt
		whole := f
		whole.Since, whole.Until, whole.Limit = &edge, &edge, maxQueryLimit
		if second, err := collect(whole); err == nil && len(second) < maxQueryLimit {
			r.orderTies(ctx, second)
			cut := n
			for cut > 0 && evs[cut-1].CreatedAt == edge {
				cut--
			}
			evs = append(evs[:cut], second[:min(len(second), n-cut)]...)
		}
	}
	r.orderTies(ctx, evs)
	return evs, nil
}

// insertionRanks asks the backend, when it can tell.
func (g *guardedStore) insertionRanks(ctx context.Context, ids []string) (map[string]uint64, error) {
	ir, ok := g.inner.(insertionRanker)
	if !ok {
		return nil, errNoRanks
	}
	var out map[string]uint64
	err := g.with(func() error {
		var err error
		out, err = ir.insertionRanks(ctx, ids)
		return err
	})
	return out, err
}

// insertionRanks reads each event's serial, which the backend takes from
// a sequence as it stores the event, from the id index (id[:8] serial).
// Two events sharing the first 8 bytes of their id get the first serial
// found; that costs only their relative order.
func (s *badgerStore) insertionRanks(_ context.Context, ids []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(ids))
	err := s.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		var prefix [keyPrefixLen + keyHeadLen]byte
		prefix[0] = keyID
		for _, id := range ids {
			if len(id) < 2*keyHeadLen {
				continue
			}
			if _, err := hex.Decode(prefix[keyPrefixLen:], []byte(id[:2*keyHeadLen])); err != nil {
				continue
			}
			it.Seek(prefix[:])
			if !it.ValidForPrefix(prefix[:]) {
				continue
			}
			k := it.Item().Key()
			if len(k) != len(prefix)+keySerialLen {
				continue
			}
			out[id] = uint64(binary.BigEndian.Uint32(k[len(prefix):]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("buzz-relay: read serials: %w", err)
	}
	return out, nil
}

// pgStore is the PostgreSQL backend with the order of its rows.
type pgStore struct {
	*postgresql.PostgresBackend
}

// insertionRanks reads buzz_xid, the transaction that stored each row:
// one event is stored per transaction, in the order a connection sent
// them.
func (s pgStore) insertionRanks(ctx context.Context, ids []string) (map[string]uint64, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, buzz_xid::text FROM event WHERE id = ANY($1)`, pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("buzz-relay: read insertion order: %w", err)
	}
	defer rows.Close()
	out := make(map[string]uint64, len(ids))
	for rows.Next() {
		var id string
		var xid *string
		if err := rows.Scan(&id, &xid); err != nil {
			return nil, fmt.Errorf("buzz-relay: read insertion order: %w", err)
		}
		if xid == nil {
			continue // stored before the column existed
		}
		if n, err := strconv.ParseUint(*xid, 10, 64); err == nil {
			out[id] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("buzz-relay: read insertion order: %w", err)
	}
	return out, nil
}
