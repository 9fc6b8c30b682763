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
		ti, err := policy.NewTiresias(policy.TiresiasOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s = ti
		var w *consolidate.Scheduler
		if wrap {
			if w, err = consolidate.Wrap(ti, consolidate.Options{}); err != nil {
				t.Fatal(err)
			}
			s = w
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, ValidateViews: true})
		if err != nil {
			t.Fatalf("wrap=%v: %v", wrap, err)
		}
		if w != nil {
			return res, w.Moves()
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
