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
// (nil: DefaultCost()), and the cost there: the best of SizingCandidates, by BestAmong.
// Schedulers size jobs with it (time per iteration at the best placement). Availability is
// ignored: sizes do not change while servers drain and return.
//
// It returns a *JobError wrapping ErrInvalidJob (Job.Validate fails), ErrTooLarge (fewer
// eligible GPUs than the job needs), ErrDoesNotFit (the plan fits no eligible GPU's memory) or
// ErrNoCost (the cost model fails or gives a time that is not finite and positive).
func BestPlacement(j *Job, c *topology.Cluster, cost CostModel) ([]topology.GPUID, StepCost, error) {
	cands, err := SizingCandidates(j, c)
	if err != nil {
		return nil, StepCost{}, err
	}
	return BestAmong(j, c, cost, cands)
}

// SizingCandidates returns the placements on which a job is sized: for each GPU model of c that
// the job may use and that has enough GPUs, those GPUs consolidated by topology's Pack on the
// idle cluster (in order of the model's first server); when no single model has enough, one
// placement over all the GPUs it may use. They depend only on the job's GPU count and
// constraints, so schedulers may cache them by those. Errors are as BestPlacement's.
func SizingCandidates(j *Job, c *topology.Cluster) ([][]topology.GPUID, error) {
	if c == nil {
		return nil, &JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q: no cluster", ErrInvalidJob, j.ID)}
	}
	if err := j.Validate(c); err != nil {
		return nil, Reject(j.ID, err)
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
		return nil, &JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q needs %d GPUs, cluster %q has %d %s",
			ErrTooLarge, j.ID, j.GPUs, c.Name(), have, what)}
	}
	var out [][]topology.GPUID
	for _, p := range pools {
		if p.gpus.Len() >= j.GPUs {
			if gpus, ok := c.Pack(p.gpus, j.GPUs); ok {
				out = append(out, gpus)
			}
		}
	}
	if len(out) == 0 {
		if gpus, ok := c.Pack(all, j.GPUs); ok {
			out = append(out, gpus)
		}
	}
	if len(out) == 0 {
		return nil, &JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q: no placement of %d GPUs", ErrTooLarge, j.ID, j.GPUs)}
	}
	return out, nil
}

// BestAmong returns the candidate placement on which job j has the least time per iteration
// under cost model cost (nil: DefaultCost()) on idle links, and that cost; ties go to the
// earlier candidate. It returns a *JobError wrapping ErrDoesNotFit when the job's plan fits
// the memory of no candidate, ErrNoCost when the cost model fails otherwise or gives no
// finite positive time, ErrTooLarge when there is no candidate.
func BestAmong(j *Job, c *topology.Cluster, cost CostModel, candidates [][]topology.GPUID) ([]topology.GPUID, StepCost, error) {
	if cost == nil {
		cost = DefaultCost()
	}
	var (
		best     []topology.GPUID
		bestCost StepCost
		firstErr error
	)
	for _, gpus := range candidates {
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

// Fits returns nil when cluster c has at least j.GPUs GPUs of the kind job j may use (its
// GPUType and MinGPUMemory, not its plan's memory), and otherwise an error wrapping ErrTooLarge
// that names the job. It costs O(1) for a job without constraints and O(servers) for one with.
func Fits(j *Job, c *topology.Cluster) error {
	if j.GPUs <= c.NumGPUs() && !j.Constrained() {
		return nil
	}
	n := 0
	if j.GPUs <= c.NumGPUs() {
		for i := range c.NumServers() {
			if sv := c.Server(i); j.Eligible(sv.GPU) {
				if n += sv.GPUs; n >= j.GPUs {
					return nil
				}
			}
		}
	}
	what := "GPUs"
	if j.Constrained() {
		what = fmt.Sprintf("GPUs of type %q with >= %.3g GiB", j.GPUType, j.MinGPUMemory/(1<<30))
	} else {
		n = c.NumGPUs()
	}
	return fmt.Errorf("%w: job %q needs %d GPUs, cluster %q has %d %s", ErrTooLarge, j.ID, j.GPUs, c.Name(), n, what)
}

// FitsMemory returns nil when job j's plan fits the memory of at least one kind of GPU of
// cluster c that the job may use, or when the job has no model (nothing to check), and
// otherwise an error wrapping ErrDoesNotFit that names the job and says by how much it misses
// on the largest eligible GPU; a model and plan that do not compile give an error wrapping
// ErrInvalidJob. It compiles the plan once (microseconds).
func FitsMemory(j *Job, c *topology.Cluster) error {
	if j.Model == nil {
		return nil
	}
	comp, err := graph.Compile(j.Model, j.Plan)
	if err != nil {
		return fmt.Errorf("%w: job %q: %w", ErrInvalidJob, j.ID, err)
	}
	var (
		last topology.GPUSpec
		miss error
	)
	for i := range c.NumServers() {
		spec := c.Server(i).GPU
		if (i > 0 && spec == last) || !j.Eligible(spec) {
			continue
		}
		last = spec
		err := comp.CheckMemory(spec)
		if err == nil {
			return nil
		}
		if miss == nil || spec.MemoryBytes > 0 {
			miss = err
		}
	}
	if miss == nil {
		return fmt.Errorf("%w: job %q: no GPU it may use", ErrTooLarge, j.ID)
	}
	return fmt.Errorf("%w: job %q: %w", ErrDoesNotFit, j.ID, miss)
}

// Admit checks up front what schedulers' admission rejects: it returns nil when job j could
// run on cluster c under cost model cost (nil: DefaultCost()), and otherwise the *JobError that
// BestPlacement gives. Hosts call it when a job is submitted, to refuse a bad job at once
// rather than see it in Decision.Rejected.
func Admit(j *Job, c *topology.Cluster, cost CostModel) error {
	_, _, err := BestPlacement(j, c, cost)
	return err
}
