//go:build unix

package kernel

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used. Benchmarks report
// throughput per CPU-second next to wall time because the shared machines
// they run on are often oversubscribed, which wall-clock figures absorb.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
