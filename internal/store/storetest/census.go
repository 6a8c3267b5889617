package storetest

import (
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
		c.ChunkIDSum += id
		c.ChunkIDMix += recall.CensusMix(id)
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
	var all []int64
	for id := range snapshot(t, s) {
		all = append(all, id)
	}
	slices.Sort(all)
	for _, after := range []int64{0, 1, 2, 3, 1 << 40} {
		ids, err := s.ChunkIDs(ctx, after)
		if err != nil {
			t.Fatalf("%s: ChunkIDs: %v", when, err)
		}
		want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return id <= after })
		if !slices.Equal(ids, want) {
			t.Errorf("%s: ChunkIDs(%d) = %v; want %v", when, after, ids, want)
		}
	}
}

// testCensus checks that Census, ChunkIDs and VectorHashes follow every
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
	got, err := s.VectorHashes(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := hashes("alpha one", "beta")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("VectorHashes = %v; want %v", got, want)
	}

	// A changed chunk gets a new id; the largest id grows.
	write(t, s, doc("a.md", recall.KindArchive, "alpha one", "alpha three"))
	checkCensus(t, s, sp, 2, "after replacing a chunk")
	if _, _, err := s.Delete(ctx, "b.md"); err != nil {
		t.Fatal(err)
	}
	// Deleting b.md deletes the vector of "beta", which no chunk holds now.
	checkCensus(t, s, sp, 1, "after Delete")
	if _, err := s.VectorHashes(ctx, "no-such-space"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("VectorHashes of a missing space: %v; want ENOTFOUND", err)
	}
}
