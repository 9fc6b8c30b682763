package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func TestPlanValidateErrors(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "m", Layers: chainLayers(4), Heads: 6})
	ok := Plan{DP: 2, TP: 2, PP: 2, MicroBatches: 4, GlobalBatch: 16}
	if err := ok.Validate(m); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod  func(*Plan)
		want string
	}{
		{func(p *Plan) { p.DP = 0 }, "dp 0 must be at least 1"},
		{func(p *Plan) { p.TP = -1 }, "tp -1"},
		{func(p *Plan) { p.PP = 0 }, "pp 0"},
		{func(p *Plan) { p.MicroBatches = 0 }, "micro_batches 0"},
		{func(p *Plan) { p.GlobalBatch = 0 }, "global_batch 0"},
		{func(p *Plan) { p.DP = 1 << 30 }, "too large"},
		{func(p *Plan) { p.GlobalBatch = 12 }, "dp 2 x micro_batches 4 = 8 does not divide global_batch 12"},
		{func(p *Plan) { p.PP = 5 }, "pp 5 stages outnumber the 4 layers"},
		{func(p *Plan) { p.TP = 4 }, "tp 4 does not divide the 6 attention heads"},
		{func(p *Plan) { p.ZeRO = 4 }, "zero stage 4"},
		{func(p *Plan) { p.Stages = []int{4} }, "stages lists 1 stages but pp is 2"},
		{func(p *Plan) { p.Stages = []int{0, 4} }, "stage 0 has 0 layers"},
		{func(p *Plan) { p.Stages = []int{1, 2} }, "stages cover 3 layers"},
	} {
		p := ok
		c.mod(&p)
		err := p.Validate(m)
		if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%v) = %v, want %q", p, err, c.want)
		}
		if _, err := Compile(m, p); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("Compile(%v) = %v", p, err)
		}
	}
	if err := ok.Validate(nil); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("nil model: %v", err)
	}
}

func TestPlanJSON(t *testing.T) {
	p := Plan{DP: 16, TP: 8, PP: 8, MicroBatches: 64, GlobalBatch: 1024, Checkpointing: true, ZeRO: 1, Stages: []int{6, 5, 5, 5, 5, 5, 5, 6}}
	data := mustJSON(t, p)
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("%s -> %+v, %v", data, back, err)
	}
	if got := p.String(); got != "dp=16 tp=8 pp=8 mb=64 batch=1024 zero=1 ckpt stages=[6 5 5 5 5 5 5 6]" {
		t.Errorf("String = %q", got)
	}
	if p.Workers() != 1024 || p.MicroBatchSize() != 1 || p.LocalBatch() != 64 {
		t.Errorf("workers %d micro %d local %d", p.Workers(), p.MicroBatchSize(), p.LocalBatch())
	}
}

func TestRankCoordsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Plan{DP: rapid.IntRange(1, 5).Draw(t, "dp"), TP: rapid.IntRange(1, 5).Draw(t, "tp"), PP: rapid.IntRange(1, 5).Draw(t, "pp")}
		n := p.Workers()
		for r := 0; r < n; r++ {
			d, s, tp := p.Coords(r)
			if p.Rank(d, s, tp) != r || p.StageOf(r) != s || d >= p.DP || s >= p.PP || tp >= p.TP {
				t.Fatalf("rank %d -> (%d,%d,%d)", r, d, s, tp)
			}
		}
		// TP groups and DP rings each cover every rank exactly once; TP groups are contiguous.
		for _, groups := range [][][]int{p.TPGroups(), p.DPRings()} {
			seen := make([]int, n)
			for _, g := range groups {
				for _, r := range g {
					seen[r]++
				}
			}
			for r, k := range seen {
				if k != 1 {
					t.Fatalf("rank %d appears %d times", r, k)
				}
			}
		}
		for _, g := range p.TPGroups() {
			for i := 1; i < len(g); i++ {
				if g[i] != g[i-1]+1 {
					t.Fatalf("TP group %v is not contiguous", g)
				}
			}
		}
		for _, ring := range p.DPRings() {
			_, s0, t0 := p.Coords(ring[0])
			for d, r := range ring {
				if dd, s, tp := p.Coords(r); dd != d || s != s0 || tp != t0 {
					t.Fatalf("DP ring %v mixes stages or shards", ring)
				}
			}
		}
	})
}

// bestSplit is the exact optimum of the min-max contiguous split by dynamic programming.
func bestSplit(w []float64, k int) float64 {
	n := len(w)
	prefix := make([]float64, n+1)
	for i, x := range w {
		prefix[i+1] = prefix[i] + x
	}
	// f[j][i]: best max over splitting the first i layers into j stages.
	f := make([][]float64, k+1)
	for j := range f {
		f[j] = make([]float64, n+1)
		for i := range f[j] {
			f[j][i] = math.Inf(1)
		}
	}
	f[0][0] = 0
	for j := 1; j <= k; j++ {
		for i := j; i <= n; i++ {
			for l := j - 1; l < i; l++ {
				f[j][i] = min(f[j][i], max(f[j-1][l], prefix[i]-prefix[l]))
			}
		}
	}
	return f[k][n]
}

func TestBalancedStagesOptimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		k := rapid.IntRange(1, n).Draw(t, "k")
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(rapid.IntRange(0, 50).Draw(t, "w"))
		}
		split := BalancedStages(w, k)
		if len(split) != k {
			t.Fatalf("%d stages, want %d", len(split), k)
		}
		sum, worst, at := 0, 0.0, 0
		for _, c := range split {
			if c < 1 {
				t.Fatalf("empty stage in %v", split)
			}
			s := 0.0
			for _, x := range w[at : at+c] {
				s += x
			}
			worst = max(worst, s)
			at += c
			sum += c
		}
		if sum != n {
			t.Fatalf("split %v covers %d of %d layers", split, sum, n)
		}
		if best := bestSplit(w, k); worst > best*(1+1e-9)+1e-9 {
			t.Fatalf("split %v of %v: heaviest stage %v, optimum %v", split, w, worst, best)
		}
	})
	if BalancedStages([]float64{1}, 2) != nil || BalancedStages(nil, 1) != nil {
		t.Error("impossible splits should give nil")
	}
}

