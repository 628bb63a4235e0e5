package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"buzzbox/internal/workspace"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/mapping"
	blevequery "github.com/blevesearch/bleve/v2/search/query"
	"github.com/nbd-wtf/go-nostr"
)

// The embedded full-text index: bleve (scorch) in DataDir/search, beside
// the badger store. The store's writes and deletions reach it through
// guardedStore's watcher; an indexer goroutine applies them in batches.
// A query first waits for what was queued before it (read your writes).
// Scorch persists batches a moment after taking them, so a kill -9 can
// lose the last ones: the index records the relay's clock with each batch
// (watermarkKey), and the next start indexes again what the store holds
// from catchUpSlack before it. Deletions lost that way are harmless: each
// hit is read back from the store, and one the store no longer has is
// dropped and removed from the index.
//
// The index is kept small (BENCHMARKS.md): it holds only what finds
// candidates, and everything exact is checked on the event read back.
//   - A document's id is the event id's first 8 bytes (idPrefixLen), as
//     raw bytes: bleve stores each id and keeps it in a term dictionary,
//     and the 64 hex digits were half the index. The badger store keys
//     its own id index by the same 8 bytes, and hits are resolved to
//     events through it (badgerStore.eventsByPrefix).
//   - The text keeps no term vectors (positions): a phrase finds the
//     events holding all its words, and the words' order is checked on
//     the event (searchQuery.matchesPhrases).
//   - Time is a keyword per UTC day (dayTerm), not a numeric field (16
//     terms per value, a second's own unique among them): a date range
//     asks for the days it spans, and the exact second is checked on the
//     event.

const (
	// indexQueue bounds the writes waiting for the indexer; past it a
	// publish waits, so a burst cannot grow memory without bound.
	indexQueue = 4096
	// indexBatch bounds one batch: larger batches index faster, each
	// holds its documents in memory until scorch takes them.
	indexBatch = 512
	// indexWait bounds how long a query waits for the writes queued
	// before it; past it the query runs on what is indexed.
	indexWait = 2 * time.Second
	// catchUpSlack is how far before the last recorded batch a start
	// indexes again: batches scorch had not persisted at a kill -9, and
	// events stored with a created_at a little behind the relay's clock.
	catchUpSlack = time.Hour
	// idPrefixLen is how many bytes of an event id name its document: the
	// length the badger store's id index keys events by.
	idPrefixLen = 8
	// searchMappingVersion names the document shape; an index made with
	// another is rebuilt from the store on start.
	searchMappingVersion = "2"
)

var (
	watermarkKey = []byte("buzz-watermark")
	mappingKey   = []byte("buzz-mapping")
)

type bleveSearch struct {
	idx bleve.Index
	log *slog.Logger
	ops chan indexOp // closed by close; run exits then

	sendMu sync.RWMutex // held for reading while sending, for writing to close ops
	closed bool         // under sendMu

	mu      sync.Mutex
	cond    *sync.Cond
	queued  uint64 // ops sent, under mu
	applied uint64 // ops indexed, under mu
	done    chan struct{}
}

type indexOp struct {
	ev     *nostr.Event // index ev
	remove string       // or remove this id
}

// searchMapping is the document shape: text analysed without positions,
// the rest keywords, nothing stored (hits are read
// back from the event store).
func searchMapping() *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	doc := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = standard.Name
	text.Store, text.IncludeInAll, text.DocValues, text.IncludeTermVectors = false, false, false, false
	doc.AddFieldMappingsAt("text", text)
	for _, name := range []string{"author", "chan", "kind", "file", "day"} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Analyzer = keyword.Name
		// Frequencies and norms kept (SkipFreqNorm saved 3% and made
		// some scores NaN).
		kw.Store, kw.IncludeInAll, kw.DocValues, kw.IncludeTermVectors = false, false, false, false
		doc.AddFieldMappingsAt(name, kw)
	}
	im.DefaultMapping = doc
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	return im
}

// docID is the index's name for event id: its first idPrefixLen bytes.
// An id that is not hex is named by its first bytes as they are.
func docID(id string) string {
	var b [idPrefixLen]byte
	if len(id) < 2*idPrefixLen {
		return id
	}
	if _, err := hex.Decode(b[:], []byte(id[:2*idPrefixLen])); err != nil {
		return id
	}
	return string(b[:])
}

