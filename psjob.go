package gpusched

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// PSSpec is package ps's Spec, the spec that makes a job a parameter-server job (Job.PS).
//
// Deprecated: use ps.Spec (the same type).
type PSSpec = ps.Spec

// ErrInvalidPS reports a parameter-server job whose bounds admit no allocation: zero or
// inverted worker or PS bounds, a shard count outside them, a plan that is not pure data
// parallelism, a shard larger than any server's cores. errors.Is(err, ErrInvalidJob) and
// errors.Is(err, ps.ErrInvalidJob) hold for it too.
//
// Deprecated: use ps.ErrInvalidJob: every error that wraps ErrInvalidPS wraps it too.
var ErrInvalidPS = errInvalidPS

// errInvalidPS is the error PS validation wraps: ErrInvalidJob and ps.ErrInvalidJob at once,
// with the message ErrInvalidPS always had.
var errInvalidPS error = &sentinels{msg: ErrInvalidJob.Error() + ": parameter-server job", errs: []error{ErrInvalidJob, ps.ErrInvalidJob}}

// sentinels is an error that is several sentinel errors at once, for errors.Is.
type sentinels struct {
	msg  string
	errs []error
}

func (e *sentinels) Error() string   { return e.msg }
func (e *sentinels) Unwrap() []error { return e.errs }

// IsPS reports whether the job is a parameter-server job (it has a PSSpec).
func (j *Job) IsPS() bool { return j.PS != nil }

// validatePS checks a PS job's spec against its plans and the cluster (see Job.Validate).
func (j *Job) validatePS(c *topology.Cluster) error {
	s := j.PS
	switch {
	case s.MinWorkers < 1 || s.MaxWorkers < s.MinWorkers:
		return fmt.Errorf("%w: job %q: worker bounds [%d, %d] admit no count >= 1", errInvalidPS, j.ID, s.MinWorkers, s.MaxWorkers)
	case s.MinPS < 1 || s.MaxPS < s.MinPS:
		return fmt.Errorf("%w: job %q: PS bounds [%d, %d] admit no count >= 1", errInvalidPS, j.ID, s.MinPS, s.MaxPS)
	case s.NumPS != 0 && (s.NumPS < s.MinPS || s.NumPS > s.MaxPS):
		return fmt.Errorf("%w: job %q: PS count %d outside [%d, %d]", errInvalidPS, j.ID, s.NumPS, s.MinPS, s.MaxPS)
	case s.CPUs < 0:
		return fmt.Errorf("%w: job %q: PS CPUs %d must be >= 0", errInvalidPS, j.ID, s.CPUs)
	case !(s.HostMemory >= 0) || math.IsInf(s.HostMemory, 0):
		return fmt.Errorf("%w: job %q: PS host memory %v must be finite and >= 0", errInvalidPS, j.ID, s.HostMemory)
	case j.Model == nil:
		return fmt.Errorf("%w: job %q has no model (a PS job's traffic comes from its parameters)", errInvalidPS, j.ID)
	case c != nil && s.MinWorkers > c.NumGPUs():
		return fmt.Errorf("%w: job %q needs at least %d workers but cluster %q has %d GPUs", ErrTooLarge, j.ID, s.MinWorkers, c.Name(), c.NumGPUs())
	}
	if c != nil && c.NumServers() > 0 && s.CPUs > 0 {
		best := 0
		for i := range c.NumServers() {
			if sp := c.Server(i); sp.CPUs == 0 {
				best = math.MaxInt
			} else {
				best = max(best, sp.CPUs)
			}
		}
		if s.CPUs+j.CPUs > best {
			return fmt.Errorf("%w: job %q: a worker (%d cores) beside a PS shard (%d cores) fits no server (largest: %d cores)", errInvalidPS, j.ID, j.CPUs, s.CPUs, best)
		}
	}
	for k := range j.Choices() {
		o, _ := j.Option(k)
		np := o.PS
		if k == 0 {
			np = s.NumPS
		}
		w := j.GPUsFor(k)
		switch {
		case o.Plan.TP > 1 || o.Plan.PP > 1:
			return fmt.Errorf("%w: job %q plan choice %d (%v) is not pure data parallelism", errInvalidPS, j.ID, k, o.Plan)
		case w < s.MinWorkers || w > s.MaxWorkers:
			return fmt.Errorf("%w: job %q plan choice %d has %d workers outside [%d, %d]", errInvalidPS, j.ID, k, w, s.MinWorkers, s.MaxWorkers)
		case np != 0 && (np < s.MinPS || np > s.MaxPS):
			return fmt.Errorf("%w: job %q plan choice %d has %d PS shards outside [%d, %d]", errInvalidPS, j.ID, k, np, s.MinPS, s.MaxPS)
		}
	}
	return nil
}

// PSPlacement returns the server index of each PS shard of a PS job whose workers run on gpus
// with numPS shards: ps.Placement.
//
// Deprecated: use ps.Placement.
func PSPlacement(c *topology.Cluster, gpus []topology.GPUID, numPS int) []int {
	return ps.Placement(c, gpus, numPS)
}

// NumPSOf returns the PS shard count of a PS job under plan choice k (0 for the baseline of
// one shard per worker server), or 0 for a job that is not a PS job.
func (j *Job) NumPSOf(k int) int {
	if j.PS == nil {
		return 0
	}
	if k == 0 {
		return j.PS.NumPS
	}
	o, ok := j.Option(k)
	if !ok {
		return 0
	}
	return o.PS
}

