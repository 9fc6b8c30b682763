package gpusched

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// PlanOption is one execution plan a reconfigurable job allows its scheduler to choose (Rubick,
// MLSys'25): a parallel plan, which fixes the GPU count (Plan.Workers()), and the host resources
// each of its workers needs. Every option of a job trains the same model at the same global
// batch, so an iteration means the same progress whichever option runs it.
type PlanOption struct {
	// Plan is the parallel plan (data x tensor x pipeline degrees, micro-batches, ZeRO,
	// offload with its CPU threads, checkpointing). Its GlobalBatch equals the job's.
	Plan graph.Plan `json:"plan"`
	// CPUs is the number of CPU cores each worker needs on its server (0: none accounted).
	CPUs int `json:"cpus,omitempty"`
	// HostMemory is the host memory each worker needs on its server, in bytes (0: none
	// accounted).
	HostMemory float64 `json:"host_memory,omitempty"`
	// PS is the number of parameter-server shards of a PS job under this option (Job.PS; 0:
	// one per server its workers occupy). Ignored for other jobs.
	PS int `json:"ps,omitempty"`
}

// GPUs returns the option's GPU count: one GPU per worker of its plan.
func (o PlanOption) GPUs() int { return o.Plan.Workers() }

// ErrPlanChoice reports an assignment whose plan choice the job does not offer (a negative
// index, or one past Job.Plans).
var ErrPlanChoice = errors.New("gpusched: no such plan choice")

// ErrHostResources reports a decision that gives a server's jobs more CPU cores or host memory
// than the server has (topology.ServerSpec.CPUs, HostMemory).
var ErrHostResources = errors.New("gpusched: server CPU or host memory overcommitted")

// Reconfigurable reports whether the scheduler may choose the job's plan: it lists Plans.
func (j *Job) Reconfigurable() bool { return len(j.Plans) > 0 }

// Choices returns the number of plan choices of the job: 1 (its own plan) plus its Plans.
func (j *Job) Choices() int { return 1 + len(j.Plans) }

// Option returns plan choice k of the job: k = 0 is the job's own plan, GPU count, CPUs and
// HostMemory; k >= 1 is Plans[k-1]. It returns false for a k out of range. For a job without
// a model, choice 0's Plan is the zero plan and its GPUs are the job's GPUs.
func (j *Job) Option(k int) (PlanOption, bool) {
	switch {
	case k == 0:
		return PlanOption{Plan: j.Plan, CPUs: j.CPUs, HostMemory: j.HostMemory}, true
	case k < 0 || k > len(j.Plans):
		return PlanOption{}, false
	}
	return j.Plans[k-1], true
}

// GPUsFor returns the GPU count of plan choice k (Job.GPUs for k = 0), or 0 for a k out of
// range.
func (j *Job) GPUsFor(k int) int {
	switch {
	case k == 0:
		return j.GPUs
	case k < 0 || k > len(j.Plans):
		return 0
	}
	return j.Plans[k-1].GPUs()
}

// WithPlan returns the job as it runs under plan choice k: a copy whose Plan, GPUs, CPUs and
// HostMemory are the option's (the job itself, not a copy, for k = 0). Cost models time a job
// under a chosen plan by timing WithPlan(k). It returns nil for a k out of range.
func (j *Job) WithPlan(k int) *Job {
	if k == 0 {
		return j
	}
	o, ok := j.Option(k)
	if !ok {
		return nil
	}
	c := *j
	c.Plan, c.GPUs, c.CPUs, c.HostMemory = o.Plan, o.GPUs(), o.CPUs, o.HostMemory
	if j.PS != nil {
		ps := *j.PS
		ps.NumPS = o.PS
		c.PS = &ps
	}
	return &c
}

// validatePlans checks the job's host needs and the plans it allows (see Job.Validate).
func (j *Job) validatePlans(c *topology.Cluster) error {
	if j.CPUs < 0 {
		return fmt.Errorf("%w: job %q: CPUs %d must be >= 0", ErrInvalidJob, j.ID, j.CPUs)
	}
	if !(j.HostMemory >= 0) || math.IsInf(j.HostMemory, 0) {
		return fmt.Errorf("%w: job %q: host memory %v must be finite and >= 0", ErrInvalidJob, j.ID, j.HostMemory)
	}
	if j.PS != nil {
		if err := j.validatePS(c); err != nil {
			return err
		}
	}
	if len(j.Plans) == 0 {
		return nil
	}
	if j.Model == nil {
		return fmt.Errorf("%w: job %q lists plans but has no model", ErrInvalidJob, j.ID)
	}
	for i, o := range j.Plans {
		k := i + 1
		switch {
		case o.CPUs < 0:
			return fmt.Errorf("%w: job %q plan choice %d: CPUs %d must be >= 0", ErrInvalidJob, j.ID, k, o.CPUs)
		case !(o.HostMemory >= 0) || math.IsInf(o.HostMemory, 0):
			return fmt.Errorf("%w: job %q plan choice %d: host memory %v must be finite and >= 0", ErrInvalidJob, j.ID, k, o.HostMemory)
		case o.Plan.GlobalBatch != j.Plan.GlobalBatch:
			return fmt.Errorf("%w: job %q plan choice %d (%v): global batch %d differs from the job's %d",
				ErrInvalidJob, j.ID, k, o.Plan, o.Plan.GlobalBatch, j.Plan.GlobalBatch)
		}
		if err := o.Plan.Validate(j.Model); err != nil {
			return fmt.Errorf("%w: job %q plan choice %d: %w", ErrInvalidJob, j.ID, k, err)
		}
		if c != nil && o.GPUs() > c.NumGPUs() {
			return fmt.Errorf("%w: job %q plan choice %d (%v) needs %d GPUs but cluster %q has %d",
				ErrTooLarge, j.ID, k, o.Plan, o.GPUs(), c.Name(), c.NumGPUs())
		}
	}
	return nil
}

// hostLoad accumulates the CPU cores and host memory that a decision gives the jobs of each
// server, for the servers that account them.
type hostLoad struct {
	c      *topology.Cluster
	cpus   []int
	mem    []float64
	active bool
}

func newHostLoad(c *topology.Cluster) hostLoad {
	h := hostLoad{c: c}
	for s := range c.NumServers() {
		if sp := c.Server(s); sp.CPUs > 0 || sp.HostMemory > 0 {
			h.active = true
			break
		}
	}
	if h.active {
		h.cpus = make([]int, c.NumServers())
		h.mem = make([]float64, c.NumServers())
	}
	return h
}

// add charges one placement of job j under plan choice k (its workers' and, for a PS job, its
// PS shards' needs: Job.ServerNeeds) and reports the first server it overcommits.
func (h *hostLoad) add(j *Job, k int, gpus []topology.GPUID) error {
	if !h.active {
		return nil
	}
	var err error
	j.ServerNeeds(h.c, k, gpus, func(s, cpus int, mem float64) bool {
		h.cpus[s] += cpus
		h.mem[s] += mem
		sp := h.c.Server(s)
		if sp.CPUs > 0 && h.cpus[s] > sp.CPUs {
			err = fmt.Errorf("%w: job %q takes server %s past its %d CPU cores", ErrHostResources, j.ID, sp.ID, sp.CPUs)
		} else if sp.HostMemory > 0 && h.mem[s] > sp.HostMemory*(1+1e-12) {
			err = fmt.Errorf("%w: job %q takes server %s past its %.4g GB of host memory", ErrHostResources, j.ID, sp.ID, sp.HostMemory/1e9)
		}
		return err == nil
	})
	return err
}
