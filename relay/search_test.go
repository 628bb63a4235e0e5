package relay

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestSearchKindAmongMany: a search for one kind finds its only match
// when more events of another kind hold the word than a search reads as
// candidates, both ways: messages among forum posts (the index keeps the
// other kinds out) and a forum post among messages (the index asks for
// the kind). The lone match is the longest text, so it scores lowest:
// without the kind in the index query it would not be a candidate.
func TestSearchKindAmongMany(t *testing.T) { searchKindAmongMany(t, "") }

// TestSearchKindAmongManyPostgres is TestSearchKindAmongMany on
// PostgreSQL full text: the message is found reading the newest rows
// first, the forum post through the text index.
func TestSearchKindAmongManyPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	searchKindAmongMany(t, startPostgres(t))
}

// searchWorld is a relay whose store takes events straight, unsigned,
// as the search benchmark's do.
type searchWorld struct {
	r   *Relay
	ctx context.Context
	pk  string
}

func newSearchWorld(t *testing.T, db string) searchWorld {
	owner := newKey(t)
	return searchWorld{startRelay(t, Config{DataDir: t.TempDir(), DB: db, Owner: owner.pk}), internal(context.Background()), owner.pk}
}

func (w searchWorld) save(t *testing.T, kind int, content string, at nostr.Timestamp) *nostr.Event {
	t.Helper()
	ev := searchBenchEvent(w.pk, kind, content, at)
	if err := w.r.store.SaveEvent(w.ctx, ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func (w searchWorld) search(t *testing.T, f nostr.Filter) []*nostr.Event {
	t.Helper()
	evs, err := w.r.searchEvents(w.ctx, f)
	if err != nil {
		t.Fatalf("search %q: %v", f.Search, err)
	}
	return evs
}

func searchKindAmongMany(t *testing.T, db string) {
	w := newSearchWorld(t, db)
	now := nostr.Now()
	const many = 300 // more than a search of limit 5 reads (200 candidates)
	filler := strings.Repeat(" and then some more words", 10)
	for _, tc := range []struct {
		word        string
		bulk, loner int
	}{
		{"quokka", workspace.KindForumPost, workspace.KindStream},
		{"wombat", workspace.KindStream, workspace.KindForumPost},
	} {
		for i := range many {
			w.save(t, tc.bulk, fmt.Sprintf("%s %d", tc.word, i), now-nostr.Timestamp(i))
		}
		want := w.save(t, tc.loner, tc.word+filler, now-many)
		evs := w.search(t, nostr.Filter{Kinds: []int{tc.loner}, Search: tc.word, Limit: 5})
		if len(evs) != 1 || evs[0].ID != want.ID {
			t.Errorf("search %q of kind %d among %d of kind %d: %d events (%s); want the one", tc.word, tc.loner, many, tc.bulk, len(evs), contents(evs))
		}
	}
}

// TestSearchCommonWordPostgres: on PostgreSQL a word in most messages is
// answered from the newest ones (the first look's), a word in one message
// of ten by reading on newest first, a rare one beside the first through
// the text index over all time, and a word in one message of 50 through
// the text index over the span the first look says holds its newest
// matches, then over all time: each answer holds what it should and only
// that.
func TestSearchCommonWordPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	w := newSearchWorld(t, startPostgres(t))
	now := nostr.Now()
	const n = 6000 // more than pgSampleRows
	var newest, herons []*nostr.Event
	for i := range n {
		text := fmt.Sprintf("otter number %d", i)
		if i%10 == 0 {
			// The prefilter finds the word in any case and any of the
			// parser's shapes.
			text += []string{" heron", " HERON-watch", " Heron's"}[i/10%3]
		}
		if i%50 == 0 {
			text += " seal"
		}
		if i == n-1 {
			text += " beaver"
		}
		ev := searchBenchEvent(w.pk, workspace.KindStream, text, now-nostr.Timestamp(i))
		if i%100 == 1 {
			// One message in a hundred is another channel's: a search in
			// it finds too few in the first look and asks the text index
			// with the channel (tagvalues) over all time.
			ev.Tags = nostr.Tags{{"h", chanB}}
			ev.ID = ev.GetID()
		}
		if err := w.r.store.SaveEvent(w.ctx, ev); err != nil {
			t.Fatal(err)
		}
		if i < pgRankWindow {
			newest = append(newest, ev)
		}
		if i%10 == 0 && len(herons) < pgRankWindow {
			herons = append(herons, ev)
		}
	}
	got := w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "heron", Limit: 20})
	if len(got) != 20 {
		t.Errorf("a word in one message of ten: %d events; want 20", len(got))
	}
	for _, ev := range got {
		if !slices.ContainsFunc(herons, func(e *nostr.Event) bool { return e.ID == ev.ID }) {
			t.Errorf("a word in one message of ten: %q is not among its newest %d matches", ev.Content, pgRankWindow)
		}
	}
	got = w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter", Tags: nostr.TagMap{"h": {chanB}}, Limit: 100})
	if len(got) != n/100 {
		t.Errorf("a common word in a channel of one message in a hundred: %d events; want %d", len(got), n/100)
	}
	for _, ev := range got {
		if ev.Tags.FindWithValue("h", chanB) == nil {
			t.Errorf("a common word in another channel: %q is not in it", ev.Content)
		}
	}
	got = w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter", Limit: 20})
	if len(got) != 20 {
		t.Fatalf("common word: %d events; want 20", len(got))
	}
	for _, ev := range got {
		if !slices.ContainsFunc(newest, func(e *nostr.Event) bool { return e.ID == ev.ID }) {
			t.Errorf("common word: %q is not among the newest %d matches", ev.Content, pgRankWindow)
		}
	}
	if got := w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter beaver"}); len(got) != 1 || !strings.HasSuffix(got[0].Content, "beaver") {
		t.Errorf("a rare word beside it: %s; want the oldest message", contents(got))
	}
	seals := w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "seal", Limit: 1000})
	if len(seals) != n/50 {
		t.Errorf("a word in one message of 50: %d events; want %d", len(seals), n/50)
	}
	for _, ev := range seals {
		if !strings.HasSuffix(ev.Content, " seal") {
			t.Errorf("a word in one message of 50 found %q", ev.Content)
		}
	}
}

