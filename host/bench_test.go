package host_test

import (
	"fmt"
	"strconv"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// headFIFO keeps every running job and starts waiting jobs from the head of the queue on the
// lowest free GPUs while they fit, reusing its buffers: a scheduler that costs next to
// nothing and never looks past the jobs it starts.
type headFIFO struct {
	used []bool
	run  []gpusched.Assignment
	gpus []topology.GPUID
}

func (s *headFIFO) Schedule(v gpusched.View) (gpusched.Decision, error) {
	n := v.Cluster.NumGPUs()
	if len(s.used) != n {
		s.used = make([]bool, n)
	}
	clear(s.used)
	s.run = s.run[:0]
	free := n
	for _, r := range v.Running {
		s.run = append(s.run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		for _, g := range r.GPUs {
			s.used[g] = true
		}
		free -= len(r.GPUs)
	}
	s.gpus = s.gpus[:0]
	next := 0
	for _, p := range v.Pending {
		if p.Job.GPUs > free {
			break
		}
		off := len(s.gpus)
		for len(s.gpus)-off < p.Job.GPUs {
			if !s.used[next] {
				s.used[next] = true
				s.gpus = append(s.gpus, topology.GPUID(next))
			}
			next++
		}
		free -= p.Job.GPUs
		s.run = append(s.run, gpusched.Assignment{Job: p.Job.ID, GPUs: s.gpus[off:len(s.gpus):len(s.gpus)]})
	}
	return gpusched.Decision{Run: s.run}, nil
}

// BenchmarkScheduleQueue measures one event of a host on the runtime as the queue grows: 64
// GPUs always full, `waiting` jobs always waiting, and per op the oldest running job
// finishes, a job arrives and a Schedule call starts the head of the queue. cpu-ns/op is the
// process CPU time per op (ns/op, wall time, is noisy on a shared machine).
func BenchmarkScheduleQueue(b *testing.B) {
	for _, waiting := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			c, err := topology.Uniform(topology.A100(), 8)
			if err != nil {
				b.Fatal(err)
			}
			rt, err := host.New(host.Options{Cluster: c, Scheduler: &headFIFO{}})
			if err != nil {
				b.Fatal(err)
			}
			next := 0
			submit := func(at float64) {
				if _, err := rt.Submit(gpusched.Job{ID: gpusched.JobID(strconv.Itoa(next)), GPUs: 1, StepTime: 1, Arrival: at}, 0); err != nil {
					b.Fatal(err)
				}
				next++
			}
			for range 64 + waiting {
				submit(0)
			}
			if _, err := rt.Schedule(0); err != nil {
				b.Fatal(err)
			}
			oldest := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := range b.N {
				now := float64(i + 1)
				if err := rt.Finish(gpusched.JobID(strconv.Itoa(oldest)), now, 0, false); err != nil {
					b.Fatal(err)
				}
				oldest++
				submit(now)
				if _, err := rt.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if rt.NumPending() != waiting || rt.NumRunning() != 64 {
				b.Fatalf("%d waiting, %d running", rt.NumPending(), rt.NumRunning())
			}
		})
	}
}
