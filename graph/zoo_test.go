package graph

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestZooParameterCounts checks every zoo model's parameter count against the published total
// (or the released checkpoint's exact count) it cites.
func TestZooParameterCounts(t *testing.T) {
	cases := []struct {
		name   string
		want   float64
		relTol float64
		source string
	}{
		{"resnet18-cifar10", 11173962, 0, "kuangliu/pytorch-cifar ResNet18 (He et al. 2016 adapted to CIFAR)"},
		{"resnet50", 25557032, 0, "torchvision resnet50 (He et al. 2016: 25.6 M)"},
		{"vgg16", 138357544, 0, "torchvision vgg16 (Simonyan & Zisserman 2015: 138 M)"},
		{"inception-v3", 23834568, 0, "torchvision inception_v3 without the auxiliary classifier"},
		{"bert-base", 110e6, 0.02, "Devlin et al. 2019: 110 M"},
		{"bert-large", 340e6, 0.03, "Devlin et al. 2019: 340 M"},
		{"gpt2-1.5b", 1557611200, 0, "released GPT-2 XL checkpoint (Radford et al. 2019 report 1542 M)"},
		{"gpt2-1.5b", 1542e6, 0.02, "Radford et al. 2019, Table 2"},
		{"gpt3-6.7b", 6.7e9, 0.01, "Brown et al. 2020, Table 2.1"},
		{"gpt3-13b", 13.0e9, 0.01, "Brown et al. 2020, Table 2.1"},
		{"llama-7b", 6738415616, 0, "released LLaMA-7B checkpoint (Touvron et al. 2023: 6.7 B)"},
		{"t5-3b", 2851598336, 0.00001, "released t5-3b checkpoint (Raffel et al. 2020: 3 B); less the relative-position tables and encoder final norm"},
		{"t5-3b", 3e9, 0.06, "Raffel et al. 2020: 3 B"},
		{"t5-1.2b", 1240809472, 0.0002, "the Rubick artifact's T5 (validation_t5.py: 1,240,809,472)"},
		{"llama-30b", 32528943616, 0, "released LLaMA-30B checkpoint (Touvron et al. 2023: 32.5 B)"},
		{"roberta-large", 355359744 - (1024*1024 + 1024), 0, "released roberta-large (355,359,744) less its pooler"},
		{"vit-base", 86567656, 0, "torchvision vit_b_16 (Dosovitskiy et al. 2021: 86 M)"},
		{"bert-base-squad", 108891648 + 2*768 + 2, 0, "bert-base with a 2-output span head for its MLM head"},
		// No published totals: independent hand counts of the documented configurations.
		{"deepspeech2-small", dsHandCount(), 0, "hand count of the documented configuration"},
		{"ncf", 6040*160 + 3706*160 + (256*128 + 128) + (128*64 + 64) + (64*32 + 32) + (64 + 1), 0, "hand count of the Pollux artifact's NeuMF-end on MovieLens-1M"},
	}
	for _, c := range cases {
		got := mustZoo(t, c.name).Params()
		if rel := math.Abs(got-c.want) / c.want; rel > c.relTol {
			t.Errorf("%s: %.0f parameters, want %.0f within %.3g%% (%s): off by %.3g%%", c.name, got, c.want, 100*c.relTol, c.source, 100*rel)
		}
	}
}

func dsHandCount() float64 {
	// The Pollux artifact's model.py; the convolutions' biases (2 x 32), which the batch norms
	// after them make redundant, are left out as for every batch-normed convolution of the zoo.
	conv1 := 41*11*1*32 + 2*32
	conv2 := 21*11*32*32 + 2*32
	gru := func(in, h int) int { return 2 * (3*(in*h+h*h) + 6*h) }
	bn := 2 * 800
	fc := bn + 800*29
	return float64(conv1 + conv2 + gru(32*41, 800) + 4*(bn+gru(800, 800)) + fc)
}

// TestZooFLOPs checks forward FLOPs per sample against published multiply-add counts (x 2) and,
// for transformers, against Megatron-LM's closed form (Narayanan et al. 2021, section 5.1:
// 96 B s L h^2 (1 + s / 6h + V / 16 L h) for four passes, the logit layer counted for three):
// per sample forward 24 L s h^2 (1 + s / 6h) + 2 s h V.
func TestZooFLOPs(t *testing.T) {
	cases := []struct {
		name   string
		want   float64
		relTol float64
	}{
		{"resnet18-cifar10", 2 * 0.556e9, 0.01},
		{"resnet50", 2 * 4.09e9, 0.01}, // torchvision: 4.09 GMACs
		{"vgg16", 2 * 15.47e9, 0.01},   // torchvision: 15.47 GMACs
		{"inception-v3", 2 * 5.71e9, 0.01},
		{"vit-base", 2 * 17.56e9, 0.01}, // torchvision vit_b_16: 17.56 GMACs
	}
	for _, c := range cases {
		got := mustZoo(t, c.name).FLOPs()
		if rel := math.Abs(got-c.want) / c.want; rel > c.relTol {
			t.Errorf("%s: %.4g FLOPs per sample, want %.4g within %.0f%%", c.name, got, c.want, 100*c.relTol)
		}
	}
	megatron := func(L, h, s, V float64) float64 { return 24*L*s*h*h*(1+s/(6*h)) + 2*s*h*V }
	for _, c := range []struct {
		name       string
		L, h, s, V float64
	}{
		{"gpt2-1.5b", 48, 1600, 1024, 50257},
		{"gpt3-6.7b", 32, 4096, 2048, 50257},
		{"gpt3-13b", 40, 5140, 2048, 50257},
	} {
		got, want := mustZoo(t, c.name).FLOPs(), megatron(c.L, c.h, c.s, c.V)
		if rel := math.Abs(got-want) / want; rel > 0.01 {
			t.Errorf("%s: %.4g FLOPs per sample, Megatron's formula %.4g: off by %.2f%%", c.name, got, want, 100*rel)
		}
	}
}

