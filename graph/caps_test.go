package graph

import (
	"errors"
	"strings"
	"testing"
)

// TestTransformerCaps: sizes far beyond any trained model are refused at once with an error
// naming the field, before any layer is built.
func TestTransformerCaps(t *testing.T) {
	ok := TransformerConfig{Name: "t", Layers: 2, Hidden: 64, Heads: 4, SeqLen: 16, Vocab: 100}
	if _, err := Transformer(ok); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*TransformerConfig)
		want string
	}{
		{func(c *TransformerConfig) { c.Layers = 1e9 }, "layers 1000000000 is more than 16384"},
		{func(c *TransformerConfig) { c.Hidden, c.SeqLen = 2e9, 2e9 }, "hidden 2000000000 is more than"},
		{func(c *TransformerConfig) { c.SeqLen = 2e9 }, "seq_len 2000000000 is more than"},
		{func(c *TransformerConfig) { c.Layers, c.DecoderLayers = 10000, 10000 }, "10000 encoder and 10000 decoder layers are more than 16384"},
		{func(c *TransformerConfig) { c.Heads, c.HeadDim = 1<<11, 1<<11 }, "heads 2048 x head_dim 2048"},
		{func(c *TransformerConfig) { c.Vocab = 1 << 30 }, "vocab 1073741824 is more than"},
	} {
		cfg := ok
		c.edit(&cfg)
		_, err := Transformer(cfg)
		if !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", cfg, err, c.want)
		}
	}
}

// TestUnevenHeads: T5-3B's 3-way tensor parallelism (32 heads) is expressible with
// UnevenHeads, the busiest rank holding 11 of the 32 heads; without it, or with more ranks
// than heads, the plan is invalid.
func TestUnevenHeads(t *testing.T) {
	m, err := ZooModel("t5-3b")
	if err != nil {
		t.Fatal(err)
	}
	p := Plan{DP: 1, TP: 3, PP: 1, MicroBatches: 1, GlobalBatch: 4}
	if _, err := Compile(m, p); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "uneven_heads allows it") {
		t.Errorf("tp 3 without uneven heads: %v", err)
	}
	p.UnevenHeads = true
	c3, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	p.TP = 4
	c4, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	if c3.tpDiv != 32.0/11 || c4.tpDiv != 4 {
		t.Errorf("tp 3: busiest rank 1/%v of a layer (want 11/32); tp 4: 1/%v", c3.tpDiv, c4.tpDiv)
	}
	if m3, m4 := c3.Memory().Params, c4.Memory().Params; !(m3 > m4*1.3 && m3 < m4*1.4) {
		t.Errorf("parameters per GPU: tp 3 %v, tp 4 %v", m3, m4)
	}
	p.TP = 33
	if _, err := Compile(m, p); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "more than the 32 attention heads") {
		t.Errorf("tp 33: %v", err)
	}
	if !strings.Contains(Plan{DP: 1, TP: 3, PP: 1, MicroBatches: 1, GlobalBatch: 4, UnevenHeads: true}.String(), "uneven-heads") {
		t.Error("String does not say uneven-heads")
	}
}
