package search

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// A load makes room for the space's unit vectors from the texts it has
// read, so that the slabs are not copied as they grow: every unit is
// indexed, and the room left over is a small part of them (append's growth
// could leave a quarter of the slabs unused).
func TestLoadReservesRoomForTheSpace(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const dim = 16
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: "p", Model: "m", Dim: dim, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	var docs []recall.Document
	var vecs []recall.Vector
	units := 0
	for i := range 3 * reserveAfter {
		d := mkdoc(fmt.Sprintf("d/%05d.md", i), fmt.Sprintf("text number %d", i))
		var v []float32
		for u := range 1 + i%7 {
			v = append(v, embedtest.Vector(fmt.Sprintf("%d unit %d", i, u), dim)...)
			units++
		}
		docs = append(docs, d)
		vecs = append(vecs, recall.Vector{Space: "t", Key: d.Chunks[0].Hash, Vec: v})
	}
	if _, err := st.Write(ctx, docs, vecs); err != nil {
		t.Fatal(err)
	}
	eng := New(st, Options{})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if got := eng.vx.vx.Vectors(); got != units {
		t.Fatalf("the index holds %d unit vectors, want %d", got, units)
	}
	if room := eng.vx.room(); room > units/20 {
		t.Errorf("%d unit vectors loaded with room for %d more: the reservation overshot", units, room)
	}

	// Texts written after the census: the estimate runs out, and the
	// index grows by a quarter at a time, as append would.
	stale := New(staleCensus{st}, Options{})
	if err := stale.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stale.vx.vx.Vectors(); got != units {
		t.Fatalf("with a census behind the store, the index holds %d unit vectors, want %d", got, units)
	}
	if room := stale.vx.room(); room > units/4 {
		t.Errorf("with a census behind the store, %d unit vectors loaded with room for %d more", units, room)
	}
}

// staleCensus is a store whose census counts no vectors, as if they were
// all written after it was taken.
type staleCensus struct{ recall.Store }

func (s staleCensus) Census(ctx context.Context, space string) (recall.Census, error) {
	c, err := s.Store.Census(ctx, space)
	c.Vectors = 0
	return c, err
}
