package gpusched

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// StepCost is the cost of one training iteration of a placed job.
type StepCost struct {
	// Time is the time per iteration in seconds.
	Time float64
	// CrossServerBytes is the number of bytes per iteration that leave a server (the traffic a
	// topology-aware placement tries to keep small).
	CrossServerBytes float64
}

// CostModel gives a job's per-iteration cost on a placement. Hosts use it to advance running
// jobs; schedulers use it to compare placements and to size jobs. gpus holds one GPU per worker
// in worker order; load counts other jobs' flows on shared links (nil: idle links).
// Implementations must be safe for concurrent use and must not keep gpus or load.
type CostModel interface {
	StepCost(j *Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (StepCost, error)
}

// FixedCost is the CostModel of placement-independent jobs: every job takes Job.StepTime
// seconds per iteration wherever it runs and moves no bytes. A job with no step time is an
// error.
type FixedCost struct{}

// StepCost returns the job's StepTime.
func (FixedCost) StepCost(j *Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (StepCost, error) {
	if !(j.StepTime > 0) {
		return StepCost{}, fmt.Errorf("%w: job %q has no step time and no model", ErrInvalidJob, j.ID)
	}
	return StepCost{Time: j.StepTime}, nil
}
