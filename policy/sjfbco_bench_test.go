package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// BenchmarkSJFBCOOnlinePlan measures one plan of SJF-BCO's online mode as the scheduler makes
// it: a window of 32 waiting jobs (Philly-like demands, zoo models) on 2,048 GPUs whose GPUs
// are busy until various times, with the planner and its memo reused from plan to plan (the
// busy-until times move a little between plans, as they do between events).
func BenchmarkSJFBCOOnlinePlan(b *testing.B) {
	c, err := topology.Uniform(topology.A100(), 256)
	if err != nil {
		b.Fatal(err)
	}
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var jobs []BCOJob
	for i := range 32 {
		g := []int{1, 1, 1, 1, 1, 2, 4, 8, 16}[rng.IntN(9)]
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: float64(i), GPUs: g, Model: m,
			Plan: graph.Plan{DP: g, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32 * g}}
		jobs = append(jobs, BCOJob{Job: j, Iterations: float64(100 + rng.IntN(5000))})
	}
	busy := make([]float64, c.NumGPUs())
	for g := range busy {
		if rng.IntN(4) > 0 {
			busy[g] = rng.Float64() * 3600
		}
	}
	opt := BCOPlanOptions{EarliestFit: true}
	if err := opt.defaults(); err != nil {
		b.Fatal(err)
	}
	memo := newStepMemo(c)
	opt.memo = &memo
	var p bcoPlanner
	for b.Loop() {
		for g := range busy {
			busy[g] += 1e-3
		}
		if _, err := planWith(&p, c, jobs, busy, opt); err != nil {
			b.Fatal(err)
		}
	}
}
