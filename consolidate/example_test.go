package consolidate_test

import (
	"fmt"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// A BERT-large job was resumed on one GPU of each of four servers. Server 0 has since freed
// up, so a Consolidator moves the job there: it pays one restore and then runs faster.
func Example() {
	c, _ := topology.Uniform(topology.A100(), 4)
	bert, _ := graph.ZooModel("bert-large")
	plan, _ := graph.DefaultPlan(bert, 4, topology.A100())
	job := &gpusched.Job{ID: "bert", GPUs: 4, Model: bert, Plan: plan}
	v := gpusched.View{Now: 3600, Cluster: c, Running: []gpusched.JobStatus{
		{Job: job, GPUs: []topology.GPUID{0, 8, 16, 24}, Iterations: 5000, Started: true},
	}}
	// The policy keeps the job where it is.
	d := gpusched.Decision{Run: []gpusched.Assignment{{Job: "bert", GPUs: v.Running[0].GPUs}}}
	k, err := consolidate.New(consolidate.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	moves, err := k.Apply(&v, &d)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range moves {
		fmt.Printf("%s: %d -> %d servers, %.0f%% faster per iteration\n", m.Job,
			c.ServersSpanned(m.From), c.ServersSpanned(m.To), 100*(1-m.NewTime/m.OldTime))
	}
	fmt.Println("now on", d.Run[0].GPUs)
	// Output:
	// bert: 4 -> 1 servers, 36% faster per iteration
	// now on [0 1 2 3]
}
