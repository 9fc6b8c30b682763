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
	// graph: invalid plan: tp 3 does not divide the 40 attention heads of model "gpt3-13b"
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

// The iteration time of a placed job, broken down; other jobs' traffic on shared links slows
// it.
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
	// total 1571.337 ms = compute 1164.371 + bubble 91.335 + tp 293.548 + pp 3.435 + dp 18.648 (of 64.461) + overhead 0.000 (bottleneck stage 1)
	// with 3 other flows on server 0's NICs: 1775.3 ms
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

// Measured step times under different placements calibrate the model's constants.
func ExampleCalibrate() {
	csv := `placement,local_bsz,step_time,sync_time
1,32,0.20,0.001
1,128,0.62,0.001
4,32,0.22,0.01
4,128,0.66,0.01
11,32,0.45,0.25
11,128,0.70,0.08
22,32,0.50,0.30
22,128,0.78,0.12
`
	rows, err := graph.ReadPlacements(strings.NewReader(csv), "example.csv")
	if err != nil {
		panic(err)
	}
	m, _ := graph.CalibrationModel(graph.DatasetImageNet)
	rep, _ := graph.Calibrate(m, rows, topology.T4())
	fmt.Printf("step error %.0f%%, fitted compute efficiency %.2f\n", 100*rep.StepError, rep.Efficiency.Compute)
	// Output:
	// step error 5%, fitted compute efficiency 0.08
}

// The ring layout says how a ring's hops use the paths between servers. Under the default,
// ServerGrouped, spreading a job over more servers never makes its all-reduce faster; the
// Pollux T4 testbed's measurements call for HalfDuplexPairs, where a ring over two servers
// runs both directions over one path at half the bandwidth, so "22" syncs more slowly than
// "1111". Printed: the exposed sync time (Breakdown.DP) of BERT fine-tuning at 8 samples per
// GPU with the testbed's calibrated constants; measured there: "22" 1.44 s, "1111" 0.66 s,
// "11" 0.76 s, "111" 0.56 s.
func ExampleRingLayout() {
	m, _ := graph.CalibrationModel(graph.DatasetBERT)
	cluster, _ := topology.Uniform(topology.T4(), 4)
	eff, _ := graph.Calibrated("bert-base")
	for _, layout := range []graph.RingLayout{graph.ServerGrouped, graph.HalfDuplexPairs} {
		eff.RingLayout = layout
		fmt.Printf("%-17s", layout)
		for _, p := range []string{"22", "1111", "11", "111"} {
			gpus, _ := graph.PlacementGPUs(cluster, p)
			n := len(gpus)
			b, _ := graph.IterationTime(m, graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8 * n}, cluster, gpus, graph.Options{Efficiency: eff})
			fmt.Printf("  %-4s %.2f s", p, b.DP)
		}
		fmt.Println()
	}
	// Output:
	// server-grouped     22   0.64 s  1111 0.64 s  11   0.34 s  111  0.54 s
	// half-duplex-pairs  22   1.56 s  1111 0.64 s  11   0.95 s  111  0.54 s
}
