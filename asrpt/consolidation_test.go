package asrpt_test

import (
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// TestConsolidation runs A-SRPT (true sizes) through the simulator on a busy Philly-like
// workload with and without its consolidating migrations: with them it asks for migrations,
// the simulator carries them out, and jobs need less GPU-time and send fewer bytes across
// servers; without them nothing migrates.
func TestConsolidation(t *testing.T) {
	c, jobs := busyPhilly(t, 1000)
	truth := map[gpusched.JobID]float64{}
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	run := func(off bool) (*sim.Result, int) {
		s, err := asrpt.New(asrpt.Options{NoConsolidate: off, Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
			n, ok := truth[id]
			return n, ok
		})})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, ValidateViews: true})
		if err != nil {
			t.Fatalf("NoConsolidate=%v: %v", off, err)
		}
		return res, s.Migrations()
	}
	on, moves := run(false)
	off, none := run(true)
	t.Logf("with: %d migrations, %.3g GPU-s, %.3g B; without: %.3g GPU-s, %.3g B", moves,
		on.Summary.BusyGPUSeconds, on.Summary.CrossServerBytes, off.Summary.BusyGPUSeconds, off.Summary.CrossServerBytes)
	if moves == 0 || on.Summary.MigrationsPerJob == 0 {
		t.Fatalf("no consolidating migrations (A-SRPT counted %d)", moves)
	}
	if none != 0 || off.Summary.MigrationsPerJob != 0 {
		t.Fatalf("NoConsolidate: %d migrations", none)
	}
	if on.Summary.BusyGPUSeconds >= off.Summary.BusyGPUSeconds || on.Summary.CrossServerBytes >= off.Summary.CrossServerBytes {
		t.Errorf("consolidation did not lower GPU-time and bytes across servers")
	}
}

// TestConsolidationUsesTheCustomPlacer: A-SRPT's consolidating migrations propose targets with
// Options.Placer, not with a placer of their own. A placer that never uses server 0 must see
// no job started or moved onto server 0 (the old code consolidated with topology's Pack and
// moved jobs there).
func TestConsolidationUsesTheCustomPlacer(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(600, 1)
	cfg.Cluster = c
	cfg.ArrivalRate = trace.RateForLoad(2, c.NumGPUs())
	jobs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, n := c.GPUsOf(0)
	avoid := func(cl *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
		f := free.Clone()
		for g := first; g < first+topology.GPUID(n); g++ {
			f.Remove(g)
		}
		return gpusched.Pack(cl, f, j)
	}
	truth := map[gpusched.JobID]float64{}
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	s, err := asrpt.New(asrpt.Options{Placer: avoid, Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
		v, ok := truth[id]
		return v, ok
	})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, ValidateViews: true, RecordSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Migrations() == 0 {
		t.Fatal("no migrations: the test proves nothing")
	}
	for _, seg := range res.Segments {
		for _, g := range seg.GPUs {
			if c.ServerOf(g) == 0 {
				t.Fatalf("job %s ran on GPU %d of server 0 from t=%g s, which the placer never offers", seg.Job, g, seg.Start)
			}
		}
	}
}
