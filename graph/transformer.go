package graph

import (
	"fmt"
	"strconv"
)

// TransformerConfig describes a transformer by its hyper-parameters; Transformer turns it into a
// layer graph of an embedding layer, one layer per block and an output head. It covers
// decoder-only language models (GPT, LLaMA), encoder-only models (BERT) and encoder-decoder
// models (T5, with DecoderLayers > 0). Sizes are counts; lengths are tokens per sample.
//
// Per block, with hidden size h, attention width A = Heads x HeadDim, feed-forward width F and
// sequence length s (all per sample, a multiply-add counting two FLOPs):
//
//	params  = 4hA (Q, K, V, output projections) + 2hF (3hF when gated) + biases + 2 norms
//	FLOPs   = 2s x (4hA + 2hF or 3hF) + 4 s^2 A (scores and weighted values)
//	memory  = d/2 x (10sh + 8sA + 4sF (6sF gated) + 5 Heads s^2) bytes
//
// The memory term is Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", eq. 1: sbh(34 + 5as/h) for 16-bit activations) with A and F left
// general; d is DTypeBytes. An encoder-decoder decoder block adds cross-attention (4hA more
// parameters, its projections of the encoder output and s_dec x s_enc scores). Tensor
// parallelism all-reduces each block's output activation (s x h x d bytes) twice per forward
// pass (three times with cross-attention) and the embedding once (vocabulary-parallel).
type TransformerConfig struct {
	// Name is the model name.
	Name string `json:"name"`
	// Layers is the number of blocks (the encoder's, for an encoder-decoder model).
	Layers int `json:"layers"`
	// DecoderLayers, when positive, makes an encoder-decoder model with this many decoder
	// blocks, each attending to the encoder's output.
	DecoderLayers int `json:"decoder_layers,omitempty"`
	// Hidden is the model width h (d_model).
	Hidden int `json:"hidden"`
	// Heads is the number of attention heads.
	Heads int `json:"heads"`
	// HeadDim is the width of one head; 0 means Hidden/Heads.
	HeadDim int `json:"head_dim,omitempty"`
	// FFN is the feed-forward inner width; 0 means 4 x Hidden.
	FFN int `json:"ffn,omitempty"`
	// GatedFFN selects a gated feed-forward layer with three matrices (SwiGLU, as in LLaMA).
	GatedFFN bool `json:"gated_ffn,omitempty"`
	// SeqLen is the sequence length in tokens (the encoder's, for an encoder-decoder model).
	SeqLen int `json:"seq_len"`
	// DecoderSeqLen is the decoder's sequence length in tokens; 0 means SeqLen.
	DecoderSeqLen int `json:"decoder_seq_len,omitempty"`
	// Vocab is the vocabulary size.
	Vocab int `json:"vocab"`
	// MaxPositions is the number of learned absolute position embeddings; 0 for rotary or
	// relative positions, which have (almost) no parameters.
	MaxPositions int `json:"max_positions,omitempty"`
	// TokenTypes is the number of segment embeddings (2 for BERT).
	TokenTypes int `json:"token_types,omitempty"`
	// TiedHead makes the output head share the embedding matrix (no parameters of its own).
	TiedHead bool `json:"tied_head,omitempty"`
	// HeadOutputs, when positive, replaces the language-model head by a per-token head with this
	// many outputs (e.g. 2 for a SQuAD span head); its weights are never tied.
	HeadOutputs int `json:"head_outputs,omitempty"`
	// NoBias drops the biases of linear layers and norms (LLaMA, T5: RMSNorm with a scale only).
	NoBias bool `json:"no_bias,omitempty"`
	// DTypeBytes is the size of a parameter or activation value in bytes; 0 means 2.
	DTypeBytes float64 `json:"dtype_bytes,omitempty"`
	// MicroBatch is a typical per-GPU micro-batch in samples (see ModelSpec.MicroBatch).
	MicroBatch int `json:"micro_batch,omitempty"`
}

