//go:build !unix

package encoder

import "time"

// processCPU is unknown here; benchmarks then report wall-clock rates only.
func processCPU() time.Duration { return 0 }
