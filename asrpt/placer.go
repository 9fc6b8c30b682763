package asrpt

import (
	"reflect"
	"sync"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
)

// Partitioned is the topology-aware placer: a job with a model goes where partition.Place puts
// its worker graph among the free GPUs it may use (Job.EligibleIn): as few servers and racks as
// the free GPUs allow, tensor-parallel groups kept whole, the rest of the traffic partitioned to
// stay inside servers. A job without a model, or whose model and plan do not compile, is
// consolidated (gpusched.Pack). It compiles each job's worker graph once, keyed by its JobID
// (and compiled again if the job's model or plan changes), and remembers how it partitioned
// the graph for the server choices it met (partition.PlaceMemo), so that placing the job again
// costs little; Forget drops both. It is safe for concurrent use.
type Partitioned struct {
	opts  partition.PlaceOptions
	mu    sync.Mutex
	cache map[gpusched.JobID]compiledGraph
}

// compiledGraph is a job's worker graph, with the model and plan it was compiled from (a nil
// graph when they do not compile).
type compiledGraph struct {
	model *graph.Model
	plan  graph.Plan
	wg    *graph.WorkerGraph
	memo  *placeMemo // placements of wg on the server choices met so far
}

// placeMemo is a job's partition.PlaceMemo, locked while in use: a job is placed again and
// again (consolidation proposes a move at every decision), mostly on the same server choice.
type placeMemo struct {
	mu sync.Mutex
	m  partition.PlaceMemo
}

// NewPartitioned returns a Partitioned placer with the given partitioner options.
func NewPartitioned(opts partition.PlaceOptions) *Partitioned {
	return &Partitioned{opts: opts, cache: map[gpusched.JobID]compiledGraph{}}
}

// Place is a gpusched.Placer.
func (p *Partitioned) Place(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
	if j.Model == nil {
		return gpusched.Pack(c, free, j)
	}
	p.mu.Lock()
	cg, ok := p.cache[j.ID]
	if !ok || cg.model != j.Model || !reflect.DeepEqual(cg.plan, j.Plan) {
		cg = compiledGraph{model: j.Model, plan: j.Plan}
		if comp, err := graph.Compile(j.Model, j.Plan); err == nil {
			cg.wg = comp.WorkerGraph()
			cg.memo = &placeMemo{}
		}
		p.cache[j.ID] = cg
	}
	p.mu.Unlock()
	if cg.wg == nil || len(cg.wg.Workers) != j.GPUs {
		return gpusched.Pack(c, free, j)
	}
	cg.memo.mu.Lock()
	pl, err := cg.memo.m.Place(c, j.EligibleIn(c, free), cg.wg, p.opts)
	cg.memo.mu.Unlock()
	if err != nil {
		return nil, false
	}
	return pl.GPUs, true
}

// Forget drops the cached worker graph of a job that left.
func (p *Partitioned) Forget(j *gpusched.Job) {
	p.mu.Lock()
	delete(p.cache, j.ID)
	p.mu.Unlock()
}

// Cached returns the number of jobs whose worker graph the placer holds.
func (p *Partitioned) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cache)
}
