package gpusched

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// JobError reports one job that a scheduler cannot run as described: the job's id and why.
// Schedulers leave such a job out of their decision, list it in Decision.Rejected, and
// schedule every other job. Use errors.As to get the id and errors.Is on the error for the
// reason (ErrNoCost, ErrTooLarge, ErrDoesNotFit, or another ErrInvalidJob).
type JobError struct {
	// Job is the id of the job concerned.
	Job JobID
	// Err is the reason.
	Err error
}

// Error returns the reason, which names the job.
func (e *JobError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("gpusched: job %q rejected", e.Job)
	}
	return e.Err.Error()
}

// Unwrap returns the reason.
func (e *JobError) Unwrap() error { return e.Err }

// Reject wraps err as a *JobError for job id, unless it already is one for that job.
func Reject(id JobID, err error) *JobError {
	var je *JobError
	if errors.As(err, &je) && je.Job == id {
		return je
	}
	return &JobError{Job: id, Err: err}
}

// BestPlacement returns where job j runs fastest on the idle cluster c under cost model cost
// (nil: DefaultCost()): the GPUs of the kind it may use, consolidated by topology's Pack, for
// each GPU model of c the job is eligible for and has enough of (and over all its eligible GPUs
// together when no single model has enough), and the cost there. Schedulers size jobs with it
// (time per iteration at the best placement). Availability is ignored: sizes do not change
// while servers drain and return.
//
// It returns a *JobError wrapping ErrInvalidJob (Job.Validate fails), ErrTooLarge (fewer
// eligible GPUs than the job needs), ErrDoesNotFit (the plan fits no eligible GPU's memory) or
// ErrNoCost (the cost model fails or gives a time that is not finite and positive).
func BestPlacement(j *Job, c *topology.Cluster, cost CostModel) ([]topology.GPUID, StepCost, error) {
	if c == nil {
		return nil, StepCost{}, &JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q: no cluster", ErrInvalidJob, j.ID)}
	}
	if err := j.Validate(c); err != nil {
		return nil, StepCost{}, Reject(j.ID, err)
	}
	if cost == nil {
		cost = DefaultCost()
	}
	// Pools of eligible GPUs, one per GPU model, in order of first appearance.
	type pool struct {
		spec topology.GPUSpec
		gpus topology.GPUSet
	}
	var pools []pool
	all := topology.NewGPUSet(c.NumGPUs())
	for s := range c.NumServers() {
		spec := c.Server(s).GPU
		if !j.Eligible(spec) {
			continue
		}
		k := 0
		for k < len(pools) && pools[k].spec != spec {
			k++
		}
		if k == len(pools) {
			pools = append(pools, pool{spec: spec, gpus: topology.NewGPUSet(c.NumGPUs())})
		}
		first, n := c.GPUsOf(s)
		for g := first; g < first+topology.GPUID(n); g++ {
			pools[k].gpus.Add(g)
			all.Add(g)
		}
	}
	if have := all.Len(); have < j.GPUs {
		what := "GPUs"
		if j.Constrained() {
			what = fmt.Sprintf("GPUs of type %q with >= %.3g GiB", j.GPUType, j.MinGPUMemory/(1<<30))
		}
		return nil, StepCost{}, &JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q needs %d GPUs, cluster %q has %d %s",
			ErrTooLarge, j.ID, j.GPUs, c.Name(), have, what)}
	}
	var (
		best     []topology.GPUID
		bestCost StepCost
		firstErr error
	)
	try := func(set topology.GPUSet) {
		gpus, ok := c.Pack(set, j.GPUs)
		if !ok {
			return
		}
		sc, err := cost.StepCost(j, c, gpus, nil)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case !(sc.Time > 0) || math.IsInf(sc.Time, 0):
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: job %q: time per iteration %v s must be finite and > 0", ErrNoCost, j.ID, sc.Time)
			}
		case best == nil || sc.Time < bestCost.Time:
			best, bestCost = gpus, sc
		}
	}
	enough := false
	for _, p := range pools {
		if p.gpus.Len() >= j.GPUs {
			enough = true
			try(p.gpus)
		}
	}
	if !enough {
		try(all)
	}
	if best == nil {
		err := firstErr
		switch {
		case err == nil:
			err = fmt.Errorf("%w: job %q: no placement of %d GPUs", ErrTooLarge, j.ID, j.GPUs)
		case errors.Is(err, graph.ErrOutOfMemory):
			err = fmt.Errorf("%w: job %q: %w", ErrDoesNotFit, j.ID, err)
		case !errors.Is(err, ErrInvalidJob):
			err = fmt.Errorf("%w: job %q: %w", ErrNoCost, j.ID, err)
		}
		return nil, StepCost{}, &JobError{Job: j.ID, Err: err}
	}
	return best, bestCost, nil
}

// Admit checks up front what schedulers' admission rejects: it returns nil when job j could
// run on cluster c under cost model cost (nil: DefaultCost()), and otherwise the *JobError that
// BestPlacement gives. Hosts call it when a job is submitted, to refuse a bad job at once
// rather than see it in Decision.Rejected.
func Admit(j *Job, c *topology.Cluster, cost CostModel) error {
	_, _, err := BestPlacement(j, c, cost)
	return err
}
