// Package boundcheck shows how to property-test your own scheduler against the lower bounds
// of package srpt, with rapid and the simulator, the way package asrpt tests A-SRPT.
//
// The scheduler here, GreedyShortest, is a user's own policy: at every event it runs waiting
// jobs shortest-predicted-first on whatever GPUs are free, and never preempts. The test in
// boundcheck_test.go generates random workloads, runs the scheduler in the simulator with free
// preemption and placement-independent iteration times (the model of the bounds), and checks
// its total completion time against a ratio times the best lower bound; a second test shows
// that the check catches a scheduler that is not competitive.
package boundcheck

import (
	"slices"

	"github.com/gpusched/gpusched"
)

// GreedyShortest starts waiting jobs in order of predicted work (GPUs x predicted seconds),
// smallest first, wherever they fit; it never preempts.
type GreedyShortest struct {
	// Predict returns a job's predicted running time in seconds.
	Predict func(j *gpusched.Job) float64
	// Reverse runs the largest job first instead: a deliberately bad variant.
	Reverse bool
}

// Schedule implements gpusched.Scheduler.
func (g GreedyShortest) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	for _, r := range v.Running {
		d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
	}
	waiting := make([]*gpusched.Job, len(v.Pending))
	for i := range v.Pending {
		waiting[i] = v.Pending[i].Job
	}
	work := func(j *gpusched.Job) float64 { return float64(j.GPUs) * g.Predict(j) }
	slices.SortStableFunc(waiting, func(a, b *gpusched.Job) int {
		wa, wb := work(a), work(b)
		if g.Reverse {
			wa, wb = wb, wa
		}
		switch {
		case wa < wb:
			return -1
		case wa > wb:
			return 1
		}
		return 0
	})
	free := v.Free()
	for _, j := range waiting {
		gpus, ok := v.Cluster.Pack(free, j.GPUs)
		if !ok {
			continue
		}
		for _, x := range gpus {
			free.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: j.ID, GPUs: gpus})
	}
	return d, nil
}

// String names the scheduler in reports.
func (g GreedyShortest) String() string {
	if g.Reverse {
		return "greedy-longest"
	}
	return "greedy-shortest"
}
