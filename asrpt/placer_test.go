package asrpt

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
)

// TestPartitionedSharesGraphs: jobs of one model and plan share one worker graph; placing them
// again and again through its memo gives exactly partition.Place's placements; a graph
// outlives its jobs only up to a bound.
func TestPartitionedSharesGraphs(t *testing.T) {
	c := servers(t, 16)
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	opts := partition.PlaceOptions{Seed: 1}
	p := NewPartitioned(opts)
	var jobs []*gpusched.Job
	for i := range 12 {
		plan := graph.Plan{DP: 4 + 2*(i%2), TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 96}
		jobs = append(jobs, &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: plan.Workers(), Model: m, Plan: plan})
	}
	free := c.AllGPUs()
	for round := range 30 {
		j := jobs[round%len(jobs)]
		got, ok := p.Place(c, free, j)
		comp, err := graph.Compile(j.Model, j.Plan)
		if err != nil {
			t.Fatal(err)
		}
		want, err := partition.Place(c, free, comp.WorkerGraph(), opts)
		if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want.GPUs)) {
			t.Fatalf("round %d, job %s: Partitioned %v (%v), partition.Place %v (%v)", round, j.ID, got, ok, want.GPUs, err)
		}
		g := topology.GPUID((round * 7) % c.NumGPUs()) // the free GPUs change a little
		if free.Contains(g) {
			free.Remove(g)
		} else {
			free.Add(g)
		}
	}
	if len(p.graphs) != 2 || p.Cached() != len(jobs) {
		t.Fatalf("%d graphs for 2 plans, %d jobs cached", len(p.graphs), p.Cached())
	}
	for _, j := range jobs {
		p.Forget(j)
	}
	if p.Cached() != 0 || len(p.graphs) > keptGraphs {
		t.Fatalf("after every job left: %d jobs, %d graphs", p.Cached(), len(p.graphs))
	}
	// Many plans that come and go: the graphs nobody uses stay bounded.
	for i := range 3 * keptGraphs {
		plan := graph.Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 2 * (i + 1)}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("k", i)), GPUs: 2, Model: m, Plan: plan}
		if _, ok := p.Place(c, c.AllGPUs(), j); !ok {
			t.Fatalf("job %s not placed", j.ID)
		}
		p.Forget(j)
	}
	if len(p.graphs) > keptGraphs+1 {
		t.Fatalf("%d graphs kept for no job", len(p.graphs))
	}
}
