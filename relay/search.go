package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// NIP-50 full-text search over what the searcher may read. A filter with
// a search string whose kinds are all searchable (or unset) is answered
// from the full-text index: the embedded bleve index (search_bleve.go) or,
// with --db, PostgreSQL full text (search_pg.go), shared by every
// instance. Other search filters (profile names, kind 0) keep the
// substring scan of the bridge.
//
// Permissions come twice: the index is asked to leave out every channel
// the searcher may not read (private ones they are not in) and every
// deleted channel, then each hit is read back from the store through the
// same read check as any query, so neither an event nor a count of one
// reaches a reader who may not see it. Snippets are the client's, made
// from the events it got.

const (
	// searchDefaultLimit is how many results a search filter without a
	// limit returns.
	searchDefaultLimit = 100
	// maxSearchCandidates bounds the hits one search reads back from the
	// store before ranking by recency and permission.
	maxSearchCandidates = 1000
	// searchCandidateFactor is how many hits per wanted result a search
	// asks the index for, so that recency can lift an older-scored one.
	searchCandidateFactor = 4
	// phraseCandidateFactor widens a search with phrases: the index finds
	// the events holding the phrases' words, and those whose words are
	// not in order fall out when read back.
	phraseCandidateFactor = 2
	// maxSearchCount bounds a search COUNT: the hits it reads back.
	maxSearchCount = 10000
	// recencyHalfLife tempers relevance by age: a hit this old counts
	// half as much as the same hit today.
	recencyHalfLife = 30 * 24 * time.Hour
)

// searchKinds are the kinds the full-text index holds: channel messages
// and thread replies, forum posts and their comments, and NIP-22 comments
// (pull requests' comments and reviews; repoReadable checks them against
// the pull request's repository).
var searchKinds = []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindForumPost, workspace.KindForumComment, workspace.KindComment}

func searchable(kind int) bool { return slices.Contains(searchKinds, kind) }

// searchBackend is a full-text index.
type searchBackend interface {
	search(ctx context.Context, sr searchRequest) ([]searchHit, error)
	close() error
}

// searchRequest is one index query: the text, and the other parts of the
// filter the index can apply itself. Nil authors or chans mean any.
type searchRequest struct {
	q            searchQuery
	kinds        []int
	authors      []string
	chans        []string
	hide         []string // channels none of whose events may come
	since, until *nostr.Timestamp
	size         int
}

// searchHit is one index hit: an event id, or for the embedded index the
// first idPrefixLen bytes of one (16 hex digits), and its score.
type searchHit struct {
	id    string
	score float64
}

// indexed reports whether f's search goes to the full-text index.
func (r *Relay) indexed(f nostr.Filter) bool {
	if f.Search == "" || r.search == nil {
		return false
	}
	for _, k := range f.Kinds {
		if !searchable(k) {
			return false
		}
	}
	return true
}

// openSearch opens the search backend for the store just opened and, for
// the embedded index, brings it up to date with the store.
func (r *Relay) openSearch(pg *pgSearch) error {
	if pg != nil {
		r.search = pg
		return nil
	}
	dir := filepath.Join(r.cfg.DataDir, "search")
	s, since, fresh, err := openBleveSearch(dir, r.log.With("component", "search"))
	if err != nil {
		return err
	}
	r.search = s
	if g, ok := r.store.(*guardedStore); ok {
		g.watch = s
	}
	if fresh {
		since = time.Time{}
	}
	// A zero since (a new index, or one that recorded no batch before a
	// kill) indexes the whole store.
	if err := s.reindex(context.Background(), r, since); err != nil {
		return fmt.Errorf("buzz-relay: build search index: %w", err)
	}
	return nil
}

