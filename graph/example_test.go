package graph_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// A model is a DAG of layers with per-sample FLOPs and bytes; errors name the bad layer.
func ExampleNewModel() {
	m, err := graph.NewModel(graph.ModelSpec{
		Name: "mlp",
		Layers: []graph.Layer{
			{Name: "in", FLOPs: 2e6, ParamBytes: 2e6, ActivationBytes: 2048, MemoryBytes: 4096},
			{Name: "hidden", FLOPs: 2e6, ParamBytes: 2e6, ActivationBytes: 2048, MemoryBytes: 4096},
			{Name: "out", FLOPs: 2e4, ParamBytes: 2e4, ActivationBytes: 20, MemoryBytes: 40},
		},
		Edges: []graph.Edge{{From: "in", To: "hidden"}, {From: "hidden", To: "out"}},
	})
	fmt.Println(m, err)

	_, err = graph.NewModel(graph.ModelSpec{
		Name:   "loop",
		Layers: []graph.Layer{{Name: "a"}, {Name: "b"}},
		Edges:  []graph.Edge{{From: "a", To: "b"}, {From: "b", To: "a"}},
	})
	fmt.Println(err)
	// Output:
	// mlp: 3 layers, 0.00201e9 params, 0.00402 GFLOP/sample <nil>
	// graph: invalid model: model "loop": layer "a" is on a cycle
}

