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
//
// Statistics on the indexed expression (PostgreSQL 14 and later) tell the
// planner how common each word is: it ignores a partial index's own, and
// without them takes every word for rare, so that a search of words in a
// few percent of the messages visited every row holding them rather than
// those of the span asked (through the created_at index beside the text
// index: 365 ms against 20 ms at a million messages).

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
  -- Gathered at once on a table that has rows (a second or two at a
  -- million), rather than at autovacuum's next ANALYZE.
  IF current_setting('server_version_num')::int >= 140000 AND NOT EXISTS (SELECT 1 FROM pg_statistic_ext WHERE stxname = 'buzz_fts_stats') THEN
    EXECUTE 'CREATE STATISTICS buzz_fts_stats ON (` + strings.ReplaceAll(pgTSV, "'", "''") + `) FROM event';
    ANALYZE event;
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
	terms := append(slices.Clip(sr.q.words), sr.q.phrases...)
	var tsq []string
	for _, w := range terms {
		tsq = append(tsq, "plainto_tsquery('simple', "+arg(w)+")")
	}
	// The rows a search reads are its kinds' in its dates (the literal
	// kind list matches the index's predicate); what it keeps of them
	// passes its other filters (matches) too.
	walk := []string{"kind IN (" + searchKindList() + ")", "kind = ANY(" + arg(pq.Array(sr.kinds)) + ")"}
	if sr.since != nil {
		walk = append(walk, "created_at >= "+arg(int64(*sr.since)))
	}
	if sr.until != nil {
		walk = append(walk, "created_at <= "+arg(int64(*sr.until)))
	}
	var matches []string
	if sr.authors != nil {
		matches = append(matches, "pubkey = ANY("+arg(pq.Array(sr.authors))+")")
	}
	if sr.q.hasFile {
		matches = append(matches, `tags @> '[["imeta"]]'`)
	}
	inChans := func(ids []string) string {
		return "EXISTS (SELECT 1 FROM jsonb_array_elements(tags) t WHERE t->>0 = 'h' AND t->>1 = ANY(" + arg(pq.Array(ids)) + "))"
	}
	if sr.chans != nil {
		// tagvalues (eventstore's values of one-letter tags, with a GIN
		// index) holds the channel of every row in it: an index the
		// planner can take to the channel's rows.
		matches = append(matches, inChans(sr.chans), "tagvalues && "+arg(pq.Array(sr.chans)))
	}
	if len(sr.hide) > 0 {
		matches = append(matches, "NOT "+inChans(sr.hide))
	}
	window := max(sr.size, pgRankWindow)
	filters := strings.Join(append(slices.Clip(walk), matches...), " AND ")
	if len(tsq) == 0 {
		hits, err := p.query(ctx, "SELECT id, 1.0 FROM event WHERE "+filters+" ORDER BY created_at DESC LIMIT "+arg(window), args)
		return p.best(hits, sr.size), err
	}
	q := strings.Join(tsq, " && ")
	base := len(args) // the arguments both ways of answering use
	keep := slices.Clip(matches)
	if pre := prefilter(terms, arg); pre != "" {
		keep = append(keep, pre)
	}

	// Common words: the newest messages hold enough of their matches,
	// and reading them newest first finds the window after a few
	// thousand rows, where the text index would hand over every row
	// that holds the words (half the table for the commonest, rechecked
	// one by one once its bitmap outgrows work_mem: seconds at a million
	// messages). A first look at the newest pgSampleRows tells which
	// kind of query this is, and how far back its window should reach.
	// Only for searches that take in the channels' messages, which are
	// most rows: one of rarer kinds only would walk past many.
	var spans []int64 // how far back the window is looked for, in turn; nil: unknown
	if slices.Contains(sr.kinds, workspace.KindStream) {
		rd := pgReading{walk: strings.Join(walk, " AND "), keep: strings.Join(keep, " AND "), q: q, window: window, args: args}
		switch {
		case sr.chans != nil:
			rd.cols = ", tags, tagvalues"
		case sr.q.hasFile || len(sr.hide) > 0:
			rd.cols = ", tags"
		}
		if sr.authors != nil {
			rd.cols += ", pubkey"
		}
		hits, reach, err := p.searchRecent(ctx, rd)
		if err != nil || hits != nil {
			return p.best(hits, sr.size), err
		}
		spans = reach
	}

	// Rarer words: the text index finds their rows, and the newest window
	// of them is looked for back from now: as far as the first look says,
	// else in spans, so that a word of a few thousand rows is ranked over
	// its recent ones only. PostgreSQL ranks only the rows the LIMIT
	// keeps (it evaluates the select list after it).
	//
	// "created_at + 0" keeps the planner from walking the created_at
	// index and parsing each row's content to test it (it underrates
	// to_tsvector, and chose that for words it took for common:
	// seconds at a million rows); the text index finds the rows instead.
	// A fresh array: the reading above (rd.args) holds the old one.
	args = slices.Clip(args[:base])
	spanArg := arg(int64(0))
	query := "SELECT id, ts_rank(" + pgTSV + ", " + q + ") AS rank FROM event WHERE " + filters + " AND " + pgTSV + " @@ (" + q + ")" +
		" AND created_at >= " + spanArg + " ORDER BY created_at + 0 DESC LIMIT " + arg(window)
	if spans == nil {
		now := time.Now()
		for _, span := range pgSpans {
			spans = append(spans, now.Add(-span).Unix())
		}
	}
	var hits []searchHit
	for i, since := range spans {
		if i == len(spans)-1 {
			since = 0 // all time
		}
		args[len(args)-2] = since
		var err error
		if hits, err = p.query(ctx, query, args); err != nil {
			return nil, err
		}
		if len(hits) >= window || since == 0 {
			break
		}
	}
	return p.best(hits, sr.size), nil
}

