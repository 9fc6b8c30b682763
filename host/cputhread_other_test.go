//go:build !linux

package host_test

import "time"

// threadCPU falls back to the process's CPU time (or wall time) where a thread's is not
// available.
func threadCPU() time.Duration { return processCPU() }
