package graph

import (
	"fmt"
	"strings"
)

// zooEntry builds one zoo model: build takes the bytes per value (2 by default) and, for
// transformers, the sequence length (0: the entry's own).
type zooEntry struct {
	name  string
	build func(dtype float64, seq int) (*Model, error)
}

// Transformer configurations of the zoo, with their sources. Sequence lengths are those the
// models were (pre-)trained with.
var (
	// Devlin et al. 2019 (BERT), section 3: BERT-base L=12, H=768, A=12 (110 M parameters);
	// WordPiece vocabulary of 30,522, 512 learned positions, 2 segment types, MLM head tied to
	// the embeddings; phase-2 pre-training sequence length 512.
	bertBaseConfig = TransformerConfig{Name: "bert-base", Layers: 12, Hidden: 768, Heads: 12, SeqLen: 512,
		Vocab: 30522, MaxPositions: 512, TokenTypes: 2, TiedHead: true, MicroBatch: 8}
	// Devlin et al. 2019: BERT-large L=24, H=1024, A=16 (340 M parameters).
	bertLargeConfig = TransformerConfig{Name: "bert-large", Layers: 24, Hidden: 1024, Heads: 16, SeqLen: 512,
		Vocab: 30522, MaxPositions: 512, TokenTypes: 2, TiedHead: true, MicroBatch: 4}
	// Radford et al. 2019 (GPT-2), Table 2: the largest model, 48 layers, d_model 1600
	// (1542 M parameters as reported; 1,557,611,200 in the released checkpoint), 25 heads of 64,
	// context 1024, BPE vocabulary 50,257, tied output head.
	gpt2XLConfig = TransformerConfig{Name: "gpt2-1.5b", Layers: 48, Hidden: 1600, Heads: 25, SeqLen: 1024,
		Vocab: 50257, MaxPositions: 1024, TiedHead: true, MicroBatch: 2}
	// Brown et al. 2020 (GPT-3), Table 2.1: "GPT-3 6.7B" n_layers 32, d_model 4096, n_heads
	// 32, d_head 128; context 2048; GPT-2 vocabulary.
	gpt3_6_7BConfig = TransformerConfig{Name: "gpt3-6.7b", Layers: 32, Hidden: 4096, Heads: 32, HeadDim: 128,
		SeqLen: 2048, Vocab: 50257, MaxPositions: 2048, TiedHead: true, MicroBatch: 1}
	// Brown et al. 2020, Table 2.1: "GPT-3 13B" n_layers 40, d_model 5140, n_heads 40, d_head
	// 128.
	gpt3_13BConfig = TransformerConfig{Name: "gpt3-13b", Layers: 40, Hidden: 5140, Heads: 40, HeadDim: 128,
		SeqLen: 2048, Vocab: 50257, MaxPositions: 2048, TiedHead: true, MicroBatch: 1}
	// Touvron et al. 2023 (LLaMA), Table 2: 7B has dimension 4096, 32 heads, 32 layers; SwiGLU
	// feed-forward of 2/3 x 4d rounded to 11,008; RMSNorm, no biases, rotary positions, untied
	// output; SentencePiece vocabulary of 32,000; context 2048 (6,738,415,616 parameters in the
	// released checkpoint).
	llama7BConfig = TransformerConfig{Name: "llama-7b", Layers: 32, Hidden: 4096, Heads: 32, FFN: 11008, GatedFFN: true,
		SeqLen: 2048, Vocab: 32000, NoBias: true, MicroBatch: 1}
	// Raffel et al. 2020 (T5), section 3.7 / Table 14: T5-3B has 24 encoder and 24 decoder
	// blocks, d_model 1024, d_ff 16,384, 32 heads of d_kv 128, ReLU feed-forward, no biases,
	// relative positions, SentencePiece vocabulary of 32,128 shared with a tied head (2.85 B
	// parameters in the released checkpoint); inputs of 512 tokens, span-corruption targets of
	// about 114 tokens (128 here).
	t5_3BConfig = TransformerConfig{Name: "t5-3b", Layers: 24, DecoderLayers: 24, Hidden: 1024, Heads: 32, HeadDim: 128,
		FFN: 16384, SeqLen: 512, DecoderSeqLen: 128, Vocab: 32128, TiedHead: true, NoBias: true, MicroBatch: 2}
	// BERT-base fine-tuned on SQuAD v1.1 (Devlin et al. 2019, section 4.2): sequences of 384
	// tokens and a span head of two outputs per token (start, end) instead of the MLM head; the
	// job of the Pollux artifact's bert measurements (../shared/data/placements/bert.csv).
	bertBaseSQuADConfig = TransformerConfig{Name: "bert-base-squad", Layers: 12, Hidden: 768, Heads: 12, SeqLen: 384,
		Vocab: 30522, MaxPositions: 512, TokenTypes: 2, HeadOutputs: 2, MicroBatch: 8}
	// Liu et al. 2019 (RoBERTa): BERT-large's shape (L=24, H=1024, A=16) with the GPT-2 BPE
	// vocabulary of 50,265, 514 learned positions, one segment type, a tied LM head (355 M
	// parameters as released, 355,359,744 with the pooler, which is left out here).
	robertaLargeConfig = TransformerConfig{Name: "roberta-large", Layers: 24, Hidden: 1024, Heads: 16, SeqLen: 512,
		Vocab: 50265, MaxPositions: 514, TokenTypes: 1, TiedHead: true, MicroBatch: 4}
	// Touvron et al. 2023 (LLaMA), Table 2: 33B (30B in the release) has dimension 6656, 52
	// heads, 60 layers; SwiGLU width 2/3 x 4d rounded up to a multiple of 256: 17,920; 32,000
	// tokens, context 2048 (32,528,943,616 parameters in the released checkpoint).
	llama30BConfig = TransformerConfig{Name: "llama-30b", Layers: 60, Hidden: 6656, Heads: 52, FFN: 17920, GatedFFN: true,
		SeqLen: 2048, Vocab: 32000, NoBias: true, MicroBatch: 1}
	// T5 as the Rubick artifact sizes it (1,240,809,472 parameters in its
	// artifact/71_performance_model/model/validation_t5.py; hidden 1024, sequences of 512, 32
	// blocks): T5-3B's block shape (d_model 1024, 32 heads of 128, ReLU feed-forward, no
	// biases, tied head, T5's 32,128-token vocabulary) with 16 encoder and 16 decoder blocks and
	// d_ff 6144, which is 1,240,941,568 parameters (0.01% more: the vocabulary; the artifact
	// does not give d_ff: 6144 ReLU or 4096 gated both match); decoder targets of 128 tokens as
	// for t5-3b.
	t5_1_2BConfig = TransformerConfig{Name: "t5-1.2b", Layers: 16, DecoderLayers: 16, Hidden: 1024, Heads: 32, HeadDim: 128,
		FFN: 6144, SeqLen: 512, DecoderSeqLen: 128, Vocab: 32128, TiedHead: true, NoBias: true, MicroBatch: 4}
	// Dosovitskiy et al. 2021 (ViT), Table 1: ViT-Base, 12 layers, hidden 768, MLP 3072, 12
	// heads; 224 x 224 images in 16 x 16 patches: 196 patches and a class token, 197 learned
	// positions; a 1,000-class head on the class token (86,567,656 parameters as released in
	// torchvision's vit_b_16). The Rubick artifact measured it with a 200-class head
	// (85,952,456 parameters): 0.7% fewer.
	vitBaseConfig = TransformerConfig{Name: "vit-base", Layers: 12, Hidden: 768, Heads: 12, SeqLen: 197,
		Vocab: 16 * 16 * 3, MaxPositions: 197, HeadOutputs: 1000, MicroBatch: 64}
)

