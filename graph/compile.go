package graph

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Stage is what a compiled plan knows about one pipeline stage, per sample and before the
// tensor-parallel split (a worker of the stage holds 1/TP of its parameters and work).
//
// Deprecated: not needed by embedders (the cost model's internals); removed in v0.3.0.
type Stage struct {
	// First and End delimit the stage's layers: pipeline positions First <= i < End.
	First, End int
	// FLOPs is the forward-pass work of the stage per sample, in FLOPs.
	FLOPs float64
	// ParamBytes is the size of the stage's parameters (and of its gradients) in bytes.
	ParamBytes float64
	// TPAllReduceBytes is the sum over the stage's layers of TPAllReduces x ActivationBytes: the
	// bytes per sample all-reduced inside a TP group in one forward pass.
	TPAllReduceBytes float64
	// TPAllReduces is the number of TP all-reduces per forward pass of a micro-batch.
	TPAllReduces int
	// SendBytes is the activation bytes per sample sent to the next stage in the forward pass
	// (and gradient bytes received back in the backward pass); 0 for the last stage.
	SendBytes float64
	// MemoryBytes is the activation memory per sample the stage keeps for its backward pass
	// without checkpointing.
	MemoryBytes float64
	// CheckpointBytes is the activation memory per sample kept with checkpointing: each
	// layer's output (the next layer's input).
	CheckpointBytes float64
	// PeakLayerMemory is the largest MemoryBytes of one layer of the stage: the working set of
	// recomputing one layer under checkpointing.
	PeakLayerMemory float64
}

// Compiled is a (model, plan) pair validated and reduced to the per-stage figures the cost
// model needs, so that evaluating a placement is O(workers). Build one with Compile. A Compiled
// is immutable and safe for concurrent use.
type Compiled struct {
	model      *Model
	plan       Plan
	stages     []Stage
	mb         float64 // samples per micro-batch
	computeMul float64 // forward+backward (+recompute) in units of one forward pass
	tpPasses   float64 // TP all-reduce passes per micro-batch: forward, backward (, recompute)
	dpFactor   float64 // DP volume relative to one all-reduce: 1.5 under ZeRO-3
	tpDiv      float64 // the busiest tensor-parallel rank holds 1/tpDiv of a layer: TP, or heads / ceil(heads / TP) when uneven
	// logWidth[s] is the forward-FLOPs-weighted mean over stage s's layers with parameters of
	// the logarithm of their parameter count (before the tensor-parallel split; 0 when no
	// layer of the stage has both): Efficiency.ComputeWidthExponent's w_s is its exponential
	// divided by tpDiv.
	logWidth []float64
}

// Compile validates plan against model (see Plan.Validate), splits the layers into stages
// (plan.Stages, or BalancedStages on forward FLOPs) and precomputes the per-stage figures.
func Compile(model *Model, plan Plan) (*Compiled, error) {
	if err := plan.Validate(model); err != nil {
		return nil, err
	}
	plan.Stages = slices.Clone(plan.Stages)
	split := plan.Stages
	if len(split) == 0 {
		w := make([]float64, model.NumLayers())
		for i := range w {
			w[i] = model.layers[i].FLOPs
		}
		split = BalancedStages(w, plan.PP)
	}
	c := &Compiled{
		model:      model,
		plan:       plan,
		stages:     make([]Stage, plan.PP),
		logWidth:   make([]float64, plan.PP),
		mb:         float64(plan.MicroBatchSize()),
		computeMul: 3,
		tpPasses:   2,
		dpFactor:   1,
		tpDiv:      float64(plan.TP),
	}
	if h := model.Heads(); h > 0 && h%plan.TP != 0 { // UnevenHeads (Validate)
		c.tpDiv = float64(h) / float64((h+plan.TP-1)/plan.TP)
	}
	if plan.Checkpointing {
		c.computeMul, c.tpPasses = 4, 3
	}
	if plan.ZeRO == 3 {
		c.dpFactor = 1.5
	}
	boundary := model.boundaryBytes()
	first := 0
	for s, n := range split {
		st := Stage{First: first, End: first + n}
		var wf, wl float64 // FLOPs of the layers with parameters, and their FLOPs x log(parameters)
		for i := st.First; i < st.End; i++ {
			l := model.layers[i]
			if q := l.ParamBytes / model.DTypeBytes(); q >= 1 && l.FLOPs > 0 {
				wf += l.FLOPs
				wl += l.FLOPs * math.Log(q)
			}
			st.FLOPs += l.FLOPs
			st.ParamBytes += l.ParamBytes
			st.TPAllReduceBytes += float64(l.TPAllReduces) * l.ActivationBytes
			st.TPAllReduces += l.TPAllReduces
			st.MemoryBytes += l.MemoryBytes
			st.CheckpointBytes += l.ActivationBytes
			st.PeakLayerMemory = max(st.PeakLayerMemory, l.MemoryBytes)
		}
		if s < plan.PP-1 {
			st.SendBytes = boundary[st.End-1]
		}
		if wf > 0 && wl != 0 {
			c.logWidth[s] = wl / wf
		}
		c.stages[s] = st
		first = st.End
	}
	return c, nil
}