func TestZooModels(t *testing.T) {
	names := ZooNames()
	want := []string{"resnet18-cifar10", "resnet50", "vgg16", "inception-v3", "bert-base", "bert-base-squad", "bert-large", "gpt2-1.5b",
		"gpt3-6.7b", "gpt3-13b", "llama-7b", "llama-30b", "t5-1.2b", "t5-3b", "roberta-large", "vit-base", "deepspeech2-small", "ncf"}
	if !slices.Equal(names, want) {
		t.Fatalf("ZooNames = %v", names)
	}
	for i, m := range Zoo() {
		if m.ZooName() != names[i] || m.Name() != names[i] {
			t.Errorf("zoo model %d is %q/%q", i, m.Name(), m.ZooName())
		}
		if m.NumLayers() < 6 {
			t.Errorf("%s has only %d layers: too few to split into pipeline stages", m.Name(), m.NumLayers())
		}
		for i := 0; i < m.NumLayers(); i++ {
			l := m.Layer(i)
			if l.FLOPs < 0 || l.ParamBytes < 0 || l.ActivationBytes <= 0 || l.MemoryBytes <= 0 {
				t.Errorf("%s layer %q has sizes %+v", m.Name(), l.Name, l)
			}
		}
	}
	// Transformer granularity: embedding, one layer per block, head.
	if m := mustZoo(t, "gpt3-13b"); m.NumLayers() != 42 || m.Layer(0).Name != "embedding" || m.Layer(41).Name != "head" {
		t.Errorf("gpt3-13b layers: %d, %q ... %q", m.NumLayers(), m.Layer(0).Name, m.Layer(m.NumLayers()-1).Name)
	}
	// T5's decoder blocks depend on the encoder's output.
	t5 := mustZoo(t, "t5-3b")
	crossEdges := 0
	for _, e := range t5.Edges() {
		if strings.HasPrefix(t5.Layer(e[0]).Name, "encoder23") && strings.HasPrefix(t5.Layer(e[1]).Name, "decoder") {
			crossEdges++
		}
	}
	if crossEdges != 24 {
		t.Errorf("t5-3b: %d edges from the encoder's last block to decoder blocks, want 24", crossEdges)
	}
	if _, err := ZooModel("gpt-4"); !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "llama-7b") {
		t.Errorf("unknown zoo name: %v", err)
	}
}

func TestTransformerErrors(t *testing.T) {
	base := TransformerConfig{Name: "x", Layers: 2, Hidden: 64, Heads: 4, SeqLen: 8, Vocab: 10}
	for _, c := range []struct {
		mod  func(*TransformerConfig)
		want string
	}{
		{func(c *TransformerConfig) { c.Layers = 0 }, "layers 0"},
		{func(c *TransformerConfig) { c.Hidden = -1 }, "hidden -1"},
		{func(c *TransformerConfig) { c.Heads = 5 }, "heads 5 do not divide hidden 64"},
		{func(c *TransformerConfig) { c.FFN = -3 }, "ffn -3"},
		{func(c *TransformerConfig) { c.DTypeBytes = math.Inf(1) }, "dtype_bytes"},
	} {
		cfg := base
		c.mod(&cfg)
		if _, err := Transformer(cfg); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Transformer(%+v) = %v, want %q", cfg, err, c.want)
		}
	}
	// An explicit head width lifts the divisibility constraint.
	cfg := base
	cfg.Heads, cfg.HeadDim = 5, 16
	if _, err := Transformer(cfg); err != nil {
		t.Error(err)
	}
}

// TestTransformerBlockByHand checks one block of a small configuration against a count by hand.
func TestTransformerBlockByHand(t *testing.T) {
	m, err := Transformer(TransformerConfig{Name: "hand", Layers: 1, Hidden: 8, Heads: 2, SeqLen: 4, Vocab: 10, DTypeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := m.Layer(1)
	// Q,K,V,O: 4*8*8 weights + 3*8+8 biases; MLP 8x32 + 32 + 32x8 + 8; two LayerNorms 2*16.
	if want := 4.0*64 + 32 + 256 + 32 + 256 + 8 + 32; b.ParamBytes != want {
		t.Errorf("block params %v, want %v", b.ParamBytes, want)
	}
	// 2 s (4 h A + 2 h F) + 4 s^2 A = 2*4*(256+512) + 4*16*8.
	if want := 2.0*4*(256+512) + 4*16*8; b.FLOPs != want {
		t.Errorf("block FLOPs %v, want %v", b.FLOPs, want)
	}
	if b.ActivationBytes != 4*8 || b.TPAllReduces != 2 {
		t.Errorf("block activation %v, all-reduces %d", b.ActivationBytes, b.TPAllReduces)
	}
	// Korthikanti et al.: s h (34 + 5 a s / h) bytes at 2-byte activations; scaled to 1 byte.
	if want := 0.5 * (4 * 8 * (34 + 5*2*4/8.0)); math.Abs(b.MemoryBytes-want) > 1e-9 {
		t.Errorf("block memory %v, want %v", b.MemoryBytes, want)
	}
}
