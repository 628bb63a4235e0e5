package relay

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"buzzbox/internal/workspace"

	"github.com/lib/pq"
)

// PostgreSQL full text, with --db: a GIN index on eventstore's event
// table over to_tsvector(content) of the searchable kinds (a partial
// expression index), so that every instance on the database searches the
// same rows and nothing needs keeping in step. The 'simple' configuration
// folds case and keeps every word (no stemming, no stop words), as
// messages mix languages and code.
//
// No tsvector is stored (an earlier shape kept one in a generated column,
// twice the text on top of the index; BENCHMARKS.md): the index finds the
// rows holding the words (a phrase's too: the relay checks their order on
// the events), and ranking parses the content of at most pgRankWindow
// matches, the newest, so a query's work stays bounded however common its
// words.

// pgRankWindow bounds the matches one query ranks: the newest this many.
// Recency tempers relevance (recencyHalfLife), so an older match rarely
// outranks this many newer ones.
const pgRankWindow = 500

// pgTSV is the indexed expression; queries must spell it the same way for
// the planner to use the index.
const pgTSV = "to_tsvector('simple'::regconfig, content)"

// searchSchema runs with sharedSchema, under its advisory lock.
func searchSchema() string {
	return `
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'event'::regclass AND attname = 'buzz_tsv' AND NOT attisdropped) THEN
    ALTER TABLE event DROP COLUMN buzz_tsv; -- and its index, buzz_tsv_idx
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS buzz_fts_idx ON event USING GIN (` + pgTSV + `) WHERE kind IN (` + searchKindList() + `);
`
}

func searchKindList() string {
	s := make([]string, len(searchKinds))
	for i, k := range searchKinds {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ",")
}

type pgSearch struct{ db *sql.DB }

func newPGSearch(db *sql.DB) (*pgSearch, error) {
	if db == nil {
		return nil, fmt.Errorf("buzz-relay: search: no database")
	}
	return &pgSearch{db: db}, nil
}

func (p *pgSearch) close() error { return nil } // the store owns the connection

func (p *pgSearch) search(ctx context.Context, sr searchRequest) ([]searchHit, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// A phrase asks for its words here (an index lookup, where a phrase
	// query makes PostgreSQL parse every candidate row again); their order
	// is checked on the events read back.
	var tsq []string
	for _, w := range append(slices.Clip(sr.q.words), sr.q.phrases...) {
		tsq = append(tsq, "plainto_tsquery('simple', "+arg(w)+")")
	}
	// The literal kind list matches the index's predicate.
	where := []string{"kind IN (" + searchKindList() + ")", "kind = ANY(" + arg(pq.Array(sr.kinds)) + ")"}
	if sr.authors != nil {
		where = append(where, "pubkey = ANY("+arg(pq.Array(sr.authors))+")")
	}
	if sr.since != nil {
		where = append(where, "created_at >= "+arg(int64(*sr.since)))
	}
	if sr.until != nil {
		where = append(where, "created_at <= "+arg(int64(*sr.until)))
	}
	if sr.q.hasFile {
		where = append(where, `tags @> '[["imeta"]]'`)
	}
	inChans := func(ids []string) string {
		return "EXISTS (SELECT 1 FROM jsonb_array_elements(tags) t WHERE t->>0 = 'h' AND t->>1 = ANY(" + arg(pq.Array(ids)) + "))"
	}
	if sr.chans != nil {
		where = append(where, inChans(sr.chans))
	}
	if len(sr.hide) > 0 {
		where = append(where, "NOT "+inChans(sr.hide))
	}
	window := max(sr.size, pgRankWindow)
	filters := strings.Join(where, " AND ")
	if len(tsq) == 0 {
		hits, err := p.query(ctx, "SELECT id, 1.0 FROM event WHERE "+filters+" ORDER BY created_at DESC LIMIT "+arg(window), args)
		return p.best(hits, sr.size), err
	}
	q := strings.Join(tsq, " && ")
	rank := "ts_rank(" + pgTSV + ", " + q + ")"

	// Common words: the newest messages hold enough of their matches,
	// and reading them newest first finds the window after a few
	// thousand rows, where the text index would hand over every row
	// that holds the words (half the table for the commonest, rechecked
	// one by one once its bitmap outgrows work_mem: seconds at a million
	// messages). A first look at the newest pgSampleRows tells which
	// kind of query this is. Only for a search of the channels' messages
	// at large: a filter by author, channel or file could leave a few
	// rows in many thousands, which reading newest first would walk.
	if sr.authors == nil && sr.chans == nil && !sr.q.hasFile && slices.Contains(sr.kinds, workspace.KindStream) {
		if hits, err := p.searchRecent(ctx, filters, q, rank, window, args); err != nil || hits != nil {
			return p.best(hits, sr.size), err
		}
	}

	// Rarer words: the text index finds their rows. The newest window of
	// matches is looked for in spans back from now, so that a word of a
	// few thousand rows is ranked over its recent ones only. PostgreSQL
	// ranks only the rows the LIMIT keeps (it evaluates the select list
	// after it).
	//
	// "created_at + 0" keeps the planner from walking the created_at
	// index and parsing each row's content to test it (it underrates
	// to_tsvector, and chose that for words it took for common:
	// seconds at a million rows); the text index finds the rows instead.
	spanArg := arg(int64(0))
	query := "SELECT id, " + rank + " AS rank FROM event WHERE " + filters + " AND " + pgTSV + " @@ (" + q + ")" +
		" AND created_at >= " + spanArg + " ORDER BY created_at + 0 DESC LIMIT " + arg(window)
	now := time.Now()
	var hits []searchHit
	for i, span := range pgSpans {
		from := int64(0)
		if span > 0 && i < len(pgSpans)-1 {
			from = now.Add(-span).Unix()
		}
		args[len(args)-2] = from
		var err error
		if hits, err = p.query(ctx, query, args); err != nil {
			return nil, err
		}
		if len(hits) >= window || from == 0 {
			break
		}
	}
	return p.best(hits, sr.size), nil
}

