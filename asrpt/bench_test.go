package asrpt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// BenchmarkSchedule10kQueued4096GPUs measures one Schedule call in steady state with
// incremental state: a 512 x 8 A100 cluster (4,096 GPUs), about 10,000 jobs queued, and a host
// that applies every decision. Each call follows one event: a running job completes and a new
// job arrives. It reports p50 and p99 latency per call.
func BenchmarkSchedule10kQueued4096GPUs(b *testing.B) {
	c, err := topology.Uniform(topology.A100(), 512)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	truth := map[gpusched.JobID]float64{}
	sizes := []int{1, 1, 1, 2, 4, 8, 16}
	next := 0
	newJob := func(at float64) *gpusched.Job {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", next)), GPUs: sizes[rng.IntN(len(sizes))],
			StepTime: 0.1 + rng.Float64(), Arrival: at}
		next++
		truth[j.ID] = float64(100 + rng.IntN(100000))
		return j
	}
	v := gpusched.View{Cluster: c}
	for i := 0; i < 12000; i++ {
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob(0)})
	}
	s, err := New(Options{Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })})
	if err != nil {
		b.Fatal(err)
	}
	apply := func(d gpusched.Decision) {
		place := make(map[gpusched.JobID][]topology.GPUID, len(d.Run))
		for _, a := range d.Run {
			place[a.Job] = a.GPUs
		}
		var run, pend []gpusched.JobStatus
		for _, st := range v.Running {
			if g, ok := place[st.Job.ID]; ok {
				st.GPUs = g
				run = append(run, st)
			} else {
				st.GPUs, st.Since = nil, v.Now
				pend = append(pend, st)
			}
		}
		for _, st := range v.Pending {
			if g, ok := place[st.Job.ID]; ok {
				st.GPUs, st.Since, st.Started = g, v.Now, true
				run = append(run, st)
			} else {
				pend = append(pend, st)
			}
		}
		v.Running, v.Pending = run, pend
	}
	d, err := s.Schedule(v) // cold start: admit and place everything
	if err != nil {
		b.Fatal(err)
	}
	apply(d)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		v.Now += 1
		// A running job completes; a new job arrives.
		k := rng.IntN(len(v.Running))
		done := v.Running[k]
		v.Running = slices.Delete(v.Running, k, k+1)
		s.JobCompleted(gpusched.Completion{Job: done.Job, Time: v.Now, Iterations: truth[done.Job.ID]})
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob(v.Now), Since: v.Now})
		b.StartTimer()
		start := time.Now()
		d, err := s.Schedule(v)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		apply(d)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	b.ReportMetric(float64(len(v.Pending)), "queued")
}
