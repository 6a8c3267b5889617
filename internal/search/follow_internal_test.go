package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// These tests hold the engine to one rule: whatever this engine and
// another process write, once writes stop and Follow has looked, its
// indexes are exactly what a fresh LoadIndex of the store builds.

func mkdoc(id string, texts ...string) recall.Document {
	d := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, ChunkCount: len(texts)}}
	all := ""
	for i, t := range texts {
		d.Chunks = append(d.Chunks, recall.Chunk{Index: i, Text: t, Hash: recall.TextHash(t)})
		all += t
	}
	d.Source.ContentHash = recall.TextHash(all)
	return d
}

func vecsOf(d recall.Document) []recall.Vector {
	var out []recall.Vector
	for _, c := range d.Chunks {
		out = append(out, recall.Vector{Space: "t", Key: c.Hash, Vec: embedtest.Vector(c.Text, 16)})
	}
	return out
}

// indexState is what an engine's indexes hold: full-text chunk ids, vector
// chunk ids and the number of texts with vectors.
type indexState struct {
	lx, vx []int64
	texts  int
}

func stateOf(e *Engine) indexState {
	e.mu.RLock()
	defer e.mu.RUnlock()
	v := e.vx.chunkIDs()
	slices.Sort(v)
	return indexState{lx: e.lx.IDs(), vx: v, texts: e.vx.texts()}
}

