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
