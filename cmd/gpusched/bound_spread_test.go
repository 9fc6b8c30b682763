package main

import (
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// The bound sizes a job at its fastest placement on the idle cluster, spreads included: on T4
// servers an 8-GPU ResNet-50 job runs faster spread over more servers than packed on two, and a
// bound from the packed placement alone would exceed what a policy that spreads it achieves.
func TestBoundSizesTakeTheFastestSpread(t *testing.T) {
	c, err := topology.Uniform(topology.T4(), 8)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	j := gpusched.Job{ID: "r", GPUs: 8, Model: m, Plan: graph.Plan{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 256}}
	cost := gpusched.DefaultCost()
	sizes, err := boundSizes([]trace.Record{{Job: j, Iterations: 1000}}, c, cost)
	if err != nil {
		t.Fatal(err)
	}
	perIter := sizes[0].ProcTime / 1000
	fastest := -1.0
	for _, p := range append(spreads(&j, c), []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}) {
		sc, err := cost.StepCost(&j, c, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fastest < 0 || sc.Time < fastest {
			fastest = sc.Time
		}
		if perIter > sc.Time*(1+1e-12) {
			t.Errorf("bound's time per iteration %v s exceeds %v s on %v", perIter, sc.Time, p)
		}
	}
	packed, _ := cost.StepCost(&j, c, []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}, nil)
	t.Logf("packed %.4g s, fastest %.4g s, bound %.4g s per iteration", packed.Time, fastest, perIter)
}
