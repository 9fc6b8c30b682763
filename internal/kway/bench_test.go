package kway

import (
	"fmt"
	"syscall"
	"testing"
)

// Speed targets (BENCHMARKS.md): a 10k-vertex graph into 64 parts in under
// 100 ms. Run with
//
//	go test -run '^$' -bench . -benchmem ./internal/kway/
//
// Besides ns/op (wall time) each benchmark reports cpu-ms/op, the CPU time
// of the process per call (getrusage: user + system, all threads, the
// garbage collector included): on a machine shared with other work, wall
// time measures the other work too.
func benchPartition(b *testing.B, g *Graph, opts Options) {
	b.ReportAllocs()
	var cut int64
	c0 := cpuSeconds(b)
	for b.Loop() {
		res, err := Partition(g, opts)
		if err != nil {
			b.Fatal(err)
		}
		cut = res.Cut
	}
	b.ReportMetric(1000*(cpuSeconds(b)-c0)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(cut), "cut")
}

// cpuSeconds is the CPU time the process has used so far (user + system).
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + 1e-6*float64(t.Usec) }
	return sec(ru.Utime) + sec(ru.Stime)
}

func BenchmarkPartition10k64(b *testing.B) {
	for _, c := range []struct {
		name string
		g    func() *Graph
	}{
		{"grid100x100", func() *Graph { return testGrid(b, 100, 100) }},
		{"rgg10000", func() *Graph { return testRGG(b, 10000, 1) }},
	} {
		g := c.g()
		b.Run(c.name, func(b *testing.B) {
			benchPartition(b, g, Options{K: 64, Imbalance: 0.03, Seed: 1})
		})
	}
}

func BenchmarkPartition100k(b *testing.B) {
	grid := testGrid(b, 316, 316)
	rgg := testRGG(b, 100000, 1)
	for _, k := range []int{8, 64, 256} {
		b.Run(fmt.Sprintf("grid316x316/k%d", k), func(b *testing.B) {
			benchPartition(b, grid, Options{K: k, Imbalance: 0.03, Seed: 1})
		})
		b.Run(fmt.Sprintf("rgg100000/k%d", k), func(b *testing.B) {
			benchPartition(b, rgg, Options{K: k, Imbalance: 0.03, Seed: 1})
		})
	}
}

// BenchmarkPartitionWorkers: synthetic dp x tp x pp worker graphs onto
// servers of 8 GPUs (hard capacities, the placement shape).
func BenchmarkPartitionWorkers(b *testing.B) {
	for _, w := range [][3]int{{16, 8, 8}, {64, 8, 8}} {
		g := testWorkers(b, w[0], w[1], w[2])
		k := g.NumVertices() / 8
		caps := make([]int64, k)
		for i := range caps {
			caps[i] = 8
		}
		b.Run(fmt.Sprintf("workers%d/servers%d", g.NumVertices(), k), func(b *testing.B) {
			benchPartition(b, g, Options{K: k, Mode: Hard, Capacities: caps, Seed: 1})
		})
	}
}

func BenchmarkSplitChain(b *testing.B) {
	costs := make([]float64, 1000)
	for i := range costs {
		costs[i] = float64(1 + (i*7919)%13)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitChain(costs, 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitDAG(b *testing.B) {
	// a 500-layer network with a skip connection every 4 layers
	n := 500
	costs := make([]float64, n)
	var edges [][2]int
	for i := range n {
		costs[i] = float64(1 + (i*7919)%13)
		if i+1 < n {
			edges = append(edges, [2]int{i, i + 1})
		}
		if i%4 == 0 && i+3 < n {
			edges = append(edges, [2]int{i, i + 3})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitDAG(costs, edges, 16, 1); err != nil {
			b.Fatal(err)
		}
	}
}
