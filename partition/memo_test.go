package partition

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestPlaceMemoMatchesPlace: one PlaceMemo placing a graph again and again, on free sets that
// change a little between calls (so that server choices of the same shape recur on other
// servers and racks), returns exactly what Place returns.
func TestPlaceMemoMatchesPlace(t *testing.T) {
	plans := []struct {
		model string
		plan  graph.Plan
	}{
		{"resnet50", graph.Plan{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 256}},
		{"llama-7b", graph.Plan{DP: 2, TP: 2, PP: 2, MicroBatches: 4, GlobalBatch: 32}},
		{"bert-large", graph.Plan{DP: 3, TP: 1, PP: 4, MicroBatches: 4, GlobalBatch: 48}},
	}
	rapid.Check(t, func(t *rapid.T) {
		pick := plans[rapid.IntRange(0, len(plans)-1).Draw(t, "plan")]
		wg := workerGraph(t, pick.model, pick.plan)
		servers := rapid.IntRange(2, 12).Draw(t, "servers")
		racks := rapid.IntRange(0, 3).Draw(t, "racks")
		var c *topology.Cluster
		var err error
		if racks > 0 {
			c, err = topology.UniformRacks(topology.T4(), servers, (servers+racks-1)/racks, 3)
		} else {
			c, err = topology.Uniform(topology.T4(), servers)
		}
		if err != nil {
			t.Fatal(err)
		}
		free := topology.NewGPUSet(c.NumGPUs())
		for g := 0; g < c.NumGPUs(); g++ {
			if rapid.IntRange(0, 2).Draw(t, "busy") > 0 {
				free.Add(topology.GPUID(g))
			}
		}
		opts := PlaceOptions{Seed: rapid.Uint64Range(0, 3).Draw(t, "seed")}
		var m PlaceMemo
		for call := range 12 {
			want, werr := Place(c, free, wg, opts)
			got, gerr := m.Place(c, free, wg, opts)
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("call %d: memo %+v (%v), Place %+v (%v)", call, got, gerr, want, werr)
			}
			for range rapid.IntRange(1, 4).Draw(t, "flips") { // a few GPUs start or stop
				g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "flip"))
				if free.Contains(g) {
					free.Remove(g)
				} else {
					free.Add(g)
				}
			}
		}
	})
}
