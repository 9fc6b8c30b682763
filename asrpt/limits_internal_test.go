package asrpt

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// limitChecked checks, after every call, that each state's re-estimation limit (kept in
// Scheduler.limits) is its prediction times 1 + ReestimateMargin, as computed from scratch.
type limitChecked struct {
	*Scheduler
	calls int
	err   error
}

func (c *limitChecked) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := c.Scheduler.Schedule(v)
	c.calls++
	s := c.Scheduler
	for k, st := range s.byKey {
		if st == nil || c.err != nil {
			continue
		}
		if want := st.iters * (1 + s.opt.ReestimateMargin); math.Float64bits(s.limits[k]) != math.Float64bits(want) {
			c.err = fmt.Errorf("call %d: job %q (key %d): limit %v, from scratch %v", c.calls, st.job.ID, k, s.limits[k], want)
		}
	}
	return d, err
}

// TestPropertyLimits: on Philly-like workloads whose predictions are five times too short
// (every job is re-estimated, by the group fallback and by Gittins ranks; bursts are sized
// again as their jobs finish), strict and backfilling, with and without failures, every
// state's re-estimation limit equals the one computed from its prediction after every call.
// A scheduler that misses the limit's update on re-estimation (brokenLimits) is caught.
func TestPropertyLimits(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(400, 2)
	cfg.Cluster = c
	cfg.ArrivalRate = trace.RateForLoad(2, c.NumGPUs())
	jobs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[gpusched.JobID]float64{}
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	short := Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n / 5, ok })
	run := func(backfill, failures, broken bool) (*limitChecked, error) {
		s, err := New(Options{Estimator: short, Backfill: backfill})
		if err != nil {
			return nil, err
		}
		s.brokenLimits = broken
		lc := &limitChecked{Scheduler: s}
		sc := sim.Config{Cluster: c, Jobs: jobs, Scheduler: lc}
		if failures {
			sc.Failures = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: 3}
			sc.Checkpoint = 1800
		}
		if _, err := sim.Run(sc); err != nil {
			return lc, err
		}
		return lc, lc.err
	}
	for _, backfill := range []bool{false, true} {
		for _, failures := range []bool{false, true} {
			lc, err := run(backfill, failures, false)
			if err != nil {
				t.Fatalf("backfill %v, failures %v: %v", backfill, failures, err)
			}
			t.Logf("backfill %v, failures %v: %d calls", backfill, failures, lc.calls)
		}
	}
	if _, err := run(false, false, true); err == nil {
		t.Error("a limit not updated on re-estimation was not caught")
	}
}
