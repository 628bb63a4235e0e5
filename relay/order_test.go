package relay

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestSameSecondInStoreOrder: events sharing a created_at come back from
// a REQ newest stored first, as stored, not by id, from badger and from
// PostgreSQL alike, after the relay restarts too; a second page (until
// the oldest second of the first) keeps the same order.
func TestSameSecondInStoreOrder(t *testing.T) {
	t.Run("badger", func(t *testing.T) { sameSecondOrder(t, "") })
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a PostgreSQL server")
		}
		sameSecondOrder(t, startPostgres(t))
	})
}

func sameSecondOrder(t *testing.T, db string) {
	owner := newKey(t)
	dir := t.TempDir()
	cfg := Config{DataDir: dir, DB: db, Owner: owner.pk, EventsPerSecond: 1e6, EventBurst: 1e6}
	r := startRelay(t, cfg)
	w := dialWS(t, r.URL(), nil)
	if ok, reason := w.auth(owner, r.URL()); !ok {
		t.Fatalf("AUTH: %s", reason)
	}
	create := signed(t, owner, 9007, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "order"})
	w.send("EVENT", create)
	if ok, reason := w.ok(create.ID); !ok {
		t.Fatalf("create the channel: %s", reason)
	}
	const n = 60 // over 3 seconds, 20 in each
	at := nostr.Now() - 100
	var sent []string
	for i := range n {
		ev := nostr.Event{Kind: 9, CreatedAt: at + nostr.Timestamp(i/20), Content: fmt.Sprint("m", i), Tags: nostr.Tags{{"h", chanA}}}
		ev.Sign(owner.sk)
		w.send("EVENT", ev)
		if ok, reason := w.ok(ev.ID); !ok {
			t.Fatalf("publish %d: %s", i, reason)
		}
		sent = append(sent, ev.ID)
	}
	want := slices.Clone(sent)
	slices.Reverse(want)
	read := func(what string, f nostr.Filter) []string {
		w := dialWS(t, r.URL(), nil)
		if ok, reason := w.auth(owner, r.URL()); !ok {
			t.Fatalf("AUTH: %s", reason)
		}
		w.send("REQ", "q", f)
		var got []string
		for {
			label, fields := w.next()
			switch label {
			case "EOSE":
				return got
			case "CLOSED":
				t.Fatalf("%s: REQ closed: %s", what, fields)
			case "EVENT":
				var ev nostr.Event
				if err := json.Unmarshal(fields[1], &ev); err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.ID)
			}
		}
	}
	// The kinds the web client reads a channel with: one index walk per kind.
	f := nostr.Filter{Kinds: []int{9, 40002, 40008, 45001, 45003}, Tags: nostr.TagMap{"h": {chanA}}}
	sameOrder(t, "the channel, newest stored first", read("all", f), want)
	sameOrder(t, "the workspace's messages, by kind", read("kinds", nostr.Filter{Kinds: f.Kinds}), want)
	f.Limit = 30
	sameOrder(t, "a first page of 30", read("page", f), want[:30])
	until := at + 1
	f.Until, f.Limit = &until, 100
	sameOrder(t, "the page until the second it cut", read("older", f), want[20:])
	r.Close()
	r = startRelay(t, cfg)
	f.Until, f.Limit = nil, 0
	sameOrder(t, "after a restart", read("restart", f), want)
}