// prefilter is a test cheaper than the text query that every row the text
// query matches passes: each run of ASCII letters and digits in terms,
// found in the content folded to lower case (lc, lower(content)). The
// parser's words are pieces of the content folded to lower case, so a row
// holding a word holds its runs. Folding a row's content and looking for
// the runs costs about a quarter of parsing it, and most rows read newest
// first fail the test. "" when terms have no such run.
func prefilter(terms []string, arg func(any) string) string {
	var tests []string
	var seen []string
	for _, t := range terms {
		// Split before folding: a letter beyond ASCII may fold to one
		// within it (the Kelvin sign to k), and PostgreSQL may not fold
		// it at all (a SQL_ASCII database folds ASCII only).
		for _, run := range strings.FieldsFunc(t, func(c rune) bool {
			return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
		}) {
			if run = strings.ToLower(run); !slices.Contains(seen, run) {
				seen = append(seen, run)
				tests = append(tests, "strpos(lc, "+arg(run)+") > 0")
			}
		}
	}
	return strings.Join(tests, " AND ")
}

// The newest-first reading of a search's rows (pgSearch.searchRecent),
// with costs measured at a million messages: a row read newest first and
// its content tested by the prefilter took about 1.5 µs, its content
// parsed about 6 µs, and a row found through the text index 2.5 µs when
// its page was in PostgreSQL's buffers, 14 µs when it was not.
const (
	// pgSampleRows is how many of the newest rows a text search reads to
	// tell how common its words are (3–5 ms).
	pgSampleRows = 2000
	// pgRecentMaxRows bounds a newest-first reading (about 20 ms at the
	// bound); a search whose window the sample says lies further back
	// asks the text index, for the span that should hold it, where its
	// matches are few enough that visiting each costs about as much.
	pgRecentMaxRows = 15000
	// pgRecentSlack widens the reading beyond the rate the sample saw
	// (the reading stops at the window's last match).
	pgRecentSlack = 1.5
	// pgReachSlack widens the span the text index is asked for beyond
	// the one the sample's rate says holds the window, and pgReachWiden
	// the next span when that one holds too few: the rows of a span cost
	// a little each (the created_at index's bitmap), and a span too short
	// costs a second query.
	pgReachSlack = 2.5
	pgReachWiden = 4
)

// pgReading is a newest-first reading of a search's rows: those walk
// admits (kinds, dates), newest first; of them those keep keeps (the
// other filters and the prefilter, over content and the columns cols
// names) are parsed and matched against the text query q, and the
// newest window matches ranked. args are walk's, keep's and q's.
type pgReading struct {
	walk, keep, cols, q string
	window              int
	args                []any
}

