//go:build !unix

package vindex

import "time"

// cpuTime is not measured here; the cpu-ms metric then reads 0.
func cpuTime() time.Duration { return 0 }
