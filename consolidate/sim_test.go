package consolidate_test

import (
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// TestWrappedPolicyInSimulator runs Tiresias, whose preemptions scatter jobs, with and without
// consolidation through the simulator with its own bookkeeping checks on: every decision is
// valid, migrations happen, and they pay off in GPU-time and in bytes across servers.
func TestWrappedPolicyInSimulator(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(1000, 1)
	cfg.Cluster = c
	cfg.ArrivalRate = trace.RateForLoad(2, c.NumGPUs())
	jobs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func(wrap bool) (*sim.Result, int) {
		var s gpusched.Scheduler
		ti, err := policy.New("tiresias", policy.Config{})
		if err != nil {
			t.Fatal(err)
		}
		s = ti
		var w gpusched.Scheduler
		if wrap {
			if w, err = consolidate.WrapScheduler(ti, consolidate.Options{}); err != nil {
				t.Fatal(err)
			}
			s = w
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, ValidateViews: true})
		if err != nil {
			t.Fatalf("wrap=%v: %v", wrap, err)
		}
		if w != nil {
			return res, consolidate.MovesForTest(w)
		}
		return res, 0
	}
	plain, _ := run(false)
	moved, moves := run(true)
	if moves == 0 || moved.Summary.MigrationsPerJob == 0 {
		t.Fatalf("no migrations (wrapper counted %d)", moves)
	}
	t.Logf("tiresias: avg JCT %.0f s, %.3g GPU-s, %.3g B across servers; +consolidate: %.0f s, %.3g GPU-s, %.3g B, %d moves",
		plain.Summary.AvgJCT, plain.Summary.BusyGPUSeconds, plain.Summary.CrossServerBytes,
		moved.Summary.AvgJCT, moved.Summary.BusyGPUSeconds, moved.Summary.CrossServerBytes, moves)
	if moved.Summary.CrossServerBytes >= plain.Summary.CrossServerBytes {
		t.Errorf("consolidation did not lower the bytes across servers")
	}
	if moved.Summary.BusyGPUSeconds >= plain.Summary.BusyGPUSeconds {
		t.Errorf("consolidation did not lower the GPU-time the jobs needed")
	}
}

// TestEveryBaselineWrapped runs every baseline of package policy, wrapped, through the
// simulator with its bookkeeping checks on: consolidation never makes a policy's decision
// invalid or stalls a simulation, and on this busy workload (600 jobs at three times the
// cluster's capacity, two racks) it finds moves under every policy.
func TestEveryBaselineWrapped(t *testing.T) {
	c, err := topology.UniformRacks(topology.A100(), 6, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(600, 1)
	cfg.Cluster = c
	cfg.ArrivalRate = trace.RateForLoad(3, c.NumGPUs())
	jobs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[gpusched.JobID]float64{}
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	makers := map[string]func() (gpusched.Scheduler, error){
		"fifo":            func() (gpusched.Scheduler, error) { return policy.New("fifo", policy.Config{}) },
		"sjf":             func() (gpusched.Scheduler, error) { return policy.New("sjf", policy.Config{}) },
		"first-fit":       func() (gpusched.Scheduler, error) { return policy.New("first-fit", policy.Config{}) },
		"list-scheduling": func() (gpusched.Scheduler, error) { return policy.New("list-scheduling", policy.Config{}) },
		"random": func() (gpusched.Scheduler, error) {
			return policy.New("random", policy.Config{Random: policy.RandomOptions{Seed: 1}})
		},
		"gadget":   func() (gpusched.Scheduler, error) { return policy.New("gadget", policy.Config{}) },
		"tiresias": func() (gpusched.Scheduler, error) { return policy.New("tiresias", policy.Config{}) },
		"srpt-oracle": func() (gpusched.Scheduler, error) {
			return policy.New("srpt-oracle", policy.Config{Oracle: policy.OracleOptions{Iterations: func(id gpusched.JobID) float64 { return truth[id] }}})
		},
		"sjf-bco": func() (gpusched.Scheduler, error) {
			return policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{Iterations: func(j *gpusched.Job) float64 { return truth[j.ID] }}})
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			s, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			w, err := consolidate.WrapScheduler(s, consolidate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: w, ValidateViews: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != len(jobs) {
				t.Fatalf("%d of %d jobs finished", len(res.Jobs), len(jobs))
			}
			if consolidate.MovesForTest(w) == 0 {
				t.Errorf("no moves under %s", name)
			}
			t.Logf("%s+consolidate: %d moves, avg JCT %.0f s", name, consolidate.MovesForTest(w), res.Summary.AvgJCT)
		})
	}
}
