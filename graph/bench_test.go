package graph

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// gpt3Job13B is the benchmark job: GPT-3 13B on 1,024 A100 GPUs (128 DGX-class servers) with
// TP = 8 inside a server, PP = 8 and DP = 16, 1,024 sequences per iteration in micro-batches of
// one, placed rank by rank (each TP group on one server).
func gpt3Job13B(tb testing.TB) (*Compiled, *topology.Cluster, []topology.GPUID) {
	tb.Helper()
	m, err := ZooModel("gpt3-13b")
	if err != nil {
		tb.Fatal(err)
	}
	c, err := Compile(m, Plan{DP: 16, TP: 8, PP: 8, MicroBatches: 64, GlobalBatch: 1024})
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := topology.Uniform(topology.A100(), 128)
	if err != nil {
		tb.Fatal(err)
	}
	placement := make([]topology.GPUID, 1024)
	for i := range placement {
		placement[i] = topology.GPUID(i)
	}
	return c, cl, placement
}

func BenchmarkIterationTimeGPT3_13B_1024(b *testing.B) {
	c, cl, placement := gpt3Job13B(b)
	load := topology.LinkLoad{{Kind: topology.NICLink, Index: 3}: 1, {Kind: topology.NICLink, Index: 77}: 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.IterationTime(cl, placement, Options{Load: load}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWorkerGraphGPT3_13B_1024(b *testing.B) {
	c, _, _ := gpt3Job13B(b)
	b.ReportAllocs()
	for b.Loop() {
		if g := c.WorkerGraph(); len(g.Workers) != 1024 {
			b.Fatal(len(g.Workers))
		}
	}
}

func BenchmarkCompileGPT3_13B_1024(b *testing.B) {
	m, err := ZooModel("gpt3-13b")
	if err != nil {
		b.Fatal(err)
	}
	p := Plan{DP: 16, TP: 8, PP: 8, MicroBatches: 64, GlobalBatch: 1024}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(m, p); err != nil {
			b.Fatal(err)
		}
	}
}
