package crawl

import (
	"syscall"
	"time"
)

// CPUTime is the process's user and system CPU time so far. Benchmarks
// report CPU time per operation besides wall time, which on a shared
// machine says more.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
