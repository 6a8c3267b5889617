package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
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
	storetest.WriteBench(b, db, false)
}

// BenchmarkWriteVectors is BenchmarkWrite as a sweep that embeds writes
// (storetest.WriteBench).
func BenchmarkWriteVectors(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.WriteBench(b, db, true)
}

// BenchmarkWriteReplace measures a sweep's writes of changed files
// (storetest.ReplaceBench), without vectors and with them.
//
//	RECALL_TEST_PG_DURABLE=1 go test -run '^$' -bench WriteReplace -benchtime 30x ./internal/store/postgres/
func BenchmarkWriteReplace(b *testing.B) {
	for _, vectors := range []bool{false, true} {
		b.Run(map[bool]string{false: "text", true: "vectors"}[vectors], func(b *testing.B) {
			db, err := Open(ctx, pgtest.Server(b), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			storetest.ReplaceBench(b, db, vectors, nil)
		})
	}
}

// BenchmarkFirstSpace is SQLite's BenchmarkFirstSpace: CreateSpace of a
// database's first vector space over 20,000 sources of 10 chunks
// (200,000) written without an embedder (storetest.FirstSpaceBench), each
// iteration in a fresh copy of a database built once and analysed, as
// autovacuum leaves a server's tables.
//
//	go test -run '^$' -bench FirstSpace -benchtime 5x -count 3 ./internal/store/postgres/
func BenchmarkFirstSpace(b *testing.B) {
	for _, state := range []string{recall.IndexOK, recall.IndexSkipped} {
		b.Run(state, func(b *testing.B) {
			fixture := pgtest.Server(b)
			db, err := Open(ctx, fixture, Options{})
			if err != nil {
				b.Fatal(err)
			}
			storetest.WriteUnembedded(b, db, state)
			if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
				b.Fatal(err)
			}
			db.Close()
			drop := func() {}
			storetest.FirstSpaceBench(b, func() recall.Store {
				drop()
				var dsn string
				dsn, drop = pgtest.Copy(b, fixture)
				db, err := Open(ctx, dsn, Options{})
				if err != nil {
					b.Fatal(err)
				}
				return db
			}, nil)
		})
	}
}

