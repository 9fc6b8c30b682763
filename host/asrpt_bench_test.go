package host_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// timedScheduler adds up the calling thread's CPU time spent in its scheduler's Schedule and
// JobCompleted, so that a benchmark can tell the runtime's own share of a Schedule call.
type timedScheduler struct {
	inner interface {
		gpusched.Scheduler
		gpusched.CompletionObserver
	}
	cpu time.Duration
}

func (t *timedScheduler) Schedule(v gpusched.View) (gpusched.Decision, error) {
	c0 := threadCPU()
	d, err := t.inner.Schedule(v)
	t.cpu += threadCPU() - c0
	return d, err
}

func (t *timedScheduler) JobCompleted(c gpusched.Completion) {
	c0 := threadCPU()
	t.inner.JobCompleted(c)
	t.cpu += threadCPU() - c0
}

// BenchmarkASRPT10kQueued4096GPUs measures one Runtime.Schedule call driving A-SRPT in
// steady state, as asrpt's BenchmarkSchedule10kQueued4096GPUs does without a runtime: a 512 x
// 8 A100 cluster (4,096 GPUs), 12,000 jobs submitted at once (about 10,000 stay queued), and
// per call one running job finishes and one job arrives. It reports, as the calling thread's
// CPU time per call, p50 and p99 of the whole call (all-), of A-SRPT's share (Schedule and
// JobCompleted: sched-) and of the runtime's own share (the rest: host-).
func BenchmarkASRPT10kQueued4096GPUs(b *testing.B) {
	c, err := topology.Uniform(topology.A100(), 512)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	truth := map[gpusched.JobID]float64{}
	s, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })})
	if err != nil {
		b.Fatal(err)
	}
	ts := &timedScheduler{inner: s}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: ts})
	if err != nil {
		b.Fatal(err)
	}
	sizes := []int{1, 1, 1, 2, 4, 8, 16}
	next := 0
	submit := func(at float64) {
		id := gpusched.JobID(fmt.Sprintf("j%d", next))
		next++
		truth[id] = float64(100 + rng.IntN(100000))
		if _, err := rt.Submit(gpusched.Job{ID: id, GPUs: sizes[rng.IntN(len(sizes))], StepTime: 0.1 + rng.Float64(), Arrival: at}, 0); err != nil {
			b.Fatal(err)
		}
	}
	for range 12000 {
		submit(0)
	}
	if _, err := rt.Schedule(0); err != nil {
		b.Fatal(err)
	}
	all := make([]time.Duration, 0, b.N)
	sched := make([]time.Duration, 0, b.N)
	own := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	now := 0.0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		now++
		run := rt.Running()
		done := run[rng.IntN(len(run))]
		if err := rt.Finish(done.ID(), now, truth[done.ID()], false); err != nil {
			b.Fatal(err)
		}
		submit(now)
		b.StartTimer()
		ts.cpu = 0
		c0 := threadCPU()
		if _, err := rt.Schedule(now); err != nil {
			b.Fatal(err)
		}
		t := threadCPU() - c0
		all = append(all, t)
		sched = append(sched, ts.cpu)
		own = append(own, t-ts.cpu)
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"all", all}, {"sched", sched}, {"host", own}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Nanoseconds())/1e3, m.name+"-p50-cpu-us")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Nanoseconds())/1e3, m.name+"-p99-cpu-us")
	}
	b.ReportMetric(float64(rt.NumPending()), "queued")
	b.ReportMetric(float64(rt.NumRunning()), "running")
}