func TestCompileStages(t *testing.T) {
	m := mustZoo(t, "gpt3-13b")
	c, err := Compile(m, Plan{DP: 1, TP: 1, PP: 4, MicroBatches: 8, GlobalBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stages()
	total := 0.0
	for i, s := range st {
		total += s.FLOPs
		if i > 0 && s.First != st[i-1].End {
			t.Fatalf("stages not contiguous: %+v", st)
		}
		if i < len(st)-1 && s.SendBytes != 2048*5140*2 {
			t.Errorf("stage %d sends %v bytes per sample, want s*h*2", i, s.SendBytes)
		}
	}
	if math.Abs(total-m.FLOPs()) > 1e-6*total || st[len(st)-1].SendBytes != 0 || st[len(st)-1].End != m.NumLayers() {
		t.Fatalf("stages %+v", st)
	}
	// An explicit split is kept.
	p := Plan{DP: 1, TP: 1, PP: 2, MicroBatches: 2, GlobalBatch: 2, Stages: []int{40, 2}}
	c, err = Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Plan().Stages; !slices.Equal(got, []int{40, 2}) || c.Stages()[1].First != 40 {
		t.Fatalf("explicit stages %v", got)
	}
}

// TestMemoryByHand checks the memory model on a two-layer model.
func TestMemoryByHand(t *testing.T) {
	layers := []Layer{
		{Name: "a", FLOPs: 1, ParamBytes: 400, ActivationBytes: 10, MemoryBytes: 100},
		{Name: "b", FLOPs: 1, ParamBytes: 200, ActivationBytes: 20, MemoryBytes: 60},
	}
	m := mustModel(t, ModelSpec{Name: "two", Layers: layers}) // 2-byte values: 300 parameters
	p := Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 2, GlobalBatch: 12}
	c, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	// b = 3 samples per micro-batch, one in flight without pipelining.
	want := Memory{Stage: 0, Params: 600, Grads: 600, Optimizer: 300 * 12, Activations: 3 * 160}
	want.Total = 600 + 600 + 3600 + 480
	if got := c.Memory(); got != want {
		t.Fatalf("memory %+v, want %+v", got, want)
	}
	// 16 bytes per parameter in mixed precision, and in fp32 too.
	if got := c.Memory(); got.Params+got.Grads+got.Optimizer != 16*m.Params() {
		t.Errorf("model states %v bytes for %v parameters", got.Params+got.Grads+got.Optimizer, m.Params())
	}
	m32 := mustModel(t, ModelSpec{Name: "two32", Layers: layers, DTypeBytes: 4})
	c32, _ := Compile(m32, p)
	if got := c32.Memory(); got.Params+got.Grads+got.Optimizer != 16*m32.Params() {
		t.Errorf("fp32 model states %v bytes for %v parameters", got.Params+got.Grads+got.Optimizer, m32.Params())
	}
	// ZeRO stages shard optimizer, then gradients, then parameters over DP = 2.
	prev := want.Total
	for z, shard := range []float64{3600 / 2, 600 / 2, 600 / 2} {
		p.ZeRO = z + 1
		c, _ := Compile(m, p)
		got := c.Memory().Total
		if math.Abs(prev-got-shard) > 1e-9 {
			t.Errorf("ZeRO-%d saves %v bytes, want %v", z+1, prev-got, shard)
		}
		prev = got
	}
	// Checkpointing keeps layer outputs (30 per sample) plus one layer's working set.
	p.ZeRO, p.Checkpointing = 0, true
	c, _ = Compile(m, p)
	if got := c.Memory().Activations; got != 3*30+3*100 {
		t.Errorf("checkpointed activations %v", got)
	}
	// Pipelining: stage 0 of 2 holds min(m, PP) = 2 micro-batches in flight, TP splits them.
	p = Plan{DP: 1, TP: 2, PP: 2, MicroBatches: 4, GlobalBatch: 8}
	c, _ = Compile(m, p)
	if got := c.StageMemory(0).Activations; got != 2*2*100/2 {
		t.Errorf("stage 0 activations %v", got)
	}
	if got := c.StageMemory(1).Activations; got != 1*2*60/2 {
		t.Errorf("stage 1 activations %v", got)
	}
}

func TestCheckMemory(t *testing.T) {
	m := mustZoo(t, "gpt3-13b")
	c, err := Compile(m, Plan{DP: 1, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	gpu := topology.A100().GPU
	err = c.CheckMemory(gpu)
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("13B on one GPU: %v", err)
	}
	short := c.Memory().Total - gpu.MemoryBytes
	if !strings.Contains(err.Error(), fmt.Sprintf("%.0f bytes", short)) || !strings.Contains(err.Error(), "stage 0") {
		t.Errorf("error %q does not say by how much (%v bytes)", err, short)
	}
	c, _ = Compile(m, Plan{DP: 1, TP: 8, PP: 2, MicroBatches: 8, GlobalBatch: 8})
	if err := c.CheckMemory(gpu); err != nil {
		t.Errorf("13B on 16 GPUs: %v", err)
	}
	if err := c.CheckMemory(topology.GPUSpec{MemoryBytes: math.NaN()}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NaN memory: %v", err)
	}
}
