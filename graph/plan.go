package graph

import (
	"fmt"
	"math"
	"strings"
)

// Plan is a parallel execution plan for a model: DP data-parallel replicas of a pipeline of PP
// stages, each stage split TP ways by tensor parallelism, so DP x PP x TP workers (one per GPU).
// Each iteration processes GlobalBatch samples: every replica runs MicroBatches micro-batches of
// GlobalBatch / (DP x MicroBatches) samples through its pipeline (1F1B schedule), then the
// replicas all-reduce their gradients.
//
// Worker ranks are canonical: rank = (dp x PP + pp) x TP + tp, so the TP group of a (replica,
// stage) is a contiguous run of ranks and a placement []topology.GPUID is indexed by rank.
//
// A Plan is a plain value, JSON-serialisable, meant to be embedded in a job description.
type Plan struct {
	// DP is the data-parallel degree (replicas), at least 1.
	DP int `json:"dp"`
	// TP is the tensor-parallel degree (GPUs sharing each layer), at least 1.
	TP int `json:"tp"`
	// PP is the pipeline-parallel degree (stages), at least 1 and at most the layers.
	PP int `json:"pp"`
	// MicroBatches is the number of micro-batches per replica per iteration, at least 1 (with
	// PP = 1 it is gradient accumulation).
	MicroBatches int `json:"micro_batches"`
	// GlobalBatch is the number of samples per iteration over all replicas; DP x MicroBatches
	// must divide it.
	GlobalBatch int `json:"global_batch"`
	// Checkpointing enables activation checkpointing: only each layer's input is kept, and the
	// forward pass is recomputed during the backward pass.
	Checkpointing bool `json:"checkpointing,omitempty"`
	// ZeRO is the ZeRO stage (0-3): 1 shards optimizer states over the DP replicas, 2 also
	// gradients, 3 also parameters.
	ZeRO int `json:"zero,omitempty"`
	// Offload runs the optimizer on the host's CPUs (ZeRO-Offload): each worker's share of the
	// optimizer state lives in host memory, gradients go to the host and updated parameters
	// come back over PCIe. It needs ZeRO 1 or more.
	Offload bool `json:"offload,omitempty"`
	// CPUThreads is the number of CPU threads each worker's host-side optimizer uses under
	// Offload; 0 means 1.
	CPUThreads int `json:"cpu_threads,omitempty"`
	// UnevenHeads lets TP not divide the model's attention heads: the ranks of a tensor-parallel
	// group hold ceil or floor of heads / TP heads each (and the same share of the other
	// weights), as frameworks that shard heads unevenly run it (T5-3B's 32 heads on 3 GPUs),
	// and the busiest rank, with ceil(heads / TP), times the step. TP must not exceed the heads.
	// Without it a TP that does not divide the heads is invalid, as Megatron-LM has it.
	UnevenHeads bool `json:"uneven_heads,omitempty"`
	// Stages optionally fixes the pipeline split: the number of consecutive layers (in pipeline
	// order) of each stage, PP entries each at least 1, summing to the model's layers. Empty
	// means a split that balances the stages' forward FLOPs (see BalancedStages).
	Stages []int `json:"stages,omitempty"`
}

// Workers returns the number of workers (GPUs) of the plan: DP x TP x PP.
func (p Plan) Workers() int { return p.DP * p.TP * p.PP }

// MicroBatchSize returns the samples per micro-batch: GlobalBatch / (DP x MicroBatches).
//
// Deprecated: use Plan.LocalBatch() / MicroBatches; removed in v0.3.0.
func (p Plan) MicroBatchSize() int {
	if p.DP < 1 || p.MicroBatches < 1 {
		return 0
	}
	return p.GlobalBatch / (p.DP * p.MicroBatches)
}

// LocalBatch returns the samples each replica processes per iteration: GlobalBatch / DP.
func (p Plan) LocalBatch() int {
	if p.DP < 1 {
		return 0
	}
	return p.GlobalBatch / p.DP
}

// String formats the plan as "dp=16 tp=8 pp=8 mb=64 batch=1024", followed by "zero=1",
// "offload", "threads=4" and "ckpt" when set.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dp=%d tp=%d pp=%d mb=%d batch=%d", p.DP, p.TP, p.PP, p.MicroBatches, p.GlobalBatch)
	if p.ZeRO != 0 {
		fmt.Fprintf(&b, " zero=%d", p.ZeRO)
	}
	if p.Offload {
		b.WriteString(" offload")
	}
	if p.CPUThreads != 0 {
		fmt.Fprintf(&b, " threads=%d", p.CPUThreads)
	}
	if p.Checkpointing {
		b.WriteString(" ckpt")
	}
	if p.UnevenHeads {
		b.WriteString(" uneven-heads")
	}
	if len(p.Stages) > 0 {
		fmt.Fprintf(&b, " stages=%v", p.Stages)
	}
	return b.String()
}

