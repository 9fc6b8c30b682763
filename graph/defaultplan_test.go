package graph

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func TestDefaultPlan(t *testing.T) {
	a100, t4 := topology.A100(), topology.T4()
	cases := []struct {
		model  string
		gpus   int
		spec   topology.ServerSpec
		tp, pp int
	}{
		{"resnet50", 8, a100, 1, 1},    // fits: pure DP
		{"bert-large", 3, t4, 1, 1},    // any GPU count works for pure DP
		{"gpt3-13b", 1024, a100, 4, 1}, // 208 GB of model states: TP inside a server
		{"gpt3-13b", 64, t4, 4, 4},     // T4: 4 GPUs per server, then pipeline
		{"llama-7b", 16, a100, 2, 1},   // 108 GB of model states over 2
		{"gpt2-1.5b", 4, t4, 1, 2},     // 25 heads: TP 5 does not fit in a 4-GPU server
	}
	for _, c := range cases {
		m := mustZoo(t, c.model)
		p, err := DefaultPlan(m, c.gpus, c.spec)
		if err != nil {
			t.Errorf("%s on %d %s: %v", c.model, c.gpus, c.spec.GPU.Model, err)
			continue
		}
		if p.TP != c.tp || p.PP != c.pp || p.Workers() != c.gpus {
			t.Errorf("%s on %d %s: %v, want tp %d pp %d", c.model, c.gpus, c.spec.GPU.Model, p, c.tp, c.pp)
		}
		comp, err := Compile(m, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := comp.CheckMemory(c.spec.GPU); err != nil {
			t.Errorf("%s: default plan %v does not fit: %v", c.model, p, err)
		}
	}
	_, err := DefaultPlan(mustZoo(t, "gpt3-13b"), 1, t4)
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "bytes") || !strings.Contains(err.Error(), "gpt3-13b") {
		t.Errorf("13B on one T4: %v", err)
	}
	if _, err := DefaultPlan(mustZoo(t, "ncf"), 0, a100); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("0 GPUs: %v", err)
	}
	if _, err := DefaultPlan(nil, 1, a100); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("nil model: %v", err)
	}
}

// TestDefaultPlanProperty: a returned plan is valid, uses every GPU, fits, keeps TP inside a
// server, and is pure DP whenever pure DP fits.
func TestDefaultPlanProperty(t *testing.T) {
	names := ZooNames()
	rapid.Check(t, func(t *rapid.T) {
		m := mustZoo(t, rapid.SampledFrom(names).Draw(t, "model"))
		spec := rapid.SampledFrom([]topology.ServerSpec{topology.A100(), topology.H100(), topology.T4()}).Draw(t, "spec")
		gpus := rapid.IntRange(1, 96).Draw(t, "gpus")
		p, err := DefaultPlan(m, gpus, spec)
		dp := Plan{DP: gpus, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: gpus * m.MicroBatch()}
		c, _ := Compile(m, dp)
		pureFits := c.CheckMemory(spec.GPU) == nil
		if err != nil {
			if pureFits || !errors.Is(err, ErrOutOfMemory) && !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("%s on %d: %v (pure DP fits: %v)", m.Name(), gpus, err, pureFits)
			}
			return
		}
		if p.Workers() != gpus || p.TP > spec.GPUs {
			t.Fatalf("%s on %d: plan %v", m.Name(), gpus, p)
		}
		if pureFits && (p.TP != 1 || p.PP != 1 || p.Checkpointing) {
			t.Fatalf("%s on %d: plan %v though pure DP fits", m.Name(), gpus, p)
		}
		comp, err := Compile(m, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := comp.CheckMemory(spec.GPU); err != nil {
			t.Fatal(err)
		}
	})
}
