package sim_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// sharedData returns <module root>/../shared/data/rel, skipping when it is absent.
func sharedData(tb testing.TB, rel string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skipf("skipping: no go.mod above the test directory, so no ../shared/data/%s", rel)
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("skipping: reference data %s is absent (the shared data lives beside the checkout)", p)
	}
	return p
}

func readPhilly(tb testing.TB) []trace.Record { return readPhillyOn(tb, nil) }

// readPhillyOn reads the shared Philly file, mapping jobs to zoo models on c when c is set.
func readPhillyOn(tb testing.TB, c *topology.Cluster) []trace.Record {
	f, err := os.Open(sharedData(tb, "philly/philly.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.ReadPhilly(f, "philly.csv", trace.ReadOptions{Seed: 1, Cluster: c})
	if err != nil {
		tb.Fatal(err)
	}
	return tr.Records
}

// benchPhilly simulates the whole shared Philly file (70,361 jobs) on 256 A100 servers
// (2,048 GPUs) and reports the heap bytes allocated per run and the peak heap in use.
func benchPhilly(b *testing.B, mk func(recs []trace.Record) gpusched.Scheduler) {
	benchPhillyOn(b, false, mk)
}

// benchPhillyOn is benchPhilly with, when models is set, jobs mapped to zoo models and plans
// timed by the default (model-aware) cost model.
func benchPhillyOn(b *testing.B, models bool, mk func(recs []trace.Record) gpusched.Scheduler) {
	c, err := topology.Uniform(topology.A100(), 256)
	if err != nil {
		b.Fatal(err)
	}
	var recs []trace.Record
	if models {
		recs = readPhillyOn(b, c)
	} else {
		recs = readPhilly(b)
	}
	b.ReportAllocs()
	var res *sim.Result
	var peak uint64
	cpu0 := processCPU()
	for b.Loop() {
		res, err = sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: mk(recs)})
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapSys)
	}
	b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(peak)/(1<<20), "heap-sys-MiB")
	b.ReportMetric(float64(res.Summary.Events), "events")
	b.ReportMetric(res.Summary.AvgJCT, "avg-jct-s")
}

