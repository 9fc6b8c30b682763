package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	ybgraph "github.com/yourbasic/graph"
)

// Layer is one vertex of a model's layer graph: a unit of computation that a pipeline stage
// holds whole (a convolution block, a transformer block, an embedding table). Sizes are per
// training sample and in the model's data type (see ModelSpec.DTypeBytes).
type Layer struct {
	// Name identifies the layer inside its model; errors name it.
	Name string `json:"name"`
	// FLOPs is the forward-pass work per sample in floating-point operations (a multiply-add
	// counts as two). The backward pass is taken to cost twice as much.
	FLOPs float64 `json:"flops"`
	// ParamBytes is the size of the layer's parameters in bytes; its gradients have the same
	// size.
	ParamBytes float64 `json:"param_bytes"`
	// ActivationBytes is the size in bytes of the layer's output per sample: what a pipeline
	// stage sends to the next one when the layer's consumer lives there, and what one
	// tensor-parallel all-reduce of the layer moves.
	ActivationBytes float64 `json:"activation_bytes"`
	// MemoryBytes is the activation memory in bytes per sample that the layer keeps from its
	// forward pass for its backward pass (without activation checkpointing).
	MemoryBytes float64 `json:"memory_bytes"`
	// TPAllReduces is the number of all-reduces of ActivationBytes per sample the layer needs in
	// its forward pass when it is split by tensor parallelism (Megatron-LM: 2 per transformer
	// block, one after attention and one after the MLP). The backward pass needs as many.
	TPAllReduces int `json:"tp_allreduces,omitempty"`
}

// Edge is a directed edge of the layer graph: the output of layer From is an input of layer To.
type Edge struct {
	// From names the producing layer.
	From string `json:"from"`
	// To names the consuming layer.
	To string `json:"to"`
}

// ModelSpec is the plain description of a model that NewModel validates: its layers, the edges
// between them, and a few whole-model facts.
type ModelSpec struct {
	// Name is a free-form model name.
	Name string `json:"name"`
	// Layers lists the layers. If the list is in a topological order of the edges, that order is
	// the pipeline order; otherwise the pipeline order is a topological order of the edges.
	Layers []Layer `json:"layers"`
	// Edges lists the data dependencies between layers by name. An empty list means a chain in
	// the order of Layers.
	Edges []Edge `json:"edges,omitempty"`
	// DTypeBytes is the size in bytes of one parameter or activation value in the training
	// precision: 2 for fp16/bf16 mixed precision (the default when zero), 4 for fp32.
	DTypeBytes float64 `json:"dtype_bytes,omitempty"`
	// Heads is the number of attention heads, which the tensor-parallel degree must divide; 0
	// means no such constraint (a network without attention).
	Heads int `json:"heads,omitempty"`
	// MicroBatch is a typical per-GPU micro-batch in samples, used by DefaultPlan; 0 means 1.
	MicroBatch int `json:"micro_batch,omitempty"`
}

// Model is a validated DNN: an acyclic, connected graph of layers in pipeline order. A Model is
// immutable and safe for concurrent use. Build one with NewModel, Transformer or ZooModel.
//
// A Model marshals to JSON in the most compact form it was built from: {"zoo": "gpt3-13b"} for
// a zoo model, {"transformer": {...}} for a model built from a TransformerConfig, or the full
// ModelSpec; it unmarshals from any of the three.
type Model struct {
	spec        ModelSpec // as given, defaults applied
	layers      []Layer   // in pipeline order
	edges       [][2]int  // pipeline positions, from < to
	lastUse     []int     // lastUse[i]: largest pipeline position consuming layer i's output, or i
	zoo         string
	zooDType    float64 // a zoo variant's bytes per value (0: the zoo's 2)
	zooSeq      int     // a zoo variant's sequence length (0: the zoo's)
	transformer *TransformerConfig
	flops       float64
	paramBytes  float64
}

