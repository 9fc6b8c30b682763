//go:build !unix

package srpt

import "time"

// cpuNow is not available on this platform; benchmarks report 0 CPU time.
func cpuNow() time.Duration { return 0 }