// BenchmarkWriteRemote is BenchmarkWriteVectors, and BenchmarkSmallWrite's
// one-chunk writes, with a server 1 ms away (pgtest.Proxy holds what each
// side sends for 0.5 ms), as a store on a database server of the same
// network has it: what a write's round trips cost.
func BenchmarkWriteRemote(b *testing.B) {
	open := func(b *testing.B) *DB {
		_, dsn := pgtest.NewProxy(b, pgtest.Server(b), 500*time.Microsecond)
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	b.Run("bulk", func(b *testing.B) { storetest.WriteBench(b, open(b), true) })
	b.Run("small", func(b *testing.B) { smallWrites(b, open(b)) })
}

// BenchmarkSmallWrite writes one short one-chunk document per transaction,
// as a memory save does.
func BenchmarkSmallWrite(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	smallWrites(b, db)
}

// smallWrites is BenchmarkSmallWrite's loop.
func smallWrites(b *testing.B, db *DB) {
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

// BenchmarkCensus measures the cheapest operation, the one a following
// server repeats every 2 s: one small statement on a pooled connection, so
// that what taking a connection costs shows.
func BenchmarkCensus(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		if _, err := db.Census(ctx, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// Index load corpus: the first loadSources sources of storetest's corpus
// (10 chunks of 2000 characters each), every text with a vector of
// loadUnits 384-dim units, about what the MCP load test's texts have (7.0
// units a chunk), written alike into a PostgreSQL and a SQLite store.
const (
	loadSources = 1000
	loadUnits   = 7
	loadDim     = 384
)

var (
	loadOnce sync.Once
	loadErr  error
	loadPG   string // URL of the PostgreSQL database
	loadDir  string // directory of the SQLite database (TestMain removes it)
)

// errEnough stops storetest's corpus early.
var errEnough = errors.New("enough sources")

// loadCorpus writes (once per run) the index load corpus into both stores.
func loadCorpus(b *testing.B) (pgURL, litePath string) {
	dsn := pgtest.Shared(b, "load")
	loadOnce.Do(func() {
		start := time.Now()
		dir, err := os.MkdirTemp("", "recall-load-bench-")
		if err != nil {
			loadErr = err
			return
		}
		loadDir = dir
		pg, err := Open(ctx, dsn, Options{})
		if err != nil {
			loadErr = err
			return
		}
		defer pg.Close()
		lite, err := sqlite.Open(ctx, filepath.Join(dir, "recall.db"), sqlite.Options{})
		if err != nil {
			loadErr = err
			return
		}
		defer lite.Close()
		space := recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: loadDim, Normalized: true}
		for _, st := range []recall.Store{pg, lite} {
			if _, loadErr = st.CreateSpace(ctx, space); loadErr != nil {
				return
			}
		}
		r := rand.New(rand.NewPCG(19, 23))
		written := 0
		err = storetest.NewCorpus().Batches(func(batch []recall.Document) error {
			var vecs []recall.Vector
			for _, d := range batch {
				for _, c := range d.Chunks {
					vecs = append(vecs, recall.Vector{Space: space.Name, Key: c.Hash, Vec: storetest.UnitVectors(r, loadUnits, loadDim)})
				}
			}
			for _, st := range []recall.Store{pg, lite} {
				if _, err := st.Write(ctx, batch, vecs); err != nil {
					return err
				}
			}
			if written += len(batch); written >= loadSources {
				return errEnough
			}
			return nil
		})
		if !errors.Is(err, errEnough) {
			loadErr = fmt.Errorf("write the index load corpus: %v", err)
			return
		}
		if _, loadErr = pg.pool.Exec(ctx, `VACUUM ANALYZE`); loadErr != nil {
			return
		}
		loadPG = dsn
		fmt.Fprintf(os.Stderr, "index load corpus: %d chunks in both stores, built in %v\n",
			written*storetest.CorpusChunksPerSource, time.Since(start).Round(time.Millisecond))
	})
	if loadErr != nil {
		b.Fatal(loadErr)
	}
	return loadPG, filepath.Join(loadDir, "recall.db")
}

// BenchmarkIndexLoad measures a server's start-up on each store over
// 10,000 chunks with 70,000 unit vectors: what it reads (ScanChunks, then
// ScanVectors of the read space, each chunk counted and dropped) and the
// whole of search.Engine.LoadIndex (the in-memory full-text and vector
// indexes built from those scans). Every iteration runs both on PostgreSQL
// and on SQLite, so the two compare under the same load of the machine; it
// reports each store's median times and the ratios of the medians:
//
//	go test -run '^$' -bench IndexLoad -benchtime 5x ./internal/store/postgres/
func BenchmarkIndexLoad(b *testing.B) {
	pgURL, litePath := loadCorpus(b)
	pg, err := Open(ctx, pgURL, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	lite, err := sqlite.Open(ctx, litePath, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	stores := []struct {
		name string
		st   recall.Store
	}{{"pg", pg}, {"sqlite", lite}}
	times := map[string][]time.Duration{}
	for b.Loop() {
		for _, s := range stores {
			t0 := time.Now()
			chunks, units := 0, 0
			if err := s.st.ScanChunks(ctx, func(recall.StoredChunk) error { chunks++; return nil }); err != nil {
				b.Fatal(err)
			}
			if err := s.st.ScanVectors(ctx, "bench", func(_ recall.IndexedChunk, vec []float32) error {
				units += len(vec) / loadDim
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if want := loadSources * storetest.CorpusChunksPerSource; chunks != want || units != want*loadUnits {
				b.Fatalf("%s: scanned %d chunks and %d units; want %d and %d", s.name, chunks, units, want, want*loadUnits)
			}
			if err := search.New(s.st, search.Options{MemoryLexical: true}).LoadIndex(ctx); err != nil {
				b.Fatal(err)
			}
			times[s.name+"-scan"] = append(times[s.name+"-scan"], t1.Sub(t0))
			times[s.name+"-load"] = append(times[s.name+"-load"], time.Since(t1))
		}
	}
	median := func(k string) time.Duration {
		ds := slices.Clone(times[k])
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for _, k := range []string{"pg-scan", "sqlite-scan", "pg-load", "sqlite-load"} {
		b.ReportMetric(float64(median(k).Microseconds())/1000, k+"-ms")
	}
	b.ReportMetric(float64(median("pg-scan"))/float64(median("sqlite-scan")), "scan-pg/sqlite")
	b.ReportMetric(float64(median("pg-load"))/float64(median("sqlite-load")), "load-pg/sqlite")
}

// BenchmarkUpgradeKeyPrefix times the upgrade from schema 4 to 5 (vector
// keys that begin with their text's hash) of a database of the storetest
// corpus's first 10,000 chunks, each with a header and 7 unit vectors of
// 384 dimensions (70,000 rows): the Open that migrates it. Each iteration
// writes the database anew, untimed; run it with -benchtime 1x.
func BenchmarkUpgradeKeyPrefix(b *testing.B) {
	r := rand.New(rand.NewPCG(29, 31))
	for range b.N {
		b.StopTimer()
		dsn := pgtest.Server(b)
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: loadDim, Normalized: true}); err != nil {
			b.Fatal(err)
		}
		written := 0
		err = storetest.NewCorpus().Batches(func(batch []recall.Document) error {
			var vecs []recall.Vector
			for i := range batch {
				header := batch[i].Source.Title + " (" + batch[i].Source.Date + ")"
				for j := range batch[i].Chunks {
					batch[i].Chunks[j].Header = header
					vecs = append(vecs, recall.Vector{Space: "bench", Key: batch[i].Chunks[j].VectorKey(), Vec: storetest.UnitVectors(r, loadUnits, loadDim)})
				}
			}
			if _, err := db.Write(ctx, batch, vecs); err != nil {
				return err
			}
			if written += len(batch); written >= loadSources {
				return errEnough
			}
			return nil
		})
		if !errors.Is(err, errEnough) {
			b.Fatal(err)
		}
		asVersion(b, db, 4)
		db.Close()
		b.StartTimer()
		up, err := Open(ctx, dsn, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		up.Close()
	}
}
