//go:build unix

package srpt

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time (user + system, all threads) this process has
// used. Benchmarks report it next to wall time because the benchmark machine
// is shared: under contention wall time grows, CPU time much less.
func cpuNow() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