// Bounds of a TransformerConfig, far above any model trained (GPT-3 175B: 96 layers, width
// 12,288, feed-forward 49,152; contexts of a million tokens), so that a mistyped or hostile size
// is refused with a clear error instead of building billions of layers.
const (
	// MaxTransformerLayers bounds Layers + DecoderLayers.
	MaxTransformerLayers = 1 << 14
	// MaxSeqLen bounds SeqLen, DecoderSeqLen and MaxPositions, in tokens.
	MaxSeqLen = 1 << 24
	// maxWidth bounds Hidden, Heads, HeadDim, Heads x HeadDim and FFN.
	maxWidth = 1 << 20
	// maxVocab bounds Vocab, TokenTypes and HeadOutputs.
	maxVocab = 1 << 26
)

// Transformer builds the layer graph of a transformer: layers "embedding", "block0" ...
// (or "encoder0" ... and "decoder0" ... for an encoder-decoder model) and "head", chained, with
// the encoder's last block feeding every decoder block. It returns an error wrapping
// ErrInvalidModel naming the offending field when a size is not positive or above its bound
// (MaxTransformerLayers, MaxSeqLen, ...) or the heads do not divide the hidden size (without an
// explicit HeadDim).
func Transformer(cfg TransformerConfig) (*Model, error) {
	c := cfg
	for _, f := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"layers", c.Layers, 1, MaxTransformerLayers}, {"hidden", c.Hidden, 1, maxWidth}, {"heads", c.Heads, 1, maxWidth},
		{"seq_len", c.SeqLen, 1, MaxSeqLen}, {"vocab", c.Vocab, 1, maxVocab}, {"decoder_layers", c.DecoderLayers, 0, MaxTransformerLayers},
		{"head_dim", c.HeadDim, 0, maxWidth}, {"ffn", c.FFN, 0, maxWidth}, {"decoder_seq_len", c.DecoderSeqLen, 0, MaxSeqLen},
		{"max_positions", c.MaxPositions, 0, MaxSeqLen}, {"token_types", c.TokenTypes, 0, maxVocab},
		{"head_outputs", c.HeadOutputs, 0, maxVocab}, {"micro_batch", c.MicroBatch, 0, 1 << 24},
	} {
		if f.v < f.min {
			return nil, fmt.Errorf("%w: transformer %q: %s %d must be at least %d", ErrInvalidModel, c.Name, f.name, f.v, f.min)
		}
		if f.v > f.max {
			return nil, fmt.Errorf("%w: transformer %q: %s %d is more than %d: no model trained has that many", ErrInvalidModel, c.Name, f.name, f.v, f.max)
		}
	}
	if c.Layers+c.DecoderLayers > MaxTransformerLayers {
		return nil, fmt.Errorf("%w: transformer %q: %d encoder and %d decoder layers are more than %d", ErrInvalidModel, c.Name, c.Layers, c.DecoderLayers, MaxTransformerLayers)
	}
	if c.HeadDim != 0 && c.Heads*c.HeadDim > maxWidth {
		return nil, fmt.Errorf("%w: transformer %q: heads %d x head_dim %d is more than %d", ErrInvalidModel, c.Name, c.Heads, c.HeadDim, maxWidth)
	}
	if c.DTypeBytes == 0 {
		c.DTypeBytes = 2
	}
	if !finitePos(c.DTypeBytes) {
		return nil, fmt.Errorf("%w: transformer %q: dtype_bytes %v must be a positive finite number", ErrInvalidModel, c.Name, c.DTypeBytes)
	}
	if c.HeadDim == 0 {
		if c.Hidden%c.Heads != 0 {
			return nil, fmt.Errorf("%w: transformer %q: heads %d do not divide hidden %d (give head_dim)", ErrInvalidModel, c.Name, c.Heads, c.Hidden)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.FFN == 0 {
		c.FFN = 4 * c.Hidden
	}
	if c.DecoderSeqLen == 0 {
		c.DecoderSeqLen = c.SeqLen
	}
	var (
		d     = c.DTypeBytes
		h     = float64(c.Hidden)
		a     = float64(c.Heads)
		A     = float64(c.Heads * c.HeadDim)
		F     = float64(c.FFN)
		V     = float64(c.Vocab)
		se    = float64(c.SeqLen)
		sd    = float64(c.DecoderSeqLen)
		bias  = 1.0
		normP = 2 * h
	)
	if c.NoBias {
		bias, normP = 0, h
	}
	encDec := c.DecoderLayers > 0
	ffnMat, ffnBias, ffnMem := 2*h*F, F+h, 4.0
	if c.GatedFFN {
		ffnMat, ffnBias, ffnMem = 3*h*F, 2*F+h, 6.0
	}
	attnMat, attnBias := 4*h*A, 3*A+h

	// Self-attention block over s tokens.
	selfBlock := func(name string, s float64) Layer {
		return Layer{
			Name:            name,
			FLOPs:           2*s*(attnMat+ffnMat) + 4*s*s*A,
			ParamBytes:      d * (attnMat + ffnMat + bias*(attnBias+ffnBias) + 2*normP),
			ActivationBytes: s * h * d,
			MemoryBytes:     d / 2 * (10*s*h + 8*s*A + ffnMem*s*F + 5*a*s*s),
			TPAllReduces:    2,
		}
	}
	var layers []Layer
	var edges []Edge
	embTokens := se
	if encDec {
		embTokens = se + sd
	}
	embParams := V*h + float64(c.MaxPositions)*h + float64(c.TokenTypes)*h
	layers = append(layers, Layer{
		Name:            "embedding",
		ParamBytes:      d * embParams,
		ActivationBytes: embTokens * h * d,
		MemoryBytes:     embTokens * h * (d + 1), // output and dropout mask
		TPAllReduces:    1,
	})
	prev := "embedding"
	chain := func(l Layer) {
		layers = append(layers, l)
		edges = append(edges, Edge{prev, l.Name})
		prev = l.Name
	}
	if !encDec {
		for i := 0; i < c.Layers; i++ {
			chain(selfBlock("block"+strconv.Itoa(i), se))
		}
	} else {
		for i := 0; i < c.Layers; i++ {
			chain(selfBlock("encoder"+strconv.Itoa(i), se))
		}
		encOut := prev
		for i := 0; i < c.DecoderLayers; i++ {
			l := selfBlock("decoder"+strconv.Itoa(i), sd)
			// Cross-attention: Q and output projections on decoder tokens, K and V on the
			// encoder's output, s_dec x s_enc scores.
			l.FLOPs += 2*sd*(2*h*A) + 2*se*(2*h*A) + 4*sd*se*A
			l.ParamBytes += d * (4*h*A + bias*(3*A+h) + normP)
			l.MemoryBytes += d / 2 * (5*sd*h + 2*se*h + 4*sd*A + 4*se*A + 5*a*sd*se)
			l.TPAllReduces = 3
			chain(l)
			if i > 0 {
				edges = append(edges, Edge{encOut, l.Name})
			}
		}
		edges = append(edges, Edge{"embedding", "decoder0"})
	}
	// Head: final norm and the output projection (shared with the embedding when tied).
	tokens := se
	if encDec {
		tokens = sd
	}
	outs, headParams := V, normP
	if c.HeadOutputs > 0 {
		outs = float64(c.HeadOutputs)
		headParams += h*outs + bias*outs
	} else if !c.TiedHead {
		headParams += h*outs + bias*outs
	}
	chain(Layer{
		Name:            "head",
		FLOPs:           2 * tokens * h * outs,
		ParamBytes:      d * headParams,
		ActivationBytes: tokens * outs * d,
		MemoryBytes:     tokens * outs * (d + 4), // logits and fp32 softmax
	})
	m, err := NewModel(ModelSpec{
		Name:       c.Name,
		Layers:     layers,
		Edges:      edges,
		DTypeBytes: d,
		Heads:      c.Heads,
		MicroBatch: c.MicroBatch,
	})
	if err != nil {
		return nil, err
	}
	cfgCopy := cfg
	m.transformer = &cfgCopy
	return m, nil
}
