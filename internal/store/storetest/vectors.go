package storetest

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
)

func createSpace(t *testing.T, s recall.Store, name string, dim int) string {
	t.Helper()
	if _, err := s.CreateSpace(ctx, recall.VectorSpace{Name: name, Provider: "test", Model: "m-" + name, Dim: dim}); err != nil {
		t.Fatalf("CreateSpace(%s): %v", name, err)
	}
	return name
}

func hashes(texts ...string) []string {
	out := make([]string, len(texts))
	for i, text := range texts {
		out[i] = recall.TextHash(text)
	}
	return out
}

// vecFor is a deterministic vector of the space's dimension for a text.
func vecFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)+i) / 10
	}
	return v
}

func putVecs(t *testing.T, s recall.Store, space string, texts ...string) {
	t.Helper()
	dim := spaceDim(t, s, space)
	var vecs []recall.Vector
	for _, text := range texts {
		vecs = append(vecs, recall.Vector{Space: space, Key: recall.TextHash(text), Vec: vecFor(text, dim)})
	}
	if err := s.PutVectors(ctx, vecs); err != nil {
		t.Fatalf("PutVectors: %v", err)
	}
}

func spaceDim(t *testing.T, s recall.Store, name string) int {
	t.Helper()
	spaces, err := s.Spaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spaces {
		if sp.Name == name {
			return sp.Dim
		}
	}
	t.Fatalf("no space %s", name)
	return 0
}

func readSpace(t *testing.T, s recall.Store) string {
	t.Helper()
	spaces, err := s.Spaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := ""
	for _, sp := range spaces {
		if sp.Read {
			if read != "" {
				t.Errorf("two read spaces: %s and %s", read, sp.Name)
			}
			read = sp.Name
		}
	}
	return read
}