// searchEvents answers a search filter from the index: at most its limit
// of events the caller may read, best first.
func (r *Relay) searchEvents(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = searchDefaultLimit
	}
	limit = min(limit, maxQueryLimit)
	size := min(max(limit*searchCandidateFactor, 200), maxSearchCandidates)
	if strings.Contains(f.Search, `"`) {
		// phrases are checked on the events: more of them fall out
		size = min(size*phraseCandidateFactor, maxSearchCandidates)
	}
	evs, err := r.searchAll(ctx, f, size)
	if len(evs) > limit {
		evs = evs[:limit]
	}
	return evs, err
}

// searchCount counts the search's hits the caller may read, up to
// maxSearchCount.
func (r *Relay) searchCount(ctx context.Context, f nostr.Filter) (int64, error) {
	evs, err := r.searchAll(ctx, f, maxSearchCount)
	return int64(len(evs)), err
}

// searchAll asks the index for up to size hits and returns those the
// caller may read, ranked.
func (r *Relay) searchAll(ctx context.Context, f nostr.Filter, size int) ([]*nostr.Event, error) {
	if r.readRefused(ctx) {
		return nil, nil
	}
	q, err := parseSearch(f.Search)
	if err != nil {
		return nil, err
	}
	c := callerOf(ctx)
	sr := searchRequest{q: q, kinds: f.Kinds, since: f.Since, until: f.Until, size: size}
	if len(sr.kinds) == 0 {
		sr.kinds = searchKinds
	}
	if q.after != nil && (sr.since == nil || *sr.since <= *q.after) {
		t := *q.after + 1
		sr.since = &t
	}
	if q.before != nil && (sr.until == nil || *sr.until >= *q.before) {
		t := *q.before - 1
		sr.until = &t
	}
	sr.authors = f.Authors
	if len(q.from) > 0 {
		who := r.resolveAuthors(ctx, q.from)
		if sr.authors != nil {
			who = intersect(who, sr.authors)
		}
		if len(who) == 0 {
			return nil, nil
		}
		sr.authors = who
	}
	if hs, ok := f.Tags["h"]; ok {
		sr.chans = hs
	} else if hs, ok := f.Tags["#h"]; ok {
		sr.chans = hs
	}
	if len(q.in) > 0 {
		ids := r.resolveChannels(q.in)
		if sr.chans != nil {
			ids = intersect(ids, sr.chans)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		sr.chans = ids
	}
	sr.hide = r.hiddenChannels(c, isInternal(ctx))
	hits, err := r.search.search(ctx, sr)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	score := make(map[string]float64, len(hits))
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		score[h.id] = h.score
		ids = append(ids, h.id)
	}
	// Read the hits back: the embedded index names events by an id
	// prefix, read from the badger store's id index in one pass and then
	// read-checked here; PostgreSQL's hits are ids, read through the
	// usual read check.
	var cands []*nostr.Event
	scoreOf := func(id string) float64 { return score[id] }
	if b, ok := r.search.(*bleveSearch); ok {
		g, ok := r.store.(*guardedStore)
		if !ok {
			return nil, fmt.Errorf("error: search: the store cannot resolve index hits")
		}
		evs, found, err := g.eventsByPrefix(slices.Sorted(slices.Values(ids))) // in key order: the store's seeks go forward
		if err != nil {
			return nil, fmt.Errorf("error: search: read hits: %w", err)
		}
		for _, p := range ids {
			if !found[p] {
				b.forget(p) // deleted while the index was not looking
			}
		}
		keep := r.readCheck(ctx, nostr.Filter{Kinds: sr.kinds})
		for _, ev := range evs {
			if keep == nil || keep(ev) {
				cands = append(cands, ev)
			}
		}
		scoreOf = func(id string) float64 { return score[id[:2*idPrefixLen]] }
	} else {
		for start := 0; start < len(ids); start += maxQueryLimit {
			chunk := ids[start:min(start+maxQueryLimit, len(ids))]
			ch, err := r.queryEvents(ctx, nostr.Filter{IDs: chunk, Limit: len(chunk)})
			if err != nil {
				return nil, fmt.Errorf("error: search: read hits: %w", err)
			}
			for ev := range ch {
				cands = append(cands, ev)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	// The rest of the filter (tags besides h, ids, the exact times) is
	// checked on each event read back, and so is the phrases' word order.
	rest := f
	rest.Search, rest.Limit, rest.LimitZero, rest.IDs = "", 0, false, nil
	rest.Kinds, rest.Authors = sr.kinds, sr.authors // an id prefix may name more than the indexed event
	rest.Since, rest.Until = sr.since, sr.until
	rest = nameTags(rest)
	idFilter := f.IDs
	now := r.cfg.Now()
	var out []*nostr.Event
	for _, ev := range cands {
		if !rest.Matches(ev) || (idFilter != nil && !slices.Contains(idFilter, ev.ID)) || !q.matchesPhrases(ev) || r.inDeletedChannel(ev) {
			continue
		}
		out = append(out, ev)
	}
	rank := func(ev *nostr.Event) float64 {
		age := now.Sub(ev.CreatedAt.Time())
		if age < 0 {
			age = 0
		}
		return scoreOf(ev.ID) * math.Exp2(-float64(age)/float64(recencyHalfLife))
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri > rj
		}
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt > out[j].CreatedAt
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// inDeletedChannel reports whether ev belongs to a deleted channel: those
// are out of search for everyone.
func (r *Relay) inDeletedChannel(ev *nostr.Event) bool {
	for _, id := range channelsOf(ev) {
		if ch, ok := r.chans.get(id); ok && ch.deleted {
			return true
		}
	}
	return false
}

// hiddenChannels lists the channels whose events c may not find: every
// deleted channel, and the private ones c is not in (none for the owner or
// the relay itself).
func (r *Relay) hiddenChannels(c caller, internalCall bool) []string {
	all := internalCall || (c.pubkey != "" && c.pubkey == r.owner)
	r.chans.mu.RLock()
	defer r.chans.mu.RUnlock()
	var out []string
	for id, ch := range r.chans.byID {
		if ch.deleted || (!all && ch.private && ch.members[c.pubkey] == "") {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// resolveChannels maps in: names to channel ids: an id as is, else every
// channel not deleted whose name matches case-insensitively.
func (r *Relay) resolveChannels(names []string) []string {
	r.chans.mu.RLock()
	defer r.chans.mu.RUnlock()
	var out []string
	for _, n := range names {
		if _, ok := r.chans.byID[n]; ok {
			out = append(out, n)
			continue
		}
		for id, ch := range r.chans.byID {
			if !ch.deleted && strings.EqualFold(ch.name, n) {
				out = append(out, id)
			}
		}
	}
	return out
}

// resolveAuthors maps from: names to pubkeys: hex or npub as is, else the
// profiles (kind 0) whose name or display_name matches case-insensitively.
func (r *Relay) resolveAuthors(ctx context.Context, names []string) []string {
	var out []string
	var byName []string
	for _, n := range names {
		if pk, err := parsePubkey(n); err == nil {
			out = append(out, pk)
		} else {
			byName = append(byName, n)
		}
	}
	if len(byName) == 0 {
		return out
	}
	_ = r.eachStored(internal(ctx), nostr.Filter{Kinds: []int{workspace.KindProfile}}, func(ev *nostr.Event) {
		var p struct {
			Name        string `json:"name"`
			DisplayName string `json:"display_name"`
		}
		if json.Unmarshal([]byte(ev.Content), &p) != nil {
			return
		}
		for _, n := range byName {
			if (strings.EqualFold(p.Name, n) || strings.EqualFold(p.DisplayName, n)) && !slices.Contains(out, ev.PubKey) {
				out = append(out, ev.PubKey)
			}
		}
	})
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, v := range a {
		if slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

// searchLive reports whether a live event matches f's search, as far as
// it can be told without the index: its words, phrases, has:file and
// dates.
func searchLive(f nostr.Filter, ev *nostr.Event) bool {
	q, err := parseSearch(f.Search)
	return err == nil && q.matchesText(ev)
}
