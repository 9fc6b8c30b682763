package graph

import (
	"fmt"
	"strings"
)

// zooEntry builds one zoo model.
type zooEntry struct {
	name  string
	build func() (*Model, error)
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
)

func transformerEntry(cfg TransformerConfig) func() (*Model, error) {
	return func() (*Model, error) { return Transformer(cfg) }
}

func layersEntry(name string, heads, micro int, build func(d float64) []Layer) func() (*Model, error) {
	return func() (*Model, error) {
		return NewModel(ModelSpec{Name: name, Layers: build(2), Heads: heads, MicroBatch: micro})
	}
}

var zoo = []zooEntry{
	{"resnet18-cifar10", layersEntry("resnet18-cifar10", 0, 128, resnet18CIFAR)},
	{"resnet50", layersEntry("resnet50", 0, 64, resnet50)},
	{"vgg16", layersEntry("vgg16", 0, 64, vgg16)},
	{"inception-v3", layersEntry("inception-v3", 0, 32, inceptionV3)},
	{"bert-base", transformerEntry(bertBaseConfig)},
	{"bert-large", transformerEntry(bertLargeConfig)},
	{"gpt2-1.5b", transformerEntry(gpt2XLConfig)},
	{"gpt3-6.7b", transformerEntry(gpt3_6_7BConfig)},
	{"gpt3-13b", transformerEntry(gpt3_13BConfig)},
	{"llama-7b", transformerEntry(llama7BConfig)},
	{"t5-3b", transformerEntry(t5_3BConfig)},
	{"deepspeech2-small", layersEntry("deepspeech2-small", 0, 32, deepSpeech2Small)},
	{"ncf", func() (*Model, error) {
		layers, edges := ncf(2)
		return NewModel(ModelSpec{Name: "ncf", Layers: layers, Edges: edges, MicroBatch: 8192})
	}},
}

// ZooNames returns the names of the zoo's models in a fixed order: "resnet18-cifar10",
// "resnet50", "vgg16", "inception-v3", "bert-base", "bert-large", "gpt2-1.5b", "gpt3-6.7b",
// "gpt3-13b", "llama-7b", "t5-3b", "deepspeech2-small", "ncf".
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
	for _, e := range zoo {
		if e.name == name {
			m, err := e.build()
			if err != nil {
				return nil, err
			}
			m.zoo = name
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (the zoo has %s)", ErrUnknownModel, name, strings.Join(ZooNames(), ", "))
}

// Zoo returns every zoo model, in ZooNames order.
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
