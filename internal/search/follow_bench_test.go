package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// BenchmarkFollow measures what following another process costs a server
// over RECALL_BENCH_CHUNKS chunks (default 100,000) with a 384-dimensional
// vector each: a look with no commit since the last (the common case), a
// look after the server's own write of a source of 10 chunks with vectors,
// after another process deleted a source of 10 chunks, and after it wrote
// one.
//
//	go test -run X -bench Follow -benchtime 20x ./internal/search/
func BenchmarkFollow(b *testing.B) {
	ctx := context.Background()
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("RECALL_BENCH_CHUNKS")); err == nil && v > 0 {
		n = v
	}
	const dim = 384
	st, other := openTwice(b, sqlite.Options{})
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: "test", Model: "bench", Dim: dim, Normalized: true}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"river", "kettle", "garden", "piano", "letter", "harbour", "winter", "lantern", "orchard", "violin"}
	source := func(name string, chunks int) (recall.Document, []recall.Vector) {
		d := recall.Document{Source: recall.Source{ID: name, Kind: recall.KindArchive, ContentHash: name}}
		var vecs []recall.Vector
		for i := range chunks {
			text := fmt.Sprintf("%s chunk %d:", name, i)
			for range 60 {
				text += " " + words[rng.IntN(len(words))]
			}
			h := recall.TextHash(text)
			d.Chunks = append(d.Chunks, recall.Chunk{Index: i, Text: text, Hash: h})
			v := make([]float32, dim)
			for j := range v {
				v[j] = rng.Float32() - 0.5
			}
			vecs = append(vecs, recall.Vector{Space: "t", Key: h, Vec: v})
		}
		return d, vecs
	}
	for i := 0; i < n/10; i += 100 {
		var docs []recall.Document
		var vecs []recall.Vector
		for j := i; j < min(i+100, n/10); j++ {
			d, v := source(fmt.Sprintf("s/%06d.md", j), 10)
			docs, vecs = append(docs, d), append(vecs, v...)
		}
		if _, err := st.Write(ctx, docs, vecs); err != nil {
			b.Fatal(err)
		}
	}
	eng := search.New(st, search.Options{MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Follow(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if f, err := eng.Follow(ctx); err != nil || f.Changed() {
				b.Fatal(f, err)
			}
		}
	})
	b.Run("own-write", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			d, v := source(fmt.Sprintf("own/%06d.md", i), 10)
			i++
			if _, err := eng.Write(ctx, []recall.Document{d}, v); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if f, err := eng.Follow(ctx); err != nil || f.Changed() {
				b.Fatal(f, err)
			}
		}
	})
	deleted := 0
	b.Run("other-process-delete", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, _, err := other.Delete(ctx, fmt.Sprintf("s/%06d.md", deleted)); err != nil {
				b.Fatal(err)
			}
			deleted++
			b.StartTimer()
			if f, err := eng.Follow(ctx); err != nil || f.Removed != 10 {
				b.Fatal(f, err)
			}
		}
	})
	b.Run("other-process-write", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			d, v := source(fmt.Sprintf("other/%06d.md", i), 10)
			i++
			if _, err := other.Write(ctx, []recall.Document{d}, v); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if f, err := eng.Follow(ctx); err != nil || f.Added != 10 || f.Vectors != 10 {
				b.Fatal(f, err)
			}
		}
	})
}

// BenchmarkOtherProcessWrite measures how long a small write by another
// process waits for SQLite's write lock while RECALL_BENCH_WRITERS (default
// 1) of this engine's writers write back to back (a server's sweep, say),
// one write every 100 ms: the median and the worst wait.
//
//	go test -run '^$' -bench OtherProcessWrite -benchtime 50x ./internal/search/
func BenchmarkOtherProcessWrite(b *testing.B) {
	ctx := context.Background()
	st, other := openTwice(b, sqlite.Options{BusyTimeout: 30 * time.Second})
	eng := search.New(st, search.Options{MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		b.Fatal(err)
	}
	writers := 1
	if v, err := strconv.Atoi(os.Getenv("RECALL_BENCH_WRITERS")); err == nil && v > 0 {
		writers = v
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var docs []recall.Document
				for j := range 20 {
					docs = append(docs, doc(fmt.Sprintf("w%d/%d.md", w, j), fmt.Sprintf("writer %d round %d doc %d about rivers", w, i, j)))
				}
				if _, err := eng.Write(ctx, docs, nil); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	var waits []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := other.Write(ctx, []recall.Document{doc("other.md", fmt.Sprint("other write ", i))}, nil); err != nil {
			b.Fatal(err)
		}
		waits = append(waits, time.Since(t0))
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "max-ms")
}
