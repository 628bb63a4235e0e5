package relay

import (
	"context"
	"fmt"
	"slices"
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
// answered from the newest ones (read newest first), a rare one beside it
// through the text index, and a word in one message of a few among
// thousands after a first newest-first look that finds too few: each
// answer holds what it should and only that.
func TestSearchCommonWordPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	w := newSearchWorld(t, startPostgres(t))
	now := nostr.Now()
	const n = 6000 // a word in each is read newest first; one in 50 is asked of the text index
	var newest []*nostr.Event
	for i := range n {
		text := fmt.Sprintf("otter number %d", i)
		if i%50 == 0 {
			text += " seal"
		}
		if i == n-1 {
			text += " beaver"
		}
		ev := w.save(t, workspace.KindStream, text, now-nostr.Timestamp(i))
		if i < pgRankWindow {
			newest = append(newest, ev)
		}
	}
	got := w.search(t, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: "otter", Limit: 20})
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
