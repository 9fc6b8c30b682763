package topology_test

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// The same 1 GB all-reduce over 8 GPUs, packed in one A100 server or spread over 8.
func Example() {
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		fmt.Println(err)
		return
	}
	packed := []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}
	spread := []topology.GPUID{0, 8, 16, 24, 32, 40, 48, 56}
	fmt.Printf("%s: %d GPUs on %d servers\n", c.Name(), c.NumGPUs(), c.NumServers())
	fmt.Printf("packed: %.2f ms\n", 1e3*c.RingAllReduceTime(packed, 1e9, nil))
	fmt.Printf("spread: %.2f ms\n", 1e3*c.RingAllReduceTime(spread, 1e9, nil))

	// Another job's flow on server 3's NICs halves the spread ring's bottleneck.
	load := topology.LinkLoad{{Kind: topology.NICLink, Index: 3}: 1}
	fmt.Printf("spread, shared NIC: %.2f ms\n", 1e3*c.RingAllReduceTime(spread, 1e9, load))

	free := c.AllGPUs()
	free.RemoveAll(topology.SetOf(packed...))
	first, n := c.GPUsOf(1)
	fmt.Println("free:", free.Len(), "of which on server 1:", free.CountRange(first, n))
	// Output:
	// 8x8-a100: 64 GPUs on 8 servers
	// packed: 5.88 ms
	// spread: 70.07 ms
	// spread, shared NIC: 140.07 ms
	// free: 56 of which on server 1: 8
}
