package asrpt

import (
	"sync"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
)

// Partitioned is the topology-aware placer: a job with a model goes where partition.Place puts
// its worker graph (as few servers and racks as the free GPUs allow, tensor-parallel groups kept
// whole, the rest of the traffic partitioned to stay inside servers); a job without a model, or
// whose model and plan do not compile, is consolidated (gpusched.Pack). It compiles each job's
// worker graph once, keyed by the *Job. It is safe for concurrent use.
type Partitioned struct {
	opts  partition.PlaceOptions
	mu    sync.Mutex
	cache map[*gpusched.Job]*graph.WorkerGraph
}

// NewPartitioned returns a Partitioned placer with the given partitioner options.
func NewPartitioned(opts partition.PlaceOptions) *Partitioned {
	return &Partitioned{opts: opts, cache: map[*gpusched.Job]*graph.WorkerGraph{}}
}

// Place is a gpusched.Placer.
func (p *Partitioned) Place(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
	if j.Model == nil {
		return gpusched.Pack(c, free, j)
	}
	p.mu.Lock()
	wg, ok := p.cache[j]
	if !ok {
		if comp, err := graph.Compile(j.Model, j.Plan); err == nil {
			wg = comp.WorkerGraph()
		}
		p.cache[j] = wg
	}
	p.mu.Unlock()
	if wg == nil || len(wg.Workers) != j.GPUs {
		return gpusched.Pack(c, free, j)
	}
	pl, err := partition.Place(c, free, wg, p.opts)
	if err != nil {
		return nil, false
	}
	return pl.GPUs, true
}

// Forget drops the cached worker graph of a job that left.
func (p *Partitioned) Forget(j *gpusched.Job) {
	p.mu.Lock()
	delete(p.cache, j)
	p.mu.Unlock()
}
