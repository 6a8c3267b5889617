package postgres

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

// The benchmark corpus is storetest's, as the SQLite store's benchmarks
// write it, so the two stores' figures compare. It is written once per
// test binary into a database of its own.
var (
	benchOnce sync.Once
	benchErr  error
	benchQs   []string
)

// benchCorpus builds (once per run) the corpus database and the queries,
// and returns the database's URL.
func benchCorpus(b *testing.B) string {
	dsn := pgtest.Shared(b, "bench")
	benchOnce.Do(func() {
		start := time.Now()
		corpus := storetest.NewCorpus()
		benchQs = corpus.Queries
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			benchErr = err
			return
		}
		defer db.Close()
		if benchErr = corpus.Batches(func(batch []recall.Document) error {
			_, err := db.Write(ctx, batch, nil)
			return err
		}); benchErr != nil {
			return
		}
		// Statistics and the visibility map as autovacuum leaves them on a
		// server that has run for a while.
		if _, benchErr = db.pool.Exec(ctx, `VACUUM ANALYZE`); benchErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "bench corpus: %d chunks built in %v\n", storetest.CorpusSources*storetest.CorpusChunksPerSource, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return dsn
}

// BenchmarkLexical measures full-text queries over the 40,000-chunk corpus,
// one query per iteration, and reports the mean, median and 99th percentile
// latency (wall clock: the work is mostly the server's, which the client
// thread's CPU time would leave out). Run with a fixed count so the
// percentiles come from one run:
//
//	go test -run '^$' -bench Lexical -benchtime 1000x ./internal/store/postgres/
func BenchmarkLexical(b *testing.B) {
	db, err := Open(ctx, benchCorpus(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, bc := range []struct {
		name string
		f    recall.Filter
	}{
		{"all", recall.Filter{}},
		{"owner-scoped", recall.Filter{OwnerScoped: true, Owner: "alice"}},
		{"prefix", recall.Filter{SourcePrefix: "chats/01"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// Warm the server's cache the way a running server has it.
			for _, q := range benchQs[:50] {
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: q, Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
			durs := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: benchQs[i%len(benchQs)], Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
			}
			storetest.ReportLatencies(b, "", durs)
		})
	}
}

// BenchmarkWrite measures a sweep's writes: one Write of 20 new
// conversations of 10 chunks per iteration.
func BenchmarkWrite(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	load := storetest.NewWriteLoad()
	var bytes int64
	for b.Loop() {
		b.StopTimer()
		docs, n := load.Next()
		bytes += n
		b.StartTimer()
		if _, err := db.Write(ctx, docs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(200*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkSmallWrite writes one short one-chunk document per transaction,
// as a memory save does.
func BenchmarkSmallWrite(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	n := 0
	for b.Loop() {
		text := fmt.Sprintf("memory %d: tea with oat milk, no sugar", n)
		d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("m/%06d", n), Kind: recall.KindMemory},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
		n++
		if _, err := db.Write(ctx, []recall.Document{d}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
