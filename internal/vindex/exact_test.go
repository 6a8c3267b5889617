package vindex

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestExactMatchesGroupedSearch: Exact, given every vector of a grouped
// index one at a time, ranks the same groups in the same order at the same
// scores, bit for bit, as the index's rescored search.
func TestExactMatchesGroupedSearch(t *testing.T) {
	const dim = 32
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 5))
	group := func(h string) string { g, _, _ := strings.Cut(h, "#"); return g }
	vecs := floats{}
	x := NewGrouped(dim, vecs.fetch, group)
	var hashes []string
	for g := range 400 {
		for u := range 1 + r.IntN(6) {
			h := "g" + strconv.Itoa(g) + "#" + strconv.Itoa(u)
			vecs[h] = gaussian(r, dim)
			hashes = append(hashes, h)
			must(t, x.Add(chunk(int64(len(hashes)), h, "s"), vecs[h]))
		}
	}
	for qi := range 20 {
		q := gaussian(r, dim)
		for _, k := range []int{1, 10, 60} {
			want, err := x.Search(ctx, q, k, nil)
			must(t, err)
			ex, err := NewExact(q, k)
			must(t, err)
			best := map[string]float32{}
			for _, h := range hashes {
				s, ok := ex.Score(vecs[h])
				if b, seen := best[group(h)]; ok && (!seen || s > b) {
					best[group(h)] = s
				}
			}
			for i, h := range hashes {
				ex.Add(group(h), best[group(h)], int64(i))
			}
			got := ex.Results()
			if len(got) != len(want) {
				t.Fatalf("query %d, k %d: %d groups; the index %d", qi, k, len(got), len(want))
			}
			for i := range want {
				if got[i].Key != group(want[i].Key) || got[i].Score != want[i].Score {
					t.Errorf("query %d, k %d: group %d is %s at %v; the index's %s at %v", qi, k, i, got[i].Key, got[i].Score, group(want[i].Key), want[i].Score)
				}
			}
		}
	}
	if _, err := NewExact(make([]float32, dim), 5); err == nil {
		t.Error("NewExact took a zero query")
	}
}