// Transformers are described by their hyper-parameters; the zoo's are built the same way.
func ExampleTransformer() {
	m, err := graph.Transformer(graph.TransformerConfig{
		Name: "my-gpt", Layers: 24, Hidden: 2048, Heads: 16, SeqLen: 2048, Vocab: 50257, MaxPositions: 2048, TiedHead: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d layers, %.2f B parameters\n", m.Name(), m.NumLayers(), m.Params()/1e9)
	data, _ := json.Marshal(m)
	fmt.Println(strings.HasPrefix(string(data), `{"transformer":`))
	// Output:
	// my-gpt: 26 layers, 1.32 B parameters
	// true
}

func ExampleZooModel() {
	for _, name := range []string{"resnet50", "bert-large", "llama-7b"} {
		m, _ := graph.ZooModel(name)
		fmt.Printf("%-10s %3d layers %6.3f B params %8.1f GFLOP/sample\n", name, m.NumLayers(), m.Params()/1e9, m.FLOPs()/1e9)
	}
	// Output:
	// resnet50    18 layers  0.026 B params      8.2 GFLOP/sample
	// bert-large  26 layers  0.334 B params    367.0 GFLOP/sample
	// llama-7b    34 layers  6.738 B params  29261.6 GFLOP/sample
}

// A plan fixes DP x TP x PP and the batch; Compile validates it and the memory check says by how
// much a plan does not fit.
func ExampleCompile() {
	m, _ := graph.ZooModel("gpt3-13b")
	gpu := topology.A100().GPU
	for _, p := range []graph.Plan{
		{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8},
		{DP: 1, TP: 8, PP: 2, MicroBatches: 8, GlobalBatch: 8},
		{DP: 1, TP: 3, PP: 1, MicroBatches: 1, GlobalBatch: 1},
	} {
		c, err := graph.Compile(m, p)
		if err != nil {
			fmt.Println(err)
			continue
		}
		mem := c.Memory()
		fmt.Printf("%v: %.1f GB per GPU, fits: %v\n", p, mem.Total/1e9, c.CheckMemory(gpu) == nil)
	}
	// Output:
	// dp=8 tp=1 pp=1 mb=1 batch=8: 255.5 GB per GPU, fits: false
	// dp=1 tp=8 pp=2 mb=8 batch=8: 19.2 GB per GPU, fits: true
	// graph: invalid plan: tp 3 does not divide the 40 attention heads of model "gpt3-13b" (uneven_heads allows it)
}

// The worker graph has one vertex per worker and the bytes per iteration on each edge: what a
// partitioner maps onto servers.
func ExampleCompiled_WorkerGraph() {
	m, _ := graph.ZooModel("bert-large")
	c, _ := graph.Compile(m, graph.Plan{DP: 2, TP: 2, PP: 2, MicroBatches: 4, GlobalBatch: 32})
	g := c.WorkerGraph()
	fmt.Println(len(g.Workers), "workers,", len(g.Edges), "edges")
	for _, e := range g.Edges[:3] {
		fmt.Printf("%v %d-%d %.1f MB\n", e.Kind, e.U, e.V, e.Bytes/1e6)
	}
	fmt.Printf("DP total %.1f MB = 2 x 2(2-1)/2 x %.1f MB of gradients\n", g.TotalBytes(graph.DPEdge)/1e6, m.ParamBytes()/1e6)
	// Output:
	// 8 workers, 12 edges
	// tp 0-1 1811.9 MB
	// tp 2-3 1476.4 MB
	// tp 4-5 1811.9 MB
	// DP total 1336.4 MB = 2 x 2(2-1)/2 x 668.2 MB of gradients
}

// The iteration time of a placed job, broken down, with the constants of the GPU type it is
// placed on (fitted on A800 measurements, carried over to the A100); other jobs' traffic on
// shared links slows it.
func ExampleCompiled_IterationTime() {
	m, _ := graph.ZooModel("gpt3-6.7b")
	c, _ := graph.Compile(m, graph.Plan{DP: 4, TP: 8, PP: 2, MicroBatches: 16, GlobalBatch: 128})
	cluster, _ := topology.Uniform(topology.A100(), 8)
	placement := make([]topology.GPUID, 64) // rank r on GPU r: each TP group on one server
	for r := range placement {
		placement[r] = topology.GPUID(r)
	}
	b, _ := c.IterationTime(cluster, placement, graph.Options{})
	fmt.Println(b)
	busy := topology.LinkLoad{{Kind: topology.NICLink, Index: 0}: 3}
	b2, _ := c.IterationTime(cluster, placement, graph.Options{Load: busy})
	fmt.Printf("with 3 other flows on server 0's NICs: %.1f ms\n", b2.Total*1e3)
	// Output:
	// total 4960.294 ms = compute 3886.432 + bubble 283.315 + tp 638.291 + pp 8.312 + dp 133.795 (of 158.094) + optimizer 5.490 + overhead 4.660 (bottleneck stage 1)
	// with 3 other flows on server 0's NICs: 5387.8 ms
}

// DefaultPlan picks pure data parallelism when a replica fits, else tensor parallelism inside
// a server, then pipelining.
func ExampleDefaultPlan() {
	for _, c := range []struct {
		model string
		gpus  int
	}{{"resnet50", 16}, {"llama-7b", 16}, {"gpt3-13b", 64}} {
		m, _ := graph.ZooModel(c.model)
		p, err := graph.DefaultPlan(m, c.gpus, topology.T4())
		fmt.Println(c.model, p, err)
	}
	// Output:
	// resnet50 dp=16 tp=1 pp=1 mb=1 batch=1024 <nil>
	// llama-7b dp=2 tp=4 pp=2 mb=8 batch=16 ckpt <nil>
	// gpt3-13b dp=4 tp=4 pp=4 mb=16 batch=64 ckpt <nil>
}

// The constants of the cost model belong to the hardware: each GPU type has its own, fitted
// jointly across the models measured on it. Without Options.Efficiency a job gets the
// constants of the GPU type it is placed on.
func ExampleHardwareConstants() {
	for _, h := range graph.ShippedHardware() {
		fmt.Printf("%-5s fitted %-5v compute %.3f of peak\n", h.Family, h.Fitted, h.Efficiency.Compute)
	}
	m, _ := graph.ZooModel("bert-large")
	p := graph.Plan{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32}
	for _, spec := range []topology.ServerSpec{topology.A800(), topology.T4()} {
		cluster, _ := topology.Uniform(spec, 2)
		gpus := placed(cluster, "44")
		b, _ := graph.IterationTime(m, p, cluster, gpus, graph.Options{})
		fmt.Printf("%s: %.2f s per iteration\n", spec.GPU.Model, b.Total)
	}
	// Output:
	// a800  fitted true  compute 0.173 of peak
	// a100  fitted false compute 0.173 of peak
	// h100  fitted false compute 0.173 of peak
	// t4    fitted true  compute 0.173 of peak
	// A800-SXM4-80GB: 0.22 s per iteration
	// T4-16GB: 3.48 s per iteration
}

// The ring layout says how a ring's hops use the paths between servers. Under the default,
// ServerGrouped, spreading a job over more servers never makes its all-reduce faster; the
// Pollux T4 testbed's measurements call for HalfDuplexPairs, where a ring over two servers
// runs both directions over one path (each gets 1 / (2 - Efficiency.PairDuplex) of it, 0.59
// with the fitted constants), so "22" syncs more slowly than "1111". Printed: the exposed sync time (Breakdown.DP) of BERT fine-tuning at 8 samples per
// GPU with the testbed's fitted constants (graph.HardwareConstants("t4")); measured there: "22" 1.44 s, "1111" 0.66 s,
// "11" 0.76 s, "111" 0.56 s.
func ExampleRingLayout() {
	squad, _ := graph.ZooModel("bert-base-squad")
	m, _ := squad.WithDTypeBytes(4) // the measurements ran in fp32
	cluster, _ := topology.Uniform(topology.T4(), 4)
	eff, _ := graph.HardwareConstants("t4")
	for _, layout := range []graph.RingLayout{graph.ServerGrouped, graph.HalfDuplexPairs} {
		eff.RingLayout = layout
		fmt.Printf("%-17s", layout)
		for _, p := range []string{"22", "1111", "11", "111"} {
			gpus := placed(cluster, p)
			n := len(gpus)
			b, _ := graph.IterationTime(m, graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8 * n}, cluster, gpus, graph.Options{Efficiency: eff})
			fmt.Printf("  %-4s %.2f s", p, b.DP)
		}
		fmt.Println()
	}
	// Output:
	// server-grouped     22   0.69 s  1111 0.69 s  11   0.36 s  111  0.57 s
	// half-duplex-pairs  22   1.29 s  1111 0.69 s  11   0.76 s  111  0.57 s
}

// placed returns the GPUs of a placement string: digit i takes that many of server i's
// lowest-numbered GPUs ("44": four on each of two servers).
func placed(c *topology.Cluster, p string) []topology.GPUID {
	var out []topology.GPUID
	for i, d := range p {
		first, _ := c.GPUsOf(i)
		for j := range int(d - '0') {
			out = append(out, first+topology.GPUID(j))
		}
	}
	return out
}
