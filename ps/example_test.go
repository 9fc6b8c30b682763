package ps_test

import (
	"fmt"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// Two T4 servers, four workers on each, two shards: one shard per server (local traffic for
// half of each exchange) against both shards on the first server.
func Example() {
	c, _ := topology.Uniform(topology.T4(), 2)
	m, _ := graph.ZooModel("resnet50")
	shards, _ := ps.Shards(m, 2)
	workers := []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}
	spread, _ := ps.Exchange(c, workers, []int{0, 1}, shards, 4, nil, ps.Constants{})
	packed, _ := ps.Exchange(c, workers, []int{0, 0}, shards, 4, nil, ps.Constants{})
	fmt.Printf("model %.1f MB in shards of %.1f and %.1f MB\n", m.ParamBytes()/1e6, shards[0]/1e6, shards[1]/1e6)
	fmt.Printf("one shard per server: push %.1f ms, %.0f MB cross servers\n", spread.Push*1e3, spread.CrossServerBytes/1e6)
	fmt.Printf("both on server 0:     push %.1f ms, %.0f MB cross servers\n", packed.Push*1e3, packed.CrossServerBytes/1e6)
	// Output:
	// model 51.1 MB in shards of 25.5 and 25.6 MB
	// one shard per server: push 16.4 ms, 409 MB cross servers
	// both on server 0:     push 32.8 ms, 409 MB cross servers
}

// The shapes a PS scheduler may choose for a job of 2 to 8 workers and 1 to 4 shards, and
// where the shards of one shape run.
func ExampleConfigs() {
	spec := ps.Spec{MinWorkers: 2, MaxWorkers: 8, MinPS: 1, MaxPS: 4, CPUs: 4}
	fmt.Println(ps.Configs(spec))
	c, _ := topology.Uniform(topology.T4(), 2)
	workers := []topology.GPUID{0, 1, 4, 5} // two on each server
	fmt.Println("baseline (one shard per worker server):", ps.Placement(c, workers, 0))
	fmt.Println("three shards beside workers 0..2:", ps.Placement(c, workers, 3))
	// Output:
	// [{2 1} {2 2} {4 1} {4 2} {4 4} {8 1} {8 2} {8 4}]
	// baseline (one shard per worker server): [0 1]
	// three shards beside workers 0..2: [0 0 1]
}
