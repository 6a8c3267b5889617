package kernel

import (
	"github.com/recall-mcp/recall/internal/par"
	"runtime"
)

// Products below this many multiply-adds (about 40 µs on one core) run on
// the calling goroutine. Starting workers costs a few microseconds, and
// callers that already run many small products in parallel (one per
// attention head) lose more to the nested split than they gain: 3% of a
// MiniLM forward pass at 1<<18. A variable so tests can split small products.
var parallelMin = 1 << 22

// workers is a variable so tests can exercise the parallel split on any machine.
var workers = func() int { return runtime.GOMAXPROCS(0) }

// parallelFor runs f(0..count-1) on w goroutines, handing out indices in
// order so uneven units balance themselves.
func parallelFor(w, count int, f func(int)) {
	par.For(w, count, func(_, i int) { f(i) })
}
