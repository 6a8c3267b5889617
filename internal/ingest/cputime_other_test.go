//go:build !unix

package ingest

import "time"

// cpuTime is unknown here; benchmarks then leave out their per-CPU rates.
func cpuTime() time.Duration { return 0 }
