package vindex

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/recall-mcp/recall"
)

var ctx = context.Background()

func chunk(id int64, hash, source string) recall.IndexedChunk {
	return recall.IndexedChunk{ID: id, VectorKey: hash, Source: recall.SourceMeta{ID: source, Kind: recall.KindArchive}}
}

// floats is a FetchFunc over vectors kept in a map, standing in for the store.
type floats map[string][]float32

func (f floats) fetch(_ context.Context, hashes []string) (map[string][]float32, error) {
	m := make(map[string][]float32)
	for _, h := range hashes {
		if v, ok := f[h]; ok {
			m[h] = v
		}
	}
	return m, nil
}

// checkInvariants verifies that the slabs, lists and maps agree.
func checkInvariants(t *testing.T, x *Index) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	nv, nc := len(x.hashes), len(x.ids)
	if len(x.hi) != nv*x.stride || len(x.lo) != nv*x.stride || len(x.signs) != nv*x.words || len(x.scales) != nv || len(x.heads) != nv || len(x.refs) != nv || len(x.byHash) != nv {
		t.Fatalf("vector slabs out of step: %d hashes, %d high digits, %d map entries", nv, len(x.hi), len(x.byHash))
	}
	if len(x.metas) != nc || len(x.vecOf) != nc || len(x.next) != nc || len(x.byID) != nc {
		t.Fatalf("chunk slabs out of step: %d ids, %d map entries", nc, len(x.byID))
	}
	seen := make([]bool, nc)
	for v := range nv {
		if x.byHash[x.hashes[v]] != int32(v) {
			t.Fatalf("byHash[%s] = %d, want %d", x.hashes[v], x.byHash[x.hashes[v]], v)
		}
		n := int32(0)
		for s := x.heads[v]; s >= 0; s = x.next[s] {
			if seen[s] || x.vecOf[s] != int32(v) {
				t.Fatalf("chunk slot %d listed twice or under the wrong vector", s)
			}
			seen[s] = true
			n++
		}
		if n == 0 || n != x.refs[v] {
			t.Fatalf("vector %d: %d chunks listed, refs %d", v, n, x.refs[v])
		}
	}
	refs := map[*sourceRef]int{}
	for s := range nc {
		if !seen[s] || x.byID[x.ids[s]] != int32(s) {
			t.Fatalf("chunk slot %d unlisted or not mapped", s)
		}
		refs[x.metas[s]]++
	}
	if len(refs) != len(x.source) {
		t.Fatalf("%d sources referenced, %d interned", len(refs), len(x.source))
	}
	for r, n := range refs {
		if x.source[r.meta.ID] != r || r.refs != n {
			t.Fatalf("source %s: %d chunks, refs %d", r.meta.ID, n, r.refs)
		}
	}
}

func all(*recall.SourceMeta) bool { return true }

func TestAddRefusesBadVectors(t *testing.T) {
	x := New(4, nil)
	tests := []struct {
		name string
		vec  []float32
		code string
	}{
		{"short", []float32{1, 2, 3}, recall.ECONFLICT},
		{"long", []float32{1, 2, 3, 4, 5}, recall.ECONFLICT},
		{"zero", []float32{0, 0, 0, 0}, recall.EINVALID},
		{"NaN", []float32{1, float32(math.NaN()), 0, 0}, recall.EINVALID},
		{"Inf", []float32{1, float32(math.Inf(-1)), 0, 0}, recall.EINVALID},
		{"missing for a new text", nil, recall.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := x.Add(chunk(1, "h", "s"), tt.vec)
			if got := recall.ErrorCode(err); got != tt.code {
				t.Fatalf("Add: code %q (%v), want %q", got, err, tt.code)
			}
			if x.Len() != 0 || x.Has("h") {
				t.Fatal("a refused vector was indexed")
			}
		})
	}
}

