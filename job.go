package gpusched

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// JobID identifies a job. Hosts choose it: a pod UID, a Slurm job id, a trace row number.
type JobID string

// Features describe a training job for iteration prediction. Every field is optional: a
// predictor uses what is set and treats the rest as unknown. The GPU count and parallel plan are
// taken from the Job itself.
type Features struct {
	// Family is the model family, e.g. "resnet50" or "gpt3-13b".
	Family string `json:"family,omitempty"`
	// Dataset names the training data, e.g. "imagenet".
	Dataset string `json:"dataset,omitempty"`
	// BatchSize is the global batch size in samples (0: unknown).
	BatchSize int `json:"batch_size,omitempty"`
	// LearningRate is the base learning rate (0: unknown).
	LearningRate float64 `json:"learning_rate,omitempty"`
	// Optimizer names the optimizer, e.g. "adamw".
	Optimizer string `json:"optimizer,omitempty"`
	// User is the submitting user or team.
	User string `json:"user,omitempty"`
	// Group is the recurrence group: jobs re-submitted with small changes share it.
	Group string `json:"group,omitempty"`
	// SubmitHour is the hour of day of submission in [0, 24), or negative when unknown.
	SubmitHour float64 `json:"submit_hour,omitempty"`
	// Numeric holds further numeric features by name.
	Numeric map[string]float64 `json:"numeric,omitempty"`
	// Categorical holds further categorical features by name.
	Categorical map[string]string `json:"categorical,omitempty"`
}

// Job is a training job as a scheduler sees it: what it needs and what is known about it
// before it runs. It never holds the job's true length; hosts keep that to themselves.
type Job struct {
	// ID is unique among the jobs a host hands to one scheduler.
	ID JobID `json:"id"`
	// Arrival is the submission time in seconds (host clock).
	Arrival float64 `json:"arrival"`
	// GPUs is the number of GPUs the job needs, one worker per GPU, all at once (a gang).
	GPUs int `json:"gpus"`
	// Model is the network the job trains, or nil for a job known only by its GPU demand and
	// StepTime. With a model, ModelCost derives the time per iteration from the model, the plan
	// and the placement.
	Model *graph.Model `json:"model,omitempty"`
	// Plan is how the job spreads its model over its GPUs (data x tensor x pipeline degrees,
	// micro-batches); with a model, Plan.Workers() must equal GPUs. Ignored without a model.
	Plan graph.Plan `json:"plan,omitzero"`
	// StepTime is the job's time per iteration in seconds when it has no model: a
	// placement-independent job. Ignored when the job has a model.
	StepTime float64 `json:"step_time,omitempty"`
	// Weight is the job's importance for weighted objectives (weighted completion time); 0
	// means 1. Schedulers that order by a weighted objective (A-SRPT, SJF, SRPT-oracle) divide
	// a job's size by it.
	Weight float64 `json:"weight,omitempty"`
	// GPUType, when set, restricts the job to GPUs of this type or model
	// (topology.GPUSpec.Is: "a100", "H100-SXM5-80GB"; case is ignored).
	GPUType string `json:"gpu_type,omitempty"`
	// MinGPUMemory, when positive, restricts the job to GPUs with at least this much device
	// memory, in bytes.
	MinGPUMemory float64 `json:"min_gpu_memory,omitempty"`
	// Features describe the job for iteration prediction.
	Features Features `json:"features"`
	// CPUs is the number of CPU cores each worker needs on its server under the job's own
	// plan (0: none accounted). Decisions keep each server's jobs within its
	// topology.ServerSpec.CPUs.
	CPUs int `json:"cpus,omitempty"`
	// HostMemory is the host memory each worker needs on its server under the job's own plan,
	// in bytes (0: none accounted).
	HostMemory float64 `json:"host_memory,omitempty"`
	// Plans, when set, makes the job reconfigurable: besides its own Plan (with GPUs, CPUs and
	// HostMemory), the scheduler may run it under any of these plans, with their GPU counts
	// and host needs, and change its choice (a restart) while it runs (Assignment.PlanChoice).
	// Needs a model. Empty: the job runs under its own plan only, as before.
	Plans []PlanOption `json:"plans,omitempty"`
	// Guaranteed marks a job with a performance guarantee (Rubick's SLA jobs): once started,
	// it should train at least as fast as its own plan on its own GPU count would. Schedulers
	// that know of guarantees (policy rubick) serve such jobs first; others ignore it.
	Guaranteed bool `json:"guaranteed,omitempty"`
	// PS, when set, makes the job a parameter-server job (see ps.Spec; NewPSJob builds one):
	// its plans are pure data parallelism, one GPU per worker, with PS shards on the workers'
	// servers. nil: a ring all-reduce job, as before.
	PS *ps.Spec `json:"ps,omitempty"`
}

