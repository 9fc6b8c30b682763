package asrpt_test

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// underEstimator predicts 10 iterations for every job and, for a job past its prediction,
// half as much again as it has done: the estimator of long jobs that report last.
type underEstimator struct{}

func (underEstimator) Estimate(j *gpusched.Job, done float64) (float64, error) {
	if done == 0 {
		return 10, nil
	}
	return 1.5 * done, nil
}

// Long jobs that the estimator keeps under-predicting take turns at every re-estimation when
// re-estimated jobs keep the right to preempt (Strikes < 0); with the default Strikes they run
// to the end once started, and finish sooner on average.
func TestStrikesStopTurnTaking(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []trace.Record
	for i := range 4 {
		jobs = append(jobs, trace.Record{Job: gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("long-%d", i)), GPUs: 8, StepTime: 1, Arrival: float64(i)},
			Iterations: 1e5})
	}
	run := func(strikes int) *sim.Result {
		s, err := asrpt.New(asrpt.Options{Estimator: underEstimator{}, Strikes: strikes})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	turns, calm := run(-1), run(0)
	t.Logf("Strikes -1: %.1f preemptions per job, mean JCT %.0f s; default: %.1f, %.0f s",
		turns.Summary.PreemptionsPerJob, turns.Summary.AvgJCT, calm.Summary.PreemptionsPerJob, calm.Summary.AvgJCT)
	if turns.Summary.PreemptionsPerJob < 5 {
		t.Fatalf("without strikes the long jobs did not take turns (%.1f preemptions per job): the test cannot fail", turns.Summary.PreemptionsPerJob)
	}
	if calm.Summary.PreemptionsPerJob > 1 || calm.Summary.AvgJCT >= turns.Summary.AvgJCT {
		t.Errorf("with strikes: %.1f preemptions per job, mean JCT %.0f s (turn-taking: %.0f s)",
			calm.Summary.PreemptionsPerJob, calm.Summary.AvgJCT, turns.Summary.AvgJCT)
	}
}
