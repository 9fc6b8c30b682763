package policy

import (
	"math"
	"testing"

	"github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// TestPropertySJFBCOReplan: with a re-plan cadence, SJF-BCO's decisions stay valid, it never
// preempts, and every job finishes (jobs that arrive after a plan are not left waiting: it
// asks to be woken when the next plan is due).
func TestPropertySJFBCOReplan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance(t, 12)
		replan := rapid.SampledFrom([]float64{1, 60, 1e4}).Draw(t, "replan")
		s, err := newSJFBCO(SJFBCOOptions{Replan: replan, Window: rapid.IntRange(1, 4).Draw(t, "window"),
			Iterations: func(j *gpusched.Job) float64 { return in.iters[j.ID] }})
		if err != nil {
			t.Fatal(err)
		}
		// Calls: a few per job and event, plus at most one wake-up per Replan while a job waits
		// for a plan (the cadence asks to be woken when the next plan is due while a waiting job
		// fits the free GPUs, even if that plan puts it behind a long job): bounded by the
		// horizon, at most the last arrival plus the jobs' work run one after another (with
		// room for slower placements).
		horizon := 0.0
		for _, j := range in.jobs {
			horizon = max(horizon, j.job.Arrival)
		}
		for _, j := range in.jobs {
			horizon += 4 * j.iters * j.job.StepTime
		}
		st, err := runHost(in.c, in.jobs, s, 100*len(in.jobs)+100+int(horizon/replan))
		if err := checkRun(s, len(in.jobs), st, err, true); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSJFBCOReplanOption(t *testing.T) {
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := newSJFBCO(SJFBCOOptions{Replan: r}); err == nil {
			t.Errorf("Replan %v accepted", r)
		}
	}
}
