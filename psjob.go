package gpusched

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// PSSpec makes a job a parameter-server (PS) job: its workers (one GPU each, pure data
// parallelism) train replicas of the model, the parameters are sharded over PS tasks, and every
// iteration each worker pushes its gradient to, and pulls fresh parameters from, every shard.
// The scheduler may choose the number of workers and of PS shards within the bounds, through the
// job's plan choices (Job.Plans, each a data-parallel plan of the worker count with
// PlanOption.PS shards; NewPSJob builds them). A PS shard runs on a server beside one of the
// job's workers (PSPlacement says which) and takes CPUs cores and HostMemory bytes there; it
// uses no GPU. Package ps holds the per-iteration time of a placed PS job.
type PSSpec struct {
	// MinWorkers and MaxWorkers bound the worker count (1 <= MinWorkers <= MaxWorkers).
	MinWorkers int `json:"min_workers"`
	MaxWorkers int `json:"max_workers"`
	// MinPS and MaxPS bound the PS shard count (1 <= MinPS <= MaxPS).
	MinPS int `json:"min_ps"`
	MaxPS int `json:"max_ps"`
	// NumPS is the shard count under the job's own plan (choice 0): 0 means one shard per server
	// the workers occupy (the baseline placement of schedulers that do not know PS jobs), else a
	// count in [MinPS, MaxPS]. Job.WithPlan sets it to the chosen option's PlanOption.PS.
	NumPS int `json:"num_ps,omitempty"`
	// CPUs is the number of CPU cores each PS shard takes on its server (aggregation and update
	// of its slice of the parameters).
	CPUs int `json:"cpus"`
	// HostMemory is the host memory each PS shard takes on its server, in bytes.
	HostMemory float64 `json:"host_memory,omitempty"`
}

// ErrInvalidPS reports a parameter-server job whose bounds admit no allocation: zero or
// inverted worker or PS bounds, a shard count outside them, a plan that is not pure data
// parallelism, more workers than the cluster has GPUs, a shard larger than any server's cores.
// errors.Is(err, ErrInvalidJob) holds for it too.
var ErrInvalidPS = fmt.Errorf("%w: parameter-server job", ErrInvalidJob)

// IsPS reports whether the job is a parameter-server job (it has a PSSpec).
func (j *Job) IsPS() bool { return j.PS != nil }

// validatePS checks a PS job's spec against its plans and the cluster (see Job.Validate).
func (j *Job) validatePS(c *topology.Cluster) error {
	s := j.PS
	switch {
	case s.MinWorkers < 1 || s.MaxWorkers < s.MinWorkers:
		return fmt.Errorf("%w: job %q: worker bounds [%d, %d] admit no count >= 1", ErrInvalidPS, j.ID, s.MinWorkers, s.MaxWorkers)
	case s.MinPS < 1 || s.MaxPS < s.MinPS:
		return fmt.Errorf("%w: job %q: PS bounds [%d, %d] admit no count >= 1", ErrInvalidPS, j.ID, s.MinPS, s.MaxPS)
	case s.NumPS != 0 && (s.NumPS < s.MinPS || s.NumPS > s.MaxPS):
		return fmt.Errorf("%w: job %q: PS count %d outside [%d, %d]", ErrInvalidPS, j.ID, s.NumPS, s.MinPS, s.MaxPS)
	case s.CPUs < 0:
		return fmt.Errorf("%w: job %q: PS CPUs %d must be >= 0", ErrInvalidPS, j.ID, s.CPUs)
	case !(s.HostMemory >= 0) || math.IsInf(s.HostMemory, 0):
		return fmt.Errorf("%w: job %q: PS host memory %v must be finite and >= 0", ErrInvalidPS, j.ID, s.HostMemory)
	case j.Model == nil:
		return fmt.Errorf("%w: job %q has no model (a PS job's traffic comes from its parameters)", ErrInvalidPS, j.ID)
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
			return fmt.Errorf("%w: job %q: a worker (%d cores) beside a PS shard (%d cores) fits no server (largest: %d cores)", ErrInvalidPS, j.ID, j.CPUs, s.CPUs, best)
		}
	}
	for k := range j.Choices() {
		o, _ := j.Option(k)
		ps := o.PS
		if k == 0 {
			ps = s.NumPS
		}
		w := j.GPUsFor(k)
		switch {
		case o.Plan.TP > 1 || o.Plan.PP > 1:
			return fmt.Errorf("%w: job %q plan choice %d (%v) is not pure data parallelism", ErrInvalidPS, j.ID, k, o.Plan)
		case w < s.MinWorkers || w > s.MaxWorkers:
			return fmt.Errorf("%w: job %q plan choice %d has %d workers outside [%d, %d]", ErrInvalidPS, j.ID, k, w, s.MinWorkers, s.MaxWorkers)
		case ps != 0 && (ps < s.MinPS || ps > s.MaxPS):
			return fmt.Errorf("%w: job %q plan choice %d has %d PS shards outside [%d, %d]", ErrInvalidPS, j.ID, k, ps, s.MinPS, s.MaxPS)
		}
	}
	return nil
}

