package postgres

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestFollowOtherProcesses: a server's search engine on one store follows
// what two other processes write to the same database concurrently, by
// polling Census while they write: at the end its in-memory indexes find
// every document those wrote, and none they deleted.
func TestFollowOtherProcesses(t *testing.T) {
	dsn := pgtest.Server(t)
	st := openTest(t, dsn, Options{})
	defer st.Close()
	emb := embedtest.New(8)
	info := emb.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 8, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	eng := search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	word := func(w, i int) string { return fmt.Sprintf("zq%dx%03d", w, i) }
	var wg sync.WaitGroup
	for w := range 2 {
		other := openTest(t, dsn, Options{})
		defer other.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				d := textDoc(fmt.Sprintf("w%d/%03d.md", w, i), "note "+word(w, i), "more text "+word(w, i))
				if _, err := other.Write(ctx, []recall.Document{d}, nil); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 4 { // every fifth is deleted again
					if _, _, err := other.Delete(ctx, d.Source.ID); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
		}
		if _, err := eng.Follow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eng.Follow(ctx); err != nil {
		t.Fatal(err)
	}
	for w := range 2 {
		for i := range 30 {
			r, err := eng.Search(ctx, recall.SearchRequest{Query: word(w, i), Mode: recall.ModeLexical, Limit: 5, PerSource: 1})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range r.Results {
				got = append(got, h.Source)
			}
			want := []string{fmt.Sprintf("w%d/%03d.md", w, i)}
			if i%5 == 4 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("after following, %s finds %v; want %v", word(w, i), got, want)
			}
		}
	}
}