// pair opens one database twice: a loaded engine over the first handle,
// and the second handle as another process.
func pair(t *testing.T) (*Engine, *sqlite.DB, *sqlite.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	open := func() *sqlite.DB {
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st, other := open(), open()
	emb := embedtest.New(16)
	info := emb.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	eng := New(st, Options{Embedder: emb, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return eng, st, other
}

// inStep follows once more and compares the engine with a fresh load.
func inStep(t *testing.T, eng *Engine, st recall.Store) {
	t.Helper()
	if _, err := eng.Follow(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := New(st, Options{MemoryLexical: true})
	if err := fresh.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := stateOf(eng), stateOf(fresh)
	if !slices.Equal(a.lx, b.lx) {
		t.Errorf("full-text chunk ids: engine %v; fresh load %v", a.lx, b.lx)
	}
	if !slices.Equal(a.vx, b.vx) || a.texts != b.texts {
		t.Errorf("vector chunk ids: engine %v (%d texts); fresh load %v (%d texts)", a.vx, a.texts, b.vx, b.texts)
	}
}

// ok fails the test on the error of a call: ok(t)(eng.Write(...)).
func ok(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFollowSwappedIDs: chunks swapped between the processes so that the
// count, the largest id and the sum of ids all stay the same.
func TestFollowSwappedIDs(t *testing.T) {
	ctx := context.Background()
	eng, st, other := pair(t)
	own := func(id, text string) { ok(t)(eng.Write(ctx, []recall.Document{mkdoc(id, text)}, nil)) }
	own("own/a.md", "alpha kangaroo") // id a
	ok(t)(eng.Follow(ctx))
	ok(t)(other.Write(ctx, []recall.Document{mkdoc("other/p1.md", "bravo platypus")}, nil)) // a+1
	ok(t)(other.Write(ctx, []recall.Document{mkdoc("other/p2.md", "charlie echidna")}, nil))
	own("own/b.md", "delta kangaroo") // a+3
	own("own/c.md", "echo wallaby")
	if _, _, err := other.Delete(ctx, "own/a.md", "own/b.md"); err != nil { // a and a+3
		t.Fatal(err)
	}
	inStep(t, eng, st)
}

// TestFollowOwnVectorsForAnothersChunk: the engine's repair embeds a chunk
// another process wrote, which that process then deletes.
func TestFollowOwnVectorsForAnothersChunk(t *testing.T) {
	ctx := context.Background()
	eng, st, other := pair(t)
	ok(t)(eng.Write(ctx, []recall.Document{mkdoc("own/base.md", "base note")}, nil))
	ok(t)(eng.Follow(ctx))
	d := mkdoc("other/z.md", "the zebra sleeps standing")
	ok(t)(other.Write(ctx, []recall.Document{d}, nil))
	if err := eng.PutVectors(ctx, vecsOf(d)); err != nil {
		t.Fatal(err)
	}
	inStep(t, eng, st)
	if _, _, err := other.Delete(ctx, "other/z.md"); err != nil {
		t.Fatal(err)
	}
	inStep(t, eng, st)
}

// TestFollowRewriteWithoutVector: another process deletes a source and
// writes the same text back without a vector; the store has none for it
// now, so the index must not keep the old one.
func TestFollowRewriteWithoutVector(t *testing.T) {
	ctx := context.Background()
	eng, st, other := pair(t)
	d := mkdoc("m.md", "mike text here")
	ok(t)(eng.Write(ctx, []recall.Document{d}, vecsOf(d)))
	ok(t)(eng.Follow(ctx))
	if _, _, err := other.Delete(ctx, "m.md"); err != nil {
		t.Fatal(err)
	}
	ok(t)(other.Write(ctx, []recall.Document{d}, nil))
	inStep(t, eng, st)
}

// TestWriteGivesVectorToEarlierHolders: a text stored without a vector
// gets one through a later write of the same text: every chunk holding it
// joins the vector index, as a load would index them.
func TestWriteGivesVectorToEarlierHolders(t *testing.T) {
	ctx := context.Background()
	eng, st, _ := pair(t)
	a := mkdoc("a.md", "alpha river stone")
	ok(t)(eng.Write(ctx, []recall.Document{a}, nil))
	b := mkdoc("b.md", "alpha river stone")
	ok(t)(eng.Write(ctx, []recall.Document{b}, vecsOf(b)))
	inStep(t, eng, st)
}

// TestFollowReadSpaceDropped: another process switches the read space and
// drops the one the engine loaded. Follow reports it, keeps working and
// settles: the next look with no write is the cheap one.
func TestFollowReadSpaceDropped(t *testing.T) {
	ctx := context.Background()
	eng, _, other := pair(t)
	d := mkdoc("m.md", "mike text here")
	ok(t)(eng.Write(ctx, []recall.Document{d}, vecsOf(d)))
	ok(t)(eng.Follow(ctx))
	ok(t)(other.CreateSpace(ctx, recall.VectorSpace{Name: "u", Provider: "x", Model: "y", Dim: 16, Normalized: true}))
	if err := other.UseSpace(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if err := other.DropSpace(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	f, err := eng.Follow(ctx)
	if err != nil || f.ReadSpace != "u" {
		t.Fatalf("Follow after the read space was dropped elsewhere: %+v, %v", f, err)
	}
	seen := eng.seen
	if f, err = eng.Follow(ctx); err != nil || f.Changed() || eng.seen != seen {
		t.Errorf("a second look: %+v, %v", f, err)
	}
}

// gateStore holds the first ChunkIDs call until released, so a test can
// write through the engine while Follow is between its reads.
type gateStore struct {
	*sqlite.DB
	entered, release chan struct{}
	armed            bool
}

func (g *gateStore) ChunkIDs(ctx context.Context) ([]int64, error) {
	if g.armed {
		g.armed = false
		g.entered <- struct{}{}
		<-g.release
	}
	return g.DB.ChunkIDs(ctx)
}

// TestFollowReplaysPutVectorsExactly: vectors the engine stores while
// Follow reads, for a text no chunk holds yet, are not given on replay to
// a chunk written afterwards without one.
func TestFollowReplaysPutVectorsExactly(t *testing.T) {
	ctx := context.Background()
	_, st, other := pair(t)
	g := &gateStore{DB: st, entered: make(chan struct{}), release: make(chan struct{})}
	eng := New(g, Options{Embedder: embedtest.New(16), MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	ok(t)(eng.Follow(ctx))
	ok(t)(other.Write(ctx, []recall.Document{mkdoc("p.md", "papa other process")}, nil))
	g.armed = true
	done := make(chan error)
	go func() { _, err := eng.Follow(ctx); done <- err }()
	<-g.entered
	h := mkdoc("h.md", "hotel late text")
	if err := eng.PutVectors(ctx, vecsOf(h)); err != nil {
		t.Fatal(err)
	}
	ok(t)(eng.Write(ctx, []recall.Document{h}, nil))
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	inStep(t, eng, st)
}

// TestFollowStress: random writes, rewrites, deletes and vector puts by
// the engine and by another process, sharing source ids and texts, while a
// loop follows.
func TestFollowStress(t *testing.T) {
	seeds := 10
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { stress(t, uint64(seed), true) })
	}
}

// TestOwnWritesStayInStep: the same without another process or Follow:
// the engine's own writes alone keep its indexes as a load builds them.
func TestOwnWritesStayInStep(t *testing.T) {
	for seed := range 10 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { stress(t, uint64(seed), false) })
	}
}

func stress(t *testing.T, seed uint64, withOther bool) {
	ctx := context.Background()
	eng, st, other := pair(t)
	texts := []string{"alpha river stone", "bravo wombat dune", "charlie quokka tree", "delta numbat log", "echo zebra grass"}
	mk := func(r *rand.Rand, prefix string) recall.Document {
		var ts []string
		for range 1 + r.IntN(3) {
			ts = append(ts, fmt.Sprintf("%s v%d", texts[r.IntN(len(texts))], r.IntN(3)))
		}
		return mkdoc(fmt.Sprintf("%s/%d.md", prefix, r.IntN(6)), ts...)
	}
	type writer interface {
		Write(context.Context, []recall.Document, []recall.Vector, ...string) (recall.WriteResult, error)
		Delete(context.Context, ...string) (int, recall.WriteResult, error)
		PutVectors(context.Context, []recall.Vector) error
	}
	run := func(w writer, r *rand.Rand, prefix string) {
		for range 60 {
			d := mk(r, []string{prefix, "shared"}[r.IntN(2)])
			var err error
			switch r.IntN(4) {
			case 0:
				_, err = w.Write(ctx, []recall.Document{d}, vecsOf(d))
			case 1:
				_, err = w.Write(ctx, []recall.Document{d}, nil)
			case 2:
				_, _, err = w.Delete(ctx, d.Source.ID)
			case 3: // a repair
				err = w.PutVectors(ctx, vecsOf(d))
			}
			if err != nil {
				t.Error(err)
			}
		}
	}
	done := make(chan struct{})
	var loop, writers sync.WaitGroup
	if withOther {
		loop.Add(1)
		go func() {
			defer loop.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := eng.Follow(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		writers.Add(1)
		go func() { defer writers.Done(); run(other, rand.New(rand.NewPCG(seed, 2)), "other") }()
	}
	run(eng, rand.New(rand.NewPCG(seed, 1)), "own")
	writers.Wait()
	close(done)
	loop.Wait()
	inStep(t, eng, st)
}

// betweenScans runs fn once, when LoadIndex starts its vector scan, after
// its full-text scan: another process writing between the two.
type betweenScans struct {
	*sqlite.DB
	fn func()
}

func (b *betweenScans) ScanVectors(ctx context.Context, space string, f func(recall.IndexedChunk, []float32) error) error {
	if b.fn != nil {
		b.fn()
		b.fn = nil
	}
	return b.DB.ScanVectors(ctx, space, f)
}

// TestLoadWithWritesBetweenScans: chunks another process adds (and then
// deletes) while LoadIndex is between its scans, with a text the index
// has through another chunk, end in step after one look.
func TestLoadWithWritesBetweenScans(t *testing.T) {
	ctx := context.Background()
	for _, thenDelete := range []bool{false, true} {
		_, st, other := pair(t)
		base := mkdoc("a.md", "alpha river stone")
		ok(t)(st.Write(ctx, []recall.Document{base}, vecsOf(base)))
		b := &betweenScans{DB: st, fn: func() {
			d := mkdoc("b.md", "alpha river stone")
			ok(t)(other.Write(ctx, []recall.Document{d}, nil))
		}}
		eng := New(b, Options{Embedder: embedtest.New(16), MemoryLexical: true})
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		if thenDelete {
			if _, _, err := other.Delete(ctx, "b.md"); err != nil {
				t.Fatal(err)
			}
		}
		inStep(t, eng, st)
	}
}

// afterVectorScan runs fn once, right after LoadIndex's vector scan.
type afterVectorScan struct {
	*sqlite.DB
	fn func()
}

func (a *afterVectorScan) ScanVectors(ctx context.Context, space string, f func(recall.IndexedChunk, []float32) error) error {
	err := a.DB.ScanVectors(ctx, space, f)
	if a.fn != nil {
		a.fn()
		a.fn = nil
	}
	return err
}

// TestPutVectorsDuringFirstLoad: vectors the engine stores during its
// first LoadIndex (a repair, a memory's vectors), after the scan passed
// their chunk, are in the index it loads, with or without the in-memory
// full-text index, though no index was in use when they were stored.
func TestPutVectorsDuringFirstLoad(t *testing.T) {
	ctx := context.Background()
	for _, mem := range []bool{false, true} {
		_, st, _ := pair(t)
		a, b := mkdoc("a.md", "alpha river stone"), mkdoc("b.md", "bravo wombat dune")
		ok(t)(st.Write(ctx, []recall.Document{a}, vecsOf(a)))
		ok(t)(st.Write(ctx, []recall.Document{b}, nil)) // b waits for repair
		w := &afterVectorScan{DB: st}
		eng := New(w, Options{Embedder: embedtest.New(16), MemoryLexical: mem})
		w.fn = func() { ok(t)(nil, eng.PutVectors(ctx, vecsOf(b))) }
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		fresh := New(st, Options{Embedder: embedtest.New(16)})
		ok(t)(nil, fresh.LoadIndex(ctx))
		got, want := eng.vx.chunkIDs(), fresh.vx.chunkIDs()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || eng.vx.texts() != fresh.vx.texts() {
			t.Errorf("in-memory full text %v: vector chunk ids %v (%d texts); a fresh load %v (%d texts)", mem, got, eng.vx.texts(), want, fresh.vx.texts())
		}
	}
}
