package asrpt

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// BenchmarkSchedule10kQueued4096GPUs measures one Schedule call in steady state with
// incremental state: a 512 x 8 A100 cluster (4,096 GPUs), about 10,000 jobs queued, and a host
// that applies every decision. Each call follows one event: a running job completes and a new
// job arrives. It reports p50 and p99 latency per call, as wall time and as the thread's CPU
// time (which other processes on a busy machine do not inflate). The host takes delta
// decisions (View.AcceptsKeepOthers) in form=delta, the full form only in form=full; the
// conversion is the default remaining-work one but in conv=patient (Options.Patient). In
// view=delta every view also carries its delta (gpusched.ViewDelta), as package host's views
// do; the others carry none (A-SRPT then walks every view whole).
func BenchmarkSchedule10kQueued4096GPUs(b *testing.B) {
	for _, delta := range []bool{false, true} {
		name := "form=full"
		if delta {
			name = "form=delta"
		}
		b.Run(name, func(b *testing.B) { benchSchedule10k(b, delta, false) })
	}
	b.Run("form=delta,conv=patient", func(b *testing.B) { benchSchedule10k(b, true, true) })
	b.Run("form=delta,view=delta", func(b *testing.B) { benchSchedule10kViews(b, true, false, true) })
}

func benchSchedule10k(b *testing.B, delta, patient bool) {
	benchSchedule10kViews(b, delta, patient, false)
}

// benchSchedule10kViews is benchSchedule10k; with views, every view carries its delta
// (gpusched.ViewDelta with Transitions), as package host's do.
func benchSchedule10kViews(b *testing.B, delta, patient, views bool) {
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
	v := gpusched.View{Cluster: c, AcceptsKeepOthers: delta}
	ids := make(map[gpusched.JobID]*gpusched.Job, 16384)
	for i := 0; i < 12000; i++ {
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob(0)})
	}
	for _, st := range v.Pending {
		ids[st.Job.ID] = st.Job
	}
	s, err := New(Options{Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok }), Patient: patient})
	if err != nil {
		b.Fatal(err)
	}
	// The host's side allocates nothing per call, so that the garbage collector's work charged
	// to Schedule is Schedule's own.
	place := make(map[*gpusched.Job][]topology.GPUID, 8192)
	var run, pend []gpusched.JobStatus
	vd := &gpusched.ViewDelta{Source: &place, Transitions: true}
	var started, stopped []*gpusched.Job
	apply := func(d gpusched.Decision) {
		d = d.Expand(v)
		clear(place)
		for _, a := range d.Run {
			place[ids[a.Job]] = a.GPUs
		}
		run, pend = run[:0], pend[:0]
		clear(started)
		clear(stopped)
		started, stopped = started[:0], stopped[:0]
		for _, st := range v.Running {
			if g, ok := place[st.Job]; ok {
				st.GPUs = g
				run = append(run, st)
			} else {
				st.GPUs, st.Since = nil, v.Now
				pend = append(pend, st)
				stopped = append(stopped, st.Job)
			}
		}
		for _, st := range v.Pending {
			if g, ok := place[st.Job]; ok {
				st.GPUs, st.Since, st.Started = g, v.Now, true
				run = append(run, st)
				started = append(started, st.Job)
			} else {
				pend = append(pend, st)
			}
		}
		v.Running = append(v.Running[:0], run...)
		v.Pending = append(v.Pending[:0], pend...)
	}
	// nextView gives the view its delta (with views): the jobs that started and stopped in the
	// last apply, the one that completed and the one that arrived, found in the lists by
	// their Job (the few that moved: a walk over the lists would be the host's, not timed).
	find := func(list []gpusched.JobStatus, j *gpusched.Job) *gpusched.JobStatus {
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Job == j {
				return &list[i]
			}
		}
		return nil // started, then completed: it left
	}
	nextView := func(left gpusched.JobID, arrived *gpusched.Job) {
		if !views {
			return
		}
		vd.Seq++
		clear(vd.Arrived)
		clear(vd.Started)
		clear(vd.Stopped)
		vd.Arrived, vd.Started, vd.Stopped, vd.Left = vd.Arrived[:0], vd.Started[:0], vd.Stopped[:0], vd.Left[:0]
		for _, j := range started {
			if js := find(v.Running, j); js != nil {
				vd.Started = append(vd.Started, js)
			}
		}
		for _, j := range stopped {
			vd.Stopped = append(vd.Stopped, find(v.Pending, j))
		}
		vd.Arrived = append(vd.Arrived, find(v.Pending, arrived))
		vd.Left = append(vd.Left, left)
		v.Delta = vd
	}
	d, err := s.Schedule(v) // cold start: admit and place everything
	if err != nil {
		b.Fatal(err)
	}
	apply(d)
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
		j := newJob(v.Now)
		ids[j.ID] = j
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: j, Since: v.Now})
		nextView(done.Job.ID, j)
		b.StartTimer()
		start, c0 := time.Now(), threadCPU()
		d, err := s.Schedule(v)
		cpu = append(cpu, threadCPU()-c0)
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
	slices.Sort(cpu)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds()), "p50-cpu-us")
	b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "p99-cpu-us")
	b.ReportMetric(float64(len(v.Pending)), "queued")
}