func BenchmarkPhilly2048FIFO(b *testing.B) {
	benchPhilly(b, func([]trace.Record) gpusched.Scheduler {
		s, err := policy.New("fifo", policy.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkPhilly2048ASRPT runs A-SRPT with exact iteration counts (an Oracle estimator), so
// that the benchmark measures the simulator and the scheduler, not the predictor's training.
func BenchmarkPhilly2048ASRPT(b *testing.B) {
	benchPhilly(b, func(recs []trace.Record) gpusched.Scheduler {
		truth := make(map[gpusched.JobID]float64, len(recs))
		for _, r := range recs {
			truth[r.Job.ID] = r.Iterations
		}
		s, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
			n, ok := truth[id]
			return n, ok
		})})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkPhilly2048Fifo runs the test's own minimal FIFO, so that the simulator's share of
// the time is visible.
func BenchmarkPhilly2048TestFIFO(b *testing.B) {
	benchPhilly(b, func([]trace.Record) gpusched.Scheduler { return fifo{} })
}

// BenchmarkSyntheticOverload simulates 20,000 Philly-like jobs offering 150% load to 64 GPUs
// under backfilling FIFO: a long queue, where the view must not be rebuilt per event.
func BenchmarkSyntheticOverload(b *testing.B) {
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		b.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(20000, 1)
	cfg.ArrivalRate = trace.RateForLoad(1.5, c.NumGPUs())
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: fifo{backfill: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Summary.Events), "events")
	}
}

// bareFIFO is a strict FIFO that allocates nothing per call (it reuses its buffers and
// places on the lowest free GPUs), so that a benchmark with it measures the simulator.
type bareFIFO struct {
	used []bool
	run  []gpusched.Assignment
	gpus []topology.GPUID
}

func (s *bareFIFO) Schedule(v gpusched.View) (gpusched.Decision, error) {
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

// BenchmarkPhilly2048Bare measures the simulator itself: the whole Philly file under a FIFO
// that costs next to nothing.
func BenchmarkPhilly2048Bare(b *testing.B) {
	benchPhilly(b, func([]trace.Record) gpusched.Scheduler { return &bareFIFO{} })
}

// BenchmarkPhilly2048ModelsFIFO is BenchmarkPhilly2048FIFO with every job mapped to a zoo
// model and a parallel plan (trace.ReadOptions.Cluster) and timed by gpusched.DefaultCost:
// link sharing between multi-server jobs now slows them down.
func BenchmarkPhilly2048ModelsFIFO(b *testing.B) {
	benchPhillyOn(b, true, func([]trace.Record) gpusched.Scheduler {
		s, err := policy.New("fifo", policy.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkEventCost measures the simulator's cost per event as the queue grows: 64 GPUs
// always full, `waiting` jobs always in the queue, and at every event (one per simulated
// second) one job finishes, one arrives at the tail and a FIFO that costs next to nothing
// starts the head of the queue. cpu-ns/event is the process CPU time of one event
// (completion, arrival, view, Schedule call, validation, application, step cost; ns/op is
// the same in wall time, noisy on a shared machine); the first event, where the queue fills,
// is not timed. Flat from 1,000 to 100,000 waiting jobs means no per-event scan of the queue.
func BenchmarkEventCost(b *testing.B) {
	for _, waiting := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			c, err := topology.Uniform(topology.A100(), 8)
			if err != nil {
				b.Fatal(err)
			}
			n := 64 + waiting + b.N + 1
			recs := make([]trace.Record, n)
			for i := range recs {
				arr, iters := 0.0, 64.0
				switch {
				case i < 64:
					iters = float64(i + 1) // the first wave ends one job per second
				case i >= 64+waiting:
					arr = float64(i - 64 - waiting + 1) // then one arrival per second
				}
				recs[i] = trace.Record{Job: gpusched.Job{ID: gpusched.JobID(strconv.Itoa(i)), Arrival: arr, GPUs: 1, StepTime: 1}, Iterations: iters}
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			timing := false
			var cpu0 time.Duration
			_, err = sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: &bareFIFO{}, Cost: gpusched.FixedCost{}, MaxEvents: b.N + 1,
				Observer: sim.Observer{Progress: func(now float64, _, _ int) {
					if !timing {
						timing = true
						cpu0 = processCPU()
						b.StartTimer()
					}
				}}})
			b.StopTimer()
			cpu := processCPU() - cpu0
			if !errors.Is(err, sim.ErrLimit) {
				b.Fatalf("want the event limit, got %v", err)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
		})
	}
}

// timedCompletions wraps a scheduler and measures each JobCompleted call: wall time and the
// process's CPU time.
type timedCompletions struct {
	gpusched.Scheduler
	obs       gpusched.CompletionObserver
	wall, cpu []time.Duration
}

func (s *timedCompletions) String() string { return host.SchedulerName(s.Scheduler) }

func (s *timedCompletions) JobCompleted(c gpusched.Completion) {
	w0, c0 := time.Now(), processCPU()
	s.obs.JobCompleted(c)
	s.wall = append(s.wall, time.Since(w0))
	s.cpu = append(s.cpu, processCPU()-c0)
}

// BenchmarkPhilly2048ASRPTCompletions measures what A-SRPT's JobCompleted costs over the whole
// Philly file with the learning forest (asrpt.ForestOptions: a window of 10,000 jobs,
// retrained every 20,000 completions, sooner while young): the slowest call (wall and CPU),
// the calls over 100 ms of CPU (the retrainings) and their total CPU. This is the work that
// host.Options.DeferCompletions takes off the path from an event to its actions.
func BenchmarkPhilly2048ASRPTCompletions(b *testing.B) {
	c, err := topology.Uniform(topology.A100(), 256)
	if err != nil {
		b.Fatal(err)
	}
	recs := readPhilly(b)
	for b.Loop() {
		f, err := asrpt.NewForest(asrpt.ForestOptions(1))
		if err != nil {
			b.Fatal(err)
		}
		s, err := asrpt.New(asrpt.Options{Estimator: f})
		if err != nil {
			b.Fatal(err)
		}
		tc := &timedCompletions{Scheduler: s, obs: s}
		if _, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: tc}); err != nil {
			b.Fatal(err)
		}
		var maxWall, maxCPU, slowCPU time.Duration
		slow := 0
		for i := range tc.wall {
			maxWall, maxCPU = max(maxWall, tc.wall[i]), max(maxCPU, tc.cpu[i])
			if tc.cpu[i] > 100*time.Millisecond {
				slow++
				slowCPU += tc.cpu[i]
			}
		}
		b.ReportMetric(float64(len(tc.wall)), "completions")
		b.ReportMetric(maxWall.Seconds()*1e3, "max-wall-ms")
		b.ReportMetric(maxCPU.Seconds()*1e3, "max-cpu-ms")
		b.ReportMetric(float64(slow), "calls>100ms")
		b.ReportMetric(slowCPU.Seconds(), "slow-cpu-s")
	}
}