// searchRecent answers a text search by reading the newest rows first
// when that costs less than the text index; its nil answer leaves the
// search to the text index, with the times back to which it should look
// for the window, in turn (the last is all time; nil: the sample tells
// nothing). A first read of the newest pgSampleRows tells how common the
// words are (with the other filters: the rate is of rows that pass them
// too); reading newest first then reads about window/rate rows, while the
// text index visits the rows holding the words in the span that should
// hold the window.
func (p *pgSearch) searchRecent(ctx context.Context, rd pgReading) (hits []searchHit, reach []int64, err error) {
	s, err := p.sample(ctx, rd)
	if err != nil {
		return nil, nil, err
	}
	if s.scanned < pgSampleRows || len(s.hits) >= rd.window { // every row there is, or the window
		return append([]searchHit{}, s.hits...), nil, nil
	}
	// A word the sample did not see is taken as seen once: the span
	// asked is then about as long as the text index's rows allow.
	rate := float64(max(len(s.hits), 1)) / float64(s.scanned)
	span := float64(s.newest-s.oldest+1) * float64(rd.window) / (rate * float64(s.scanned)) * pgReachSlack
	for _, widen := range []float64{1, pgReachWiden} {
		if back := s.newest - int64(span*widen); back > s.first {
			reach = append(reach, back)
		}
	}
	reach = append(reach, 0) // all time
	need := int(float64(rd.window) / rate * pgRecentSlack)
	if len(s.hits) == 0 || need > pgRecentMaxRows {
		return nil, reach, nil
	}
	hits, err = p.recent(ctx, rd, need)
	if err != nil || len(hits) < rd.window {
		// An error, or rarer than the sample said (or the rows ran out,
		// which the text index answers too): the text index.
		return nil, reach, err
	}
	return hits, nil, nil
}

// matches is the text query over the rows of from (rows): the newest
// limit matches, ranked. A row's content is parsed once, for the match
// and the rank (OFFSET 0 keeps the parse in its subquery).
func (rd pgReading) matches(from, limit string) string {
	keep := rd.keep
	if keep == "" {
		keep = "true"
	}
	return "SELECT id, created_at, ts_rank(tsv, " + rd.q + ") AS rank FROM (" +
		"SELECT id, created_at, " + pgTSV + " AS tsv FROM " + from + " WHERE " + keep + " OFFSET 0) t " +
		"WHERE tsv @@ (" + rd.q + ") ORDER BY created_at DESC LIMIT " + limit
}

// rows is the newest rows walk admits (at most limit), newest first,
// with the columns keep reads and their content folded to lower case
// (lc) for the prefilter.
func (rd pgReading) rows(limit string) string {
	return "SELECT id, content, created_at, lower(content) AS lc" + rd.cols + " FROM event WHERE " + rd.walk + " ORDER BY created_at DESC LIMIT " + limit
}

// recent reads the newest rows rows of rd, newest first, and returns the
// newest matches of them (at most rd.window, where it stops reading),
// ranked.
func (p *pgSearch) recent(ctx context.Context, rd pgReading, rows int) ([]searchHit, error) {
	n := len(rd.args)
	from := "(" + rd.rows("$"+strconv.Itoa(n+1)) + ") c"
	return p.query(ctx, "SELECT id, rank FROM ("+rd.matches(from, "$"+strconv.Itoa(n+2))+") m", append(slices.Clip(rd.args), rows, rd.window))
}

// sampleRead is what sample read: the matches, ranked, how many rows it
// read and the span they were created in, and when the oldest row of the
// table was.
type sampleRead struct {
	hits                  []searchHit
	scanned               int
	oldest, newest, first int64
}

// sample reads the newest pgSampleRows rows of rd and returns the newest
// matches of them (at most rd.window), ranked, with what it read.
func (p *pgSearch) sample(ctx context.Context, rd pgReading) (sampleRead, error) {
	n := len(rd.args)
	// The read's figures come in a row of their own, joined to the
	// matches, so that they come when nothing matches.
	query := "WITH l AS MATERIALIZED (" + rd.rows("$"+strconv.Itoa(n+1)) + ") " +
		"SELECT m.id, m.rank, s.scanned, s.oldest, s.newest, s.first FROM " +
		"(SELECT count(*) AS scanned, coalesce(min(created_at), 0) AS oldest, coalesce(max(created_at), 0) AS newest, " +
		"coalesce((SELECT min(created_at) FROM event), 0) AS first FROM l) s " +
		"LEFT JOIN (" + rd.matches("l", "$"+strconv.Itoa(n+2)) + ") m ON true"
	rs, err := p.db.QueryContext(ctx, query, append(slices.Clip(rd.args), pgSampleRows, rd.window)...)
	if err != nil {
		return sampleRead{}, fmt.Errorf("error: search: %w", err)
	}
	defer rs.Close()
	var r sampleRead
	for rs.Next() {
		var id sql.NullString
		var score sql.NullFloat64
		if err := rs.Scan(&id, &score, &r.scanned, &r.oldest, &r.newest, &r.first); err != nil {
			return sampleRead{}, fmt.Errorf("error: search: %w", err)
		}
		if id.Valid {
			r.hits = append(r.hits, searchHit{id: id.String, score: score.Float64})
		}
	}
	if err := rs.Err(); err != nil {
		return sampleRead{}, fmt.Errorf("error: search: %w", err)
	}
	return r, nil
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
