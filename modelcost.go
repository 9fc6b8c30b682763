package gpusched

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// ModelCost is the CostModel of jobs with a model: the per-iteration time that package graph
// derives from the job's model, plan and placement (compute per pipeline stage, bubble, tensor-,
// pipeline- and data-parallel communication over the placement's actual links, shared with other
// jobs as the LinkLoad says, the optimizer step, overheads), and the bytes per iteration of its
// worker graph that cross servers. The constants are those of the GPU type each job is placed on
// (graph.HardwareConstants, fitted on measurements of that type), unless NewModelCost fixes one
// set or NewCalibratedCost gives fitted ones (package perf, `gpusched perf fit`). A job without
// a model falls back to FixedCost (its StepTime). A job whose plan does not fit the memory of the
// GPUs it is placed on is an error wrapping graph.ErrOutOfMemory.
//
// ModelCost compiles each job's (model, plan) once and keeps it, keyed by the JobID (and
// compiled again if a job of that id comes with another model or plan); Forget drops it when
// the job leaves. It is safe for concurrent use. The zero value is DefaultCost's model.
type ModelCost struct {
	eff   graph.Efficiency
	cal   *graph.Calibration
	mu    sync.Mutex
	cache map[JobID]*compiledJob
	// scratch is the working space every call shares (graph.Options.Scratch).
	scratch graph.Scratch
}

type compiledJob struct {
	job   *Job // the job it was compiled for (a fast check that nothing changed)
	model *graph.Model
	plan  graph.Plan
	c     *graph.Compiled
	edges []graph.WorkerEdge
	err   error
	// shards caches a PS job's shard sizes by shard count (ps.Shards); guarded by the cost
	// model's mutex.
	shards map[int][]float64
}

// NewModelCost returns a ModelCost that times every job with the given constants, whatever
// its GPUs (the zero value means the constants of the GPU type each job is placed on, as
// DefaultCost does; graph.DefaultEfficiency() gives the uncalibrated textbook figures).
func NewModelCost(eff graph.Efficiency) *ModelCost {
	return &ModelCost{eff: eff, cache: make(map[JobID]*compiledJob)}
}

// NewCalibratedCost returns a ModelCost that times each job with a calibration's constants for
// the GPU type it is placed on (the shipped ones for types it lacks) and the factors it holds
// for the job's model (graph.Calibration; package perf fits one, `gpusched perf fit` writes
// one). A nil calibration is DefaultCost.
func NewCalibratedCost(cal *graph.Calibration) *ModelCost {
	return &ModelCost{cal: cal, cache: make(map[JobID]*compiledJob)}
}

// DefaultCost returns the cost model hosts use unless told otherwise: ModelCost with the
// shipped constants of the GPU type each job is placed on (graph.HardwareConstants), which is
// FixedCost for jobs without a model.
func DefaultCost() *ModelCost { return NewModelCost(graph.Efficiency{}) }

func (m *ModelCost) compiled(j *Job) *compiledJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cache == nil {
		m.cache = make(map[JobID]*compiledJob)
	}
	if cj, ok := m.cache[j.ID]; ok {
		if cj.job == j {
			return cj
		}
		if cj.model == j.Model && reflect.DeepEqual(cj.plan, j.Plan) {
			cj.job = j // the same job, described by another *Job (a new view, a restart)
			return cj
		}
	}
	cj := &compiledJob{job: j, model: j.Model, plan: j.Plan}
	cj.c, cj.err = graph.Compile(j.Model, j.Plan)
	if cj.err == nil {
		cj.edges = cj.c.WorkerGraph().Edges
	}
	m.cache[j.ID] = cj
	return cj
}

// cached returns the number of jobs whose compiled form the cost model holds.
func (m *ModelCost) cached() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cache)
}

// Forget drops the compiled form of a job that has left, to bound memory in long runs.
func (m *ModelCost) Forget(j *Job) {
	m.mu.Lock()
	delete(m.cache, j.ID)
	m.mu.Unlock()
}

// StepCost returns the job's time per iteration and cross-server bytes per iteration on gpus.
func (m *ModelCost) StepCost(j *Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (StepCost, error) {
	if j.Model == nil {
		return FixedCost{}.StepCost(j, c, gpus, load)
	}
	cj := m.compiled(j)
	if cj.err != nil {
		return StepCost{}, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, j.ID, cj.err)
	}
	if len(gpus) > 0 {
		// Every worker's GPU must hold it: one check per kind of GPU in the placement.
		last := -1
		for i, g := range gpus {
			if err := c.Check(g); err != nil {
				return StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
			}
			if i > 0 && c.UniformGPUs() {
				continue // the other checks are the bounds above
			}
			s := c.ServerOf(g)
			if s == last || (last >= 0 && c.Server(s).GPU == c.Server(last).GPU) {
				continue
			}
			last = s
			if err := cj.c.CheckMemory(c.GPU(g)); err != nil {
				return StepCost{}, fmt.Errorf("job %q on %s: %w", j.ID, c.GPUName(g), err)
			}
		}
	}
	if j.PS != nil {
		return m.psStepCost(j, cj, c, gpus, load)
	}
	b, err := cj.c.IterationTime(c, gpus, graph.Options{Efficiency: m.eff, Calibration: m.cal, Load: load, Scratch: &m.scratch})
	if err != nil {
		return StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
	}
	cross := 0.0
	for _, e := range cj.edges {
		if c.ServerOf(gpus[e.U]) != c.ServerOf(gpus[e.V]) {
			cross += e.Bytes
		}
	}
	return StepCost{Time: b.Total, CrossServerBytes: cross}, nil
}

// psStepCost times a parameter-server job (Job.PS): each worker's forward and backward pass of
// its share of the global batch as package graph times it (compute and per-iteration overhead;
// the optimizer step runs on the PS shards instead, and the graph's data-parallel all-reduce is
// replaced by the exchange with the shards), then the push, the shards' aggregation and the
// pull as ps.Exchange gives them for the shards' placement (ps.Placement) and the link loads.
// The three phases do not overlap (bulk-synchronous PS without layer-wise pipelining: a stated
// simplification).
func (m *ModelCost) psStepCost(j *Job, cj *compiledJob, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (StepCost, error) {
	b, err := cj.c.IterationTime(c, gpus, graph.Options{Efficiency: m.eff, Calibration: m.cal, Scratch: &m.scratch})
	if err != nil {
		return StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
	}
	servers := ps.Placement(c, gpus, j.PS.NumPS)
	p := len(servers)
	m.mu.Lock()
	sh, ok := cj.shards[p]
	m.mu.Unlock()
	if !ok {
		sh, err = ps.Shards(j.Model, p)
		if err != nil {
			return StepCost{}, fmt.Errorf("%w: job %q: %w", errInvalidPS, j.ID, err)
		}
		m.mu.Lock()
		if cj.shards == nil {
			cj.shards = make(map[int][]float64)
		}
		cj.shards[p] = sh
		m.mu.Unlock()
	}
	ex, err := ps.Exchange(c, gpus, servers, sh, j.PS.CPUs, load, ps.Constants{})
	if err != nil {
		return StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
	}
	t := b.Compute + b.Bubble + b.Overhead + ex.Time()
	return StepCost{Time: t, CrossServerBytes: ex.CrossServerBytes}, nil
}
