package partition_test

import (
	"fmt"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
)

// A 16-worker job (4-way tensor parallel, 4-way data parallel) placed on a cluster of four
// 8-GPU servers with every GPU free: it takes two whole servers, no more.
func ExamplePlace() {
	m, err := graph.ZooModel("gpt3-6.7b")
	if err != nil {
		fmt.Println(err)
		return
	}
	cj, err := graph.Compile(m, graph.Plan{DP: 4, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := partition.Place(c, c.AllGPUs(), cj.WorkerGraph(), partition.PlaceOptions{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("workers:", len(p.GPUs), "servers:", p.Servers)
	// Output: workers: 16 servers: 2
}
