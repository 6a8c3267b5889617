package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
)

// censusOf is the census a store must report, computed from its chunks.
func censusOf(t *testing.T, s recall.Store, space string, vectors int) recall.Census {
	t.Helper()
	c := recall.Census{ReadSpace: readSpace(t, s), Vectors: vectors}
	for id := range snapshot(t, s) {
		c.Chunks++
		c.MaxChunkID = max(c.MaxChunkID, id)
	}
	return c
}

func checkCensus(t *testing.T, s recall.Store, space string, vectors int, when string) {
	t.Helper()
	got, err := s.Census(ctx, space)
	if err != nil {
		t.Fatalf("%s: Census: %v", when, err)
	}
	if want := censusOf(t, s, space, vectors); got != want {
		t.Errorf("%s: Census(%q) = %+v; want %+v", when, space, got, want)
	}
	var want []int64
	for id := range snapshot(t, s) {
		want = append(want, id)
	}
	slices.Sort(want)
	ids, err := s.ChunkIDs(ctx)
	if err != nil {
		t.Fatalf("%s: ChunkIDs: %v", when, err)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("%s: ChunkIDs = %v; want %v", when, ids, want)
	}
}

// testCensus checks that Census, ChunkIDs and VectorKeys follow every
// kind of write, and that a census taken again without writes is the same.
func testCensus(t *testing.T, s recall.Store) {
	checkCensus(t, s, "", 0, "empty store")
	write(t, s, doc("a.md", recall.KindArchive, "alpha one", "alpha two"), doc("b.md", recall.KindArchive, "beta"))
	checkCensus(t, s, "", 0, "after a write")
	checkCensus(t, s, "", 0, "again without writes")

	sp := createSpace(t, s, "s1", 3)
	checkCensus(t, s, sp, 0, "after CreateSpace")
	putVecs(t, s, sp, "alpha one", "beta")
	checkCensus(t, s, sp, 2, "after PutVectors")
	got, err := s.VectorKeys(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := hashes("alpha one", "beta")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("VectorKeys = %v; want %v", got, want)
	}

	// A changed chunk gets a new id; the largest id grows.
	write(t, s, doc("a.md", recall.KindArchive, "alpha one", "alpha three"))
	checkCensus(t, s, sp, 2, "after replacing a chunk")
	if _, _, err := s.Delete(ctx, "b.md"); err != nil {
		t.Fatal(err)
	}
	// Deleting b.md deletes the vector of "beta", which no chunk holds now.
	checkCensus(t, s, sp, 1, "after Delete")
	if _, err := s.VectorKeys(ctx, "no-such-space"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("VectorKeys of a missing space: %v; want ENOTFOUND", err)
	}
	if c, err := s.Census(ctx, "no-such-space"); err != nil || c.Vectors != 0 {
		t.Errorf("Census of a missing space: %+v, %v; want no vectors and no error", c, err)
	}
}

