package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

// The benchmark corpus is storetest's (the same for every store), built
// once per test binary run in a temporary directory.
var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
	benchQs   []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchCorpus builds (once per run) the corpus database and the queries.
// RECALL_BENCH_CORPUS names a directory to keep the database in between
// runs instead, for iterating on query code.
func benchCorpus(b *testing.B) string {
	benchOnce.Do(func() {
		start := time.Now()
		keep := os.Getenv("RECALL_BENCH_CORPUS")
		dir := keep
		if dir == "" {
			benchDir, benchErr = os.MkdirTemp("", "recall-bench-")
			dir = benchDir
		} else {
			benchErr = os.MkdirAll(dir, 0o700)
		}
		if benchErr != nil {
			return
		}
		corpus := storetest.NewCorpus()
		benchQs = corpus.Queries

		path := filepath.Join(dir, "bench.db")
		if _, err := os.Stat(path); err == nil && keep != "" {
			return
		}
		db, err := Open(ctx, path, Options{})
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
		fmt.Fprintf(os.Stderr, "bench corpus: %d chunks built in %v\n", storetest.CorpusSources*storetest.CorpusChunksPerSource, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	if dir := os.Getenv("RECALL_BENCH_CORPUS"); dir != "" {
		return filepath.Join(dir, "bench.db")
	}
	return filepath.Join(benchDir, "bench.db")
}

// BenchmarkLexical measures full-text queries over the 40,000-chunk corpus,
// one query per iteration, and reports the mean, median and 99th percentile
// latency, and the same of the CPU time each query took. Run with a fixed count so the
// percentiles come from one run:
//
//	go test -run '^$' -bench Lexical -benchtime 1000x ./internal/store/sqlite/
func BenchmarkLexical(b *testing.B) {
	path := benchCorpus(b)
	db, err := Open(ctx, path, Options{ReadOnly: true})
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
			// Warm the page cache the way a running server has it.
			for _, q := range benchQs[:50] {
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: q, Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			durs := make([]time.Duration, 0, b.N)
			cpus := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				c0, cpuOK := threadCPU()
				t0 := time.Now()
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: benchQs[i%len(benchQs)], Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
				if c1, _ := threadCPU(); cpuOK {
					cpus = append(cpus, c1-c0)
				}
			}
			storetest.ReportLatencies(b, "", durs)
			// The thread's CPU time leaves out waiting for a busy machine's
			// cores: on a shared machine it is the steadier figure.
			storetest.ReportLatencies(b, "cpu-", cpus)
		})
	}
}

// BenchmarkWrite measures a sweep's writes: one Write of 20 new
// conversations of 10 chunks per iteration.
func BenchmarkWrite(b *testing.B) {
	db, err := Open(ctx, filepath.Join(b.TempDir(), "w.db"), Options{})
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
// as a memory save does, with the store's synchronous=FULL against NORMAL:
// what syncing every acknowledged write costs.
//
//	go test -run '^$' -bench SmallWrite -benchtime 300x -count 5 ./internal/store/sqlite/
func BenchmarkSmallWrite(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		b.Run(mode, func(b *testing.B) {
			db, err := Open(ctx, filepath.Join(b.TempDir(), "w.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.rw.ExecContext(ctx, "PRAGMA synchronous = "+mode); err != nil {
				b.Fatal(err)
			}
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
		})
	}
}