// dayDigits is the width of a day term: days since 1970 fit in 6 digits
// until the year 4707, and equal widths sort as the numbers do.
const dayDigits = 6

// dayTerm is the keyword of the UTC day holding t.
func dayTerm(t nostr.Timestamp) string {
	return fmt.Sprintf("%0*d", dayDigits, int64(t)/int64(24*time.Hour/time.Second))
}

// openBleveSearch opens (or makes) the index in dir. fresh is true when
// it was made, and the caller indexes the store into it.
func openBleveSearch(dir string, log *slog.Logger) (s *bleveSearch, since time.Time, fresh bool, err error) {
	idx, err := bleve.Open(dir)
	if err == nil {
		if v, verr := idx.GetInternal(mappingKey); verr != nil || string(v) != searchMappingVersion {
			log.Info("search index made with an older shape; rebuilding it", "dir", dir)
			idx.Close()
			err = errors.New("older shape")
		}
	}
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		fresh = true
		idx, err = bleve.New(dir, searchMapping())
	} else if err != nil {
		log.Warn("search index unreadable; rebuilding it", "dir", dir, "err", err)
		if rerr := os.RemoveAll(dir); rerr != nil {
			return nil, since, false, fmt.Errorf("buzz-relay: remove broken search index %s: %w", dir, rerr)
		}
		fresh = true
		idx, err = bleve.New(dir, searchMapping())
	}
	if err == nil && fresh {
		err = idx.SetInternal(mappingKey, []byte(searchMappingVersion))
	}
	if err != nil {
		return nil, since, false, fmt.Errorf("buzz-relay: open search index %s: %w", dir, err)
	}
	if !fresh {
		if v, err := idx.GetInternal(watermarkKey); err == nil && len(v) > 0 {
			if sec, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				since = time.Unix(sec, 0).Add(-catchUpSlack)
			}
		}
	}
	s = &bleveSearch{idx: idx, log: log, ops: make(chan indexOp, indexQueue), done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.run()
	return s, since, fresh, nil
}

func (s *bleveSearch) send(op indexOp) {
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.closed {
		return
	}
	s.mu.Lock()
	s.queued++
	s.mu.Unlock()
	s.ops <- op
}

func (s *bleveSearch) saved(ev *nostr.Event) {
	if searchable(ev.Kind) {
		s.send(indexOp{ev: ev})
	}
}

func (s *bleveSearch) deleted(ev *nostr.Event) {
	if searchable(ev.Kind) {
		s.send(indexOp{remove: docID(ev.ID)})
	}
}

// forget removes the document of id prefix (hex), whose event is gone.
func (s *bleveSearch) forget(prefix string) {
	if b, err := hex.DecodeString(prefix); err == nil {
		s.send(indexOp{remove: string(b)})
	}
}