// vit builds a vision transformer from cfg: Transformer's layers, with the embedding made a
// patch projection (Vocab is the values per patch, 3 x 16 x 16; SeqLen - 1 patches and a class
// token, with the projection's bias and the class token as parameters) and the head applied to
// the class token alone.
func vit(cfg TransformerConfig) (*Model, error) {
	m, err := Transformer(cfg)
	if err != nil {
		return nil, err
	}
	d := cfg.DTypeBytes
	if d == 0 {
		d = 2
	}
	h, patches := float64(cfg.Hidden), float64(cfg.SeqLen-1)
	layers := m.Layers()
	emb, head := &layers[0], &layers[len(layers)-1]
	emb.FLOPs = 2 * patches * float64(cfg.Vocab) * h
	emb.ParamBytes += d * 2 * h // projection bias and class token
	outs := float64(cfg.HeadOutputs)
	head.FLOPs = 2 * h * outs
	head.ActivationBytes = outs * d
	head.MemoryBytes = outs * (d + 4)
	spec := m.Spec()
	spec.Layers = layers
	return NewModel(spec)
}

// variant returns cfg with the bytes per value and sequence length set (0: unchanged).
func variant(cfg TransformerConfig, dtype float64, seq int) TransformerConfig {
	if dtype != 0 {
		cfg.DTypeBytes = dtype
	}
	if seq != 0 {
		cfg.SeqLen = seq
	}
	return cfg
}

func transformerEntry(cfg TransformerConfig) func(float64, int) (*Model, error) {
	return func(dtype float64, seq int) (*Model, error) { return Transformer(variant(cfg, dtype, seq)) }
}

