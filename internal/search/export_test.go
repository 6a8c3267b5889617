package search

import (
	"context"

	"github.com/recall-mcp/recall"
)

// VectorHit is a text found by the vector leg of a search.
type VectorHit = unitHit

// VectorLeg runs the vector leg of a search on its own, as Search runs it
// in semantic mode: from the index, rescored with float vectors, when one
// is loaded, else by a scan of the store (Options.ScanVectors).
func (e *Engine) VectorLeg(ctx context.Context, q []float32, k int, f recall.Filter, only map[string]bool) ([]VectorHit, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.vx != nil {
		return e.vx.search(ctx, q, k, f, only, true)
	}
	return e.streamSearch(ctx, q, k, f, only)
}