func testSpaces(t *testing.T, s recall.Store) {
	first, err := s.CreateSpace(ctx, recall.VectorSpace{Name: "a", Provider: "builtin", Model: "mini", Dim: 4, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Read || first.CreatedAt.IsZero() {
		t.Errorf("first space = %+v; want it read, with a creation time", first)
	}
	again, err := s.CreateSpace(ctx, recall.VectorSpace{Name: "a", Provider: "builtin", Model: "mini", Dim: 4, Normalized: true})
	if err != nil || again.Name != "a" || !again.Read {
		t.Errorf("creating the same space again = %+v, %v; want the existing space", again, err)
	}
	_, err = s.CreateSpace(ctx, recall.VectorSpace{Name: "a", Provider: "builtin", Model: "mini", Dim: 8})
	wantCode(t, err, recall.ECONFLICT, "same name, other dimension")
	_, err = s.CreateSpace(ctx, recall.VectorSpace{Name: "bad", Provider: "x", Model: "y", Dim: 0})
	wantCode(t, err, recall.EINVALID, "zero dimension")
	_, err = s.CreateSpace(ctx, recall.VectorSpace{Provider: "x", Model: "y", Dim: 3})
	wantCode(t, err, recall.EINVALID, "no name")

	createSpace(t, s, "b", 3)
	if got := readSpace(t, s); got != "a" {
		t.Errorf("read space = %q; want a (the first one)", got)
	}
	wantCode(t, s.UseSpace(ctx, "nope"), recall.ENOTFOUND, "UseSpace of a missing space")
	if err := s.UseSpace(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got := readSpace(t, s); got != "b" {
		t.Errorf("read space = %q; want b", got)
	}
	wantCode(t, s.DropSpace(ctx, "b"), recall.EINVALID, "dropping the read space")
	wantCode(t, s.DropSpace(ctx, "nope"), recall.ENOTFOUND, "dropping a missing space")

	write(t, s, doc("x.md", recall.KindArchive, "some text"))
	putVecs(t, s, "a", "some text")
	if err := s.DropSpace(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	spaces, _ := s.Spaces(ctx)
	if len(spaces) != 1 || spaces[0].Name != "b" {
		t.Errorf("spaces after drop = %+v; want b only", spaces)
	}
	// A space created again under a dropped name starts empty.
	createSpace(t, s, "a", 2)
	if vecs, err := s.VectorsByKey(ctx, "a", hashes("some text")); err != nil || len(vecs) != 0 {
		t.Errorf("recreated space holds %d vectors, %v; want none", len(vecs), err)
	}

	if err := s.SetRepairCursor(ctx, "b", 1234); err != nil {
		t.Fatal(err)
	}
	spaces, _ = s.Spaces(ctx)
	for _, sp := range spaces {
		if sp.Name == "b" && sp.RepairCursor != 1234 {
			t.Errorf("repair cursor = %d; want 1234", sp.RepairCursor)
		}
	}
	wantCode(t, s.SetRepairCursor(ctx, "nope", 1), recall.ENOTFOUND, "SetRepairCursor of a missing space")
}

func testVectorValidation(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "sp", 3)
	write(t, s, doc("a.md", recall.KindArchive, "text"))
	h := recall.TextHash("text")
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		v    recall.Vector
		code string
	}{
		{"dimension mismatch", recall.Vector{Space: space, Key: h, Vec: []float32{1, 2}}, recall.ECONFLICT},
		{"NaN", recall.Vector{Space: space, Key: h, Vec: []float32{1, nan, 3}}, recall.EINVALID},
		{"Inf", recall.Vector{Space: space, Key: h, Vec: []float32{inf, 2, 3}}, recall.EINVALID},
		{"empty", recall.Vector{Space: space, Key: h, Vec: []float32{}}, recall.EINVALID},
		{"nil", recall.Vector{Space: space, Key: h}, recall.EINVALID},
		{"missing space", recall.Vector{Space: "nope", Key: h, Vec: []float32{1, 2, 3}}, recall.ENOTFOUND},
	}
	for _, c := range cases {
		wantCode(t, s.PutVectors(ctx, []recall.Vector{c.v}), c.code, "PutVectors: "+c.name)
		_, err := s.Write(ctx, nil, []recall.Vector{c.v})
		wantCode(t, err, c.code, "Write: "+c.name)
	}
	// One bad vector refuses the whole batch.
	err := s.PutVectors(ctx, []recall.Vector{
		{Space: space, Key: h, Vec: []float32{1, 2, 3}},
		{Space: space, Key: h, Vec: []float32{1, 2}},
	})
	wantCode(t, err, recall.ECONFLICT, "batch with one bad vector")
	if vecs, _ := s.VectorsByKey(ctx, space, []string{h}); len(vecs) != 0 {
		t.Error("a refused batch stored a vector")
	}
	if err := s.PutVectors(ctx, []recall.Vector{{Space: space, Key: h, Vec: []float32{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	vecs, err := s.VectorsByKey(ctx, space, []string{h, recall.TextHash("absent")})
	if err != nil || !slices.Equal(vecs[h], []float32{1, 2, 3}) || len(vecs) != 1 {
		t.Errorf("VectorsByKey = %v, %v", vecs, err)
	}
	// A text embedded as several units stores their vectors concatenated
	// (recall.Vector): any whole number of the space's dimension.
	units := []float32{1, 2, 3, 4, 5, 6}
	if err := s.PutVectors(ctx, []recall.Vector{{Space: space, Key: h, Vec: units}}); err != nil {
		t.Fatalf("PutVectors of two units: %v", err)
	}
	vecs, err = s.VectorsByKey(ctx, space, []string{h})
	if err != nil || !slices.Equal(vecs[h], units) {
		t.Errorf("VectorsByKey of two units = %v, %v; want %v", vecs, err, units)
	}
	err = s.PutVectors(ctx, []recall.Vector{{Space: space, Key: h, Vec: []float32{1, 2, 3, 4}}})
	wantCode(t, err, recall.ECONFLICT, "PutVectors of 4 values in a 3-dim space")
}

func testVectorsFollowChunks(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "sp", 2)
	d := doc("a.md", recall.KindArchive, "first text", "second text")
	// Vectors written with their chunks in one call.
	_, err := s.Write(ctx, []recall.Document{d}, []recall.Vector{
		{Space: space, Key: recall.TextHash("first text"), Vec: []float32{1, 0}},
		{Space: space, Key: recall.TextHash("second text"), Vec: []float32{0, 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A vector for a text no chunk holds is not kept: it would be an orphan.
	if err := s.PutVectors(ctx, []recall.Vector{{Space: space, Key: recall.TextHash("nobody"), Vec: []float32{1, 1}}}); err != nil {
		t.Fatal(err)
	}
	vecs, _ := s.VectorsByKey(ctx, space, hashes("first text", "second text", "nobody"))
	if len(vecs) != 2 {
		t.Errorf("%d vectors; want the two of held texts", len(vecs))
	}
	// Replacing a chunk drops the vector of its old text.
	write(t, s, doc("a.md", recall.KindArchive, "first text", "changed text"))
	vecs, _ = s.VectorsByKey(ctx, space, hashes("first text", "second text"))
	if _, ok := vecs[recall.TextHash("second text")]; ok || len(vecs) != 1 {
		t.Errorf("after replacing a chunk: %d vectors, old text kept %t; want only the unchanged one", len(vecs), ok)
	}
}

func testMissingVectors(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "sp", 2)
	write(t, s,
		doc("a.md", recall.KindArchive, "t1", "t2", "t3"),
		doc("b.md", recall.KindArchive, "t2", "t4", "t5"), // t2 again: one text to embed
	)
	want := []string{"t1", "t2", "t3", "t4", "t5"}
	var got []string
	var after int64
	pages := 0
	for {
		page, err := s.MissingVectors(ctx, space, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages++
		if len(page) > 2 {
			t.Fatalf("page of %d; limit is 2", len(page))
		}
		for _, p := range page {
			if p.ChunkID <= after {
				t.Errorf("chunk id %d not after cursor %d", p.ChunkID, after)
			}
			if p.Key != recall.TextHash(p.Text) {
				t.Errorf("pending %q has key %s", p.Text, p.Key)
			}
			got = append(got, p.Text)
			after = p.ChunkID
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("paged missing texts = %v in %d pages; want %v in 3", got, pages, want)
	}
	if p, _ := s.MissingVectors(ctx, space, 0, 10); len(p) != 5 || p[1].Text != "t2" {
		t.Errorf("one page = %+v", p)
	}

	putVecs(t, s, space, "t1", "t2", "t4")
	page, err := s.MissingVectors(ctx, space, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range page {
		left = append(left, p.Text)
	}
	if !slices.Equal(left, []string{"t3", "t5"}) {
		t.Errorf("missing after embedding = %v; want [t3 t5]", left)
	}
	_, err = s.MissingVectors(ctx, "nope", 0, 10)
	wantCode(t, err, recall.ENOTFOUND, "MissingVectors of a missing space")
}

func testScanVectors(t *testing.T, s recall.Store) { scanVectorsTest(t, s, s.ScanVectors, true) }

// StreamVectors gives what ScanVectors gives, in any order, and need not
// give each call a vector of its own.
func testStreamVectors(t *testing.T, s recall.Store) { scanVectorsTest(t, s, s.StreamVectors, false) }

// scanVectorsTest checks a scan of every chunk with a vector in a space
// (ScanVectors or StreamVectors); own says the scan gives each call a
// vector of its own, which the caller may keep.
func scanVectorsTest(t *testing.T, s recall.Store, scan func(context.Context, string, func(recall.IndexedChunk, []float32) error) error, own bool) {
	space := createSpace(t, s, "sp", 2)
	other := createSpace(t, s, "other", 3)
	write(t, s,
		doc("a.md", recall.KindArchive, "shared", "only a"),
		doc("b.md", recall.KindArchive, "shared", "no vector"),
	)
	putVecs(t, s, space, "shared", "only a")
	putVecs(t, s, other, "no vector")
	type seen struct {
		source string
		hash   string
	}
	var got []seen
	texts := map[string]string{recall.TextHash("shared"): "shared", recall.TextHash("only a"): "only a"}
	type kept struct {
		c   recall.IndexedChunk
		vec []float32
	}
	var keep []kept
	err := scan(ctx, space, func(c recall.IndexedChunk, vec []float32) error {
		if want := vecFor(texts[c.Hash], 2); !slices.Equal(vec, want) {
			t.Errorf("chunk %d: vector %v; want %v", c.ID, vec, want)
		}
		got = append(got, seen{c.Source.ID, c.Hash})
		if own {
			keep = append(keep, kept{c, vec})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// ScanVectors' fn may keep what it is given (the index load hands it
	// to another goroutine): a later row must not have overwritten an
	// earlier one.
	for _, k := range keep {
		if want := vecFor(texts[k.c.Hash], 2); !slices.Equal(k.vec, want) {
			t.Errorf("chunk %d: the vector kept from its call became %v; want %v", k.c.ID, k.vec, want)
		}
	}
	want := []seen{{"a.md", recall.TextHash("shared")}, {"a.md", recall.TextHash("only a")}, {"b.md", recall.TextHash("shared")}}
	slices.SortFunc(got, func(a, b seen) int {
		if a.source != b.source {
			return cmp.Compare(a.source, b.source)
		}
		return cmp.Compare(a.hash, b.hash)
	})
	slices.SortFunc(want, func(a, b seen) int {
		if a.source != b.source {
			return cmp.Compare(a.source, b.source)
		}
		return cmp.Compare(a.hash, b.hash)
	})
	if !slices.Equal(got, want) {
		t.Errorf("scan saw %v; want %v (each chunk with a vector, shared texts once per chunk)", got, want)
	}
	wantCode(t, scan(ctx, "nope", func(recall.IndexedChunk, []float32) error { return nil }),
		recall.ENOTFOUND, "a scan of a missing space")
}
