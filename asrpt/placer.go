package asrpt

import (
	"fmt"
	"slices"
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
// consolidated (gpusched.Pack). It compiles each model and plan once while jobs use them (jobs
// of the same *graph.Model and plan share the worker graph), keyed by JobID (and compiled again
// if a job's model or plan changes), and remembers how it partitioned each graph for the server
// choices it met (partition.PlaceMemo), so that placing a job again costs little; Forget drops
// a job (and a bounded number of graphs outlive their jobs). It is safe for concurrent use.
type Partitioned struct {
	opts   partition.PlaceOptions
	mu     sync.Mutex
	cache  map[gpusched.JobID]compiledGraph
	graphs map[graphKey]*sharedGraph
	idle   int // graphs no job uses
	// brokenKinds places every kind of set with the memo of the free GPUs except that a set of
	// kind 1 with as many GPUs as the last one is answered as that one was: a deliberately
	// wrong variant (a memo keyed by too little), for tests.
	brokenKinds bool
	lastN       int
	lastGPUs    []topology.GPUID
}

// compiledGraph is a job's model and plan, and their worker graph.
type compiledGraph struct {
	model *graph.Model
	plan  graph.Plan
	g     *sharedGraph
}

// graphKey identifies a worker graph: the model (by address: a model does not change) and
// the plan (every field, formatted).
type graphKey struct {
	model *graph.Model
	plan  string
}

// sharedGraph is the worker graph of a model and plan (nil when they do not compile), with the
// jobs that use it and its placement memos, locked while in use.
type sharedGraph struct {
	key  graphKey
	wg   *graph.WorkerGraph
	refs int
	mu   sync.Mutex
	// memo[k] places the graph on the sets of kind k (see placeIn). A PlaceMemo counts the
	// free GPUs per server from its last set's counts when few GPUs differ, and afresh
	// otherwise; A-SRPT asks on two kinds of set that differ by many GPUs (the free GPUs, and
	// the compact conversion's pools of free and preemptable ones), which alternating in one
	// memo would count afresh at every call. Every memo's answers are exactly
	// partition.Place's.
	memo [placeKinds]partition.PlaceMemo
}

// placeKinds is how many kinds of set placeIn tells apart (one memo each per graph).
const placeKinds = 2

// NewPartitioned returns a Partitioned placer with the given partitioner options.
func NewPartitioned(opts partition.PlaceOptions) *Partitioned {
	return &Partitioned{opts: opts, cache: map[gpusched.JobID]compiledGraph{}, graphs: map[graphKey]*sharedGraph{}}
}

// Place is a gpusched.Placer.
func (p *Partitioned) Place(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
	return p.placeIn(c, free, j, 0)
}

// placeIn is Place, with the graph's memo for sets of kind (0 <= kind < placeKinds): the
// same answer whatever the kind (each memo's answers are partition.Place's); only the work
// differs.
func (p *Partitioned) placeIn(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job, kind int) ([]topology.GPUID, bool) {
	if j.Model == nil {
		return gpusched.Pack(c, free, j)
	}
	p.mu.Lock()
	cg, ok := p.cache[j.ID]
	if !ok || cg.model != j.Model || !samePlan(cg.plan, j.Plan) {
		if ok {
			p.release(cg.g)
		}
		cg = compiledGraph{model: j.Model, plan: j.Plan, g: p.acquire(j.Model, j.Plan)}
		p.cache[j.ID] = cg
	}
	p.mu.Unlock()
	g := cg.g
	if g.wg == nil || len(g.wg.Workers) != j.GPUs {
		return gpusched.Pack(c, free, j)
	}
	if p.brokenKinds && kind == 1 && free.Len() == p.lastN && p.lastGPUs != nil {
		return slices.Clone(p.lastGPUs), true
	}
	g.mu.Lock()
	pl, err := g.memo[kind].Place(c, j.EligibleIn(c, free), g.wg, p.opts)
	g.mu.Unlock()
	if p.brokenKinds && kind == 1 {
		p.lastN, p.lastGPUs = free.Len(), slices.Clone(pl.GPUs)
	}
	if err != nil {
		return nil, false
	}
	return pl.GPUs, true
}

// samePlan is reflect.DeepEqual(a, b) for plans (a nil Stages differs from an empty one, as
// the plan's key in graphs tells them apart), without reflection: the placer asks it at every
// placement. TestSamePlan fails when graph.Plan gains a field this does not compare.
func samePlan(a, b graph.Plan) bool {
	return a.DP == b.DP && a.TP == b.TP && a.PP == b.PP && a.MicroBatches == b.MicroBatches &&
		a.GlobalBatch == b.GlobalBatch && a.Checkpointing == b.Checkpointing && a.ZeRO == b.ZeRO &&
		a.Offload == b.Offload && a.CPUThreads == b.CPUThreads && a.UnevenHeads == b.UnevenHeads &&
		(a.Stages == nil) == (b.Stages == nil) && slices.Equal(a.Stages, b.Stages)
}

// acquire returns the shared worker graph of a model and plan, compiling it if no job uses it
// yet. p.mu is held.
func (p *Partitioned) acquire(m *graph.Model, plan graph.Plan) *sharedGraph {
	key := graphKey{model: m, plan: fmt.Sprintf("%#v", plan)}
	g := p.graphs[key]
	if g != nil && g.refs <= 0 {
		p.idle--
	}
	if g == nil {
		g = &sharedGraph{key: key}
		if comp, err := graph.Compile(m, plan); err == nil {
			g.wg = comp.WorkerGraph()
		}
		p.graphs[key] = g
	}
	g.refs++
	return g
}

// release drops a job's use of a shared graph. A graph no job uses is kept for the next job of
// its model and plan (jobs of a model come and go: compiling it again for each costs more than
// keeping it), until such graphs outnumber the placer's jobs and keptGraphs: then they go.
// p.mu is held.
func (p *Partitioned) release(g *sharedGraph) {
	if g.refs--; g.refs > 0 {
		return
	}
	if p.idle++; p.idle > len(p.cache)+keptGraphs {
		for k, h := range p.graphs {
			if h.refs <= 0 {
				delete(p.graphs, k)
			}
		}
		p.idle = 0
	}
}

// keptGraphs is how many worker graphs that no job uses a Partitioned keeps beyond its jobs.
const keptGraphs = 256

// Forget drops the cached worker graph of a job that left (see release for the graph itself).
func (p *Partitioned) Forget(j *gpusched.Job) {
	p.mu.Lock()
	if cg, ok := p.cache[j.ID]; ok {
		p.release(cg.g)
		delete(p.cache, j.ID)
	}
	p.mu.Unlock()
}

// Cached returns the number of jobs whose worker graph the placer holds.
//
// Deprecated: not needed by embedders (a cache diagnostic); removed in v0.3.0.
func (p *Partitioned) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cache)
}
