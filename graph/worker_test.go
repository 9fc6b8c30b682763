package graph

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// tinyTransformer is a small transformer for property tests: few layers, so plans stay small.
func tinyTransformer(t interface {
	Helper()
	Fatal(...any)
}, layers int) *Model {
	t.Helper()
	m, err := Transformer(TransformerConfig{Name: "tiny", Layers: layers, Hidden: 96, Heads: 12, SeqLen: 32, Vocab: 500})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// genPlan draws a valid plan for a model with the given layers (heads 12).
func genPlan(t *rapid.T, layers int) Plan {
	p := Plan{
		DP: rapid.IntRange(1, 6).Draw(t, "dp"),
		TP: rapid.SampledFrom([]int{1, 2, 3, 4}).Draw(t, "tp"),
		PP: rapid.IntRange(1, min(4, layers)).Draw(t, "pp"),
	}
	p.MicroBatches = rapid.IntRange(1, 6).Draw(t, "m")
	p.GlobalBatch = p.DP * p.MicroBatches * rapid.IntRange(1, 4).Draw(t, "b")
	p.ZeRO = rapid.IntRange(0, 3).Draw(t, "zero")
	if p.ZeRO > 0 && rapid.Bool().Draw(t, "offload") {
		p.Offload = true
		p.CPUThreads = rapid.IntRange(0, 8).Draw(t, "threads")
	}
	p.Checkpointing = rapid.Bool().Draw(t, "ckpt")
	return p
}

// checkDPVolume checks the worker graph's DP traffic against the model: for every DP ring (one
// per stage and TP shard) of n workers, the ring's edges sum to n x 2(n-1)/n x G, with G the
// shard's gradient bytes computed from the model's layers (x 1.5 under ZeRO-3): each worker
// sends 2(n-1)/n x G per iteration. The whole graph's DP edges sum to DP x 2(DP-1)/DP times
// the model's gradient bytes.
func checkDPVolume(g *WorkerGraph, m *Model) error {
	p := g.Plan
	n := float64(p.DP)
	zf := 1.0
	if p.ZeRO == 3 {
		zf = 1.5
	}
	perRing := map[[2]int]float64{}
	for _, e := range g.Edges {
		if e.Kind != DPEdge {
			continue
		}
		wu, wv := g.Workers[e.U], g.Workers[e.V]
		if wu.PP != wv.PP || wu.TP != wv.TP || wu.DP == wv.DP {
			return fmt.Errorf("DP edge %+v joins %+v and %+v", e, wu, wv)
		}
		perRing[[2]int{wu.PP, wu.TP}] += e.Bytes
	}
	first, total := 0, 0.0
	for s, nl := range p.Stages {
		G := 0.0
		for i := first; i < first+nl; i++ {
			G += m.Layer(i).ParamBytes
		}
		first += nl
		G = zf * G / float64(p.TP)
		for t := 0; t < p.TP; t++ {
			got := perRing[[2]int{s, t}]
			want := n * 2 * (n - 1) / n * G
			if math.Abs(got-want) > 1e-9*want {
				return fmt.Errorf("DP ring (stage %d, shard %d) of %d workers carries %v bytes, want n x 2(n-1)/n x %v = %v", s, t, p.DP, got, G, want)
			}
			total += got
		}
	}
	if want := n * 2 * (n - 1) / n * zf * m.ParamBytes(); math.Abs(total-want) > 1e-9*want || math.Abs(g.TotalBytes(DPEdge)-want) > 1e-9*want {
		return fmt.Errorf("DP edges total %v, want DP x 2(DP-1)/DP x gradient bytes = %v", total, want)
	}
	return nil
}

func TestWorkerGraphProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		layers := rapid.IntRange(1, 5).Draw(t, "layers")
		m := tinyTransformer(t, layers)
		p := genPlan(t, m.NumLayers())
		c, err := Compile(m, p)
		if err != nil {
			t.Fatal(err)
		}
		g := c.WorkerGraph()
		if len(g.Workers) != p.Workers() {
			t.Fatalf("%d workers for %v", len(g.Workers), p)
		}
		for r, w := range g.Workers {
			if w.Rank != r || p.Rank(w.DP, w.PP, w.TP) != r {
				t.Fatalf("worker %d is %+v", r, w)
			}
		}
		if err := checkDPVolume(g, m); err != nil {
			t.Fatal(err)
		}
		// Edges are undirected pairs U < V, each once, of the kind their endpoints imply.
		seen := map[[2]int]bool{}
		tpTotal := 0.0
		for _, e := range g.Edges {
			if e.U >= e.V || seen[[2]int{e.U, e.V}] || !(e.Bytes > 0) {
				t.Fatalf("edge %+v (duplicate %v)", e, seen[[2]int{e.U, e.V}])
			}
			seen[[2]int{e.U, e.V}] = true
			u, v := g.Workers[e.U], g.Workers[e.V]
			switch e.Kind {
			case TPEdge:
				tpTotal += e.Bytes
				if u.DP != v.DP || u.PP != v.PP {
					t.Fatalf("TP edge %+v joins %+v and %+v", e, u, v)
				}
			case PPEdge:
				if u.DP != v.DP || u.TP != v.TP || v.PP != u.PP+1 {
					t.Fatalf("PP edge %+v joins %+v and %+v", e, u, v)
				}
				want := 2 * float64(p.MicroBatches) * float64(p.MicroBatchSize()) * c.Stages()[u.PP].SendBytes / float64(p.TP)
				if math.Abs(e.Bytes-want) > 1e-9*want {
					t.Fatalf("PP edge %+v, want %v bytes", e, want)
				}
			}
		}
		// TP: every group's ring carries TP x 2(TP-1)/TP x the all-reduced bytes of its stage.
		if p.TP > 1 {
			n := float64(p.TP)
			passes := 2.0
			if p.Checkpointing {
				passes = 3
			}
			want := 0.0
			for _, st := range c.Stages() {
				want += float64(p.DP) * n * 2 * (n - 1) / n * passes * float64(p.MicroBatches*p.MicroBatchSize()) * st.TPAllReduceBytes
			}
			if math.Abs(tpTotal-want) > 1e-9*want {
				t.Fatalf("TP edges total %v, want %v", tpTotal, want)
			}
		} else if tpTotal != 0 {
			t.Fatalf("TP edges without TP")
		}
		// Every worker's edges are reachable from the adjacency lists.
		adj := g.Adjacency()
		deg := 0
		for v, list := range adj {
			for _, i := range list {
				if g.Edges[i].U != v && g.Edges[i].V != v {
					t.Fatalf("adjacency of %d lists edge %+v", v, g.Edges[i])
				}
			}
			deg += len(list)
		}
		if deg != 2*len(g.Edges) {
			t.Fatalf("adjacency degrees sum to %d for %d edges", deg, len(g.Edges))
		}
	})
}