// TestSearchPrefilterPostgres: every content the text query matches
// passes the prefilter that spares the parse of the rest (pgSearch's
// newest-first reading), whatever the case, the parser's shapes (hyphens,
// apostrophes, addresses, versions) and letters beyond ASCII, on a UTF-8
// database and on the server's default one.
func TestSearchPrefilterPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	dsn := startPostgres(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dsns := []string{dsn}
	if _, err := db.Exec(`CREATE DATABASE buzz_utf8 TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`); err != nil {
		t.Logf("SKIP(loud): no UTF-8 database (%v); the prefilter is checked on the default one only", err)
	} else {
		dsns = append(dsns, strings.Replace(dsn, "/postgres?", "/buzz_utf8?", 1))
	}
	pieces := []string{"heron", "HERON", "Heron", "x86_64", "v1.2.3", "3.14", "don't", "foo-bar", "snake_case",
		"a@b.com", "http://Example.com/Path?q=1", "ÉCOLE", "école", "straße", "STRASSE", "\u212Aelvin", "İstanbul",
		"naïve", "日本語", "CamelCase", "-", "'", ".", "/", "_", "K", "k", "x"}
	seps := []string{" ", "", "-", ".", "'", "\t"}
	rng := rand.New(rand.NewPCG(3, 4))
	type pair struct{ content, query string }
	var pairs []pair
	for range 300 {
		var b strings.Builder
		for j := range 1 + rng.IntN(6) {
			if j > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		c := b.String()
		pairs = append(pairs, pair{c, pieces[rng.IntN(len(pieces))]})
		for _, f := range strings.Fields(c) {
			pairs = append(pairs, pair{c, f}, pair{c, strings.ToUpper(f)})
		}
		if r := []rune(c); len(r) > 2 {
			i := rng.IntN(len(r) - 1)
			pairs = append(pairs, pair{c, string(r[i : i+1+rng.IntN(len(r)-i)])})
		}
	}
	for _, dsn := range dsns {
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		matched := 0
		for _, p := range pairs {
			args := []any{p.content, p.query}
			pre := prefilter([]string{p.query}, func(v any) string {
				args = append(args, v)
				return "$" + strconv.Itoa(len(args))
			})
			if pre == "" {
				pre = "true"
			}
			var match, pass bool
			err := db.QueryRow(`SELECT to_tsvector('simple', $1::text) @@ plainto_tsquery('simple', $2::text), `+pre+` FROM (SELECT lower($1::text) AS lc) x`, args...).Scan(&match, &pass)
			if err != nil {
				t.Fatalf("%q in %q: %v", p.query, p.content, err)
			}
			if match {
				matched++
				if !pass {
					t.Errorf("%s: %q matches %q, which the prefilter (%s, %q) turns away", dsn, p.query, p.content, pre, args[2:])
				}
			}
		}
		if matched < len(pairs)/2 {
			t.Errorf("%s: only %d of %d pairs matched: the test checks too little", dsn, matched, len(pairs))
		}
		t.Logf("%s: %d of %d pairs matched, each passed the prefilter", dsn, matched, len(pairs))
	}
}

// TestSearchCommonWordEmbedded: a word in more messages than
// bleveRecentMatches is asked of the newest days first. Without filters
// those hold its best; in a channel whose messages are all older, they
// hold none, and the search asks every day.
func TestSearchCommonWordEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 25 000 messages")
	}
	w := newSearchWorld(t, "")
	now := nostr.Now()
	const recent, old = 3000, bleveRecentMatches + 2000
	day := nostr.Timestamp(24 * 60 * 60)
	for i := range recent + old {
		ch, at := chanA, now-nostr.Timestamp(i)
		if i >= recent {
			ch, at = chanB, now-3*day-nostr.Timestamp(i) // three days back and more
		}
		if err := w.r.store.SaveEvent(w.ctx, searchBenchEventIn(ch, w.pk, workspace.KindStream, fmt.Sprintf("otter number %d", i), at)); err != nil {
			t.Fatal(err)
		}
	}
	got := w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter", Limit: 20})
	if len(got) != 20 {
		t.Errorf("a common word: %d events; want 20", len(got))
	}
	for _, ev := range got {
		if ev.CreatedAt < now-2*day {
			t.Errorf("a common word: %q is not of the newest days", ev.Content)
		}
	}
	got = w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter", Tags: nostr.TagMap{"h": {chanB}}, Limit: 20})
	if len(got) != 20 {
		t.Errorf("a common word in a channel of older messages: %d events; want 20", len(got))
	}
	for _, ev := range got {
		if ev.Tags.FindWithValue("h", chanB) == nil {
			t.Errorf("a common word in another channel: %q is not in it", ev.Content)
		}
	}
}