// NewModel validates spec and builds the model. It returns an error wrapping ErrInvalidModel
// that names the offending layer or edge when the spec has no layers, a layer has an empty or
// duplicate name, a size is negative, NaN or infinite, an edge names an unknown layer (a
// dangling edge), the edges form a cycle, or some layers are not connected to the others.
func NewModel(spec ModelSpec) (*Model, error) {
	if len(spec.Layers) == 0 {
		return nil, fmt.Errorf("%w: model %q has no layers", ErrInvalidModel, spec.Name)
	}
	if spec.DTypeBytes == 0 {
		spec.DTypeBytes = 2
	}
	if !finitePos(spec.DTypeBytes) {
		return nil, fmt.Errorf("%w: model %q: dtype_bytes %v must be a positive finite number", ErrInvalidModel, spec.Name, spec.DTypeBytes)
	}
	if spec.Heads < 0 {
		return nil, fmt.Errorf("%w: model %q: heads %d must not be negative", ErrInvalidModel, spec.Name, spec.Heads)
	}
	if spec.MicroBatch < 0 {
		return nil, fmt.Errorf("%w: model %q: micro_batch %d must not be negative", ErrInvalidModel, spec.Name, spec.MicroBatch)
	}
	if spec.MicroBatch == 0 {
		spec.MicroBatch = 1
	}
	n := len(spec.Layers)
	index := make(map[string]int, n)
	for i, l := range spec.Layers {
		if l.Name == "" {
			return nil, fmt.Errorf("%w: model %q: layer %d has an empty name", ErrInvalidModel, spec.Name, i)
		}
		if _, dup := index[l.Name]; dup {
			return nil, fmt.Errorf("%w: model %q: duplicate layer name %q", ErrInvalidModel, spec.Name, l.Name)
		}
		index[l.Name] = i
		for _, f := range []struct {
			name string
			v    float64
		}{{"flops", l.FLOPs}, {"param_bytes", l.ParamBytes}, {"activation_bytes", l.ActivationBytes}, {"memory_bytes", l.MemoryBytes}} {
			if !finiteNonNeg(f.v) {
				return nil, fmt.Errorf("%w: model %q: layer %q: %s %v must be a non-negative finite number", ErrInvalidModel, spec.Name, l.Name, f.name, f.v)
			}
		}
		if l.TPAllReduces < 0 {
			return nil, fmt.Errorf("%w: model %q: layer %q: tp_allreduces %d must not be negative", ErrInvalidModel, spec.Name, l.Name, l.TPAllReduces)
		}
	}
	spec.Layers = slices.Clone(spec.Layers)
	spec.Edges = slices.Clone(spec.Edges)

	g := ybgraph.New(n)
	var pairs [][2]int
	if len(spec.Edges) == 0 {
		for i := 0; i+1 < n; i++ {
			pairs = append(pairs, [2]int{i, i + 1})
		}
	} else {
		for k, e := range spec.Edges {
			u, okU := index[e.From]
			v, okV := index[e.To]
			switch {
			case !okU:
				return nil, fmt.Errorf("%w: model %q: edge %d (%q -> %q) comes from unknown layer %q", ErrInvalidModel, spec.Name, k, e.From, e.To, e.From)
			case !okV:
				return nil, fmt.Errorf("%w: model %q: edge %d (%q -> %q) goes to unknown layer %q", ErrInvalidModel, spec.Name, k, e.From, e.To, e.To)
			case u == v:
				return nil, fmt.Errorf("%w: model %q: layer %q: edge %d makes a cycle (it feeds itself)", ErrInvalidModel, spec.Name, e.From, k)
			}
			pairs = append(pairs, [2]int{u, v})
		}
	}
	for _, p := range pairs {
		g.Add(p[0], p[1])
	}
	sorted := ybgraph.Sort(g) // deterministic visiting order
	topo, ok := ybgraph.TopSort(sorted)
	if !ok {
		return nil, fmt.Errorf("%w: model %q: layer %q is on a cycle", ErrInvalidModel, spec.Name, spec.Layers[cycleVertex(sorted)].Name)
	}
	if comps := ybgraph.Components(sorted); len(comps) > 1 {
		// Name the first layer (in the given order) outside the component of layer 0.
		stray := -1
		for _, c := range comps {
			if !slices.Contains(c, 0) {
				for _, v := range c {
					if stray < 0 || v < stray {
						stray = v
					}
				}
			}
		}
		return nil, fmt.Errorf("%w: model %q: layer %q is not connected to layer %q (%d separate parts)", ErrInvalidModel, spec.Name, spec.Layers[stray].Name, spec.Layers[0].Name, len(comps))
	}
	// Keep the given order when it is topological.
	order := topo
	given := true
	for _, p := range pairs {
		if p[0] > p[1] {
			given = false
			break
		}
	}
	if given {
		order = make([]int, n)
		for i := range order {
			order[i] = i
		}
	}
	pos := make([]int, n)
	for i, v := range order {
		pos[v] = i
	}
	m := &Model{spec: spec, layers: make([]Layer, n), lastUse: make([]int, n)}
	for i, v := range order {
		m.layers[i] = spec.Layers[v]
		m.lastUse[i] = i
		m.flops += spec.Layers[v].FLOPs
		m.paramBytes += spec.Layers[v].ParamBytes
	}
	seen := make(map[[2]int]bool, len(pairs))
	for _, p := range pairs {
		e := [2]int{pos[p[0]], pos[p[1]]}
		if seen[e] {
			continue
		}
		seen[e] = true
		m.edges = append(m.edges, e)
		m.lastUse[e[0]] = max(m.lastUse[e[0]], e[1])
	}
	slices.SortFunc(m.edges, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	return m, nil
}

// cycleVertex returns the smallest vertex on a cycle of g, which must have one.
func cycleVertex(g ybgraph.Iterator) int {
	best := -1
	for _, c := range ybgraph.StrongComponents(g) {
		if len(c) > 1 {
			for _, v := range c {
				if best < 0 || v < best {
					best = v
				}
			}
		}
	}
	if best < 0 { // a self-loop; NewModel rejects those earlier
		best = 0
	}
	return best
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
func finitePos(v float64) bool    { return v > 0 && !math.IsInf(v, 0) }

// Name returns the model's name.
func (m *Model) Name() string { return m.spec.Name }

// NumLayers returns the number of layers.
func (m *Model) NumLayers() int { return len(m.layers) }

// Layer returns the layer at pipeline position i (0 <= i < NumLayers()).
func (m *Model) Layer(i int) Layer { return m.layers[i] }

// Layers returns a copy of the layers in pipeline order.
func (m *Model) Layers() []Layer { return slices.Clone(m.layers) }

// Edges returns the model's edges between pipeline positions (from < to), sorted.
func (m *Model) Edges() [][2]int { return slices.Clone(m.edges) }

// Spec returns a copy of the description the model was built from, with defaults applied.
func (m *Model) Spec() ModelSpec {
	s := m.spec
	s.Layers = slices.Clone(s.Layers)
	s.Edges = slices.Clone(s.Edges)
	return s
}

// ZooName returns the zoo name the model was built from by ZooModel (or a variant of it), or
// "".
func (m *Model) ZooName() string { return m.zoo }

// variantName names a variant of a model: the base name, then "@seq<n>" for another sequence
// length and "@fp32" (4 bytes per value), "@fp16" (2), "@fp8" (1) or "@d<bytes>" for another
// precision.
func variantName(base string, dtype float64, seq int) string {
	name := base
	if seq != 0 {
		name += "@seq" + strconv.Itoa(seq)
	}
	switch dtype {
	case 0:
	case 4:
		name += "@fp32"
	case 2:
		name += "@fp16"
	case 1:
		name += "@fp8"
	default:
		name += "@d" + strconv.FormatFloat(dtype, 'g', -1, 64)
	}
	return name
}

// WithDTypeBytes returns the model trained with another precision: d bytes per parameter and
// activation value (4 for fp32, 2 for fp16/bf16 mixed precision), named as a variant ("resnet50"
// in fp32 is "resnet50@fp32", the name per-model calibrations are keyed by). A zoo model or a
// transformer is rebuilt from its description; a model given by its layers has every size
// scaled by d / DTypeBytes(). The model itself is returned when d is its precision already.
// Errors wrap ErrInvalidModel.
func (m *Model) WithDTypeBytes(d float64) (*Model, error) {
	if !finitePos(d) {
		return nil, fmt.Errorf("%w: model %q: dtype_bytes %v must be a positive finite number", ErrInvalidModel, m.Name(), d)
	}
	if d == m.DTypeBytes() {
		return m, nil
	}
	switch {
	case m.zoo != "":
		return zooVariant(m.zoo, d, m.zooSeq)
	case m.transformer != nil:
		cfg := *m.transformer
		base := cfg.Name
		cfg.DTypeBytes = d
		cfg.Name = variantName(base, d, 0)
		return Transformer(cfg)
	}
	spec := m.Spec()
	r := d / spec.DTypeBytes
	for i := range spec.Layers {
		l := &spec.Layers[i]
		l.ParamBytes *= r
		l.ActivationBytes *= r
		l.MemoryBytes *= r
	}
	spec.DTypeBytes = d
	spec.Name = variantName(spec.Name, d, 0)
	return NewModel(spec)
}

// WithSeqLen returns a transformer with another sequence length in tokens (the encoder's, for
// an encoder-decoder model), named as a variant ("bert-base" at 384 tokens is
// "bert-base@seq384"). The model itself is returned when n is its length already. A model not
// built from a TransformerConfig (directly or through the zoo) has no sequence length: an error
// wrapping ErrInvalidModel, as is n < 1.
func (m *Model) WithSeqLen(n int) (*Model, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: model %q: seq_len %d must be at least 1", ErrInvalidModel, m.Name(), n)
	}
	if m.transformer != nil && m.transformer.SeqLen == n {
		return m, nil
	}
	switch {
	case m.zoo != "":
		return zooVariant(m.zoo, m.zooDType, n)
	case m.transformer != nil:
		cfg := *m.transformer
		cfg.Name = variantName(cfg.Name, 0, n)
		cfg.SeqLen = n
		return Transformer(cfg)
	}
	return nil, fmt.Errorf("%w: model %q is not a transformer: it has no sequence length to set", ErrInvalidModel, m.Name())
}

// DTypeBytes returns the bytes per parameter or activation value (2 for mixed precision).
func (m *Model) DTypeBytes() float64 { return m.spec.DTypeBytes }

// Heads returns the attention heads the tensor-parallel degree must divide (0: no constraint).
func (m *Model) Heads() int { return m.spec.Heads }

// MicroBatch returns the typical per-GPU micro-batch in samples used by DefaultPlan.
func (m *Model) MicroBatch() int { return m.spec.MicroBatch }

// FLOPs returns the forward-pass FLOPs per sample of the whole model.
func (m *Model) FLOPs() float64 { return m.flops }

// ParamBytes returns the parameter bytes of the whole model (equal to its gradient bytes).
func (m *Model) ParamBytes() float64 { return m.paramBytes }

// Params returns the number of parameters: ParamBytes / DTypeBytes.
func (m *Model) Params() float64 { return m.paramBytes / m.spec.DTypeBytes }

// String returns a one-line summary such as "gpt3-13b: 42 layers, 12.95e9 params, 53.2
// TFLOP/sample".
func (m *Model) String() string {
	return fmt.Sprintf("%s: %d layers, %.4ge9 params, %.4g GFLOP/sample", m.spec.Name, len(m.layers), m.Params()/1e9, m.flops/1e9)
}

// boundaryBytes returns, for each pipeline position k < n-1, the activation bytes per sample
// that cross the cut between positions k and k+1: the outputs of layers at or before k that a
// layer after k consumes (a skip connection over several stages is carried by each).
func (m *Model) boundaryBytes() []float64 {
	n := len(m.layers)
	diff := make([]float64, n+1)
	for i, l := range m.layers {
		if m.lastUse[i] > i {
			diff[i] += l.ActivationBytes
			diff[m.lastUse[i]] -= l.ActivationBytes
		}
	}
	out := make([]float64, max(n-1, 0))
	acc := 0.0
	for k := range out {
		acc += diff[k]
		out[k] = math.Max(acc, 0)
	}
	return out
}

type modelJSON struct {
	Zoo         string             `json:"zoo,omitempty"`
	SeqLen      int                `json:"seq_len,omitempty"`
	Transformer *TransformerConfig `json:"transformer,omitempty"`
	ModelSpec
}

// MarshalJSON writes the model as {"zoo": name} when it came from the zoo (with "dtype_bytes"
// and "seq_len" for a variant), as {"transformer": config} when it came from Transformer, and as
// its full ModelSpec otherwise.
func (m *Model) MarshalJSON() ([]byte, error) {
	switch {
	case m.zoo != "":
		return json.Marshal(struct {
			Zoo        string  `json:"zoo"`
			DTypeBytes float64 `json:"dtype_bytes,omitempty"`
			SeqLen     int     `json:"seq_len,omitempty"`
		}{m.zoo, m.zooDType, m.zooSeq})
	case m.transformer != nil:
		return json.Marshal(struct {
			Transformer *TransformerConfig `json:"transformer"`
		}{m.transformer})
	}
	return json.Marshal(m.spec)
}

// UnmarshalJSON reads any of the forms MarshalJSON writes and validates the result; errors wrap
// ErrInvalidModel or ErrUnknownModel.
func (m *Model) UnmarshalJSON(data []byte) error {
	var aux modelJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	forms := 0
	if aux.Zoo != "" {
		forms++
		if aux.Name != "" || len(aux.Edges) > 0 || aux.Heads != 0 || aux.MicroBatch != 0 {
			return fmt.Errorf("%w: a zoo model takes only \"dtype_bytes\" and \"seq_len\" beside \"zoo\"", ErrInvalidModel)
		}
	} else if aux.SeqLen != 0 {
		return fmt.Errorf("%w: \"seq_len\" applies to a \"zoo\" transformer (give a transformer's in its config)", ErrInvalidModel)
	}
	if aux.Transformer != nil {
		forms++
	}
	if len(aux.Layers) > 0 {
		forms++
	}
	if forms > 1 {
		return fmt.Errorf("%w: give exactly one of \"zoo\", \"transformer\" or \"layers\"", ErrInvalidModel)
	}
	var (
		built *Model
		err   error
	)
	switch {
	case aux.Zoo != "":
		if aux.SeqLen < 0 || (aux.DTypeBytes != 0 && !finitePos(aux.DTypeBytes)) {
			return fmt.Errorf("%w: zoo model %q: seq_len %d and dtype_bytes %v must be positive", ErrInvalidModel, aux.Zoo, aux.SeqLen, aux.DTypeBytes)
		}
		if _, err := ZooModel(aux.Zoo); err != nil {
			return err
		}
		built, err = zooVariant(aux.Zoo, aux.DTypeBytes, aux.SeqLen)
	case aux.Transformer != nil:
		built, err = Transformer(*aux.Transformer)
	default:
		built, err = NewModel(aux.ModelSpec)
	}
	if err != nil {
		return err
	}
	*m = *built
	return nil
}