// TestDPVolumeCatchesWrongVariant shows checkDPVolume rejects a graph whose DP ring edges carry
// the gradient bytes themselves (the naive "send everything") rather than 2(n-1)/n of them.
func TestDPVolumeCatchesWrongVariant(t *testing.T) {
	m := tinyTransformer(t, 3)
	c, err := Compile(m, Plan{DP: 4, TP: 2, PP: 2, MicroBatches: 2, GlobalBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	g := c.WorkerGraph()
	if err := checkDPVolume(g, m); err != nil {
		t.Fatal(err)
	}
	for i, e := range g.Edges {
		if e.Kind == DPEdge {
			g.Edges[i].Bytes = e.Bytes / (2 * 3.0 / 4) // G instead of 2(n-1)/n x G
		}
	}
	if err := checkDPVolume(g, m); err == nil {
		t.Fatal("wrong DP volume not caught")
	}
}

func TestWorkerGraphByHand(t *testing.T) {
	layers := []Layer{
		{Name: "a", FLOPs: 1, ParamBytes: 1000, ActivationBytes: 8, MemoryBytes: 1, TPAllReduces: 1},
		{Name: "b", FLOPs: 1, ParamBytes: 3000, ActivationBytes: 4, MemoryBytes: 1, TPAllReduces: 2},
	}
	m := mustModel(t, ModelSpec{Name: "hand", Layers: layers})
	c, err := Compile(m, Plan{DP: 2, TP: 2, PP: 2, MicroBatches: 3, GlobalBatch: 12})
	if err != nil {
		t.Fatal(err)
	}
	g := c.WorkerGraph()
	// b = 2 samples per micro-batch, m = 3. Ranks (dp*2+pp)*2+tp.
	want := []WorkerEdge{
		// TP pairs: one edge per group carrying both directions: 2 x (2(1)/2 x B), B = 2 passes x 3 x 2 x bytes.
		// Stage 1 all-reduces twice 4 bytes per sample, as many bytes as stage 0's once 8.
		{0, 1, 2 * 2 * 3 * 2 * 8, TPEdge}, {2, 3, 2 * 2 * 3 * 2 * 8, TPEdge}, {4, 5, 2 * 2 * 3 * 2 * 8, TPEdge}, {6, 7, 2 * 2 * 3 * 2 * 8, TPEdge},
		// PP: 2 x m x b x 8 bytes / TP between (d, 0, t) and (d, 1, t).
		{0, 2, 2 * 3 * 2 * 8 / 2, PPEdge}, {1, 3, 2 * 3 * 2 * 8 / 2, PPEdge}, {4, 6, 2 * 3 * 2 * 8 / 2, PPEdge}, {5, 7, 2 * 3 * 2 * 8 / 2, PPEdge},
		// DP pairs: 2 x (2(1)/2 x G), G = stage params / TP.
		{0, 4, 2 * 500, DPEdge}, {1, 5, 2 * 500, DPEdge}, {2, 6, 2 * 1500, DPEdge}, {3, 7, 2 * 1500, DPEdge},
	}
	if len(g.Edges) != len(want) {
		t.Fatalf("%d edges: %+v", len(g.Edges), g.Edges)
	}
	for i := range want {
		if g.Edges[i] != want[i] {
			t.Errorf("edge %d = %+v, want %+v", i, g.Edges[i], want[i])
		}
	}
	if TPEdge.String() != "tp" || PPEdge.String() != "pp" || DPEdge.String() != "dp" {
		t.Error("EdgeKind names")
	}
	data := mustJSON(t, g)
	var back WorkerGraph
	if err := json.Unmarshal(data, &back); err != nil || len(back.Edges) != len(g.Edges) || back.Edges[11] != g.Edges[11] {
		t.Fatalf("worker graph JSON round trip: %v", err)
	}
	if !strings.Contains(string(data), `"kind":"dp"`) {
		t.Errorf("edge kinds in JSON: %s", data)
	}
	var k EdgeKind
	if k.UnmarshalText([]byte("xx")) == nil {
		t.Error("unknown edge kind accepted")
	}
	if _, err := EdgeKind(7).MarshalText(); err == nil {
		t.Error("edge kind 7 marshalled")
	}
}