// Model returns the compiled model.
func (c *Compiled) Model() *Model { return c.model }

// Plan returns the compiled plan, with Stages filled in when the split was computed.
func (c *Compiled) Plan() Plan {
	p := c.plan
	p.Stages = make([]int, len(c.stages))
	for i, st := range c.stages {
		p.Stages[i] = st.End - st.First
	}
	return p
}

// Stages returns the per-stage figures, one per pipeline stage.
//
// Deprecated: not needed by embedders (the cost model's internals); removed in v0.3.0.
func (c *Compiled) Stages() []Stage { return slices.Clone(c.stages) }

// Memory is the memory one worker needs, in bytes, broken down.
type Memory struct {
	// Stage is the pipeline stage of the worker.
	Stage int
	// Params is the bytes of parameters held (the stage's share, 1/TP, and 1/DP under ZeRO-3).
	Params float64
	// Grads is the bytes of gradients held (1/DP under ZeRO-2 and 3).
	Grads float64
	// Optimizer is the bytes of Adam state on the GPU: fp32 first and second moments, plus an
	// fp32 master copy when parameters are in lower precision, so that parameters, gradients
	// and optimizer state total 16 bytes per parameter in mixed precision and in fp32 (1/DP
	// from ZeRO-1 on); 0 under Offload, where it lives in host memory.
	Optimizer float64
	// Activations is the bytes of activations kept for the backward pass: the stage's
	// per-sample memory divided by TP, times the micro-batch size, times the micro-batches in
	// flight under 1F1B (min(MicroBatches, PP - stage)); with checkpointing only each layer's
	// output is kept per micro-batch in flight, plus one layer's working set.
	Activations float64
	// Total is the sum of the above: the GPU memory the worker needs.
	Total float64
	// Host is the bytes of host memory the worker's optimizer state takes under Offload (the
	// Optimizer bytes it would otherwise hold on the GPU); 0 without offload.
	Host float64
}

// StageMemory returns the memory of one worker of stage s (0 <= s < PP).
//
// Deprecated: not needed by embedders (Compiled.Memory is the most demanding stage's); removed in v0.3.0.
func (c *Compiled) StageMemory(s int) Memory {
	p := c.plan
	st := c.stages[s]
	d := c.model.DTypeBytes()
	params := st.ParamBytes / c.tpDiv
	n := params / d
	optPer := 8.0 // fp32 first and second moments
	if d < 4 {
		optPer += 4 // fp32 master weights
	}
	mem := Memory{Stage: s, Params: params, Grads: params, Optimizer: n * optPer}
	dp := float64(p.DP)
	if p.ZeRO >= 1 {
		mem.Optimizer /= dp
	}
	if p.ZeRO >= 2 {
		mem.Grads /= dp
	}
	if p.ZeRO >= 3 {
		mem.Params /= dp
	}
	if p.Offload {
		mem.Host, mem.Optimizer = mem.Optimizer, 0
	}
	inflight := float64(min(p.MicroBatches, p.PP-s))
	if p.Checkpointing {
		mem.Activations = inflight*c.mb*st.CheckpointBytes + c.mb*st.PeakLayerMemory/c.tpDiv
	} else {
		mem.Activations = inflight * c.mb * st.MemoryBytes / c.tpDiv
	}
	mem.Total = mem.Params + mem.Grads + mem.Optimizer + mem.Activations
	return mem
}

// Memory returns the memory of the most demanding worker (the stage needing the most).
func (c *Compiled) Memory() Memory {
	best := c.StageMemory(0)
	for s := 1; s < len(c.stages); s++ {
		if m := c.StageMemory(s); m.Total > best.Total {
			best = m
		}
	}
	return best
}

// CheckMemory returns an error wrapping ErrOutOfMemory when the most demanding worker needs
// more than gpu.MemoryBytes; the message names the stage and says by how many bytes it does not
// fit. A GPU spec without a positive memory size gives an error wrapping ErrInvalidOptions.
func (c *Compiled) CheckMemory(gpu topology.GPUSpec) error {
	if !finitePos(gpu.MemoryBytes) {
		return fmt.Errorf("%w: GPU %q memory %v bytes must be a positive finite number", ErrInvalidOptions, gpu.Model, gpu.MemoryBytes)
	}
	m := c.Memory()
	if m.Total <= gpu.MemoryBytes {
		return nil
	}
	short := m.Total - gpu.MemoryBytes
	return fmt.Errorf("%w: model %q with plan %v needs %.2f GB per GPU on stage %d (params %.2f, grads %.2f, optimizer %.2f, activations %.2f GB) but %s has %.2f GB: %.0f bytes (%.2f GB) too many",
		ErrOutOfMemory, c.model.Name(), c.plan, m.Total/1e9, m.Stage, m.Params/1e9, m.Grads/1e9, m.Optimizer/1e9, m.Activations/1e9,
		gpu.Model, gpu.MemoryBytes/1e9, short, short/1e9)
}
