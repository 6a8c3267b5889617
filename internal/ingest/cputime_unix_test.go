//go:build unix

package ingest

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used: on a shared machine it
// says more than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
