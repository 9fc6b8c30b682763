package gpusched

import "github.com/gpusched/gpusched/topology"

// Placer chooses GPUs for a job among free ones: one GPU per worker in worker order, all in
// free, all distinct, all of a kind the job may use (Job.Eligible). It returns false when it
// cannot place the job. It must not modify free.
// Every scheduler of this module that places jobs takes a Placer (policy.Options.Placer,
// asrpt.Options.Placer, consolidate.Options.Placer); Pack is the default.
type Placer func(c *topology.Cluster, free topology.GPUSet, j *Job) ([]topology.GPUID, bool)

// Pack is the default Placer: topology.Cluster.Pack over the free GPUs the job may use
// (Job.EligibleIn), which puts the job on as few servers (and racks) as possible, best fit. It
// fails only when free holds fewer eligible GPUs than the job needs.
func Pack(c *topology.Cluster, free topology.GPUSet, j *Job) ([]topology.GPUID, bool) {
	return c.Pack(j.EligibleIn(c, free), j.GPUs)
}