func TestSearchRefusesBadQueries(t *testing.T) {
	x := New(3, nil)
	if err := x.Add(chunk(1, "h", "s"), []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    []float32
		code string
	}{
		{"dimension", []float32{1, 0}, recall.ECONFLICT},
		{"zero", []float32{0, 0, 0}, recall.EINVALID},
		{"NaN", []float32{float32(math.NaN()), 1, 0}, recall.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := x.Search(ctx, tt.q, 5, nil)
			if got := recall.ErrorCode(err); got != tt.code {
				t.Fatalf("Search: code %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}

func TestSharedTextIsOneVector(t *testing.T) {
	x := New(3, nil)
	v := []float32{0, 3, 4}
	if err := x.Add(chunk(1, "same", "a.md"), v); err != nil {
		t.Fatal(err)
	}
	if !x.Has("same") {
		t.Fatal("Has(same) = false after Add")
	}
	if err := x.Add(chunk(2, "same", "b.md"), nil); err != nil {
		t.Fatalf("second chunk of an indexed text without a vector: %v", err)
	}
	if err := x.Add(chunk(3, "same", "c.md"), v); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(chunk(4, "other", "c.md"), []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, x)
	if x.Len() != 4 || x.Vectors() != 2 {
		t.Fatalf("Len %d Vectors %d, want 4 chunks over 2 vectors", x.Len(), x.Vectors())
	}

	ids := func() []int64 {
		t.Helper()
		res, err := x.Search(ctx, []float32{0, 0.6, 0.8}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			return nil
		}
		if res[0].Key != "same" {
			t.Fatalf("best match %q, want same", res[0].Key)
		}
		return res[0].ChunkIDs
	}
	if got := ids(); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("chunks of the shared text %v, want [1 2 3]", got)
	}
	x.Remove(2)
	checkInvariants(t, x)
	if got := ids(); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("after removing 2: %v, want [1 3]", got)
	}
	x.Remove(1, 3)
	checkInvariants(t, x)
	if x.Has("same") || x.Vectors() != 1 {
		t.Fatalf("vector kept after its last chunk went: Has %v, Vectors %d", x.Has("same"), x.Vectors())
	}
	res, err := x.Search(ctx, []float32{0, 0.6, 0.8}, 5, nil)
	if err != nil || len(res) != 1 || res[0].Key != "other" {
		t.Fatalf("after removing the shared text: %+v, %v", res, err)
	}
}

func TestReAddingAChunk(t *testing.T) {
	x := New(2, nil)
	must(t, x.Add(chunk(1, "a", "s"), []float32{1, 0}))
	must(t, x.Add(chunk(2, "b", "s"), []float32{0, 1}))

	// Same id, same text, new source attributes: the filter sees them.
	c := chunk(1, "a", "s")
	c.Source.Title = "renamed"
	must(t, x.Add(c, nil))
	checkInvariants(t, x)
	res, err := x.Search(ctx, []float32{1, 0}, 1, func(m *recall.SourceMeta) bool { return m.Title == "renamed" })
	if err != nil || len(res) != 1 || res[0].Key != "a" {
		t.Fatalf("search by the new title: %+v, %v", res, err)
	}

	// Same id, another text: the chunk moves, the old text goes.
	must(t, x.Add(chunk(1, "c", "s"), []float32{-1, 0}))
	checkInvariants(t, x)
	if x.Has("a") || !x.Has("c") || x.Len() != 2 {
		t.Fatalf("after moving chunk 1: Has(a) %v Has(c) %v Len %d", x.Has("a"), x.Has("c"), x.Len())
	}
	// Same id onto a text another chunk holds, without a vector.
	must(t, x.Add(chunk(1, "b", "t"), nil))
	checkInvariants(t, x)
	if x.Vectors() != 1 || x.Len() != 2 {
		t.Fatalf("Vectors %d Len %d, want 1 and 2", x.Vectors(), x.Len())
	}
}

func TestApply(t *testing.T) {
	x := New(2, nil)
	must(t, x.Add(chunk(1, "a", "s"), []float32{1, 0}))
	must(t, x.Add(chunk(2, "b", "s"), []float32{0, 1}))

	// The source is rewritten: chunk 1's text moves to chunk 3, chunk 2 is
	// replaced by chunk 4 with a new text, and chunk 5's text has no vector yet.
	w := recall.WriteResult{
		Removed: []int64{1, 2},
		Added:   []recall.IndexedChunk{chunk(3, "a", "s"), chunk(4, "c", "s"), chunk(5, "pending", "s")},
	}
	skipped, err := x.Apply(w, map[string][]float32{"c": {1, 1}})
	must(t, err)
	checkInvariants(t, x)
	if skipped != 1 {
		t.Fatalf("skipped %d, want 1 (the text without a vector)", skipped)
	}
	if x.Len() != 2 || !x.Has("a") || x.Has("b") || !x.Has("c") || x.Has("pending") {
		t.Fatalf("after Apply: Len %d, Has a/b/c/pending %v %v %v %v", x.Len(), x.Has("a"), x.Has("b"), x.Has("c"), x.Has("pending"))
	}
	res, err := x.Search(ctx, []float32{1, 0}, 5, nil)
	must(t, err)
	if len(res) != 2 || res[0].Key != "a" || !slices.Equal(res[0].ChunkIDs, []int64{3}) {
		t.Fatalf("results %+v", res)
	}

	// A bad vector changes nothing, even for the chunks listed before it.
	bad := recall.WriteResult{
		Removed: []int64{3},
		Added:   []recall.IndexedChunk{chunk(6, "d", "s"), chunk(7, "e", "s")},
	}
	_, err = x.Apply(bad, map[string][]float32{"d": {0, 1}, "e": {0, 0}})
	if recall.ErrorCode(err) != recall.EINVALID {
		t.Fatalf("Apply with a zero vector: %v", err)
	}
	if x.Len() != 2 || x.Has("d") || !x.Has("a") {
		t.Fatal("a failed Apply changed the index")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRandomOperations applies random adds, re-adds and removes with many
// shared texts and compares the index with a plain map after each step: the
// swap-with-last bookkeeping must never lose or mislabel a chunk.
func TestRandomOperations(t *testing.T) {
	const dim = 8
	r := rand.New(rand.NewPCG(3, 4))
	vecs := floats{}
	for h := range 60 {
		vecs[strconv.Itoa(h)] = gaussian(r, dim)
	}
	x := New(dim, vecs.fetch)
	model := map[int64]string{} // chunk id -> hash
	for step := range 3000 {
		id := int64(r.IntN(200))
		switch op := r.IntN(10); {
		case op < 6:
			h := strconv.Itoa(r.IntN(len(vecs)))
			src := "s" + strconv.Itoa(int(id)%7)
			var v []float32
			if !x.Has(h) || r.IntN(2) == 0 {
				v = vecs[h]
			}
			must(t, x.Add(chunk(id, h, src), v))
			model[id] = h
		default:
			ids := []int64{id, int64(r.IntN(200))}
			x.Remove(ids...)
			delete(model, ids[0])
			delete(model, ids[1])
		}
		if step%100 == 0 {
			checkInvariants(t, x)
		}
	}
	checkInvariants(t, x)

	want := map[string][]int64{}
	for id, h := range model {
		want[h] = append(want[h], id)
	}
	res, err := x.Search(ctx, gaussian(r, dim), 1000, nil)
	must(t, err)
	if len(res) != len(want) {
		t.Fatalf("%d texts found, model has %d", len(res), len(want))
	}
	for _, re := range res {
		w := want[re.Key]
		slices.Sort(w)
		if !slices.Equal(re.ChunkIDs, w) {
			t.Fatalf("text %s: chunks %v, model %v", re.Key, re.ChunkIDs, w)
		}
	}

	// Removing everything gives the memory back.
	before := x.MemoryBytes()
	for id := range model {
		x.Remove(id)
	}
	checkInvariants(t, x)
	if x.Len() != 0 || x.Vectors() != 0 {
		t.Fatalf("Len %d Vectors %d after removing all", x.Len(), x.Vectors())
	}
	if after := x.MemoryBytes(); after >= before {
		t.Fatalf("MemoryBytes %d after removing all, %d before", after, before)
	}
}

func TestShrinkAfterMassRemoval(t *testing.T) {
	const dim, n = 16, 5000
	x := New(dim, nil)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		must(t, x.Add(chunk(int64(i), hashOf(i), "s"), gaussian(r, dim)))
	}
	full := x.MemoryBytes()
	if min := int64(n * (dim + 4)); full < min {
		t.Fatalf("MemoryBytes %d below the codes and scales alone (%d)", full, min)
	}
	for i := range n - 100 {
		x.Remove(int64(i))
	}
	checkInvariants(t, x)
	if got := x.MemoryBytes(); got > full/3 {
		t.Fatalf("MemoryBytes %d with 100 of %d chunks left, was %d", got, n, full)
	}
	res, err := x.Search(ctx, gaussian(r, dim), 200, nil)
	must(t, err)
	if len(res) != 100 {
		t.Fatalf("%d results, want the 100 left", len(res))
	}
	for _, re := range res {
		if re.ChunkIDs[0] < n-100 {
			t.Fatalf("removed chunk %d returned", re.ChunkIDs[0])
		}
	}
}

func TestFetchFailures(t *testing.T) {
	boom := errors.New("disk on fire")
	tests := []struct {
		name  string
		fetch FetchFunc
		code  string
	}{
		{"error", func(context.Context, []string) (map[string][]float32, error) { return nil, boom }, recall.EINTERNAL},
		{"wrong dimension", func(_ context.Context, hs []string) (map[string][]float32, error) {
			return map[string][]float32{hs[0]: {1, 2}}, nil
		}, recall.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(3, tt.fetch)
			must(t, x.Add(chunk(1, "a", "s"), []float32{1, 0, 0}))
			if _, err := x.Search(ctx, []float32{1, 0, 0}, 1, nil); recall.ErrorCode(err) != tt.code {
				t.Fatalf("Search: %v, want code %s", err, tt.code)
			}
		})
	}

	t.Run("missing vector keeps the approximate score", func(t *testing.T) {
		x := New(3, floats{"a": {1, 0, 0}}.fetch)
		must(t, x.Add(chunk(1, "a", "s"), []float32{1, 0, 0}))
		must(t, x.Add(chunk(2, "b", "s"), []float32{0.6, 0.8, 0}))
		res, err := x.Search(ctx, []float32{1, 0, 0}, 2, nil)
		must(t, err)
		if len(res) != 2 || res[0].Key != "a" || res[0].Score != 1 || math.Abs(float64(res[1].Score)-0.6) > 0.01 {
			t.Fatalf("results %+v", res)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		x := New(3, nil)
		must(t, x.Add(chunk(1, "a", "s"), []float32{1, 0, 0}))
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := x.Search(c, []float32{1, 0, 0}, 1, nil); recall.ErrorCode(err) != recall.ECANCELED {
			t.Fatalf("Search with a canceled context: %v", err)
		}
	})
}

// TestKeyedFilterFollowsChanges: a filter's bitmap kept under its key is
// dropped when the index changes, so a chunk added, moved to another source
// or removed afterwards is found or refused as the filter says.
func TestKeyedFilterFollowsChanges(t *testing.T) {
	x := New(3, nil)
	onlyA := func(m *recall.SourceMeta) bool { return m.ID == "a.md" }
	search := func() []string {
		t.Helper()
		res, err := x.SearchKeyed(ctx, []float32{1, 0, 0}, 10, onlyA, "only a.md")
		if err != nil {
			t.Fatal(err)
		}
		var hs []string
		for _, r := range res {
			hs = append(hs, r.Key)
		}
		slices.Sort(hs)
		return hs
	}
	if err := x.Add(chunk(1, "h1", "a.md"), []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(chunk(2, "h2", "b.md"), []float32{1, 1, 0}); err != nil {
		t.Fatal(err)
	}
	if got := search(); !slices.Equal(got, []string{"h1"}) {
		t.Fatalf("first search = %v; want [h1]", got)
	}
	if err := x.Add(chunk(3, "h3", "a.md"), []float32{1, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if got := search(); !slices.Equal(got, []string{"h1", "h3"}) {
		t.Errorf("after adding h3 to a.md = %v; want [h1 h3]", got)
	}
	// Chunk 2 re-added under a.md: now allowed.
	if _, err := x.Apply(recall.WriteResult{Added: []recall.IndexedChunk{chunk(2, "h2", "a.md")}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := search(); !slices.Equal(got, []string{"h1", "h2", "h3"}) {
		t.Errorf("after moving h2 to a.md = %v; want [h1 h2 h3]", got)
	}
	x.Remove(1)
	if got := search(); !slices.Equal(got, []string{"h2", "h3"}) {
		t.Errorf("after removing chunk 1 = %v; want [h2 h3]", got)
	}
	checkInvariants(t, x)
}

// TestSearchCodesReadsNothing: SearchCodes scores by the codes alone, never
// asks the store, and its scores are within the codes' error of the cosine.
func TestSearchCodesReadsNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	fetches := 0
	vecs := floats{}
	x := New(64, func(ctx context.Context, hashes []string) (map[string][]float32, error) {
		fetches++
		return vecs.fetch(ctx, hashes)
	})
	for i := range 500 {
		v := make([]float32, 64)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		h := strconv.Itoa(i)
		vecs[h] = v
		if err := x.Add(chunk(int64(i), h, "s.md"), v); err != nil {
			t.Fatal(err)
		}
	}
	q := vecs["7"]
	res, err := x.SearchCodes(ctx, q, 10, nil, "")
	if err != nil || len(res) != 10 {
		t.Fatalf("SearchCodes = %d results, %v", len(res), err)
	}
	if fetches != 0 {
		t.Errorf("SearchCodes fetched %d times; want none", fetches)
	}
	if res[0].Key != "7" {
		t.Errorf("best match %s; want the query's own vector", res[0].Key)
	}
	qu, _ := unit(q)
	for _, r := range res {
		vu, _ := unit(vecs[r.Key])
		if d := math.Abs(float64(r.Score - dot(qu, vu))); d > 0.01 {
			t.Errorf("%s: code score %v, cosine %v", r.Key, r.Score, dot(qu, vu))
		}
	}
	if _, err := x.Search(ctx, q, 10, nil); err != nil || fetches != 1 {
		t.Errorf("Search: %v, %d fetches; want one", err, fetches)
	}
}