// Errors that Job.Validate, Admit and Decision.Validate wrap. Use errors.Is to tell them apart;
// the messages name the job and GPU.
var (
	// ErrInvalidJob reports a job that cannot be scheduled as described. ErrNoCost, ErrTooLarge
	// and ErrDoesNotFit are its more precise forms: errors.Is(err, ErrInvalidJob) holds for
	// them too.
	ErrInvalidJob = errors.New("gpusched: invalid job")
	// ErrNoCost reports a job whose time per iteration nobody can tell: no model and no step
	// time, or a cost model that fails for it.
	ErrNoCost = fmt.Errorf("%w: no cost", ErrInvalidJob)
	// ErrTooLarge reports a job that needs more GPUs than the cluster has of the kind it may use
	// (its GPUType and MinGPUMemory).
	ErrTooLarge = fmt.Errorf("%w: larger than the cluster", ErrInvalidJob)
	// ErrDoesNotFit reports a job whose plan does not fit the memory of any GPU it may use.
	ErrDoesNotFit = fmt.Errorf("%w: does not fit in GPU memory", ErrInvalidJob)
	// ErrIneligibleGPU reports a placement on a GPU the job may not use (GPUType,
	// MinGPUMemory).
	ErrIneligibleGPU = errors.New("gpusched: GPU not eligible for the job")
	// ErrUnavailableGPU reports a placement on a GPU the view marks unavailable.
	ErrUnavailableGPU = errors.New("gpusched: GPU unavailable")
	// ErrUnknownJob reports a decision that names a job the view does not hold.
	ErrUnknownJob = errors.New("gpusched: unknown job")
	// ErrDuplicateJob reports a decision that lists a job twice.
	ErrDuplicateJob = errors.New("gpusched: job listed twice")
	// ErrGPUCount reports a placement whose GPU count differs from the job's demand.
	ErrGPUCount = errors.New("gpusched: wrong GPU count")
	// ErrNoSuchGPU reports a placement on a GPU the cluster does not have.
	ErrNoSuchGPU = errors.New("gpusched: no such GPU")
	// ErrDoubleBooked reports a GPU given to two workers.
	ErrDoubleBooked = errors.New("gpusched: GPU double-booked")
	// ErrInvalidView reports a view that is inconsistent (a host error).
	ErrInvalidView = errors.New("gpusched: invalid view")
)

// Validate checks that the job is well formed and could ever run on the cluster: a non-empty
// id, a finite non-negative arrival, a GPU demand between 1 and the cluster's size, a finite
// non-negative step time, weight and minimum GPU memory, a model or a step time (ErrNoCost),
// finite numeric features (Features.LearningRate, SubmitHour, Numeric), and, for a job with a model, a valid plan with one worker per GPU. It does not look at the
// job's constraints or cost on c: Admit does. For a reconfigurable job it also checks every
// plan it allows (a valid plan of the job's model and global batch, at most the cluster's GPUs,
// non-negative host needs).
func (j *Job) Validate(c *topology.Cluster) error {
	switch {
	case j.ID == "":
		return fmt.Errorf("%w: empty id", ErrInvalidJob)
	case !(j.Arrival >= 0) || math.IsInf(j.Arrival, 0):
		return fmt.Errorf("%w: job %q: arrival %v must be a finite time >= 0", ErrInvalidJob, j.ID, j.Arrival)
	case j.GPUs < 1:
		return fmt.Errorf("%w: job %q: GPU demand %d must be at least 1", ErrInvalidJob, j.ID, j.GPUs)
	case c != nil && j.GPUs > c.NumGPUs():
		return fmt.Errorf("%w: job %q needs %d GPUs but cluster %q has %d",
			ErrTooLarge, j.ID, j.GPUs, c.Name(), c.NumGPUs())
	case !(j.StepTime >= 0) || math.IsInf(j.StepTime, 0):
		return fmt.Errorf("%w: job %q: step time %v must be finite and >= 0", ErrInvalidJob, j.ID, j.StepTime)
	case !(j.Weight >= 0) || math.IsInf(j.Weight, 0):
		return fmt.Errorf("%w: job %q: weight %v must be finite and >= 0", ErrInvalidJob, j.ID, j.Weight)
	case !(j.MinGPUMemory >= 0) || math.IsInf(j.MinGPUMemory, 0):
		return fmt.Errorf("%w: job %q: minimum GPU memory %v must be finite and >= 0", ErrInvalidJob, j.ID, j.MinGPUMemory)
	case j.Model == nil && j.StepTime == 0:
		return fmt.Errorf("%w: job %q has neither a model nor a step time", ErrNoCost, j.ID)
	}
	if err := j.Features.validate(); err != nil {
		return fmt.Errorf("%w: job %q: %w", ErrInvalidJob, j.ID, err)
	}
	if j.Model != nil {
		if w := j.Plan.Workers(); w != j.GPUs {
			return fmt.Errorf("%w: job %q: plan %v has %d workers but the job needs %d GPUs", ErrInvalidJob, j.ID, j.Plan, w, j.GPUs)
		}
		if err := j.Plan.Validate(j.Model); err != nil {
			return fmt.Errorf("%w: job %q: %w", ErrInvalidJob, j.ID, err)
		}
	}
	return j.validatePlans(c)
}

