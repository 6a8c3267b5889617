package memory

import (
	"fmt"
	"testing"

	"github.com/recall-mcp/recall"
)

// BenchmarkSave saves a new one-passage memory per iteration on SQLite,
// embedded in process (embedtest, no network): what a save costs besides
// the embedder, its store reads (the source, the vectors and the refusals
// of its text) and its two writes (the text, then the vectors).
//
//	go test -run '^$' -bench '^BenchmarkSave$' -benchtime 2000x ./internal/memory/
func BenchmarkSave(b *testing.B) {
	f := newFixture(b, true)
	n := 0
	for b.Loop() {
		n++
		req := SaveRequest{Key: fmt.Sprintf("note_%d", n), Value: fmt.Sprintf("tea number %d with oat milk, no sugar", n)}
		if res, err := f.svc.Save(ctx, req, Scope{}); err != nil || res.Index != recall.IndexOK {
			b.Fatalf("save: %+v, %v", res, err)
		}
	}
}
