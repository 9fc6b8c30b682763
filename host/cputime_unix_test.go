//go:build unix

package host_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has consumed (user and system, all threads,
// garbage collection included), which, unlike wall time, does not grow while other processes
// hold the CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