// PSPlacement returns the server index of each PS shard of a PS job whose workers run on gpus
// (worker i on gpus[i]) with numPS shards. The rule is part of the job model: with numPS = 0,
// one shard per server the workers occupy, in the order the workers first reach each server
// (the baseline placement); with numPS > 0, shard k runs beside worker k mod len(gpus). A
// scheduler chooses how many shards each server holds by the order of the workers: the first
// numPS workers host one shard each when numPS <= len(gpus). It returns nil for no GPUs.
func PSPlacement(c *topology.Cluster, gpus []topology.GPUID, numPS int) []int {
	if len(gpus) == 0 {
		return nil
	}
	if numPS <= 0 {
		var out []int
		seen := make(map[int]struct{}, 4)
		for _, g := range gpus {
			s := c.ServerOf(g)
			if _, ok := seen[s]; !ok {
				seen[s] = struct{}{}
				out = append(out, s)
			}
		}
		return out
	}
	out := make([]int, numPS)
	for k := range out {
		out[k] = c.ServerOf(gpus[k%len(gpus)])
	}
	return out
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
// servers PSPlacement gives). It stops and returns false as soon as add does. Decisions are
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
	case np > 0: // shard i beside worker i mod len(gpus), as PSPlacement says, without a slice
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
		for _, s := range PSPlacement(c, gpus, 0) {
			if !add(s, j.PS.CPUs, j.PS.HostMemory) {
				return false
			}
		}
	}
	return true
}

// PSConfig is one allocation shape a PS job may run with: a worker count and a PS shard count.
type PSConfig struct {
	Workers int `json:"workers"`
	PS      int `json:"ps"`
}

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
	PS PSSpec
	// Workers is the worker count of the job's own plan (choice 0), in the bounds; 0 means
	// PS.MaxWorkers.
	Workers int
	// WorkerCPUs and WorkerMemory are each worker's host needs (data loading, the host side
	// of its gradient traffic).
	WorkerCPUs   int
	WorkerMemory float64
	// Configs lists the shapes the scheduler may choose besides choice 0 (nil: PSConfigs of
	// the bounds).
	Configs []PSConfig
}

// PSConfigs returns the shapes a PS scheduler chooses from: worker counts MinWorkers,
// MaxWorkers and the powers of two between them, each with PS counts MinPS, MaxPS and the
// powers of two between, no more shards than workers unless MinPS forces it. Restricting
// counts to powers of two keeps a job's plan list short (a 10,000-job queue holds them all);
// it is a choice of this library, not of the papers.
func PSConfigs(s PSSpec) []PSConfig {
	pow := func(lo, hi int) []int {
		out := []int{lo}
		for v := 1; v < hi; v *= 2 {
			if v > lo {
				out = append(out, v)
			}
		}
		if hi > lo {
			out = append(out, hi)
		}
		return out
	}
	var out []PSConfig
	for _, w := range pow(s.MinWorkers, s.MaxWorkers) {
		for _, p := range pow(s.MinPS, s.MaxPS) {
			if p > w && p > s.MinPS {
				continue
			}
			out = append(out, PSConfig{Workers: w, PS: p})
		}
	}
	return out
}

// NewPSJob builds a PS job: its own plan (choice 0) is data parallelism over spec.Workers
// workers with spec.PS.NumPS shards, and its Plans offer every shape of spec.Configs, so that a
// PS-aware scheduler chooses worker and shard counts by the assignment's PlanChoice while other
// schedulers run choice 0. The job is validated (without a cluster).
func NewPSJob(spec PSJobSpec) (*Job, error) {
	if spec.Model == nil {
		return nil, fmt.Errorf("%w: job %q has no model", ErrInvalidPS, spec.ID)
	}
	w0 := spec.Workers
	if w0 == 0 {
		w0 = spec.PS.MaxWorkers
	}
	cfgs := spec.Configs
	ps := spec.PS
	if cfgs == nil && ps.MinWorkers >= 1 && ps.MaxWorkers >= ps.MinWorkers && ps.MinPS >= 1 && ps.MaxPS >= ps.MinPS {
		cfgs = PSConfigs(ps)
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
		GPUs: w0, Plan: plan(w0), CPUs: spec.WorkerCPUs, HostMemory: spec.WorkerMemory, PS: &ps,
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
