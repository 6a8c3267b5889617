// Package par runs independent units of work on several goroutines.
package par

import (
	"sync"
	"sync/atomic"
)

// For calls f(worker, i) for every i in [0, n) on at most workers
// goroutines; worker (0..workers-1) identifies the goroutine, so f can keep
// scratch buffers per worker. Indices are handed out in order, one at a
// time, so uneven units balance themselves. With one worker or one unit,
// everything runs on the calling goroutine.
func For(workers, n int, f func(worker, i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(g, i)
			}
		}()
	}
	wg.Wait()
}
