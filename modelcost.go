package gpusched

import (
	"fmt"
	"sync"

	"github.com/gpusched/gpusched/graph"
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
// ModelCost compiles each (model, plan) once and keeps it, keyed by the *Job, so hosts should
// pass the same *Job on every call; it is safe for concurrent use. The zero value is
// DefaultCost's model.
type ModelCost struct {
	eff   graph.Efficiency
	cal   *graph.Calibration
	mu    sync.Mutex
	cache map[*Job]*compiledJob
}

type compiledJob struct {
	c     *graph.Compiled
	edges []graph.WorkerEdge
	err   error
}

// NewModelCost returns a ModelCost that times every job with the given constants, whatever
// its GPUs (the zero value means the constants of the GPU type each job is placed on, as
// DefaultCost does; graph.DefaultEfficiency() gives the uncalibrated textbook figures).
func NewModelCost(eff graph.Efficiency) *ModelCost {
	return &ModelCost{eff: eff, cache: make(map[*Job]*compiledJob)}
}

// NewCalibratedCost returns a ModelCost that times each job with a calibration's constants for
// the GPU type it is placed on (the shipped ones for types it lacks) and the factors it holds
// for the job's model (graph.Calibration; package perf fits one, `gpusched perf fit` writes
// one). A nil calibration is DefaultCost.
func NewCalibratedCost(cal *graph.Calibration) *ModelCost {
	return &ModelCost{cal: cal, cache: make(map[*Job]*compiledJob)}
}

// DefaultCost returns the cost model hosts use unless told otherwise: ModelCost with the
// shipped constants of the GPU type each job is placed on (graph.HardwareConstants), which is
// FixedCost for jobs without a model.
func DefaultCost() *ModelCost { return NewModelCost(graph.Efficiency{}) }

func (m *ModelCost) compiled(j *Job) *compiledJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cache == nil {
		m.cache = make(map[*Job]*compiledJob)
	}
	if cj, ok := m.cache[j]; ok {
		return cj
	}
	cj := &compiledJob{}
	cj.c, cj.err = graph.Compile(j.Model, j.Plan)
	if cj.err == nil {
		cj.edges = cj.c.WorkerGraph().Edges
	}
	m.cache[j] = cj
	return cj
}

// Forget drops the compiled form of a job that has left, to bound memory in long runs.
func (m *ModelCost) Forget(j *Job) {
	m.mu.Lock()
	delete(m.cache, j)
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
		if err := c.Check(gpus[0]); err != nil {
			return StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
		}
		if err := cj.c.CheckMemory(c.GPU(gpus[0])); err != nil {
			return StepCost{}, fmt.Errorf("job %q on %s: %w", j.ID, c.GPUName(gpus[0]), err)
		}
	}
	b, err := cj.c.IterationTime(c, gpus, graph.Options{Efficiency: m.eff, Calibration: m.cal, Load: load})
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
