//go:build unix

package encoder

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used, so
// benchmarks can report throughput per CPU-second, which background load on
// a shared machine disturbs far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
