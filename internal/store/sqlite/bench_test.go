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
	storetest.WriteBench(b, db, false)
}

// BenchmarkWriteVectors is BenchmarkWrite as a sweep that embeds writes
// (storetest.WriteBench).
func BenchmarkWriteVectors(b *testing.B) {
	db, err := Open(ctx, filepath.Join(b.TempDir(), "w.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.WriteBench(b, db, true)
}

// BenchmarkWriteReplace measures a sweep's writes of changed files: one
// Write per iteration of 20 stored conversations whose 10 chunks all
// changed (storetest.ReplaceBench), without vectors and with them.
//
//	go test -run '^$' -bench WriteReplace -benchtime 200x -count 3 ./internal/store/sqlite/
func BenchmarkWriteReplace(b *testing.B) {
	for _, vectors := range []bool{false, true} {
		b.Run(map[bool]string{false: "text", true: "vectors"}[vectors], func(b *testing.B) {
			db, err := Open(ctx, filepath.Join(b.TempDir(), "w.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			storetest.ReplaceBench(b, db, vectors, processCPU)
		})
	}
}

// BenchmarkFirstSpace times CreateSpace of a database's first vector space
// over 20,000 sources of 10 chunks (200,000) written without an embedder
// (storetest.FirstSpaceBench), which settles every source's index state in
// its transaction: each iteration creates the space in a fresh copy of a
// database built once. "ok" holds sources a sweep without an embedder
// wrote (all become pending), "skipped" ones stored while no space existed.
//
//	go test -run '^$' -bench FirstSpace -benchtime 5x -count 3 ./internal/store/sqlite/
func BenchmarkFirstSpace(b *testing.B) {
	for _, state := range []string{recall.IndexOK, recall.IndexSkipped} {
		b.Run(state, func(b *testing.B) {
			dir := b.TempDir()
			fixture := filepath.Join(dir, "fixture.db")
			db, err := Open(ctx, fixture, Options{})
			if err != nil {
				b.Fatal(err)
			}
			storetest.WriteUnembedded(b, db, state)
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			data, err := os.ReadFile(fixture)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, "copy.db")
			storetest.FirstSpaceBench(b, func() recall.Store {
				// The last copy's log must not be applied to this one.
				os.Remove(path + "-wal")
				os.Remove(path + "-shm")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					b.Fatal(err)
				}
				db, err := Open(ctx, path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				return db
			}, processCPU)
		})
	}
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

// BenchmarkUpgradeKeyPrefix times the upgrade from schema 9 to 10 (vector
// keys that begin with their text's hash, chunks_vkey dropped) of a
// database of the storetest corpus's first 10,000 chunks, each with a
// header and 7 unit vectors of 384 dimensions (70,000, as a sweep with the
// built-in model makes them): the Open that migrates it, and the file's
// size before and after.
func BenchmarkUpgradeKeyPrefix(b *testing.B) {
	const sources, units, dim = 1000, 7, 384
	dir := b.TempDir()
	old := filepath.Join(dir, "v9.db")
	db, err := Open(ctx, old, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "bench", Provider: "test", Model: "m", Dim: dim}); err != nil {
		b.Fatal(err)
	}
	written := 0
	err = storetest.NewCorpus().Batches(func(docs []recall.Document) error {
		if written >= sources {
			return nil
		}
		var vecs []recall.Vector
		for i := range docs {
			header := docs[i].Source.Title + " (" + docs[i].Source.Date + ")"
			for j := range docs[i].Chunks {
				c := &docs[i].Chunks[j]
				c.Header = header
				v := make([]float32, units*dim)
				for k := range v {
					v[k] = float32((k*31+j*7+i)%97) / 97
				}
				vecs = append(vecs, recall.Vector{Space: "bench", Key: c.VectorKey(), Vec: v})
			}
		}
		written += len(docs)
		_, err := db.Write(ctx, docs, vecs)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if n := asVersion9(b, db); n != sources*storetest.CorpusChunksPerSource {
		b.Fatalf("%d keys renamed; want every chunk's", n)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	before := fileSize(b, old)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("up%d.db", i))
		data, err := os.ReadFile(old)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		db, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(before)/1e6, "MB-before")
		b.ReportMetric(float64(fileSize(b, path))/1e6, "MB-after")
		os.Remove(path)
		b.StartTimer()
	}
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkRefusals times the lookup a sweep's piece, a memory save and a
// repair page make before they embed (embed.Refusals.Pass): the refusals
// of 16 keys, none of them refused, in a space that holds no refusals and
// in one that holds 10,000.
//
//	go test -run '^$' -bench Refusals -benchtime 20000x -count 3 ./internal/store/sqlite/
func BenchmarkRefusals(b *testing.B) {
	for _, held := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			db, err := Open(ctx, filepath.Join(b.TempDir(), "r.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 4, Normalized: true}); err != nil {
				b.Fatal(err)
			}
			reasons := make(map[string]string, held)
			for i := range held {
				reasons[recall.TextHash(fmt.Sprintf("refused %d", i))] = "too long"
			}
			if err := db.RecordRefusals(ctx, "s", reasons); err != nil {
				b.Fatal(err)
			}
			keys := make([]string, 16)
			for i := range keys {
				keys[i] = recall.TextHash(fmt.Sprintf("sent %d", i))
			}
			for b.Loop() {
				if known, err := db.Refusals(ctx, "s", keys); err != nil || len(known) != 0 {
					b.Fatalf("refusals: %v, %v", known, err)
				}
			}
		})
	}
}
