package par

import (
	"sync/atomic"
	"testing"
)

func TestForRunsEveryIndexOnce(t *testing.T) {
	for _, c := range []struct{ workers, n int }{{1, 10}, {4, 0}, {4, 1}, {3, 1000}, {8, 5}} {
		seen := make([]atomic.Int32, c.n)
		var maxWorker atomic.Int32
		For(c.workers, c.n, func(w, i int) {
			seen[i].Add(1)
			for {
				m := maxWorker.Load()
				if int32(w) <= m || maxWorker.CompareAndSwap(m, int32(w)) {
					break
				}
			}
		})
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("workers %d n %d: index %d ran %d times", c.workers, c.n, i, seen[i].Load())
			}
		}
		if int(maxWorker.Load()) >= max(1, min(c.workers, c.n)) {
			t.Fatalf("workers %d n %d: worker id %d out of range", c.workers, c.n, maxWorker.Load())
		}
	}
}
