package ingest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

// benchVault is the reference vault: 10,000 files, about 70 MB
// (or a quarter of it, to show that peak memory does not grow with size).
func benchVault(b *testing.B, files int) (string, int64) {
	dir, total, err := testvault.Cached("sweep", files, 7_000, 1)
	if err != nil {
		b.Fatal(err)
	}
	return dir, total
}

// peakHeap samples the Go heap while f runs.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// BenchmarkSweepFirst: a first sweep (no embeddings) of the 10,000-file vault
// (and of a 2,500-file one) into an empty database. Reports MB/s, MB per
// CPU-second and the peak Go heap.
func BenchmarkSweepFirst(b *testing.B) {
	for _, files := range []int{2_500, 10_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			vault, total := benchVault(b, files)
			benchSweepFirst(b, vault, total, files)
		})
	}
}

// benchSweepFirst sweeps the vault of the given files and bytes into a new
// database each time round.
func benchSweepFirst(b *testing.B, vault string, total int64, files int) {
	b.SetBytes(total)
	var heap uint64
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		var res Result
		c0 := cpuTime()
		heap = max(heap, peakHeap(func() {
			res, err = Sweep(context.Background(), db, db, vault, Options{})
		}))
		cpu += cpuTime() - c0
		if err != nil || res.FilesChanged != files {
			b.Fatalf("sweep: %+v %v", res, err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/1e6, "peak-heap-MB")
	if cpu > 0 {
		b.ReportMetric(float64(total)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkSweepUnchanged: a re-sweep of the same vault with nothing changed.
func BenchmarkSweepUnchanged(b *testing.B) {
	vault, _ := benchVault(b, 10_000)
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := Sweep(context.Background(), db, db, vault, Options{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Sweep(context.Background(), db, db, vault, Options{})
		if err != nil || res.FilesSkipped != 10_000 {
			b.Fatalf("re-sweep: %+v %v", res, err)
		}
	}
}

// BenchmarkSweepExport: a first sweep (no embeddings) of one Claude export of
// about 29 and 116 MB. The export goes through in pieces, so the peak Go
// heap barely grows with it: 45 and 51 MB, where holding the whole export
// took 144 and 574 MB.
func BenchmarkSweepExport(b *testing.B) {
	for _, convs := range []int{4_000, 16_000} {
		b.Run(fmt.Sprintf("conversations=%d", convs), func(b *testing.B) {
			vault := b.TempDir()
			data := claudeExport(b, convs, 6_000, 1, nil)
			if err := os.WriteFile(filepath.Join(vault, "conversations.json"), []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
			total := int64(len(data))
			data = ""
			debug.FreeOSMemory() // the generator's garbage is not the sweep's
			benchSweepFirst(b, vault, total, 1)
		})
	}
}

// timedWriter counts a sweep's write transactions and the time spent in
// them.
type timedWriter struct {
	*sqlite.DB
	mu      sync.Mutex
	commits int
	spent   time.Duration
}

func (w *timedWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	start := time.Now()
	res, err := w.DB.Write(ctx, docs, vecs, remove...)
	w.mu.Lock()
	w.commits++
	w.spent += time.Since(start)
	w.mu.Unlock()
	return res, err
}

// BenchmarkSweepSlowEmbedder: a first sweep of 300 files (893 chunks) whose
// embedder takes 60 ms a call (a file a call), with transactions that
// commit after a second's gathering (the default) and with ones that never
// grow old (one transaction at the end, as before the age bound): the
// commits and the writer's time in them, against the sweep's.
func BenchmarkSweepSlowEmbedder(b *testing.B) {
	for _, age := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprintf("age=%s", cmp.Or(age, time.Second)), func(b *testing.B) {
			benchSweepEmbedded(b, 60*time.Millisecond, age)
		})
	}
}

// BenchmarkSweepEmbedded: the first sweep of BenchmarkSweepSlowEmbedder
// with an embedder that answers at once, so that what the sweep does
// around its embedder calls shows: the store reads of each file's chunks
// (their vectors, the texts refused before) and the writes.
//
//	go test -run '^$' -bench '^BenchmarkSweepEmbedded$' -benchtime 10x ./internal/ingest/
func BenchmarkSweepEmbedded(b *testing.B) {
	benchSweepEmbedded(b, 0, 0)
}

// benchSweepEmbedded sweeps the 300-file vault into a new database with a
// space each time round, its embedder taking delay a call, its
// transactions committed at age (0: the default).
func benchSweepEmbedded(b *testing.B, delay, age time.Duration) {
	vault, _, err := testvault.Cached("sweep", 300, 4_200, 1)
	if err != nil {
		b.Fatal(err)
	}
	var commits int
	var spent, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		emb := embedtest.New(16)
		emb.Delay = delay
		sp, err := db.CreateSpace(context.Background(), recall.VectorSpace{Name: "bench", Provider: "embedtest", Model: "word-hash", Dim: 16, Normalized: true})
		if err != nil {
			b.Fatal(err)
		}
		w := &timedWriter{DB: db}
		c0 := cpuTime()
		b.StartTimer()
		res, err := Sweep(context.Background(), db, w, vault, Options{Embedder: emb, Space: sp.Name, Dim: 16, Batch: BatchLimits{Age: age}})
		if err != nil || res.FilesChanged != 300 {
			b.Fatalf("sweep: %+v %v", res, err)
		}
		b.StopTimer()
		cpu += cpuTime() - c0
		commits += w.commits
		spent += w.spent
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(commits)/float64(b.N), "commits")
	b.ReportMetric(spent.Seconds()*1000/float64(b.N), "commit-ms")
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
	}
}
