package main

import (
	"encoding/json"
	"fmt"
	"math"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// boundSizes returns the workload as a rigid-job instance of package srpt for the lower bound
// on mean JCT: each job keeps its arrival and GPU count and gets the running time it would
// need at its best-case placement, its true iterations times its time per iteration at
// the fastest of gpusched.BestPlacement's candidates (consolidated on the idle cluster, each GPU
// model it may use) and the balanced spreads of each model (spreads: k GPUs on each of
// consecutive servers, k = 1, 2, 4, ...), with no other job's traffic and no restore. Other
// jobs' traffic only slows a job down; spreading can speed it up where a server's own
// links are slower than its share of the network (T4 servers' shared PCIe under the fitted
// constants: on the Pollux-style workloads an 8-GPU ImageNet job ran 17% faster on four servers
// than on two, and a bound from consolidated placements alone exceeded SJF-BCO's mean JCT), so
// the spreads are timed too. The bound holds against policies whose placements are at least as
// slow as one of these; an unbalanced placement faster than all of them would break it. The
// sizes are placement-independent: the same for every policy. IDs are the records' indices.
func boundSizes(recs []trace.Record, c *topology.Cluster, cost gpusched.CostModel) ([]srpt.GangJob, error) {
	type key struct {
		gpus int
		typ  string
		mem  float64
	}
	cands := map[key][][]topology.GPUID{}
	times := map[sizeKey]float64{} // best time per iteration of jobs alike for the cost model
	out := make([]srpt.GangJob, len(recs))
	for i := range recs {
		j := &recs[i].Job
		k := key{j.GPUs, j.GPUType, j.MinGPUMemory}
		sk, alike := sizeKeyOf(j)
		t, ok := times[sk]
		if !alike || !ok {
			cs, ok := cands[k]
			if !ok {
				var err error
				if cs, err = gpusched.SizingCandidates(j, c); err != nil {
					return nil, fmt.Errorf("lower bound: %w", err)
				}
				cs = append(cs, spreads(j, c)...)
				cands[k] = cs
			}
			_, sc, err := gpusched.BestAmong(j, c, cost, cs)
			if err != nil {
				return nil, fmt.Errorf("lower bound: %w", err)
			}
			t = sc.Time
			if alike {
				times[sk] = t
			}
		}
		out[i] = srpt.GangJob{ID: i, Release: j.Arrival, GPUs: j.GPUs, ProcTime: recs[i].Iterations * t}
	}
	if f, ok := cost.(interface{ Forget(*gpusched.Job) }); ok {
		for i := range recs {
			f.Forget(&recs[i].Job)
		}
	}
	return out, nil
}

// sizeKey is what the simulator's cost models (gpusched.ModelCost, gpusched.FixedCost) read
// of a job to time it: jobs with equal keys have equal step costs on every placement.
type sizeKey struct {
	model    *graph.Model
	plan     string
	stepTime float64
	gpus     int
	typ      string
	mem      float64
	cpus     int
	hostMem  float64
}

// sizeKeyOf returns j's sizeKey, and false for jobs whose time depends on more (a
// parameter-server job, a reconfigurable one), which are timed one by one.
func sizeKeyOf(j *gpusched.Job) (sizeKey, bool) {
	if j.PS != nil || len(j.Plans) > 0 {
		return sizeKey{}, false
	}
	return sizeKey{model: j.Model, plan: fmt.Sprintf("%+v", j.Plan), stepTime: j.StepTime, gpus: j.GPUs, typ: j.GPUType, mem: j.MinGPUMemory, cpus: j.CPUs, hostMem: j.HostMemory}, true
}

// meanJCTBound returns the best lower bound (srpt.Bounds.BestFlow over the job count) on the
// mean JCT of every schedule of jobs on gpus GPUs, preemptive or not, whatever its placements:
// seconds. Releases are shifted to start at 0 (which moves every completion alike and no flow
// time).
func meanJCTBound(jobs []srpt.GangJob, gpus int) (float64, error) {
	if len(jobs) == 0 {
		return math.NaN(), nil
	}
	first := math.Inf(1)
	for _, j := range jobs {
		first = min(first, j.Release)
	}
	shifted := make([]srpt.GangJob, len(jobs))
	for i, j := range jobs {
		j.Release -= first
		shifted[i] = j
	}
	b, err := srpt.LowerBounds(shifted, gpus)
	if err != nil {
		return 0, fmt.Errorf("lower bound: %w", err)
	}
	return b.BestFlow() / float64(len(jobs)), nil
}

// scaledBound is the bound of jobs with arrivals divided by rate (as scaleArrivals does).
func scaledBound(jobs []srpt.GangJob, rate float64, gpus int) (float64, error) {
	scaled := make([]srpt.GangJob, len(jobs))
	for i, j := range jobs {
		j.Release /= rate
		scaled[i] = j
	}
	return meanJCTBound(scaled, gpus)
}

// ratio returns jct / bound, NaN when the bound is unknown or not positive.
func ratio(jct, bound float64) float64 {
	if !(bound > 0) || math.IsNaN(jct) {
		return math.NaN()
	}
	return jct / bound
}

// fmtRatio formats ratio(jct, bound) as "1.23x", "-" when unknown.
func fmtRatio(jct, bound float64) string {
	r := ratio(jct, bound)
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// jsonFloat is a float64 that encodes NaN and infinities as JSON null.
type jsonFloat float64

// MarshalJSON writes the number, or null when it is not finite.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// spreads returns, for each GPU model of c that j may use, the balanced spread placements of j:
// k GPUs on each of as many of the model's servers as needed, in order, for every k = 1, 2, 4, ...
// below the model's GPUs per server (the consolidated placement is SizingCandidates').
func spreads(j *gpusched.Job, c *topology.Cluster) [][]topology.GPUID {
	type model struct {
		spec    topology.GPUSpec
		servers []int
	}
	var models []model
	for s := range c.NumServers() {
		spec := c.Server(s).GPU
		if !j.Eligible(spec) {
			continue
		}
		k := 0
		for k < len(models) && models[k].spec != spec {
			k++
		}
		if k == len(models) {
			models = append(models, model{spec: spec})
		}
		models[k].servers = append(models[k].servers, s)
	}
	var out [][]topology.GPUID
	for _, m := range models {
		_, per := c.GPUsOf(m.servers[0])
		for k := 1; k < per && k < j.GPUs; k *= 2 {
			if len(m.servers)*k < j.GPUs {
				continue
			}
			gpus := make([]topology.GPUID, 0, j.GPUs)
			for _, s := range m.servers {
				first, n := c.GPUsOf(s)
				for g := first; g < first+topology.GPUID(min(k, n)) && len(gpus) < j.GPUs; g++ {
					gpus = append(gpus, g)
				}
				if len(gpus) == j.GPUs {
					break
				}
			}
			if len(gpus) == j.GPUs {
				out = append(out, gpus)
			}
		}
	}
	return out
}