// run applies queued ops in batches until close. It exits when ops is
// closed.
func (s *bleveSearch) run() {
	defer close(s.done)
	for op := range s.ops {
		b := s.idx.NewBatch()
		n := 0
		add := func(op indexOp) {
			n++
			switch {
			case op.ev != nil:
				if err := b.Index(docID(op.ev.ID), searchDoc(op.ev)); err != nil {
					s.log.Warn("search index: cannot index event", "id", op.ev.ID, "err", err)
				}
			case op.remove != "":
				b.Delete(op.remove)
			}
		}
		add(op)
	more:
		for n < indexBatch {
			select {
			case op, ok := <-s.ops:
				if !ok {
					break more
				}
				add(op)
			default:
				break more
			}
		}
		b.SetInternal(watermarkKey, []byte(strconv.FormatInt(time.Now().Unix(), 10)))
		if err := s.idx.Batch(b); err != nil {
			s.log.Error("search index: batch failed", "err", err)
		}
		s.mu.Lock()
		s.applied += uint64(n)
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// settle waits until the ops queued before the call are indexed, at most
// indexWait.
func (s *bleveSearch) settle() {
	s.mu.Lock()
	target := s.queued
	if s.applied >= target {
		s.mu.Unlock()
		return
	}
	timer := time.AfterFunc(indexWait, func() {
		s.mu.Lock()
		s.cond.Broadcast() // the waiter rechecks the deadline
		s.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(indexWait)
	for s.applied < target && time.Now().Before(deadline) {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// kindsOutside lists the searchable kinds a search for kinds leaves
// out: none for an empty list (any kind).
func kindsOutside(kinds []int) []int {
	var out []int
	for _, k := range searchKinds {
		if len(kinds) > 0 && !slices.Contains(kinds, k) {
			out = append(out, k)
		}
	}
	return out
}

// kindTerms is kinds as the index's kind keywords (searchDoc).
func kindTerms(kinds []int) []string {
	ts := make([]string, len(kinds))
	for i, k := range kinds {
		ts[i] = strconv.Itoa(k)
	}
	return ts
}

func searchDoc(ev *nostr.Event) map[string]any {
	d := map[string]any{
		"text":   ev.Content,
		"author": ev.PubKey,
		"kind":   strconv.Itoa(ev.Kind),
		"day":    dayTerm(ev.CreatedAt),
	}
	if h := channelOf(ev); h != "" {
		d["chan"] = h
	}
	if ev.Tags.Find("imeta") != nil {
		d["file"] = "1"
	}
	return d
}

// dayRange asks for the days from since's to until's (either open).
func dayRange(since, until *nostr.Timestamp) blevequery.Query {
	lo, hi := "", ""
	if since != nil {
		lo = dayTerm(*since)
	}
	if until != nil {
		hi = dayTerm(*until)
	}
	return dayTerms(lo, hi)
}

// dayTerms asks for the days from the day term lo to hi ("": open).
func dayTerms(lo, hi string) blevequery.Query {
	yes := true
	r := bleve.NewTermRangeInclusiveQuery(lo, hi, &yes, &yes)
	r.SetField("day")
	r.SetBoost(0) // a filter: it does not rank
	return r
}

func (s *bleveSearch) search(ctx context.Context, sr searchRequest) ([]searchHit, error) {
	s.settle()
	must := bleve.NewBooleanQuery()
	// Every word, the phrases' too (their order is checked on the
	// event), each asked once: a word repeated would walk its postings
	// again (a phrase of the commonest word twice took 80 ms at a
	// million messages). One match query holds them all, analysed as
	// the text was (stop words go).
	var words []string
	seen := map[string]bool{}
	for _, p := range append(slices.Clip(sr.q.words), sr.q.phrases...) {
		for _, w := range strings.Fields(p) {
			if k := strings.ToLower(w); !seen[k] {
				seen[k] = true
				words = append(words, w)
			}
		}
	}
	if len(words) > 0 {
		m := bleve.NewMatchQuery(strings.Join(words, " "))
		m.SetField("text")
		m.SetOperator(blevequery.MatchQueryOperatorAnd)
		must.AddMust(m)
	}
	if sr.q.textless() {
		must.AddMust(bleve.NewMatchAllQuery())
	}
	// A filter's terms weigh nothing: a message's rank is its words',
	// not how rare its channel, author or day is in the index.
	terms := func(field string, vals []string) blevequery.Query {
		qs := make([]blevequery.Query, 0, len(vals))
		for _, v := range vals {
			t := bleve.NewTermQuery(v)
			t.SetField(field)
			t.SetBoost(0)
			qs = append(qs, t)
		}
		return bleve.NewDisjunctionQuery(qs...)
	}
	if sr.authors != nil {
		must.AddMust(terms("author", sr.authors))
	}
	if sr.chans != nil {
		must.AddMust(terms("chan", sr.chans))
	}
	// Kinds: every document is of a searchable kind, and nearly all are
	// channel messages, whose kind term lists almost the whole index. A
	// clause requiring it would make each query walk that list beside its
	// words (and score it); the kinds left out are asked to stay out
	// instead, a walk of the rarer kinds' lists.
	if out := kindsOutside(sr.kinds); len(out) > 0 {
		if slices.Contains(sr.kinds, workspace.KindStream) {
			must.AddMustNot(terms("kind", kindTerms(out)))
		} else {
			must.AddMust(terms("kind", kindTerms(sr.kinds)))
		}
	}
	if sr.q.hasFile {
		must.AddMust(terms("file", []string{"1"}))
	}
	if len(sr.hide) > 0 {
		must.AddMustNot(terms("chan", sr.hide))
	}
	if sr.since != nil || sr.until != nil {
		must.AddMust(dayRange(sr.since, sr.until))
	}
	// Common words: bleve scores every document holding them to find the
	// best, hundreds of thousands for a phrase of two common words (60
	// ms at a million messages). The newest days that should hold enough
	// of them are asked first, and everything only when they hold too
	// few, as PostgreSQL ranks the newest matches (pgRankWindow).
	if from, ok := s.recentFrom(words, sr, sr.size*bleveRecentSlack); ok {
		hits, err := s.best(ctx, bleve.NewConjunctionQuery(must, dayTerms(from, "")), sr.size)
		if err != nil || len(hits) >= sr.size {
			return hits, err
		}
	}
	return s.best(ctx, must, sr.size)
}

const (
	// bleveRecentMatches is how many documents a search's words and
	// filters are expected to match, all days taken, before the newest
	// days are asked first (bleveSearch.recentFrom): scoring fewer takes
	// a few milliseconds.
	bleveRecentMatches = 20000
	// bleveRecentSlack is how many documents the newest days asked
	// should hold for each one a search wants: the expectation is rough
	// (it takes the words for independent), and days too few cost a
	// second query.
	bleveRecentSlack = 3
)

// recentFrom is the first of the newest days that should hold want
// documents matching words and sr's author and channel filters, when all
// days together should hold more than bleveRecentMatches; false when they
// should not, or when every day is needed. The expectation is the
// documents of those days times each word's and filter's share of all
// documents.
func (s *bleveSearch) recentFrom(words []string, sr searchRequest, want int) (string, bool) {
	n, err := s.idx.DocCount()
	if err != nil || n == 0 || len(words) == 0 {
		return "", false
	}
	count := func(field string, terms ...string) float64 {
		var c uint64
		for _, t := range terms {
			d, err := s.idx.FieldDictRange(field, []byte(t), []byte(t))
			if err != nil {
				return float64(n)
			}
			if e, err := d.Next(); err == nil && e != nil && e.Term == t {
				c += e.Count
			}
			d.Close()
		}
		return float64(c)
	}
	share := 1.0
	var seen []string
	for _, tok := range s.idx.Mapping().AnalyzerNamed(standard.Name).Analyze([]byte(strings.Join(words, " "))) {
		if t := string(tok.Term); !slices.Contains(seen, t) {
			seen = append(seen, t)
			share *= count("text", t) / float64(n)
		}
	}
	if sr.authors != nil {
		share *= count("author", sr.authors...) / float64(n)
	}
	if sr.chans != nil {
		share *= count("chan", sr.chans...) / float64(n)
	}
	if share*float64(n) <= bleveRecentMatches {
		return "", false
	}
	d, err := s.idx.FieldDict("day")
	if err != nil {
		return "", false
	}
	defer d.Close()
	type day struct {
		term  string
		count uint64
	}
	var days []day
	for e, err := d.Next(); err == nil && e != nil; e, err = d.Next() {
		days = append(days, day{e.Term, e.Count})
	}
	need := float64(want) / share
	held := 0.0
	for i := len(days) - 1; i > 0; i-- {
		if held += float64(days[i].count); held >= need {
			return days[i].term, true
		}
	}
	return "", false
}

// best asks the index query q for its best size hits.
func (s *bleveSearch) best(ctx context.Context, q blevequery.Query, size int) ([]searchHit, error) {
	res, err := s.idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, size, 0, false))
	if err != nil {
		return nil, fmt.Errorf("error: search: %w", err)
	}
	hits := make([]searchHit, 0, len(res.Hits))
	for _, h := range res.Hits {
		score := h.Score
		if math.IsNaN(score) || math.IsInf(score, 0) {
			score = 0
		}
		hits = append(hits, searchHit{id: hex.EncodeToString([]byte(h.ID)), score: score})
	}
	return hits, nil
}

// reindex indexes what the store holds of the searchable kinds from since
// on (everything when since is zero), in the caller's goroutine.
func (s *bleveSearch) reindex(ctx context.Context, r *Relay, since time.Time) error {
	f := nostr.Filter{Kinds: searchKinds}
	if !since.IsZero() {
		t := nostr.Timestamp(since.Unix())
		f.Since = &t
	}
	n := 0
	err := r.eachStored(internal(ctx), f, func(ev *nostr.Event) {
		n++
		s.saved(ev)
	})
	s.settle()
	if n > 0 {
		s.log.Info("search index caught up", "events", n, "since", since)
	}
	return err
}

func (s *bleveSearch) close() error {
	s.sendMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ops)
	}
	s.sendMu.Unlock()
	<-s.done
	return s.idx.Close()
}
