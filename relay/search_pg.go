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
	rank := "1.0"
	if len(tsq) > 0 {
		q := strings.Join(tsq, " && ")
		where = append(where, pgTSV+" @@ ("+q+")")
		rank = "ts_rank(" + pgTSV + ", " + q + ")"
	}
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
	// The newest window of matches, looked for in spans back from now:
	// a common word fills the window from the newest span, without
	// PostgreSQL reading every row that holds it. PostgreSQL ranks only
	// the rows the LIMIT keeps (it evaluates the select list after it).
	//
	// With words, "created_at + 0" keeps the planner from walking the
	// created_at index and parsing each row's content to test it (it
	// underrates to_tsvector, and chose that for common words: seconds
	// at a million rows); the text index finds the rows instead.
	order := "created_at"
	if len(tsq) > 0 {
		order = "created_at + 0"
	}
	spanArg := arg(int64(0))
	query := "SELECT id, " + rank + " AS rank FROM event WHERE " + strings.Join(where, " AND ") +
		" AND created_at >= " + spanArg + " ORDER BY " + order + " DESC LIMIT " + arg(window)
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
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > sr.size {
		hits = hits[:sr.size]
	}
	return hits, nil
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
