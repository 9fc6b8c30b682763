package asrpt_test

import (
	"fmt"
	"strings"
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
	if calm.Summary.PreemptionsPerJob > 2 || calm.Summary.AvgJCT >= turns.Summary.AvgJCT {
		t.Errorf("with strikes: %.1f preemptions per job, mean JCT %.0f s (turn-taking: %.0f s)",
			calm.Summary.PreemptionsPerJob, calm.Summary.AvgJCT, turns.Summary.AvgJCT)
	}
}

// A job with strikes that has just started is not preempted before StrikeRunTime has passed;
// then a newcomer of higher priority takes its GPUs.
func TestStrikeRunTime(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := asrpt.New(asrpt.Options{Estimator: underEstimator{}, StrikeRunTime: 600})
	if err != nil {
		t.Fatal(err)
	}
	long := &gpusched.Job{ID: "long", GPUs: 8, StepTime: 1}
	all := c.AllGPUs().Slice()
	run := func(now, done, since float64, pending ...*gpusched.Job) gpusched.Decision {
		t.Helper()
		v := gpusched.View{Now: now, Cluster: c, Running: []gpusched.JobStatus{{Job: long, GPUs: all, Since: since, Iterations: done, Executed: done}}}
		for _, j := range pending {
			v.Pending = append(v.Pending, gpusched.JobStatus{Job: j})
		}
		d, err := s.Schedule(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: long}}}); err != nil {
		t.Fatal(err)
	}
	run(11, 11, 0) // first re-estimation: 16.5
	run(20, 20, 0) // second: 30, two strikes
	newcomer := &gpusched.Job{ID: "new", GPUs: 8, StepTime: 1, Arrival: 1000}
	d := run(1000, 1000, 900, newcomer) // resumed 100 s ago
	if len(d.Run) != 1 || d.Run[0].Job != "long" {
		t.Fatalf("a job with strikes was preempted 100 s after it resumed: %+v", d.Run)
	}
	if !(d.WakeAt > 1000 && d.WakeAt <= 1500) {
		t.Errorf("no wake-up when the protection ends (1,500 s): WakeAt %v", d.WakeAt)
	}
	d = run(1600, 1600, 900, newcomer) // 700 s after it resumed
	if len(d.Run) != 1 || d.Run[0].Job != "new" {
		t.Fatalf("the newcomer did not take the GPUs once the protection ended: %+v", d.Run)
	}
}

// A recurrence group of long jobs that the estimator keeps under-predicting (none has finished,
// so nothing can learn from them): without the group fallback every newcomer of the group is
// predicted short and preempts the group's running job, and they take turns; with it, once two
// of the group's jobs have run past their predictions, a newcomer is sized from what its
// siblings have already run (censored lengths) and waits, so the group is served in order.
func TestGroupFallbackLearnsFromRunningSiblings(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []trace.Record
	for i := range 6 {
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("long-%d", i)), GPUs: 8, StepTime: 1, Arrival: float64(i) * 2000}
		j.Features.Group = "long"
		jobs = append(jobs, trace.Record{Job: j, Iterations: 1e4})
	}
	run := func(noFallback bool) *sim.Result {
		s, err := asrpt.New(asrpt.Options{Estimator: underEstimator{}, NoGroupFallback: noFallback})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	off, on := run(true), run(false)
	t.Logf("without the fallback: %.2f preemptions per job, mean JCT %.0f s; with it: %.2f, %.0f s",
		off.Summary.PreemptionsPerJob, off.Summary.AvgJCT, on.Summary.PreemptionsPerJob, on.Summary.AvgJCT)
	if off.Summary.PreemptionsPerJob < 0.5 {
		t.Fatalf("without the fallback the group did not take turns (%.2f preemptions per job): the test cannot fail", off.Summary.PreemptionsPerJob)
	}
	if on.Summary.PreemptionsPerJob >= off.Summary.PreemptionsPerJob || on.Summary.AvgJCT >= off.Summary.AvgJCT {
		t.Errorf("with the fallback: %.2f preemptions per job, mean JCT %.0f s; want fewer than without (%.2f, %.0f s)",
			on.Summary.PreemptionsPerJob, on.Summary.AvgJCT, off.Summary.PreemptionsPerJob, off.Summary.AvgJCT)
	}
}

// userEstimator predicts a fixed length per Features.User and, past it, twice what a job has
// done: an estimator that cannot tell a sweep's jobs from the user's other jobs.
type userEstimator map[string]float64

func (e userEstimator) Estimate(j *gpusched.Job, done float64) (float64, error) {
	if done == 0 {
		return e[j.Features.User], nil
	}
	return 2 * done, nil
}

// A sweep (forty short jobs of one user and GPU count submitted a second apart, no recurrence
// group) that the estimator predicts long: once a few have finished, the burst fallback sizes
// the waiting ones by what those took, and they run ahead of a user's jobs that are truly long.
// With bursts off they wait behind them.
func TestBurstFallbackLearnsFromFinishedSiblings(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []trace.Record
	for i := range 40 {
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("sweep-%02d", i)), GPUs: 1, StepTime: 1, Arrival: float64(i)}
		j.Features.User = "sweeper"
		jobs = append(jobs, trace.Record{Job: j, Iterations: 100})
	}
	for i := range 16 {
		// Arrivals 100 s apart: one burst each.
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("long-%02d", i)), GPUs: 1, StepTime: 1, Arrival: float64(i) * 100}
		j.Features.User = "patient"
		jobs = append(jobs, trace.Record{Job: j, Iterations: 5000})
	}
	est := userEstimator{"sweeper": 1e4, "patient": 5000}
	run := func(gap float64) float64 {
		s, err := asrpt.New(asrpt.Options{Estimator: est, BurstGap: gap})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s})
		if err != nil {
			t.Fatal(err)
		}
		sum, n := 0.0, 0
		for _, r := range res.Jobs {
			if strings.HasPrefix(string(r.ID), "sweep-") {
				sum += r.JCT
				n++
			}
		}
		return sum / float64(n)
	}
	off, on := run(-1), run(0)
	t.Logf("the sweep's mean JCT: %.0f s without bursts, %.0f s with", off, on)
	if off < 2000 {
		t.Fatalf("without bursts the sweep did not wait behind the long jobs (mean JCT %.0f s): the test cannot fail", off)
	}
	if on > off/2 {
		t.Errorf("with bursts the sweep's mean JCT is %.0f s; want at most half of %.0f s (without)", on, off)
	}
}
