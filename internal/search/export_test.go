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

// WaitQueryEmbeddings waits for the query embeddings in flight, which
// report to the breaker before they end.
func (e *Engine) WaitQueryEmbeddings() {
	e.flightMu.Lock()
	var fs []*queryFlight
	for _, f := range e.flights {
		fs = append(fs, f)
	}
	e.flightMu.Unlock()
	for _, f := range fs {
		<-f.done
	}
}

// OnFlightJoined has fn called (under the engine's flight lock) whenever a
// search joins a query embedding already in flight.
func (e *Engine) OnFlightJoined(fn func()) {
	e.flightMu.Lock()
	defer e.flightMu.Unlock()
	e.joined = fn
}
