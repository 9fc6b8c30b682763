//go:build !linux

package asrpt

import "time"

var cpuStart = time.Now()

// threadCPU falls back to wall time where thread CPU time is not available.
func threadCPU() time.Duration { return time.Since(cpuStart) }
