package kway_test

import (
	"fmt"

	"github.com/gpusched/gpusched/internal/kway"
)

// Two tensor-parallel pairs that talk heavily, linked by a light
// pipeline edge, placed on two servers with two free GPUs each.
func Example() {
	b := kway.NewBuilder(4) // four workers, weight 1 each
	b.AddEdge(0, 1, 100)    // bytes per iteration
	b.AddEdge(2, 3, 100)
	b.AddEdge(1, 2, 5)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := kway.Partition(g, kway.Options{
		K:          2,
		Mode:       kway.Hard,
		Capacities: []int64{2, 2}, // free GPUs per server
		Seed:       1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("same server:", res.Part[0] == res.Part[1], res.Part[2] == res.Part[3])
	fmt.Println("cut bytes:", res.Cut)
	fmt.Println("weights:", res.PartWeights)
	// Output:
	// same server: true true
	// cut bytes: 5
	// weights: [2 2]
}

// Splitting six layers into three pipeline stages.
func ExampleSplitChain() {
	costs := []float64{4, 1, 3, 2, 2, 4} // seconds per iteration
	st, err := kway.SplitChain(costs, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("starts:", st.Starts)
	fmt.Println("stage costs:", st.Cost)
	fmt.Println("bottleneck:", st.Bottleneck)
	// Output:
	// starts: [0 2 4]
	// stage costs: [5 5 6]
	// bottleneck: 6
}

// The options that trade time for cut: V-cycles and flow refinement
// (Balanced mode) never give a larger cut than without them. Here the
// straight cut through a 60 x 60 grid, 60 edges, is found with them.
func ExampleOptions_strong() {
	const side = 60
	b := kway.NewBuilder(side * side) // a 60 x 60 grid
	for i := range side {
		for j := range side {
			v := i*side + j
			if j+1 < side {
				b.AddEdge(v, v+1, 1)
			}
			if i+1 < side {
				b.AddEdge(v, v+side, 1)
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := kway.Options{K: 2, Imbalance: 0.03, Seed: 3}
	plain, err := kway.Partition(g, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts.VCycles, opts.FlowRefinement = 2, true
	strong, err := kway.Partition(g, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cut:", plain.Cut, "->", strong.Cut)
	// Output:
	// cut: 66 -> 60
}
