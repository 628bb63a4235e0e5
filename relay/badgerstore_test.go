package relay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"buzzbox/internal/workspace"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	eventbadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// These tests pin badgerStore to eventstore's badger backend: same bytes
// under the same keys, and the backend reads, deletes and replaces what
// badgerStore writes. They must pass before eventstore is upgraded.

// openPlain opens eventstore's own badger backend on dir, in memory if
// dir is empty.
func openPlain(t testing.TB, dir string) *eventbadger.BadgerBackend {
	t.Helper()
	b, err := newPlain(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func newPlain(dir string) (*eventbadger.BadgerBackend, error) {
	b := &eventbadger.BadgerBackend{
		Path:     dir,
		MaxLimit: maxQueryLimit,
		BadgerOptionsModifier: func(o badger.Options) badger.Options {
			o = o.WithLogger(nil)
			if dir == "" {
				o = o.WithInMemory(true).WithMemTableSize(8 << 20)
			}
			return o
		},
	}
	return b, b.Init()
}

type kv struct{ k, v []byte }

// dump returns every live key and value of db in key order.
func dump(t testing.TB, db *badger.DB) []kv {
	t.Helper()
	var out []kv
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out = append(out, kv{it.Item().KeyCopy(nil), v})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffDumps describes the first difference between two dumps, or "".
func diffDumps(ours, theirs []kv) string {
	short := func(b []byte) string {
		if len(b) > 48 {
			return fmt.Sprintf("%x…(%d bytes)", b[:48], len(b))
		}
		return fmt.Sprintf("%x", b)
	}
	for i := 0; i < max(len(ours), len(theirs)); i++ {
		switch {
		case i >= len(ours):
			return fmt.Sprintf("key %s only in eventstore's", short(theirs[i].k))
		case i >= len(theirs):
			return fmt.Sprintf("key %s only in ours", short(ours[i].k))
		case !bytes.Equal(ours[i].k, theirs[i].k):
			return fmt.Sprintf("key %d: ours %s, eventstore's %s", i, short(ours[i].k), short(theirs[i].k))
		case !bytes.Equal(ours[i].v, theirs[i].v):
			return fmt.Sprintf("value of %s: ours %s, eventstore's %s", short(ours[i].k), short(ours[i].v), short(theirs[i].v))
		}
	}
	return ""
}

// sameEvent compares two events, a nil tag list equal to an empty one.
func sameEvent(a, b *nostr.Event) bool {
	x, y := *a, *b
	if x.Tags == nil {
		x.Tags = nostr.Tags{}
	}
	if y.Tags == nil {
		y.Tags = nostr.Tags{}
	}
	return reflect.DeepEqual(x, y)
}

const corpusTime = 1_750_000_000

// corpusEvent is one event of the store corpus and whether the encoding
// can hold it.
type corpusEvent struct {
	name string
	ev   nostr.Event
	ok   bool
}

func storeCorpus(t testing.TB) []corpusEvent {
	t.Helper()
	k1, k2 := newKey(t), newKey(t)
	sum := sha256.Sum256([]byte("some event"))
	eid := hex.EncodeToString(sum[:])
	uuid := "3f2c6a1e-8b7d-4c1a-9e2f-5a6b7c8d9e0f"
	n := 0
	ev := func(k testKey, kind int, content string, tags ...nostr.Tag) nostr.Event {
		n++
		e := nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Timestamp(corpusTime + n), Tags: tags}
		if err := e.Sign(k.sk); err != nil {
			t.Fatal(err)
		}
		return e
	}
	many := func(n int, f func(i int) nostr.Tag) nostr.Tags {
		var tags nostr.Tags
		for i := range n {
			tags = append(tags, f(i))
		}
		return tags
	}
	items := func(n int) nostr.Tag {
		tag := nostr.Tag{"l"}
		for i := 1; i < n; i++ {
			tag = append(tag, fmt.Sprintf("item %d ✓", i))
		}
		return tag
	}
	// Over dedupeLinearMax tags, with repeated values and a value first
	// held by a long-named tag, which keeps it out of the index.
	follows := many(300, func(i int) nostr.Tag {
		s := sha256.Sum256([]byte{byte(i % 250)}) // 50 repeated values
		return nostr.Tag{"p", hex.EncodeToString(s[:]), "wss://r.example", fmt.Sprint(i)}
	})
	follows[3] = nostr.Tag{"alt", "shared"}
	follows[200] = nostr.Tag{"t", "shared"}
	at := func(e nostr.Event, ts int64) nostr.Event {
		e.CreatedAt = nostr.Timestamp(ts)
		return e
	}
	set := func(e nostr.Event, kind int) nostr.Event {
		e.Kind = kind
		return e
	}
	plain := ev(k1, 1, "hello")
	return []corpusEvent{
		{"plain", plain, true},
		{"nil tags", ev(k1, 1, "no tags"), true},
		{"empty content", ev(k1, 1, "", nostr.Tag{"t", "empty"}), true},
		{"unicode", ev(k2, 1, "héllo wörld 🐝 日本語 \x00 nul", nostr.Tag{"t", "ünïcødé"}, nostr.Tag{"subject", "🐝"}), true},
		{"invalid utf-8", ev(k2, 1, "\xff\xfe\xfd", nostr.Tag{"t", "\xc3\x28"}), true},
		{"60 KiB content", ev(k1, 1, strings.Repeat("0123456789abcdef", 60<<10/16)), true},
		{"largest content", ev(k1, 1, strings.Repeat("z", maxBinContent)), true},
		{"channel message", ev(k2, 9, "in a channel", nostr.Tag{"h", uuid}, nostr.Tag{"e", eid, "", "reply"}, nostr.Tag{"p", k1.pk}), true},
		{"e and p with one value", ev(k1, 1, "dedupe", nostr.Tag{"e", k2.pk}, nostr.Tag{"p", k2.pk}), true},
		{"long-named tag first", ev(k1, 1, "dedupe by value", nostr.Tag{"alt", "foo"}, nostr.Tag{"t", "foo"}), true},
		{"uppercase hex", ev(k1, 1, "upper", nostr.Tag{"p", strings.ToUpper(k2.pk)}), true},
		{"hex prefixes", ev(k1, 1, "hex quirks",
			nostr.Tag{"x", eid + "z"}, nostr.Tag{"y", eid + "zz"}, nostr.Tag{"z", eid + "ab"},
			nostr.Tag{"w", eid[:63]}, nostr.Tag{"v", eid + "a"}), true},
		{"addresses", ev(k2, 1, "addresses",
			nostr.Tag{"a", "30023:" + k1.pk + ":slug"},
			nostr.Tag{"a", "30023:" + k1.pk + ":"},
			nostr.Tag{"a", "99999:" + k1.pk + ":x"},
			nostr.Tag{"a", "1:" + k1.pk + ":x:y"},
			nostr.Tag{"a", "+1:" + k1.pk + ":x"},
			nostr.Tag{"a", "007:" + strings.ToUpper(k1.pk) + ":d"},
			nostr.Tag{"a", "1:" + k1.pk + "z:d"},
			nostr.Tag{"a", ":" + k1.pk + ":d"}), true},
		{"value lengths", ev(k1, 1, "lengths",
			nostr.Tag{"t", strings.Repeat("a", indexedTagValue)},
			nostr.Tag{"t", strings.Repeat("b", indexedTagValue+1)},
			nostr.Tag{"t", ""}, nostr.Tag{"t"}, nostr.Tag{}, nostr.Tag{"", "v"}, nostr.Tag{"tt", "v2"}), true},
		{"255 items", ev(k1, 1, "wide tag", items(maxBinTagItems)), true},
		{"long tag item", ev(k1, 1, "long item", nostr.Tag{"t", strings.Repeat("é", 30000)}, nostr.Tag{"alt", strings.Repeat("y", maxBinTagItem)}), true},
		{"follow list", ev(k1, 3, "", follows...), true},
		{"metadata", ev(k1, 0, `{"name":"k1"}`), true},
		{"relay list", ev(k1, 10002, "", nostr.Tag{"r", "wss://relay.example"}, nostr.Tag{"r", "wss://other.example", "read"}), true},
		{"article", ev(k1, 30023, "long form", nostr.Tag{"d", "slug"}, nostr.Tag{"t", "go"}), true},
		{"channel metadata", ev(k2, 39000, "", nostr.Tag{"d", uuid}, nostr.Tag{"name", "general"}), true},
		{"channel members", ev(k2, 39002, "", nostr.Tag{"d", uuid}, nostr.Tag{"p", k1.pk, "", "admin"}, nostr.Tag{"p", k2.pk}), true},
		{"ephemeral kind", ev(k1, 20001, "typing"), true},
		{"largest kind", set(ev(k1, 1, "kind"), maxBinKind), true},
		{"created_at 0", at(ev(k1, 1, "epoch"), 0), true},
		{"largest created_at", at(ev(k1, 1, "2106"), maxBinCreatedAt), true},
		{"duplicate", plain, true},
		{"content too long", ev(k1, 1, strings.Repeat("z", maxBinContent+1)), false},
		{"too many items", ev(k1, 1, "", items(maxBinTagItems+1)), false},
		{"tag item too long", ev(k1, 1, "", nostr.Tag{"t", strings.Repeat("y", maxBinTagItem+1)}), false},
		{"too many tags", ev(k1, 1, "", many(maxBinTags+1, func(int) nostr.Tag { return nostr.Tag{"x"} })...), false},
		{"kind too big", set(ev(k1, 1, ""), maxBinKind+1), false},
		{"created_at too big", at(ev(k1, 1, ""), maxBinCreatedAt+1), false},
	}
}

// replaceSteps returns replaceable and addressable events to hand to
// ReplaceEvent in order, newer and older versions mixed.
func replaceSteps(t testing.TB) []nostr.Event {
	t.Helper()
	k := newKey(t)
	ev := func(kind int, ts int64, content string, tags ...nostr.Tag) nostr.Event {
		e := nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Timestamp(ts), Tags: tags}
		if err := e.Sign(k.sk); err != nil {
			t.Fatal(err)
		}
		return e
	}
	d := func(v string) nostr.Tag { return nostr.Tag{"d", v} }
	return []nostr.Event{
		ev(0, corpusTime+10, "v1"),
		ev(0, corpusTime+20, "v2"),
		ev(0, corpusTime+5, "older, ignored"),
		ev(0, corpusTime+20, "as old, one of two ids wins"),
		ev(0, corpusTime+20, "as old, the other id"),
		ev(10002, corpusTime+1, "", nostr.Tag{"r", "wss://a.example"}),
		ev(10002, corpusTime+2, "", nostr.Tag{"r", "wss://b.example"}),
		ev(30023, corpusTime+1, "a1", d("a"), nostr.Tag{"t", "go"}),
		ev(30023, corpusTime+1, "b1", d("b")),
		ev(30023, corpusTime+2, "a2", d("a")),
		ev(30023, corpusTime+1, "a0, ignored", d("a")),
		ev(39000, corpusTime+1, "", d("6b1d0f1c-1111-4c1a-9e2f-5a6b7c8d9e0f"), nostr.Tag{"name", "one"}),
		ev(39000, corpusTime+3, "", d("6b1d0f1c-1111-4c1a-9e2f-5a6b7c8d9e0f"), nostr.Tag{"name", "two"}),
		ev(39002, corpusTime+3, "", d("6b1d0f1c-1111-4c1a-9e2f-5a6b7c8d9e0f"), nostr.Tag{"p", k.pk}),
		// Run records walk the d tag's index (dFirstKind), not the kind's.
		ev(workspace.KindWorkflowRun, corpusTime+1, "r1 v1", d("7c2e1a2d-0000-4000-8000-000000000001"), nostr.Tag{"h", "ch"}),
		ev(workspace.KindWorkflowRun, corpusTime+1, "r2 v1", d("7c2e1a2d-0000-4000-8000-000000000002"), nostr.Tag{"h", "ch"}),
		ev(workspace.KindWorkflowRun, corpusTime+2, "r1 v2", d("7c2e1a2d-0000-4000-8000-000000000001"), nostr.Tag{"h", "ch"}),
		ev(workspace.KindWorkflowRun, corpusTime+1, "r1 older, ignored", d("7c2e1a2d-0000-4000-8000-000000000001"), nostr.Tag{"h", "ch"}),
		ev(workspace.KindWorkflowRun, corpusTime+3, "r2 v2", d("7c2e1a2d-0000-4000-8000-000000000002"), nostr.Tag{"h", "ch"}),
		ev(workspace.KindWorkflowRun, corpusTime+3, "r1 v3, as old as r2 v2", d("7c2e1a2d-0000-4000-8000-000000000001"), nostr.Tag{"h", "ch"}),
	}
}

// TestBadgerStoreConcurrentReplaces replaces many records of one author's
// kind at once, as the workflow engine does with its runs: none fails
// with a badger transaction conflict, and one version of each is left.
func TestBadgerStoreConcurrentReplaces(t *testing.T) {
	ctx := context.Background()
	s := &badgerStore{openPlain(t, t.TempDir())}
	k := newKey(t)
	const records, versions = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, records*versions)
	for r := range records {
		wg.Go(func() {
			for v := range versions {
				ev := nostr.Event{Kind: workspace.KindWorkflowRun, Content: fmt.Sprint(v), CreatedAt: nostr.Timestamp(corpusTime + v),
					Tags: nostr.Tags{{"d", fmt.Sprintf("8d3f2b3e-0000-4000-8000-%012d", r)}}}
				ev.Sign(k.sk)
				if err := s.ReplaceEvent(ctx, &ev); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("ReplaceEvent: %v", err)
	}
	ids := queryIDs(t, s, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Limit: 1000})
	if len(ids) != records {
		t.Fatalf("%d records left; want %d, one version each", len(ids), records)
	}
	// A d that is a prefix of others' replaces none of them (the d tag's
	// index is walked by prefix). eventstore's own backend gets this
	// wrong, so TestBadgerStoreSameBytes cannot hold it.
	short := nostr.Event{Kind: workspace.KindWorkflowRun, CreatedAt: nostr.Timestamp(corpusTime + versions + 1), Tags: nostr.Tags{{"d", "8d3f2b3e-0000-4000-8000-00000000000"}}}
	short.Sign(k.sk)
	if err := s.ReplaceEvent(ctx, &short); err != nil {
		t.Fatal(err)
	}
	if ids := queryIDs(t, s, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Limit: 1000}); len(ids) != records+1 {
		t.Fatalf("%d records after a d that prefixes others; want %d", len(ids), records+1)
	}
	// Nor does a record with another's d in a later tag.
	other := nostr.Event{Kind: workspace.KindWorkflowRun, CreatedAt: nostr.Timestamp(corpusTime + versions + 2),
		Tags: nostr.Tags{{"d", "8d3f2b3e-0000-4000-8000-999999999999"}, {"h", fmt.Sprintf("8d3f2b3e-0000-4000-8000-%012d", 0)}}}
	other.Sign(k.sk)
	if err := s.ReplaceEvent(ctx, &other); err != nil {
		t.Fatal(err)
	}
	again := nostr.Event{Kind: workspace.KindWorkflowRun, CreatedAt: nostr.Timestamp(corpusTime + versions + 3), Tags: nostr.Tags{{"d", fmt.Sprintf("8d3f2b3e-0000-4000-8000-%012d", 0)}}}
	again.Sign(k.sk)
	if err := s.ReplaceEvent(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if ids := queryIDs(t, s, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Limit: 1000}); len(ids) != records+2 {
		t.Fatalf("%d records after one naming another's d in a later tag, and that one replaced; want %d", len(ids), records+2)
	}
}

// TestBadgerStoreSameBytes saves a varied corpus through badgerStore and
// through eventstore's own SaveEvent into two fresh databases, then runs
// the same ReplaceEvent steps through each: every key and value must be
// the same, and so must every refusal.
func TestBadgerStoreSameBytes(t *testing.T) {
	ctx := context.Background()
	ours := &badgerStore{openPlain(t, t.TempDir())}
	theirs := openPlain(t, t.TempDir())
	for _, c := range storeCorpus(t) {
		errO, errT := ours.SaveEvent(ctx, &c.ev), theirs.SaveEvent(ctx, &c.ev)
		if (errO == nil) != (errT == nil) || errors.Is(errO, eventstore.ErrDupEvent) != errors.Is(errT, eventstore.ErrDupEvent) {
			t.Fatalf("%s: SaveEvent = %v; eventstore's = %v", c.name, errO, errT)
		}
		if (errO == nil || errors.Is(errO, eventstore.ErrDupEvent)) != c.ok {
			t.Fatalf("%s: SaveEvent = %v; want ok %v", c.name, errO, c.ok)
		}
	}
	if d := diffDumps(dump(t, ours.DB), dump(t, theirs.DB)); d != "" {
		t.Fatalf("after SaveEvent: %s", d)
	}
	for i, ev := range replaceSteps(t) {
		errO, errT := ours.ReplaceEvent(ctx, &ev), theirs.ReplaceEvent(ctx, &ev)
		if errO != nil || errT != nil {
			t.Fatalf("step %d: ReplaceEvent = %v; eventstore's = %v", i, errO, errT)
		}
		if d := diffDumps(dump(t, ours.DB), dump(t, theirs.DB)); d != "" {
			t.Fatalf("after ReplaceEvent step %d (kind %d %q): %s", i, ev.Kind, ev.Content, d)
		}
	}
}

// TestBadgerStoreRefuses checks what badgerStore refuses beyond the
// backend: fields that are not hex of their size, negative numbers.
func TestBadgerStoreRefuses(t *testing.T) {
	s := &badgerStore{openPlain(t, "")}
	k := newKey(t)
	good := signed(t, k, 1, "x")
	for name, edit := range map[string]func(*nostr.Event){
		"short id":           func(e *nostr.Event) { e.ID = e.ID[:62] },
		"long id":            func(e *nostr.Event) { e.ID += "00" },
		"id not hex":         func(e *nostr.Event) { e.ID = "zz" + e.ID[2:] },
		"pubkey not hex":     func(e *nostr.Event) { e.PubKey = e.PubKey[:63] + "g" },
		"short sig":          func(e *nostr.Event) { e.Sig = e.Sig[:64] },
		"negative kind":      func(e *nostr.Event) { e.Kind = -1 },
		"negative createdAt": func(e *nostr.Event) { e.CreatedAt = -1 },
	} {
		ev := good
		edit(&ev)
		if err := s.SaveEvent(context.Background(), &ev); err == nil {
			t.Errorf("SaveEvent(%s) = nil; want an error", name)
		}
		if err := s.ReplaceEvent(context.Background(), &ev); err == nil {
			t.Errorf("ReplaceEvent(%s) = nil; want an error", name)
		}
	}
	if d := dump(t, s.DB); len(d) != 1 {
		t.Fatalf("store holds %d keys after refusals; want only the version key", len(d))
	}
}

// TestBadgerStoreReadByBackend saves events through badgerStore and reads
// them with the backend's QueryEvents and CountEvents by id, author, kind,
// tag and time range; then the backend's DeleteEvent removes every key
// badgerStore wrote, and each side replaces the other's versions.
func TestBadgerStoreReadByBackend(t *testing.T) {
	ctx := context.Background()
	opened, err := openStore(Config{DataDir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := opened.(*badgerStore)
	t.Cleanup(s.Close)
	k1, k2 := newKey(t), newKey(t)
	uuid := "0c5e2a52-7f3b-4f7e-9d0a-1b2c3d4e5f60"
	// The backend's tag index holds values, not names: a filter on #h
	// also returns events with that value in a d tag, which f.Matches
	// below would not expect. So the state's d differs from the h.
	stateID := "7d1e2a52-7f3b-4f7e-9d0a-1b2c3d4e5f61"
	var saved []nostr.Event
	for i := range 60 {
		k := []testKey{k1, k2}[i%2]
		kind := []int{1, 9, 7, 1111}[i%4]
		tags := nostr.Tags{{"t", fmt.Sprintf("topic%d", i%3)}}
		if kind == 9 {
			tags = append(tags, nostr.Tag{"h", uuid})
		}
		if i > 0 {
			tags = append(tags, nostr.Tag{"e", saved[i-1].ID}, nostr.Tag{"p", saved[i-1].PubKey})
		}
		if i%5 == 0 {
			tags = append(tags, nostr.Tag{"a", "30023:" + k1.pk + ":slug"})
		}
		ev := nostr.Event{Kind: kind, Content: fmt.Sprintf("event %d ✓", i), CreatedAt: corpusTime + nostr.Timestamp(i), Tags: tags}
		if err := ev.Sign(k.sk); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		saved = append(saved, ev)
	}
	for _, c := range []struct {
		k    testKey
		kind int
		tags nostr.Tags
	}{{k1, 0, nil}, {k1, 30023, nostr.Tags{{"d", "slug"}}}, {k2, 39000, nostr.Tags{{"d", stateID}}}} {
		ev := nostr.Event{Kind: c.kind, Content: "state", CreatedAt: corpusTime + 100, Tags: c.tags}
		if err := ev.Sign(c.k.sk); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		saved = append(saved, ev)
	}

	since, until := nostr.Timestamp(corpusTime+10), nostr.Timestamp(corpusTime+20)
	filters := []nostr.Filter{
		{Authors: []string{k1.pk}},
		{Authors: []string{k2.pk}},
		{Kinds: []int{9}},
		{Kinds: []int{0, 30023, 39000}},
		{Authors: []string{k1.pk}, Kinds: []int{1}},
		{Tags: nostr.TagMap{"e": {saved[7].ID}}},
		{Tags: nostr.TagMap{"p": {k1.pk}}},
		{Tags: nostr.TagMap{"h": {uuid}}},
		{Tags: nostr.TagMap{"d": {"slug"}}},
		{Tags: nostr.TagMap{"d": {stateID}}, Kinds: []int{39000}},
		{Tags: nostr.TagMap{"t": {"topic1"}}},
		{Tags: nostr.TagMap{"a": {"30023:" + k1.pk + ":slug"}}},
		{Since: &since, Until: &until},
		{Until: &since},
		{Since: &until, Kinds: []int{9}, Tags: nostr.TagMap{"h": {uuid}}},
		{IDs: []string{saved[0].ID, saved[33].ID, saved[len(saved)-1].ID}},
	}
	for _, ev := range saved {
		filters = append(filters, nostr.Filter{IDs: []string{ev.ID}})
	}
	for _, f := range filters {
		f.Limit = maxQueryLimit
		var want []string
		for _, ev := range saved {
			if f.Matches(&ev) {
				want = append(want, ev.ID)
			}
		}
		got := queryIDs(t, s, f)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("QueryEvents(%v) = %d events; want %d", f, len(got), len(want))
		}
		if n, err := s.CountEvents(ctx, f); err != nil || n != int64(len(want)) {
			t.Errorf("CountEvents(%v) = %d, %v; want %d", f, n, err, len(want))
		}
	}
	// The id query also runs the backend's decoder on every field.
	for _, ev := range saved {
		ch, err := s.QueryEvents(ctx, nostr.Filter{IDs: []string{ev.ID}})
		if err != nil {
			t.Fatal(err)
		}
		for got := range ch {
			if !sameEvent(got, &ev) {
				t.Errorf("QueryEvents(id) = %v; want %v", got, ev)
			}
		}
	}

	for _, ev := range saved {
		if err := s.DeleteEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := queryIDs(t, s, nostr.Filter{Limit: maxQueryLimit}); len(got) != 0 {
		t.Fatalf("after DeleteEvent of all, QueryEvents returns %d events", len(got))
	}
	if d := dump(t, s.DB); len(d) != 1 || d[0].k[0] != 255 {
		t.Fatalf("after DeleteEvent of all, %d keys left (first %x); want only the version key", len(d), d[0].k)
	}

	// Each side replaces what the other saved.
	for _, kind := range []int{0, 30023} {
		var tags nostr.Tags
		if kind == 30023 {
			tags = nostr.Tags{{"d", "slug"}}
		}
		versions := make([]nostr.Event, 3)
		for i := range versions {
			versions[i] = nostr.Event{Kind: kind, Content: fmt.Sprint("v", i), CreatedAt: corpusTime + nostr.Timestamp(i), Tags: tags}
			if err := versions[i].Sign(k1.sk); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SaveEvent(ctx, &versions[0]); err != nil {
			t.Fatal(err)
		}
		if err := s.BadgerBackend.ReplaceEvent(ctx, &versions[1]); err != nil {
			t.Fatal(err)
		}
		f := nostr.Filter{Kinds: []int{kind}, Authors: []string{k1.pk}}
		if got := queryIDs(t, s, f); !slices.Equal(got, []string{versions[1].ID}) {
			t.Fatalf("kind %d: eventstore's ReplaceEvent over ours left %v; want v1 only", kind, got)
		}
		if err := s.ReplaceEvent(ctx, &versions[2]); err != nil {
			t.Fatal(err)
		}
		if got := queryIDs(t, s, f); !slices.Equal(got, []string{versions[2].ID}) {
			t.Fatalf("kind %d: our ReplaceEvent over eventstore's left %v; want v2 only", kind, got)
		}
		if err := s.ReplaceEvent(ctx, &versions[0]); err != nil {
			t.Fatal(err)
		}
		if got := queryIDs(t, s, f); !slices.Equal(got, []string{versions[2].ID}) {
			t.Fatalf("kind %d: an older version replaced v2: %v", kind, got)
		}
		if err := s.DeleteEvent(ctx, &versions[2]); err != nil {
			t.Fatal(err)
		}
	}
	if d := dump(t, s.DB); len(d) != 1 {
		t.Fatalf("after replacing and deleting, %d keys left; want only the version key", len(d))
	}
}

// queryIDs runs f through the backend's QueryEvents and returns the ids,
// sorted.
func queryIDs(t testing.TB, s *badgerStore, f nostr.Filter) []string {
	t.Helper()
	ch, err := s.QueryEvents(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ev := range ch {
		ids = append(ids, ev.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestBadgerStoreSharesDataDir opens a data directory written by the plain
// backend with openStore, adds and replaces events, and opens it with the
// plain backend again: every event is there.
func TestBadgerStoreSharesDataDir(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir()}
	k := newKey(t)
	var want []string
	add := func(s eventstore.Store, kind int, content string) nostr.Event {
		ev := nostr.Event{Kind: kind, Content: content, CreatedAt: corpusTime + nostr.Timestamp(len(want)), Tags: nostr.Tags{{"t", "x"}}}
		if err := ev.Sign(k.sk); err != nil {
			t.Fatal(err)
		}
		save := s.SaveEvent
		if kind == 0 {
			save = s.ReplaceEvent
		}
		if err := save(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	plainDir := filepath.Join(cfg.DataDir, "events")
	quiet := func(o badger.Options) badger.Options { return o.WithLogger(nil) }
	plain := &eventbadger.BadgerBackend{Path: plainDir, BadgerOptionsModifier: quiet}
	if err := plain.Init(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		want = append(want, add(plain, 1, fmt.Sprint("plain ", i)).ID)
	}
	meta := add(plain, 0, "plain metadata")
	plain.Close()

	s, err := openStore(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ours := s.(*badgerStore)
	if got := queryIDs(t, ours, nostr.Filter{Kinds: []int{1}}); len(got) != 5 {
		t.Fatalf("badgerStore reads %d of the plain backend's 5 events", len(got))
	}
	for i := range 5 {
		want = append(want, add(s, 1, fmt.Sprint("ours ", i)).ID)
	}
	newMeta := add(s, 0, "our metadata")
	s.Close()

	plain = &eventbadger.BadgerBackend{Path: plainDir, BadgerOptionsModifier: quiet}
	if err := plain.Init(); err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ch, err := plain.QueryEvents(ctx, nostr.Filter{Authors: []string{k.pk}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range ch {
		got = append(got, ev.ID)
	}
	want = append(want, newMeta.ID)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("plain backend reads %d events after badgerStore wrote; want %d (metadata %s replaced by %s)", len(got), len(want), meta.ID[:8], newMeta.ID[:8])
	}
}

// FuzzBadgerStore saves one event through badgerStore and through the
// backend's SaveEvent into two in-memory databases: both must accept or
// refuse it, hold the same keys and values, return it unchanged through
// the backend's decoder (QueryEvents), decode the backend's encoding to
// it with decodeEvent, and be empty again after the backend's DeleteEvent.
// Tags come from tags: tags split at \x1e, items at \x1f ("" is a tag of
// no items).
func FuzzBadgerStore(f *testing.F) {
	pk := strings.Repeat("ab", 32)
	f.Add([]byte("seed"), uint32(corpusTime), uint16(1), "hello", "t\x1fgo")
	f.Add([]byte{}, uint32(0), uint16(0), "", "")
	f.Add([]byte{1}, uint32(math.MaxUint32), uint16(math.MaxUint16), "🐝\x00\xff", "\x1ed\x1fslug\x1e")
	f.Add([]byte{2}, uint32(7), uint16(30023), "x", "d\x1f30023:"+pk+":slug\x1ea\x1f1:"+pk+"z:d\x1ea\x1f1:"+pk+":x:y")
	f.Add([]byte{3}, uint32(7), uint16(3), "", "p\x1f"+pk+"\x1fwss://r\x1ep\x1f"+strings.ToUpper(pk)+"\x1ee\x1f"+pk+"zz\x1ex\x1f"+pk+"q")
	f.Add([]byte{4}, uint32(9), uint16(9), "", "alt\x1ffoo\x1et\x1ffoo\x1eh\x1f"+strings.Repeat("u", 101)+"\x1e\x1f")
	f.Add([]byte{5}, uint32(9), uint16(1), strings.Repeat("c", maxBinContent+1), "")
	// Deletions leave tombstones that every later dump must step over;
	// fresh databases every fuzzReopen inputs keep the fuzzer fast.
	const fuzzReopen = 100
	var (
		ours   *badgerStore
		theirs *eventbadger.BadgerBackend
		runs   int
	)
	closeBoth := func() {
		if ours != nil {
			ours.Close()
			theirs.Close()
		}
	}
	f.Cleanup(closeBoth)
	f.Fuzz(func(t *testing.T, seed []byte, createdAt uint32, kind uint16, content, tags string) {
		if runs%fuzzReopen == 0 {
			closeBoth()
			o, err1 := newPlain("")
			p, err2 := newPlain("")
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			ours, theirs = &badgerStore{o}, p
		}
		runs++
		checkBothStores(t, ours, theirs, seed, createdAt, kind, content, tags)
	})
}

// checkBothStores is FuzzBadgerStore's body.
func checkBothStores(t *testing.T, ours *badgerStore, theirs *eventbadger.BadgerBackend, seed []byte, createdAt uint32, kind uint16, content, tags string) {
	ctx := context.Background()
	id := sha256.Sum256([]byte(string(seed) + content))
	sig := sha512.Sum512(seed)
	key := sha256.Sum256(seed)
	ev := nostr.Event{
		ID:        hex.EncodeToString(id[:]),
		PubKey:    hex.EncodeToString(key[:]),
		Sig:       hex.EncodeToString(sig[:]),
		CreatedAt: nostr.Timestamp(createdAt),
		Kind:      int(kind),
		Content:   content,
	}
	if tags != "" {
		for _, tag := range strings.Split(tags, "\x1e") {
			if tag == "" {
				ev.Tags = append(ev.Tags, nostr.Tag{})
			} else {
				ev.Tags = append(ev.Tags, strings.Split(tag, "\x1f"))
			}
		}
	}

	if b, err := encodeEvent(&ev); err == nil {
		var back nostr.Event
		if err := decodeEvent(b, &back); err != nil || !sameEvent(&back, &ev) {
			t.Fatalf("decodeEvent(encodeEvent(ev)) = %v, %v; want %v", back, err, ev)
		}
	}
	errO, errT := ours.SaveEvent(ctx, &ev), theirs.SaveEvent(ctx, &ev)
	if (errO == nil) != (errT == nil) {
		t.Fatalf("SaveEvent = %v; eventstore's = %v", errO, errT)
	}
	if errO != nil {
		return
	}
	theirDump := dump(t, theirs.DB)
	if d := diffDumps(dump(t, ours.DB), theirDump); d != "" {
		t.Fatal(d)
	}
	for _, e := range theirDump {
		if e.k[0] != keyRaw {
			continue
		}
		var back nostr.Event
		if err := decodeEvent(e.v, &back); err != nil || !sameEvent(&back, &ev) {
			t.Fatalf("decodeEvent(eventstore's encoding) = %v, %v; want %v", back, err, ev)
		}
	}
	ch, err := ours.QueryEvents(ctx, nostr.Filter{IDs: []string{ev.ID}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for got := range ch {
		n++
		if !sameEvent(got, &ev) {
			t.Fatalf("eventstore decoded %v; want %v", got, ev)
		}
	}
	if n != 1 {
		t.Fatalf("QueryEvents(id) = %d events; want 1", n)
	}
	if err := ours.DeleteEvent(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if err := theirs.DeleteEvent(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if d := dump(t, ours.DB); len(d) != 1 {
		t.Fatalf("after DeleteEvent %d keys left; want only the version key", len(d))
	}
}

// FuzzDecodeEvent decodes arbitrary bytes: decodeEvent must not panic, and
// what it accepts must encode back to the same bytes.
func FuzzDecodeEvent(f *testing.F) {
	k := nostr.GeneratePrivateKey()
	for _, ev := range []nostr.Event{
		{Kind: 1, Content: "hi", Tags: nostr.Tags{{"t", "go"}, {}, {"e", strings.Repeat("0", 64), ""}}},
		{Kind: 30023, Content: "", Tags: nostr.Tags{{"d", "x"}}},
	} {
		ev.Sign(k)
		b, err := encodeEvent(&ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add(make([]byte, binContentOffset+binTagCountLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev nostr.Event
		if decodeEvent(b, &ev) != nil {
			return
		}
		again, err := encodeEvent(&ev)
		if err != nil {
			t.Fatalf("encodeEvent(decodeEvent(b)): %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("encodeEvent(decodeEvent(b)) = %x; want %x", again, b)
		}
	})
}

// BenchmarkSaveEvent saves kind-1 events with a few tags straight into
// each store, without the relay around it:
//
//	go test ./relay -run '^$' -bench SaveEvent -benchmem
func BenchmarkSaveEvent(b *testing.B) {
	k := newKey(b)
	for _, name := range []string{"store=eventstore", "store=buzz"} {
		b.Run(name, func(b *testing.B) {
			plain := openPlain(b, b.TempDir())
			var s eventstore.Store = plain
			if name == "store=buzz" {
				s = &badgerStore{plain}
			}
			evs := make([]nostr.Event, b.N)
			for i := range evs {
				evs[i] = signed(b, k, 1, fmt.Sprint("message ", i), nostr.Tag{"h", "3f2c6a1e-8b7d-4c1a-9e2f-5a6b7c8d9e0f"}, nostr.Tag{"p", k.pk})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range evs {
				if err := s.SaveEvent(context.Background(), &evs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