// The newest-first reading of a search's rows (pgSearch.searchRecent),
// with costs measured at a million messages: a row found through the
// text index took about 2.5 µs (its share of the index scan and its
// visit), a row read newest first and its content parsed about 5 µs,
// and a row on a lossy page of the bitmap about 10 µs.
const (
	// pgSampleRows is how many of the newest rows a text search reads to
	// tell how common its words are (a few milliseconds).
	pgSampleRows = 400
	// pgRecentMaxRows bounds a newest-first reading; past it the text
	// index is asked.
	pgRecentMaxRows = 50000
	// pgRecentSlack widens the reading beyond the rate the sample saw.
	pgRecentSlack = 1.5
	// pgParseCost is a row read newest first against a row found
	// through the text index: 2 as measured, 6 here, since the rate a
	// sample of pgSampleRows sees is rough and reading newest first at
	// a rate overestimated reads rows for nothing (a word in 2 % of the
	// messages read so took 100 ms where the index took 30).
	pgParseCost = 6
	// pgLossyCost is a row on a lossy page against a row found through
	// the text index.
	pgLossyCost = 6
	// pgExactBitmapRows is about how many rows the text index's bitmap
	// holds exactly in the default work_mem (4 MB); past it pages go
	// lossy and each of their rows is parsed again.
	pgExactBitmapRows = 100000
)

// searchRecent answers a text search by reading the newest rows first
// when that costs less than the text index; its nil answer leaves the
// search to the text index. A first read of the newest
// pgSampleRows tells how common the words are; reading newest first then
// parses about window/rate rows, while the text index visits every row
// holding the words (rate × the table), each of those rows parsed again
// too once there are more than a bitmap of work_mem holds exactly.
func (p *pgSearch) searchRecent(ctx context.Context, filters, q, rank string, window int, args []any) ([]searchHit, error) {
	hits, scanned, err := p.recent(ctx, filters, q, rank, pgSampleRows, window, args)
	if err != nil || len(hits) == 0 || scanned < pgSampleRows { // fewer: every row there is
		return hits, err
	}
	rate := float64(len(hits)) / float64(scanned)
	need := int(float64(window) / rate * pgRecentSlack)
	index := rate * p.rows(ctx)
	if index > pgExactBitmapRows {
		index *= pgLossyCost
	}
	if need > pgRecentMaxRows || float64(need)*pgParseCost >= index {
		return nil, nil
	}
	if hits, scanned, err = p.recent(ctx, filters, q, rank, need, window, args); err != nil || (len(hits) < window && scanned == need) {
		return nil, err // an error, or rarer than the sample said: the text index
	}
	return hits, nil
}

// recent reads the newest rows rows matching filters, newest first,
// and returns those matching the text query q (at most window), ranked,
// with how many rows were read (fewer than rows: all there are). It
// reports scanned as 0 when none matched.
func (p *pgSearch) recent(ctx context.Context, filters, q, rank string, rows, window int, args []any) (hits []searchHit, scanned int, err error) {
	n := len(args)
	// The count is of the rows the inner LIMIT keeps: a window function
	// beside it would count every row the filters match.
	query := "SELECT id, " + rank + ", scanned FROM (SELECT *, count(*) OVER () AS scanned FROM (SELECT id, content, created_at FROM event WHERE " + filters +
		" ORDER BY created_at DESC LIMIT $" + strconv.Itoa(n+1) + ") l) r WHERE " + pgTSV + " @@ (" + q + ") ORDER BY created_at DESC LIMIT $" + strconv.Itoa(n+2)
	rs, err := p.db.QueryContext(ctx, query, append(slices.Clip(args), rows, window)...)
	if err != nil {
		return nil, 0, fmt.Errorf("error: search: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var h searchHit
		if err := rs.Scan(&h.id, &h.score, &scanned); err != nil {
			return nil, 0, fmt.Errorf("error: search: %w", err)
		}
		hits = append(hits, h)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("error: search: %w", err)
	}
	return hits, scanned, nil
}

// rows is the planner's count of the event table's rows (0 if unknown).
func (p *pgSearch) rows(ctx context.Context) float64 {
	var n float64
	p.db.QueryRowContext(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'event'::regclass`).Scan(&n)
	return n
}

// best is hits by score, at most size.
func (p *pgSearch) best(hits []searchHit, size int) []searchHit {
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > size {
		hits = hits[:size]
	}
	return hits
}

// pgSpans are the spans back from now a text search looks through for its
// newest matches, in turn; 0 is everything.
var pgSpans = []time.Duration{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour, 0}

func (p *pgSearch) query(ctx context.Context, query string, args []any) ([]searchHit, error) {
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("error: search: %w", err)
	}
	defer rows.Close()
	var hits []searchHit
	for rows.Next() {
		var h searchHit
		if err := rows.Scan(&h.id, &h.score); err != nil {
			return nil, fmt.Errorf("error: search: %w", err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error: search: %w", err)
	}
	return hits, nil
}
