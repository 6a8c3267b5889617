package search

import (
	"context"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/vindex"
)

// streamSearch is the vector leg of an engine that loads no index
// (Options.ScanVectors): it reads every chunk with a vector in the read
// space from the store and scores each vector allowed as it goes, exactly
// (float cosines, the index's own kernel), keeping the k best keys, each
// at its best unit's score with the allowed chunks holding it, as the
// grouped index returns them. Filters apply before the cut, as in the
// index. The search keeps nothing of the vectors but its k best texts.
// Called with e.mu read-locked.
func (e *Engine) streamSearch(ctx context.Context, q []float32, k int, f recall.Filter, only map[string]bool) ([]unitHit, error) {
	top, err := vindex.NewExact(q, k)
	if err != nil {
		return nil, err
	}
	allow, _ := vectorFilter(f, only)
	dim := e.scan.Dim
	var (
		last   string // the key scored last, at best
		best   float32
		scored bool
	)
	err = e.store.StreamVectors(ctx, e.scan.Name, func(c recall.IndexedChunk, vec []float32) error {
		if !allow(&c.Source) {
			return nil
		}
		// The chunks holding one key mostly come one after another:
		// its units are scored once.
		if c.VectorKey != last {
			last, scored = c.VectorKey, false
			for _, u := range units(vec, dim) {
				if s, ok := top.Score(u); ok && (!scored || s > best) {
					best, scored = s, true
				}
			}
		}
		if scored {
			top.Add(c.VectorKey, best, c.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := top.Results()
	out := make([]unitHit, len(res))
	for i, r := range res {
		out[i] = unitHit{Key: r.Key, Score: r.Score, ChunkIDs: r.ChunkIDs}
	}
	return out, nil
}
