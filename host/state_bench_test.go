package host_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// busyRuntime returns a runtime with A-SRPT (true sizes) on 512 x 8 A100 GPUs holding 10,000
// live jobs (GPU demands 1-16, some running, most waiting, some with progress), and the
// options to restore it with.
func busyRuntime(b *testing.B) (*host.Runtime, func() host.Options) {
	b.Helper()
	c, err := topology.Uniform(topology.A100(), 512)
	if err != nil {
		b.Fatal(err)
	}
	truth := map[gpusched.JobID]float64{}
	opts := func() host.Options {
		o := asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })
		s, err := asrpt.New(asrpt.Options{Estimator: o, Backfill: true})
		if err != nil {
			b.Fatal(err)
		}
		return host.Options{Cluster: c, Scheduler: s, RestoreTime: 30, CheckpointEvery: 600}
	}
	rt, err := host.New(opts())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		t := float64(i) / 100
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("job-", i)), Arrival: t, GPUs: 1 + rng.IntN(16), StepTime: 0.1 + rng.Float64(),
			Features: gpusched.Features{Group: fmt.Sprint("g", rng.IntN(100))}}
		truth[j.ID] = float64(100 + rng.IntN(100000))
		if _, err := rt.Submit(j, truth[j.ID]); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if _, err := rt.Schedule(t); err != nil {
				b.Fatal(err)
			}
			for _, e := range rt.TakeDirty() {
				if err := rt.SetRate(e, t, gpusched.StepCost{Time: e.Job().StepTime}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return rt, opts
}

// BenchmarkRuntimeSaveState: the whole runtime (books and A-SRPT's state) at 10,000 live jobs.
// cpu-ms/op is the process's CPU time (all threads, garbage collection included; wall time where
// the platform does not give it), which unlike wall time does not grow while other processes hold
// the CPU.
func BenchmarkRuntimeSaveState(b *testing.B) {
	rt, _ := busyRuntime(b)
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		buf.Reset()
		if err := rt.SaveState(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
}

// BenchmarkRuntimeRestore: host.Restore of that state, building A-SRPT (New) included.
func BenchmarkRuntimeRestore(b *testing.B) {
	rt, opts := busyRuntime(b)
	var buf bytes.Buffer
	if err := rt.SaveState(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		o := opts()
		b.StartTimer()
		c0 := processCPU()
		if _, err := host.Restore(o, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// forestRuntime returns a runtime like busyRuntime's, but with A-SRPT's default learning
// estimator (asrpt.Forest with ForestOptions) that has observed 12,000 finished jobs (its forest
// last trained on 6,400 of them, its window full): between two retrainings.
func forestRuntime(b *testing.B) (*host.Runtime, func() host.Options) {
	rt, opts, _ := forestWorld(b)
	return rt, opts
}

// forestWorld is forestRuntime with a step: one event of the host after it, at the next
// second: 10 running jobs finish (their completions delivered, so the forest observes them
// without retraining), 10 jobs arrive, A-SRPT decides and the new placements get their rates.
// The runtime keeps 10,000 live jobs.
func forestWorld(b *testing.B) (*host.Runtime, func() host.Options, func()) {
	b.Helper()
	c, err := topology.Uniform(topology.A100(), 512)
	if err != nil {
		b.Fatal(err)
	}
	newForest := func() asrpt.Forest {
		f, err := asrpt.NewForest(asrpt.ForestOptions(1))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	opts := func() host.Options {
		s, err := asrpt.New(asrpt.Options{Estimator: newForest(), Backfill: true})
		if err != nil {
			b.Fatal(err)
		}
		return host.Options{Cluster: c, Scheduler: s, RestoreTime: 30, CheckpointEvery: 600}
	}
	f := newForest()
	s, err := asrpt.New(asrpt.Options{Estimator: f, Backfill: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	job := func(i int, t float64) gpusched.Job {
		g := rng.IntN(100)
		return gpusched.Job{ID: gpusched.JobID(fmt.Sprint("job-", i)), Arrival: t, GPUs: 1 + rng.IntN(16), StepTime: 0.1 + rng.Float64(),
			Features: gpusched.Features{Group: fmt.Sprint("g", g), User: fmt.Sprint("u", g%17), Family: fmt.Sprint("m", g%7), BatchSize: 32 << (g % 3)}}
	}
	for i := range 12000 {
		j := job(-1-i, 0)
		if err := f.Observe(&j, float64(100+rng.IntN(100000))); err != nil {
			b.Fatal(err)
		}
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 30, CheckpointEvery: 600})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		t := float64(i) / 100
		if _, err := rt.Submit(job(i, t), float64(100+rng.IntN(100000))); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if _, err := rt.Schedule(t); err != nil {
				b.Fatal(err)
			}
			for _, e := range rt.TakeDirty() {
				if err := rt.SetRate(e, t, gpusched.StepCost{Time: e.Job().StepTime}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	next, t := 10000, 100.0
	step := func() {
		t++
		running := rt.Running()
		ids := make([]gpusched.JobID, 0, 10)
		for i := 0; i < len(running) && len(ids) < 10; i++ {
			ids = append(ids, running[i].ID())
		}
		for _, id := range ids {
			if err := rt.Finish(id, t, float64(100+rng.IntN(100000)), false); err != nil {
				b.Fatal(err)
			}
		}
		for range 10 {
			if _, err := rt.Submit(job(next, t), float64(100+rng.IntN(100000))); err != nil {
				b.Fatal(err)
			}
			next++
		}
		rt.Deliver()
		if _, err := rt.Schedule(t); err != nil {
			b.Fatal(err)
		}
		for _, e := range rt.TakeDirty() {
			if err := rt.SetRate(e, t, gpusched.StepCost{Time: e.Job().StepTime}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return rt, opts, step
}

// BenchmarkRuntimeSaveStateForest: BenchmarkRuntimeSaveState with A-SRPT's forest (whole state).
func BenchmarkRuntimeSaveStateForest(b *testing.B) {
	rt, _ := forestRuntime(b)
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		buf.Reset()
		if err := rt.SaveState(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
}

// A-SRPT saves by parts.
var _ host.Incremental = (*asrpt.Scheduler)(nil)

// BenchmarkRuntimeSaveDeltaForest: Runtime.SaveDelta of forestWorld between retrainings, as a
// host that saves after every event does: before each save (untimed) one step of forestWorld
// (10 completions, 10 arrivals, a decision), and the base (Runtime.SaveBase) whenever BaseKey
// changes (untimed, counted in bases). cpu-ms/op is SaveDelta's CPU time, amortized-cpu-ms/op
// with the bases' CPU time spread over the saves, MB the mean size of the deltas, max-MB the
// largest, base-MB the size of the last base.
func BenchmarkRuntimeSaveDeltaForest(b *testing.B) {
	rt, _, step := forestWorld(b)
	var base, buf bytes.Buffer
	key, err := rt.SaveBase(&base)
	if err != nil || key == "" {
		b.Fatalf("base %q: %v", key, err)
	}
	trained := rt.BaseKey()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu, baseCPU time.Duration
	var sum, most, bases int
	for range b.N {
		b.StopTimer()
		step()
		if k := rt.BaseKey(); k != key {
			base.Reset()
			c0 := processCPU()
			if key, err = rt.SaveBase(&base); err != nil || key != k {
				b.Fatalf("base %q, BaseKey %q: %v", key, k, err)
			}
			baseCPU += processCPU() - c0
			bases++
		}
		buf.Reset()
		b.StartTimer()
		c0 := processCPU()
		if k, err := rt.SaveDelta(&buf); err != nil || k != key {
			b.Fatalf("delta names %q, not %q: %v", k, key, err)
		}
		cpu += processCPU() - c0
		sum += buf.Len()
		most = max(most, buf.Len())
	}
	// Keys are "books-...|forest-<training>-<hash>#...": the forest's part must not change.
	if forest := func(k string) string { f, _, _ := strings.Cut(k[strings.IndexByte(k, '|')+1:], "#"); return f }; forest(rt.BaseKey()) != forest(trained) {
		b.Fatal("the forest was retrained")
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(sum)/1e6/float64(b.N), "MB")
	b.ReportMetric(float64(most)/1e6, "max-MB")
	b.ReportMetric(float64(base.Len())/1e6, "base-MB")
	b.ReportMetric(float64(bases), "bases")
	b.ReportMetric(float64(cpu+baseCPU)/1e6/float64(b.N), "amortized-cpu-ms/op")
}

// BenchmarkRuntimeSaveBaseForest: Runtime.SaveBase of forestWorld after each step, the forest
// unchanged (a base that BaseKey asks for when the deltas have grown; the first, untimed,
// encodes the forest, which later bases of the same forest reuse). cpu-ms/op is SaveBase's CPU
// time, MB the base's size.
func BenchmarkRuntimeSaveBaseForest(b *testing.B) {
	rt, _, step := forestWorld(b)
	var base bytes.Buffer
	if _, err := rt.SaveBase(&base); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		step()
		base.Reset()
		b.StartTimer()
		c0 := processCPU()
		if _, err := rt.SaveBase(&base); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(base.Len())/1e6, "MB")
}

// BenchmarkRuntimeRestoreDeltaForest: host.RestoreDelta of a delta and its base after 10 steps
// of forestWorld, building A-SRPT and its forest (New) not included.
func BenchmarkRuntimeRestoreDeltaForest(b *testing.B) {
	rt, opts, step := forestWorld(b)
	var base, delta bytes.Buffer
	if _, err := rt.SaveBase(&base); err != nil {
		b.Fatal(err)
	}
	for range 10 {
		step()
	}
	if _, err := rt.SaveDelta(&delta); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		o := opts()
		b.StartTimer()
		c0 := processCPU()
		if _, err := host.RestoreDelta(o, bytes.NewReader(base.Bytes()), bytes.NewReader(delta.Bytes())); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(delta.Len())/1e6, "MB")
}

// BenchmarkRuntimeRestoreForest: host.Restore of forestRuntime's whole state (SaveState),
// building A-SRPT and its forest (New) not included.
func BenchmarkRuntimeRestoreForest(b *testing.B) {
	rt, opts := forestRuntime(b)
	var buf bytes.Buffer
	if err := rt.SaveState(&buf); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		o := opts()
		b.StartTimer()
		c0 := processCPU()
		if _, err := host.Restore(o, bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
