package queues_test

import (
	"fmt"

	"github.com/gpusched/gpusched/kube/queues"
)

// Two teams with 16 GPUs guaranteed each on a 64-GPU cluster, weights 3 and 1: when both want
// more than the cluster has, each gets its guarantee and the other 32 GPUs go 3:1; when team b
// wants only 4, team a borrows the rest.
func Example() {
	cfg := queues.Config{Queues: []queues.Queue{
		{Name: "team-a", Namespaces: []string{"a"}, GuaranteedGPUs: 16, Weight: 3},
		{Name: "team-b", Namespaces: []string{"b"}, GuaranteedGPUs: 16, Weight: 1},
	}}
	fmt.Println(queues.Shares(cfg, map[string]int{"team-a": 100, "team-b": 100}, 64))
	fmt.Println(queues.Shares(cfg, map[string]int{"team-a": 100, "team-b": 4}, 64))
	// Output:
	// map[team-a:40 team-b:24]
	// map[team-a:60 team-b:4]
}