// ServerNeeds calls add once for every server on which the job, placed on gpus under plan
// choice k, takes CPU cores or host memory: its workers' (the choice's CPUs and HostMemory per
// worker) and, for a PS job, its PS shards' (PSSpec.CPUs and HostMemory per shard, on the
// servers ps.Placement gives). It stops and returns false as soon as add does. Decisions are
// validated against it, and schedulers may use it to account servers' free cores.
func (j *Job) ServerNeeds(c *topology.Cluster, k int, gpus []topology.GPUID, add func(server, cpus int, mem float64) bool) bool {
	o, _ := j.Option(k)
	if o.CPUs != 0 || o.HostMemory != 0 {
		for _, g := range gpus {
			if !add(c.ServerOf(g), o.CPUs, o.HostMemory) {
				return false
			}
		}
	}
	if j.PS == nil || (j.PS.CPUs == 0 && j.PS.HostMemory == 0) {
		return true
	}
	np := j.NumPSOf(k)
	switch {
	case len(gpus) == 0:
	case np > 0: // shard i beside worker i mod len(gpus), as ps.Placement says, without a slice
		for i := range np {
			if !add(c.ServerOf(gpus[i%len(gpus)]), j.PS.CPUs, j.PS.HostMemory) {
				return false
			}
		}
	case len(gpus) <= 64: // one shard per worker server, found without allocating
		for i, g := range gpus {
			s := c.ServerOf(g)
			seen := false
			for _, h := range gpus[:i] {
				if c.ServerOf(h) == s {
					seen = true
					break
				}
			}
			if !seen && !add(s, j.PS.CPUs, j.PS.HostMemory) {
				return false
			}
		}
	default:
		for _, s := range ps.Placement(c, gpus, 0) {
			if !add(s, j.PS.CPUs, j.PS.HostMemory) {
				return false
			}
		}
	}
	return true
}

// PSConfig is one allocation shape a PS job may run with: ps.Config.
//
// Deprecated: use ps.Config (the same type).
type PSConfig = ps.Config

// PSJobSpec describes a PS job for NewPSJob.
type PSJobSpec struct {
	// ID, Arrival, Model, Features and Weight are the Job's.
	ID       JobID
	Arrival  float64
	Model    *graph.Model
	Features Features
	Weight   float64
	// GlobalBatch is the samples per iteration, split evenly over the workers (0: the model's
	// micro-batch times MaxWorkers).
	GlobalBatch int
	// PS is the spec; its NumPS is the baseline's (usually 0: one shard per worker server).
	PS ps.Spec
	// Workers is the worker count of the job's own plan (choice 0), in the bounds; 0 means
	// PS.MaxWorkers.
	Workers int
	// WorkerCPUs and WorkerMemory are each worker's host needs (data loading, the host side
	// of its gradient traffic).
	WorkerCPUs   int
	WorkerMemory float64
	// Configs lists the shapes the scheduler may choose besides choice 0 (nil: ps.Configs of
	// the bounds).
	Configs []ps.Config
}

// PSConfigs returns the shapes a PS scheduler chooses from: ps.Configs.
//
// Deprecated: use ps.Configs.
func PSConfigs(s PSSpec) []PSConfig { return ps.Configs(s) }

// NewPSJob builds a PS job: its own plan (choice 0) is data parallelism over spec.Workers
// workers with spec.PS.NumPS shards, and its Plans offer every shape of spec.Configs, so that a
// PS-aware scheduler chooses worker and shard counts by the assignment's PlanChoice while other
// schedulers run choice 0. The job is validated (without a cluster).
func NewPSJob(spec PSJobSpec) (*Job, error) {
	if spec.Model == nil {
		return nil, fmt.Errorf("%w: job %q has no model", errInvalidPS, spec.ID)
	}
	w0 := spec.Workers
	if w0 == 0 {
		w0 = spec.PS.MaxWorkers
	}
	cfgs := spec.Configs
	sp := spec.PS
	if cfgs == nil && sp.MinWorkers >= 1 && sp.MaxWorkers >= sp.MinWorkers && sp.MinPS >= 1 && sp.MaxPS >= sp.MinPS {
		cfgs = ps.Configs(sp)
	}
	gb := spec.GlobalBatch
	if gb == 0 {
		l := w0
		for _, cf := range cfgs {
			l = lcm(l, max(cf.Workers, 1))
		}
		gb = max(1, spec.Model.MicroBatch()) * l
	}
	plan := func(w int) graph.Plan {
		return graph.Plan{DP: w, TP: 1, PP: 1, GlobalBatch: gb, MicroBatches: 1}
	}
	j := &Job{
		ID: spec.ID, Arrival: spec.Arrival, Model: spec.Model, Features: spec.Features, Weight: spec.Weight,
		GPUs: w0, Plan: plan(w0), CPUs: spec.WorkerCPUs, HostMemory: spec.WorkerMemory, PS: &sp,
	}
	for _, cf := range cfgs {
		j.Plans = append(j.Plans, PlanOption{Plan: plan(cf.Workers), CPUs: spec.WorkerCPUs, HostMemory: spec.WorkerMemory, PS: cf.PS})
	}
	if err := j.Validate(nil); err != nil {
		return nil, err
	}
	return j, nil
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	if x == 0 || a/x > math.MaxInt32/max(b, 1) {
		return max(a, b)
	}
	return a / x * b
}
