package partition

import (
	"syscall"
	"testing"
)

// cpuSeconds is the CPU time the process has used so far (user + system).
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + 1e-6*float64(t.Usec) }
	return sec(ru.Utime) + sec(ru.Stime)
}
