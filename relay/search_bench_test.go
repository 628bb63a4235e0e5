package relay

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkSearch indexes N synthetic channel messages (Zipf-distributed
// words from a 20 000-word vocabulary, 6–24 words each) into a relay,
// embedded and on PostgreSQL, then runs 200 searches (one word, two
// words, a phrase) through the relay's whole search path (index, read
// back, permission check, ranking). It reports indexing events/s, query
// p50/p99 and the index's size over the text it holds. N is 2000, or
// BUZZ_BENCH_SEARCH_N.
func BenchmarkSearch(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("BUZZ_BENCH_SEARCH_N")); err == nil && v > 0 {
		n = v
	}
	b.Run("embedded", func(b *testing.B) { benchSearch(b, n, "") })
	b.Run("postgres", func(b *testing.B) { benchSearch(b, n, startPostgres(b)) })
}

// searchBenchQueries is how many searches one run times.
const searchBenchQueries = 200

func benchSearch(b *testing.B, n int, db string) {
	owner := newKey(b)
	for range b.N {
		dir := b.TempDir()
		r := startRelay(b, Config{DataDir: dir, DB: db, Owner: owner.pk})
		ctx := internal(context.Background())
		rng := rand.New(rand.NewPCG(1, 2))
		vocab := make([]string, 20000)
		for i := range vocab {
			w := make([]byte, 3+rng.IntN(7))
			for j := range w {
				w[j] = byte('a' + rng.IntN(26))
			}
			vocab[i] = string(w)
		}
		zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
		h := nostr.Tag{"h", chanA}
		evs := make([]*nostr.Event, n)
		text := 0
		base := nostr.Now() - nostr.Timestamp(n)
		for i := range evs {
			words := make([]string, 6+rng.IntN(19))
			for j := range words {
				words[j] = vocab[zipf.Uint64()]
			}
			ev := &nostr.Event{Kind: workspace.KindStream, CreatedAt: base + nostr.Timestamp(i), Tags: nostr.Tags{h}, Content: strings.Join(words, " ")}
			ev.Sign(owner.sk)
			evs[i] = ev
			text += len(ev.Content)
		}
		start := time.Now()
		for _, ev := range evs {
			if err := r.store.SaveEvent(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
		if s, ok := r.search.(*bleveSearch); ok {
			s.settle()
		}
		indexing := time.Since(start)
		var lat []time.Duration
		for q := range searchBenchQueries {
			var s string
			switch q % 3 {
			case 0:
				s = vocab[50+q]
			case 1:
				s = vocab[20+q%30] + " " + vocab[100+q]
			default:
				ws := strings.Fields(evs[q*7%n].Content)
				s = `"` + strings.Join(ws[:2], " ") + `"`
			}
			t0 := time.Now()
			if _, err := r.searchEvents(ctx, nostr.Filter{Kinds: []int{workspace.KindStream}, Search: s, Limit: 20}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		size := searchIndexBytes(b, r, dir)
		b.ReportMetric(float64(n)/indexing.Seconds(), "events/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(size)/float64(text), "index/text")
		r.Close()
	}
}

// searchIndexBytes is the size of the full-text index: the bleve
// directory, or the GIN index plus the tsvector column.
func searchIndexBytes(b *testing.B, r *Relay, dir string) int64 {
	if p, ok := r.search.(*pgSearch); ok {
		var n int64
		err := p.db.QueryRow(`SELECT pg_relation_size('buzz_tsv_idx') + COALESCE((SELECT sum(pg_column_size(buzz_tsv)) FROM event), 0)`).Scan(&n)
		if err != nil {
			b.Fatal(fmt.Errorf("index size: %w", err))
		}
		return n
	}
	var n int64
	filepath.WalkDir(filepath.Join(dir, "search"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