// testCommitHook: each write calls the context's commit hook once, before
// what it writes can be read, and a write refused before its commit never
// calls it.
func testCommitHook(t *testing.T, s recall.Store) {
	calls := 0
	var seen []bool // whether the write was readable when the hook ran
	hooked := func(probe func() bool) context.Context {
		return recall.WithCommitHook(ctx, func() {
			calls++
			seen = append(seen, probe())
		})
	}
	exists := func(id string) func() bool {
		return func() bool { _, err := s.Source(ctx, id); return err == nil }
	}
	check := func(what string, wantCalls int) {
		t.Helper()
		if calls != wantCalls {
			t.Errorf("%s: hook called %d times; want %d", what, calls, wantCalls)
		}
		for _, v := range seen {
			if v {
				t.Errorf("%s: the write was readable when the hook ran: it must run before the commit", what)
			}
		}
		calls, seen = 0, nil
	}

	if _, err := s.Write(hooked(exists("a.md")), []recall.Document{doc("a.md", recall.KindArchive, "one")}, nil); err != nil {
		t.Fatal(err)
	}
	check("Write", 1)
	_, err := s.Update(hooked(exists("m/k")), "m/k", func(cur *recall.Document) (*recall.Document, error) {
		d := doc("m/k", recall.KindMemory, "value")
		return &d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("Update", 1)
	gone := func() bool { _, err := s.Source(ctx, "a.md"); return err != nil }
	if _, _, err := s.Delete(hooked(gone), "a.md"); err != nil {
		t.Fatal(err)
	}
	check("Delete", 1)
	sp := createSpace(t, s, "h", 3)
	vecs := []recall.Vector{{Space: sp, Key: recall.TextHash("value"), Vec: vecFor("value", 3)}}
	stored := func() bool { got, _ := s.VectorsByKey(ctx, sp, hashes("value")); return len(got) > 0 }
	if err := s.PutVectors(hooked(stored), vecs); err != nil {
		t.Fatal(err)
	}
	check("PutVectors", 1)

	bad := doc("", recall.KindArchive, "x")
	if _, err := s.Write(hooked(exists("")), []recall.Document{bad}, nil); err == nil {
		t.Fatal("a document without an id was stored")
	}
	check("a refused Write", 0)
	if err := s.PutVectors(hooked(stored), []recall.Vector{{Space: sp, Key: "h", Vec: []float32{1}}}); err == nil {
		t.Fatal("a vector of the wrong dimension was stored")
	}
	check("a refused PutVectors", 0)
}

// testPendingSettlesOnWrite: a source written pending whose every text
// already has a vector in the read space is stored settled ("ok"); one
// with a text lacking a vector stays pending.
func testPendingSettlesOnWrite(t *testing.T, s recall.Store) {
	sp := createSpace(t, s, "p", 3)
	write(t, s, doc("a.md", recall.KindArchive, "shared text"))
	putVecs(t, s, sp, "shared text")
	write(t, s, doc("b.md", recall.KindArchive, "shared text"), doc("c.md", recall.KindArchive, "shared text", "a text with no vector"))
	for id, want := range map[string]string{"b.md": recall.IndexOK, "c.md": recall.IndexPending} {
		src, err := s.Source(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if src.IndexState != want {
			t.Errorf("%s written pending: state %q; want %q", id, src.IndexState, want)
		}
	}
	_, err := s.Update(ctx, "m/k", func(*recall.Document) (*recall.Document, error) {
		d := doc("m/k", recall.KindMemory, "shared text")
		return &d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := s.Source(ctx, "m/k"); src.IndexState != recall.IndexOK {
		t.Errorf("memory updated pending with an embedded text: state %q; want ok", src.IndexState)
	}
}

// testSkippedOnlyWithoutSpace: "skipped" (written without an embedder)
// holds only while there is no vector space. Creating the first space
// makes skipped sources pending, so repair's vectors settle them; a source
// written skipped while a space exists is stored pending, or ok when its
// texts have vectors already.
func testSkippedOnlyWithoutSpace(t *testing.T, s recall.Store) {
	skipped := func(id string, texts ...string) recall.Document {
		d := doc(id, recall.KindMemory, texts...)
		d.Source.IndexState = recall.IndexSkipped
		return d
	}
	state := func(id string) string { t.Helper(); return indexState(t, s, id) }
	write(t, s, skipped("m/before", "written before any space"))
	if got := state("m/before"); got != recall.IndexSkipped {
		t.Fatalf("written skipped without a space: %q", got)
	}
	sp := createSpace(t, s, "s", 3)
	if got := state("m/before"); got != recall.IndexPending {
		t.Errorf("skipped source once a space exists: %q; want pending", got)
	}
	write(t, s, doc("a.md", recall.KindArchive, "embedded text"))
	putVecs(t, s, sp, "written before any space", "embedded text")
	if got := state("m/before"); got != recall.IndexOK {
		t.Errorf("after its vectors were stored: %q; want ok", got)
	}
	write(t, s, skipped("m/known", "embedded text"), skipped("m/new", "embedded text", "no vector yet"))
	for id, want := range map[string]string{"m/known": recall.IndexOK, "m/new": recall.IndexPending} {
		if got := state(id); got != want {
			t.Errorf("%s written skipped while a space exists: %q; want %q", id, got, want)
		}
	}
}

// testFirstSpaceSettles: with no vector space, a sweep without an
// embedder writes its sources "ok" and a save without one writes
// "skipped". Creating the first space makes it the read space, so every
// source is settled against it in the same transaction: pending while a
// text lacks a vector there (repair has not run yet). Creating a second space, which searches do not read, changes
// nothing.
func testFirstSpaceSettles(t *testing.T, s recall.Store) {
	state := func(id string) string { t.Helper(); return indexState(t, s, id) }
	swept := doc("a.md", recall.KindArchive, "swept text")
	swept.Source.IndexState = recall.IndexOK
	saved := doc("m/k", recall.KindMemory, "saved text")
	saved.Source.IndexState = recall.IndexOK
	skipped := doc("m/s", recall.KindMemory, "skipped text")
	skipped.Source.IndexState = recall.IndexSkipped
	day := doc("diary/2026-01-02", recall.KindDiary, "a day")
	day.Source.IndexState = recall.IndexSkipped
	write(t, s, swept, saved, skipped, day)
	sp := createSpace(t, s, "first", 3)
	want := map[string]string{"a.md": recall.IndexPending, "m/k": recall.IndexPending, "m/s": recall.IndexPending, "diary/2026-01-02": recall.IndexPending}
	for id, w := range want {
		if got := state(id); got != w {
			t.Errorf("%s once the first space exists, before repair: %q; want %q", id, got, w)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.IndexStates[recall.IndexOK] != 0 || st.IndexStates[recall.IndexPending] != 3 {
		t.Errorf("memory and diary index states before repair: %v; want 3 pending", st.IndexStates)
	}
	createSpace(t, s, "second", 3)
	if got := state("a.md"); got != recall.IndexPending {
		t.Errorf("a.md after a second space: %q; want pending", got)
	}
	putVecs(t, s, sp, "swept text", "saved text", "skipped text", "a day")
	for id := range want {
		if got := state(id); got != recall.IndexOK {
			t.Errorf("%s after repair stored its vectors: %q; want ok", id, got)
		}
	}
}

// testIDsOnlyGrow: a new chunk's id is above every id the store ever gave,
// even one whose chunk is gone: a follower comparing the largest id, and a
// repair cursor, rely on it.
func testIDsOnlyGrow(t *testing.T, s recall.Store) {
	first := write(t, s, doc("a.md", recall.KindArchive, "one", "two"))
	top := first.Added[len(first.Added)-1].ID
	if _, _, err := s.Delete(ctx, "a.md"); err != nil {
		t.Fatal(err)
	}
	again := write(t, s, doc("b.md", recall.KindArchive, "three"), doc("c.md", recall.KindArchive, "four", "five"))
	last := top
	for _, c := range again.Added {
		if c.ID <= last {
			t.Errorf("chunk ids of a write after a deletion: %+v; want each above %d and ascending", again.Added, top)
			break
		}
		last = c.ID
	}
}

// testScanVectorsUnits: a text stored as several units of the space's
// dimension (recall.Vector) scans and reads back as all of them, in order.
func testScanVectorsUnits(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "u", 2)
	write(t, s, doc("a.md", recall.KindArchive, "a text of three units"))
	units := []float32{1, 2, 3, 4, 5, 6}
	h := recall.TextHash("a text of three units")
	if err := s.PutVectors(ctx, []recall.Vector{{Space: space, Key: h, Vec: units}}); err != nil {
		t.Fatal(err)
	}
	for name, scan := range map[string]func(context.Context, string, func(recall.IndexedChunk, []float32) error) error{
		"ScanVectors": s.ScanVectors, "StreamVectors": s.StreamVectors,
	} {
		n := 0
		err := scan(ctx, space, func(c recall.IndexedChunk, vec []float32) error {
			n++
			if !slices.Equal(vec, units) {
				t.Errorf("%s gives %v; want %v", name, vec, units)
			}
			return nil
		})
		if err != nil || n != 1 {
			t.Errorf("%s: %d chunks, %v; want 1", name, n, err)
		}
	}
	// Storing it again with fewer units replaces all of them.
	if err := s.PutVectors(ctx, []recall.Vector{{Space: space, Key: h, Vec: []float32{7, 8}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.VectorsByKey(ctx, space, []string{h})
	if err != nil || !slices.Equal(got[h], []float32{7, 8}) {
		t.Errorf("after storing one unit: %v, %v; want [7 8]", got[h], err)
	}
	if c, err := s.Census(ctx, space); err != nil || c.Vectors != 1 {
		t.Errorf("Census counts %+v, %v; want 1 vector (texts, not units)", c, err)
	}
}

// testStatesFollowReadSpace: a source's index state says what semantic
// search, which reads the read space, can find. Vectors stored in another
// space (a model switch's next one) settle nothing, a source written "ok"
// with only such vectors is stored pending, and making a space the read
// space settles every source against it, both ways.
func testStatesFollowReadSpace(t *testing.T, s recall.Store) {
	state := func(id string) string { t.Helper(); return indexState(t, s, id) }
	old := createSpace(t, s, "old", 3)
	next := createSpace(t, s, "next", 3)
	write(t, s, doc("a.md", recall.KindArchive, "alpha"))
	putVecs(t, s, next, "alpha")
	if got := state("a.md"); got != recall.IndexPending {
		t.Errorf("with vectors only in a space searches do not read: %q; want pending", got)
	}
	ok := doc("m/b", recall.KindMemory, "beta")
	ok.Source.IndexState = recall.IndexOK
	if _, err := s.Write(ctx, []recall.Document{ok}, []recall.Vector{{Space: next, Key: recall.TextHash("beta"), Vec: vecFor("beta", 3)}}); err != nil {
		t.Fatal(err)
	}
	if got := state("m/b"); got != recall.IndexPending {
		t.Errorf("written ok with vectors for another space: %q; want pending", got)
	}
	putVecs(t, s, old, "beta")
	if got := state("m/b"); got != recall.IndexOK {
		t.Errorf("once the read space has its vector: %q; want ok", got)
	}
	if err := s.UseSpace(ctx, next); err != nil {
		t.Fatal(err)
	}
	if a, b := state("a.md"), state("m/b"); a != recall.IndexOK || b != recall.IndexOK {
		t.Errorf("after the switch to a space holding both: %q, %q; want ok, ok", a, b)
	}
	if err := s.UseSpace(ctx, old); err != nil {
		t.Fatal(err)
	}
	if a, b := state("a.md"), state("m/b"); a != recall.IndexPending || b != recall.IndexOK {
		t.Errorf("after the switch back: %q, %q; want pending, ok", a, b)
	}
}

// indexState is the stored index state of source id.
func indexState(t *testing.T, s recall.Store, id string) string {
	t.Helper()
	src, err := s.Source(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return src.IndexState
}