// Eligible reports whether the job may run on a GPU of this kind: its GPUType names the GPU's
// type or model (or is empty) and the GPU has at least MinGPUMemory bytes.
func (j *Job) Eligible(g topology.GPUSpec) bool {
	return g.Is(j.GPUType) && g.MemoryBytes >= j.MinGPUMemory
}

// Constrained reports whether the job restricts the GPUs it may use (GPUType or MinGPUMemory).
func (j *Job) Constrained() bool { return j.GPUType != "" || j.MinGPUMemory > 0 }

// EligibleIn returns the GPUs of set that the job may use on cluster c: those of its GPUType
// and MinGPUMemory and, for a job with a model on a cluster with several kinds of GPU, those
// whose memory its plan fits (graph.Compiled.CheckMemory; a job whose model and plan do not
// compile is not filtered: its cost model reports it). It returns set itself (not a copy) when
// nothing is filtered out, else a new set. On a cluster of one GPU kind it costs one pass over
// the constraints; otherwise one compilation of the job's plan.
func (j *Job) EligibleIn(c *topology.Cluster, set topology.GPUSet) topology.GPUSet {
	var comp *graph.Compiled
	if j.Model != nil && !c.UniformGPUs() {
		comp, _ = graph.Compile(j.Model, j.Plan)
	}
	if !j.Constrained() && comp == nil {
		return set
	}
	var (
		out    topology.GPUSet
		copied bool
		specs  []topology.GPUSpec // kinds checked so far,
		ok     []bool             // and whether the job may use them
	)
	for s := range c.NumServers() {
		spec := c.Server(s).GPU
		k := slices.Index(specs, spec)
		if k < 0 {
			specs = append(specs, spec)
			ok = append(ok, j.Eligible(spec) && (comp == nil || comp.CheckMemory(spec) == nil))
			k = len(specs) - 1
		}
		if ok[k] {
			continue
		}
		if !copied {
			out, copied = set.Clone(), true
		}
		first, n := c.GPUsOf(s)
		for g := first; g < first+topology.GPUID(n); g++ {
			out.Remove(g)
		}
	}
	if !copied {
		return set
	}
	return out
}

// EffectiveWeight returns the job's weight, 1 when unset.
func (j *Job) EffectiveWeight() float64 {
	if j.Weight > 0 {
		return j.Weight
	}
	return 1
}

// validate refuses numeric features that are NaN or infinite: a predictor cannot learn from
// them, and a NaN compares false with everything, so it would split a forest's trees
// arbitrarily. (An unknown value is left unset: 0, or a negative SubmitHour.)
func (f *Features) validate() error {
	if math.IsNaN(f.LearningRate) || math.IsInf(f.LearningRate, 0) {
		return fmt.Errorf("feature learning rate %v is not finite", f.LearningRate)
	}
	if math.IsNaN(f.SubmitHour) || math.IsInf(f.SubmitHour, 0) {
		return fmt.Errorf("feature submit hour %v is not finite", f.SubmitHour)
	}
	bad, found := "", false
	for k, v := range f.Numeric {
		if (math.IsNaN(v) || math.IsInf(v, 0)) && (!found || k < bad) {
			bad, found = k, true // the first by name, so that the error is deterministic
		}
	}
	if found {
		return fmt.Errorf("numeric feature %q is %v, not finite", bad, f.Numeric[bad])
	}
	return nil
}