// degree returns d, or 1 when d is below 1 (the zero Plan is one worker).
func degree(d int) int { return max(d, 1) }

// Rank returns the canonical rank of the worker at data-parallel index dp, stage pp and
// tensor-parallel index tp: (dp x PP + pp) x TP + tp. Rank, Coords and StageOf take degrees
// below 1 (an unset Plan) as 1.
//
// Deprecated: not needed by embedders ((dp x PP + pp) x TP + tp; Plan.Coords inverts it); removed in v0.3.0.
func (p Plan) Rank(dp, pp, tp int) int { return (dp*degree(p.PP)+pp)*degree(p.TP) + tp }

// Coords returns the (dp, pp, tp) coordinates of a rank; it inverts Rank.
func (p Plan) Coords(rank int) (dp, pp, tp int) {
	TP, PP := degree(p.TP), degree(p.PP)
	tp = rank % TP
	r := rank / TP
	return r / PP, r % PP, tp
}

// StageOf returns the pipeline stage of a rank: 0 for every rank of a plan without pipelining
// (PP 1, or unset).
//
// Deprecated: use Plan.Coords; removed in v0.3.0.
func (p Plan) StageOf(rank int) int { return (rank / degree(p.TP)) % degree(p.PP) }

// TPGroup returns the ranks of the tensor-parallel group of replica dp, stage pp: TP
// consecutive ranks.
//
// Deprecated: use Plan.TPGroups; removed in v0.3.0.
func (p Plan) TPGroup(dp, pp int) []int {
	out := make([]int, p.TP)
	for t := range out {
		out[t] = p.Rank(dp, pp, t)
	}
	return out
}

// DPRing returns the ranks of the data-parallel ring of stage pp, tensor-parallel index tp: one
// worker per replica, in replica order.
//
// Deprecated: not needed by embedders (the cost model's internals); removed in v0.3.0.
func (p Plan) DPRing(pp, tp int) []int {
	out := make([]int, p.DP)
	for d := range out {
		out[d] = p.Rank(d, pp, tp)
	}
	return out
}

// TPGroups returns every tensor-parallel group, indexed dp x PP + pp.
func (p Plan) TPGroups() [][]int {
	out := make([][]int, 0, p.DP*p.PP)
	for d := 0; d < p.DP; d++ {
		for s := 0; s < p.PP; s++ {
			out = append(out, p.TPGroup(d, s))
		}
	}
	return out
}

// DPRings returns every data-parallel ring, indexed pp x TP + tp.
//
// Deprecated: not needed by embedders (the cost model's internals); removed in v0.3.0.
func (p Plan) DPRings() [][]int {
	out := make([][]int, 0, p.PP*p.TP)
	for s := 0; s < p.PP; s++ {
		for t := 0; t < p.TP; t++ {
			out = append(out, p.DPRing(s, t))
		}
	}
	return out
}

// maxDegree bounds each degree so that DP x TP x PP cannot overflow.
const maxDegree = 1 << 20

// maxCPUThreads bounds Plan.CPUThreads.
const maxCPUThreads = 1 << 12

