//go:build !unix

package sim_test

import "time"

var cpuStart = time.Now()

// processCPU falls back to wall time where process CPU time is not available.
func processCPU() time.Duration { return time.Since(cpuStart) }