func vitEntry(cfg TransformerConfig) func(float64, int) (*Model, error) {
	return func(dtype float64, seq int) (*Model, error) { return vit(variant(cfg, dtype, seq)) }
}

func layersEntry(name string, heads, micro int, build func(d float64) []Layer) func(float64, int) (*Model, error) {
	return func(dtype float64, seq int) (*Model, error) {
		if seq != 0 {
			return nil, fmt.Errorf("%w: model %q has no sequence length to set", ErrInvalidModel, name)
		}
		if dtype == 0 {
			dtype = 2
		}
		return NewModel(ModelSpec{Name: name, Layers: build(dtype), Heads: heads, MicroBatch: micro, DTypeBytes: dtype})
	}
}

var zoo = []zooEntry{
	{"resnet18-cifar10", layersEntry("resnet18-cifar10", 0, 128, resnet18CIFAR)},
	{"resnet50", layersEntry("resnet50", 0, 64, resnet50)},
	{"vgg16", layersEntry("vgg16", 0, 64, vgg16)},
	{"inception-v3", layersEntry("inception-v3", 0, 32, inceptionV3)},
	{"bert-base", transformerEntry(bertBaseConfig)},
	{"bert-base-squad", transformerEntry(bertBaseSQuADConfig)},
	{"bert-large", transformerEntry(bertLargeConfig)},
	{"gpt2-1.5b", transformerEntry(gpt2XLConfig)},
	{"gpt3-6.7b", transformerEntry(gpt3_6_7BConfig)},
	{"gpt3-13b", transformerEntry(gpt3_13BConfig)},
	{"llama-7b", transformerEntry(llama7BConfig)},
	{"llama-30b", transformerEntry(llama30BConfig)},
	{"t5-1.2b", transformerEntry(t5_1_2BConfig)},
	{"t5-3b", transformerEntry(t5_3BConfig)},
	{"roberta-large", transformerEntry(robertaLargeConfig)},
	{"vit-base", vitEntry(vitBaseConfig)},
	{"deepspeech2-small", layersEntry("deepspeech2-small", 0, 32, deepSpeech2Small)},
	{"ncf", func(dtype float64, seq int) (*Model, error) {
		if seq != 0 {
			return nil, fmt.Errorf("%w: model %q has no sequence length to set", ErrInvalidModel, "ncf")
		}
		if dtype == 0 {
			dtype = 2
		}
		layers, edges := ncf(dtype)
		return NewModel(ModelSpec{Name: "ncf", Layers: layers, Edges: edges, MicroBatch: 8192, DTypeBytes: dtype})
	}},
}

// ZooNames returns the names of the zoo's models in a fixed order: "resnet18-cifar10",
// "resnet50", "vgg16", "inception-v3", "bert-base", "bert-base-squad", "bert-large",
// "gpt2-1.5b", "gpt3-6.7b", "gpt3-13b", "llama-7b", "llama-30b", "t5-1.2b", "t5-3b",
// "roberta-large", "vit-base", "deepspeech2-small", "ncf".
func ZooNames() []string {
	out := make([]string, len(zoo))
	for i, e := range zoo {
		out[i] = e.name
	}
	return out
}

// ZooModel returns the zoo model of the given name (see ZooNames), built fresh, in mixed
// precision (2-byte parameters and activations) with the typical per-GPU micro-batch of its
// training recipe. Each model's derivation and source are documented beside its definition. An
// unknown name gives an error wrapping ErrUnknownModel that lists the known ones.
func ZooModel(name string) (*Model, error) {
	return zooVariant(name, 0, 0)
}

// zooVariant builds the zoo model of the given name with dtype bytes per value and seq tokens
// per sequence (0: the entry's own).
func zooVariant(name string, dtype float64, seq int) (*Model, error) {
	if dtype == 2 {
		dtype = 0
	}
	for _, e := range zoo {
		if e.name == name {
			m, err := e.build(dtype, seq)
			if err != nil {
				return nil, err
			}
			m.zoo, m.zooDType, m.zooSeq = name, dtype, seq
			m.spec.Name = variantName(name, dtype, seq)
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (the zoo has %s)", ErrUnknownModel, name, strings.Join(ZooNames(), ", "))
}

// Zoo returns every zoo model, in ZooNames order.
//
// Deprecated: use ZooNames and ZooModel; removed in v0.3.0.
func Zoo() []*Model {
	out := make([]*Model, 0, len(zoo))
	for _, e := range zoo {
		m, err := ZooModel(e.name)
		if err != nil { // the zoo's own definitions are valid; a test checks each
			panic(fmt.Sprintf("graph: zoo model %q: %v", e.name, err))
		}
		out = append(out, m)
	}
	return out
}