// Validate checks the plan against a model and returns an error wrapping ErrInvalidPlan that
// names the offending field: a degree, MicroBatches or GlobalBatch below one (or absurdly
// large), DP x MicroBatches not dividing GlobalBatch, more stages than layers, TP not dividing
// the model's attention heads (unless UnevenHeads, and then TP above them), a ZeRO stage outside 0-3, Offload without ZeRO, a negative or
// absurd CPUThreads, or Stages of the wrong length or sum.
// Memory is checked separately (Compiled.CheckMemory) because it depends on the GPU.
func (p Plan) Validate(m *Model) error {
	if m == nil {
		return fmt.Errorf("%w: no model", ErrInvalidPlan)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"dp", p.DP}, {"tp", p.TP}, {"pp", p.PP}, {"micro_batches", p.MicroBatches}, {"global_batch", p.GlobalBatch}} {
		if f.v < 1 {
			return fmt.Errorf("%w: %s %d must be at least 1 (plan %v)", ErrInvalidPlan, f.name, f.v, p)
		}
		if f.v > maxDegree*maxDegree/4 || (f.name != "global_batch" && f.v > maxDegree) {
			return fmt.Errorf("%w: %s %d is too large (plan %v)", ErrInvalidPlan, f.name, f.v, p)
		}
	}
	if p.GlobalBatch%(p.DP*p.MicroBatches) != 0 {
		return fmt.Errorf("%w: dp %d x micro_batches %d = %d does not divide global_batch %d",
			ErrInvalidPlan, p.DP, p.MicroBatches, p.DP*p.MicroBatches, p.GlobalBatch)
	}
	if p.PP > m.NumLayers() {
		return fmt.Errorf("%w: pp %d stages outnumber the %d layers of model %q", ErrInvalidPlan, p.PP, m.NumLayers(), m.Name())
	}
	if h := m.Heads(); h > 0 && h%p.TP != 0 {
		if !p.UnevenHeads {
			return fmt.Errorf("%w: tp %d does not divide the %d attention heads of model %q (uneven_heads allows it)", ErrInvalidPlan, p.TP, h, m.Name())
		}
		if p.TP > h {
			return fmt.Errorf("%w: tp %d is more than the %d attention heads of model %q", ErrInvalidPlan, p.TP, h, m.Name())
		}
	}
	if p.ZeRO < 0 || p.ZeRO > 3 {
		return fmt.Errorf("%w: zero stage %d must be 0, 1, 2 or 3", ErrInvalidPlan, p.ZeRO)
	}
	if p.Offload && p.ZeRO < 1 {
		return fmt.Errorf("%w: offload needs zero stage 1, 2 or 3 (ZeRO-Offload partitions the optimizer state it moves to the host), got zero %d", ErrInvalidPlan, p.ZeRO)
	}
	if p.CPUThreads < 0 || p.CPUThreads > maxCPUThreads {
		return fmt.Errorf("%w: cpu_threads %d must be in 0-%d", ErrInvalidPlan, p.CPUThreads, maxCPUThreads)
	}
	if len(p.Stages) > 0 {
		if len(p.Stages) != p.PP {
			return fmt.Errorf("%w: stages lists %d stages but pp is %d", ErrInvalidPlan, len(p.Stages), p.PP)
		}
		sum := 0
		for i, n := range p.Stages {
			if n < 1 {
				return fmt.Errorf("%w: stage %d has %d layers, need at least 1", ErrInvalidPlan, i, n)
			}
			sum += n
			if sum > m.NumLayers() {
				break
			}
		}
		if sum != m.NumLayers() {
			return fmt.Errorf("%w: stages cover %d layers but model %q has %d", ErrInvalidPlan, sum, m.Name(), m.NumLayers())
		}
	}
	return nil
}

// BalancedStages splits weights (one per layer, in pipeline order, non-negative) into k
// contiguous non-empty stages so that the heaviest stage is as light as possible, and returns
// the number of layers of each stage. It needs 1 <= k <= len(weights).
//
// Deprecated: not needed by embedders (Compile splits the layers into stages); removed in v0.3.0.
func BalancedStages(weights []float64, k int) []int {
	n := len(weights)
	if k < 1 || k > n {
		return nil
	}
	total, heaviest := 0.0, 0.0
	for _, w := range weights {
		total += w
		heaviest = math.Max(heaviest, w)
	}
	// Smallest cap whose greedy packing needs at most k stages, by bisection on the cap.
	lo, hi := heaviest, total
	if need(weights, lo) > k {
		for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
			mid := (lo + hi) / 2
			if need(weights, mid) <= k {
				hi = mid
			} else {
				lo = mid
			}
		}
	} else {
		hi = lo
	}
	// Pack greedily under the cap, leaving at least one layer for each remaining stage.
	out := make([]int, 0, k)
	i := 0
	for s := 0; s < k; s++ {
		left := k - s - 1 // stages after this one
		sum, cnt := 0.0, 0
		for i < n-left && (cnt == 0 || (s == k-1) || sum+weights[i] <= hi) {
			sum += weights[i]
			cnt++
			i++
		}
		out = append(out, cnt)
	}
	return out
}

// need returns how many stages greedy packing under cap uses.
func need(w []float64, limit float64) int {
	stages, sum := 1, 0.0
	for _, x := range w {
		if sum+x > limit && sum > 0 {
			stages++
			sum = 0
		}
		sum += x
	}
	return stages
}
