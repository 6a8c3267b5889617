package postgres

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestScanAcrossPages: ScanChunks and ScanVectors read more than one page
// (scanChunkPage chunks) in chunk id order, the vector scan skipping
// chunks without a vector, also where a whole page's last chunks have
// none, and both stop, with fn's error, when fn fails on a later page.
func TestScanAcrossPages(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	const dim = 3
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: dim}); err != nil {
		t.Fatal(err)
	}
	n := 2*scanChunkPage + 100
	var docs []recall.Document
	var vecs []recall.Vector
	withVec := map[int]bool{}
	for i := range n {
		text := fmt.Sprintf("chunk %d", i)
		h := recall.TextHash(text)
		docs = append(docs, recall.Document{Source: recall.Source{ID: fmt.Sprintf("s/%05d", i), Kind: recall.KindArchive},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: h}}})
		// No vector for every third chunk, nor for the last 50 of the
		// first page.
		if i%3 != 0 && (i < scanChunkPage-50 || i >= scanChunkPage) {
			withVec[i] = true
			vec := []float32{float32(i), 1, 2}
			if i%2 == 0 { // two units
				vec = append(vec, 3, 4, float32(i))
			}
			vecs = append(vecs, recall.Vector{Space: "s", Key: h, Vec: vec})
		}
	}
	res, err := db.Write(ctx, docs, vecs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, c := range res.Added {
		ids[i] = c.ID
	}
	if !slices.IsSorted(ids) {
		t.Fatal("chunk ids of one write not ascending")
	}

	var got []int64
	if err := db.ScanChunks(ctx, func(c recall.StoredChunk) error { got = append(got, c.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("ScanChunks gave %d chunks; want the %d written, in id order", len(got), n)
	}

	var want []int64
	for i, id := range ids {
		if withVec[i] {
			want = append(want, id)
		}
	}
	got = got[:0]
	err = db.ScanVectors(ctx, "s", func(c recall.IndexedChunk, vec []float32) error {
		i := slices.Index(ids, c.ID)
		units := 1
		if i%2 == 0 {
			units = 2
		}
		if len(vec) != units*dim || vec[0] != float32(i) {
			return fmt.Errorf("chunk %d: vector %v", i, vec)
		}
		got = append(got, c.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ScanVectors gave %d chunks; want the %d with a vector, in id order", len(got), len(want))
	}

	stop := errors.New("stop")
	for name, scan := range map[string]func(func() error) error{
		"ScanChunks": func(f func() error) error {
			return db.ScanChunks(ctx, func(recall.StoredChunk) error { return f() })
		},
		"ScanVectors": func(f func() error) error {
			return db.ScanVectors(ctx, "s", func(recall.IndexedChunk, []float32) error { return f() })
		},
	} {
		calls := 0
		err := scan(func() error {
			if calls++; calls == scanChunkPage+10 {
				return stop
			}
			return nil
		})
		if err != stop || calls != scanChunkPage+10 {
			t.Errorf("%s with fn failing on its second page: %v after %d calls; want fn's error after %d", name, err, calls, scanChunkPage+10)
		}
	}
}

func TestDecodeUnits(t *testing.T) {
	unit := func(dim int, vals ...byte) []byte { return append([]byte{byte(dim >> 8), byte(dim), 0, 0}, vals...) }
	one := []byte{0x3f, 0x80, 0, 0} // 1.0
	two := []byte{0x40, 0, 0, 0}    // 2.0
	v, err := decodeUnits(slices.Concat(unit(2, slices.Concat(one, two)...), unit(2, slices.Concat(two, one)...)))
	if err != nil || !slices.Equal(v, []float32{1, 2, 2, 1}) {
		t.Errorf("two units = %v, %v; want [1 2 2 1]", v, err)
	}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"header only":      {0, 1},
		"zero dimensions":  unit(0),
		"short unit":       unit(2, one...),
		"mixed dimensions": slices.Concat(unit(1, one...), unit(2, one...)[:6], one[:2]),
	} {
		if v, err := decodeUnits(b); err == nil {
			t.Errorf("%s: decoded %v; want an error", name, v)
		}
	}
}
