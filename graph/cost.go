package graph

import (
	"fmt"
	"math"
	"sync"

	"github.com/gpusched/gpusched/topology"
)

// Efficiency holds the constants of the cost model that are fitted rather than derived: how
// close one kind of GPU and its interconnect come to their datasheet figures, and what they
// spend besides the model's FLOPs and bytes. They belong to the hardware (a GPU type with its
// servers' links), not to a model: HardwareConstants returns the ones fitted jointly across the
// models measured on each GPU type, and package perf fits them to your own measurements.
//
// The zero value stands for "the constants of the GPU type the job is placed on" in Options
// (see Options.Efficiency); DefaultEfficiency() gives the uncalibrated textbook figures. A zero
// LayerOverhead, OptimizerPerParam, CPUOptimizerPerParam, HostOptimizerPerParam or
// HostBandwidth leaves that term out; a zero ComputeFP32 means Compute.
type Efficiency struct {
	// Compute is the achieved fraction of a GPU's peak FLOP/s (topology.GPUSpec.PeakFLOPS, its
	// 16-bit tensor figure) for a model in 16-bit mixed precision, in (0, 1].
	Compute float64 `json:"compute"`
	// ComputeFP32 is the achieved fraction of the same peak for a model in 32-bit precision
	// (Model.DTypeBytes() >= 4), in [0, 1]; 0 means Compute.
	ComputeFP32 float64 `json:"compute_fp32,omitempty"`
	// LayerOverhead is a fixed time in seconds per layer and micro-batch of every forward pass
	// (a backward pass counts twice, a recomputation once more), whatever the layer's work:
	// kernel launches and small kernels. It makes small micro-batches and thin tensor-parallel
	// shards less efficient: a layer of f FLOPs per GPU runs at f / (f + P x Compute x
	// LayerOverhead) of the achieved peak P x Compute. At least 0.
	LayerOverhead float64 `json:"layer_overhead,omitempty"`
	// ComputeSizeExponent makes the achieved fraction of peak grow with the work of one layer
	// on one GPU: a stage whose layers average f forward FLOPs per micro-batch and GPU runs at
	// Compute x (f / ComputeSizeRef)^ComputeSizeExponent of peak (at most all of it), so that
	// wide layers and long sequences (large matrix products) run nearer peak than narrow ones.
	// 0 leaves the term out; at least 0.
	ComputeSizeExponent float64 `json:"compute_size_exponent,omitempty"`
	// ComputeWidthExponent makes the achieved fraction of peak grow with the width of the
	// model's layers as one GPU holds them, whatever the batch: a stage whose layers hold w
	// parameters per GPU (a geometric mean over its layers weighted by their forward FLOPs;
	// a transformer block of hidden size h holds about 12 h^2 / TP) runs at
	// (w / 1e7)^ComputeWidthExponent times the rate Compute and ComputeSizeExponent give (at
	// most all of peak): the matrix products of wide models (LLaMA-7B's h = 4096) run nearer
	// peak than those of narrow ones (ViT-Base's h = 768), and tensor-parallel shards thin
	// them. 0 leaves the term out; at least 0.
	ComputeWidthExponent float64 `json:"compute_width_exponent,omitempty"`
	// IntraComm is the achieved fraction of the intra-server bandwidth (NVLink, PCIe), in (0, 1].
	IntraComm float64 `json:"intra_comm"`
	// InterComm is the achieved fraction of the inter-server bandwidth (NICs, uplinks), in
	// (0, 1].
	InterComm float64 `json:"inter_comm"`
	// Overlap is the fraction of the data-parallel gradient synchronisation that can run during
	// the last micro-batch's backward pass, in [0, 1]: at most Overlap x DPComm, and never more
	// than that backward pass lasts, is hidden. Under ZeRO only the gradient reduce-scatter
	// (half the volume) can overlap; the parameter all-gather after the optimizer step cannot.
	Overlap float64 `json:"overlap"`
	// StepOverhead is a fixed time per iteration in seconds (data loading, framework,
	// launching the step), at least 0.
	StepOverhead float64 `json:"step_overhead"`
	// OptimizerPerParam is the time in seconds of the optimizer step per parameter a GPU
	// updates (Adam on the GPU is bound by memory bandwidth): every parameter of the worker's
	// share of its stage without ZeRO, 1/DP of them from ZeRO-1 on. At least 0.
	OptimizerPerParam float64 `json:"optimizer_per_param,omitempty"`
	// CPUOptimizerPerParam is the time in seconds one CPU thread takes per parameter of the
	// optimizer step under ZeRO-Offload (Plan.Offload), at least 0.
	CPUOptimizerPerParam float64 `json:"cpu_optimizer_per_param,omitempty"`
	// HostOptimizerPerParam is the least time in seconds per parameter that a server's CPU
	// optimizer steps take together under ZeRO-Offload, however many threads run them (host
	// memory bandwidth), at least 0. A server whose GPUs update p parameters with t threads in
	// all spends p x max(CPUOptimizerPerParam / t, HostOptimizerPerParam).
	HostOptimizerPerParam float64 `json:"host_optimizer_per_param,omitempty"`
	// HostBandwidth is the achieved bandwidth in bytes per second between one GPU and host
	// memory (PCIe), over which ZeRO-Offload moves each updated parameter's gradient to the
	// host and the parameter back; 0 leaves the transfer out.
	HostBandwidth float64 `json:"host_bandwidth,omitempty"`
	// RingLayout says how ring collectives use the paths between servers (see RingLayout): the
	// zero value, ServerGrouped, suits NCCL on full-duplex links; the Pollux T4 testbed's
	// measurements call for HalfDuplexPairs. It lives beside the constants because it is chosen
	// by calibration together with them.
	RingLayout RingLayout `json:"ring_layout,omitempty"`
	// PairDuplex is, under HalfDuplexPairs, the fraction of a path's capacity between two
	// servers that each direction has of its own, in [0, 1]: a ring over exactly two servers
	// gets its inter-server bandwidth divided by 2 - PairDuplex. The zero value is the
	// layout's full halving; 1 makes HalfDuplexPairs ServerGrouped. Ignored under
	// ServerGrouped.
	PairDuplex float64 `json:"pair_duplex,omitempty"`
	// BucketStepLatency is a time in seconds that each step of a data-parallel gradient
	// all-reduce over several servers pays per gradient bucket, beyond its bytes over the
	// bandwidth and the links' own latency: frameworks all-reduce the gradients in buckets of
	// GradientBucketBytes (PyTorch DDP), each a ring of 2(n-1) steps over n GPUs, and every
	// step waits for one message over the network (a TCP/IP stack on Ethernet, a proxy
	// thread, a kernel launch). A ring of B bytes over n GPUs on several servers pays
	// ceil(B / GradientBucketBytes) x 2(n-1) x BucketStepLatency more (x 1.5 under ZeRO-3).
	// It is part of the synchronisation, overlapped like the rest. 0 leaves the term out; at
	// least 0.
	BucketStepLatency float64 `json:"bucket_step_latency,omitempty"`
}

// GradientBucketBytes is the size of the buckets in which data-parallel gradients are
// all-reduced (Efficiency.BucketStepLatency): PyTorch DistributedDataParallel's default
// bucket_cap_mb of 25 MiB.
const GradientBucketBytes = 25 << 20

// ComputeSizeRef is the forward FLOPs of one layer per micro-batch and GPU at which
// Efficiency.ComputeSizeExponent leaves the achieved fraction of peak at Efficiency.Compute.
//
// Deprecated: not needed by embedders (Efficiency.ComputeSizeExponent's reference, a constant of the model); removed in v0.3.0.
const ComputeSizeRef = 1e10

// computeWidthRef is the parameters per layer and GPU at which Efficiency.ComputeWidthExponent
// leaves the achieved rate as it is (about a transformer block of hidden size 900).
const computeWidthRef = 1e7

// DefaultEfficiency returns the uncalibrated textbook constants: Compute 0.5 (Megatron-LM
// reaches 44-52% of A100 peak on GPT models, Narayanan et al. 2021), IntraComm and InterComm
// 0.8 (NCCL's bus bandwidth is typically 80-90% of the line rate on NVLink and InfiniBand),
// Overlap 0.8 (PyTorch DDP overlaps all gradient buckets but the last ones with the backward
// pass), no overheads, no optimizer time, RingLayout ServerGrouped. They are what a GPU type
// without fitted constants gets (see HardwareConstants).
func DefaultEfficiency() Efficiency {
	return Efficiency{Compute: 0.5, IntraComm: 0.8, InterComm: 0.8, Overlap: 0.8}
}

// Validate returns an error wrapping ErrInvalidOptions naming the first constant outside its
// range.
func (e Efficiency) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute", e.Compute}, {"intra_comm", e.IntraComm}, {"inter_comm", e.InterComm}} {
		if !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("%w: efficiency %s %v must be in (0, 1]", ErrInvalidOptions, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute_fp32", e.ComputeFP32}, {"overlap", e.Overlap}, {"pair_duplex", e.PairDuplex}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%w: efficiency %s %v must be in [0, 1]", ErrInvalidOptions, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name, unit string
		v          float64
	}{
		{"step_overhead", "seconds", e.StepOverhead}, {"layer_overhead", "seconds", e.LayerOverhead},
		{"compute_size_exponent", "", e.ComputeSizeExponent}, {"compute_width_exponent", "", e.ComputeWidthExponent},
		{"bucket_step_latency", "seconds", e.BucketStepLatency},
		{"optimizer_per_param", "seconds", e.OptimizerPerParam}, {"cpu_optimizer_per_param", "seconds", e.CPUOptimizerPerParam},
		{"host_optimizer_per_param", "seconds", e.HostOptimizerPerParam}, {"host_bandwidth", "bytes per second", e.HostBandwidth},
	} {
		if !finiteNonNeg(f.v) {
			if f.unit == "" {
				return fmt.Errorf("%w: efficiency %s %v must be a non-negative finite number", ErrInvalidOptions, f.name, f.v)
			}
			return fmt.Errorf("%w: efficiency %s %v must be a non-negative finite number of %s", ErrInvalidOptions, f.name, f.v, f.unit)
		}
	}
	if !e.RingLayout.valid() {
		return fmt.Errorf("%w: efficiency ring_layout %d is not a known RingLayout", ErrInvalidOptions, e.RingLayout)
	}
	return nil
}

// ModelFactors are the few free coefficients of one model on top of the hardware's constants,
// fitted from a handful of its measured configurations (package perf): factors that multiply
// one part of the predicted iteration time, and a time of its own added to every iteration.
// They stand for what the model's description does not say (kernels faster or slower than its
// FLOPs suggest, a framework's extra traffic, an optimizer other than Adam, data loading). A
// zero factor means 1 and a zero Overhead adds nothing, so the zero value changes nothing.
type ModelFactors struct {
	// Compute multiplies the compute time (forward, backward, recomputation, layer overheads).
	Compute float64 `json:"compute,omitempty"`
	// Comm multiplies the communication time (tensor-, pipeline- and data-parallel).
	Comm float64 `json:"comm,omitempty"`
	// Optimizer multiplies the optimizer step (on the GPU, or on the host with its transfers
	// under ZeRO-Offload).
	Optimizer float64 `json:"optimizer,omitempty"`
	// Overhead is a time in seconds the model adds to every iteration, on top of the
	// hardware's Efficiency.StepOverhead (which it may lower: the sum counts as 0 if it is
	// negative); it does not shrink with more GPUs.
	Overhead float64 `json:"overhead,omitempty"`
	// Parallel multiplies, on top of Compute, the compute time of plans with tensor or
	// pipeline parallelism (TP or PP above 1), whose implementation (Megatron-LM's, where the
	// shipped constants were fitted) can run a model's layers at another pace than the
	// data-parallel one (DeepSpeed's there).
	Parallel float64 `json:"parallel,omitempty"`
}

// Validate returns an error wrapping ErrInvalidOptions naming the first factor that is
// negative, NaN or infinite, or an Overhead that is NaN or infinite.
func (f ModelFactors) Validate() error {
	for _, x := range []struct {
		name string
		v    float64
	}{{"compute", f.Compute}, {"comm", f.Comm}, {"optimizer", f.Optimizer}, {"parallel", f.Parallel}} {
		if !finiteNonNeg(x.v) {
			return fmt.Errorf("%w: model factor %s %v must be a non-negative finite number", ErrInvalidOptions, x.name, x.v)
		}
	}
	if math.IsNaN(f.Overhead) || math.IsInf(f.Overhead, 0) {
		return fmt.Errorf("%w: model overhead %v must be a finite number of seconds", ErrInvalidOptions, f.Overhead)
	}
	return nil
}

// or1 returns the factors with zeros replaced by 1.
func (f ModelFactors) or1() ModelFactors {
	one := func(v float64) float64 {
		if v == 0 {
			return 1
		}
		return v
	}
	return ModelFactors{one(f.Compute), one(f.Comm), one(f.Optimizer), f.Overhead, one(f.Parallel)}
}

// Options parameterises IterationTime.
type Options struct {
	// Efficiency holds the hardware constants. The zero value means those of the GPU type the
	// job is placed on (of its slowest GPU when the placement mixes types): Calibration's when
	// it has that type, else HardwareConstants', else DefaultEfficiency().
	Efficiency Efficiency
	// Factors holds the model's own coefficients. The zero value means Calibration's factors
	// for the model's name, else none.
	Factors ModelFactors
	// Calibration holds fitted constants per GPU type and factors per model (package perf
	// writes them); nil means the shipped constants alone.
	Calibration *Calibration
	// Load counts other jobs' flows on shared links (see topology.LinkLoad); nil means idle.
	Load topology.LinkLoad
	// Scratch, when set, lends IterationTime working space that earlier calls used, instead of
	// allocating several slices per server of the cluster at every call (which dominates the
	// time of small jobs on large clusters). Results are the same with or without it.
	Scratch *Scratch
}

// Scratch is working space that calls of IterationTime share (Options.Scratch). It is safe
// for concurrent use; the zero value is ready. A host that times many jobs keeps one.
type Scratch struct {
	evaluators sync.Pool
}

// resolve returns the constants and factors the options give for the job on GPUs of the given
// type.
func (o Options) resolve(model *Model, gpuModel string) (Efficiency, ModelFactors, error) {
	e := o.Efficiency
	if e == (Efficiency{}) {
		e = o.Calibration.Constants(gpuModel)
	}
	if err := e.Validate(); err != nil {
		return Efficiency{}, ModelFactors{}, err
	}
	f := o.Factors
	if f == (ModelFactors{}) && model != nil {
		f = o.Calibration.Factors(model.Name())
	}
	if err := f.Validate(); err != nil {
		return Efficiency{}, ModelFactors{}, err
	}
	return e, f, nil
}

// Breakdown is the time of one training iteration of a placed job, in seconds, split by cause.
// Total = Compute + Bubble + TP + PP + DP + Optimizer + Overhead.
type Breakdown struct {
	// Compute is the bottleneck stage's forward and backward (and recompute) time over the
	// micro-batches, layer overheads included.
	Compute float64 `json:"compute"`
	// Bubble is the pipeline fill and drain: (PP - 1) x the bottleneck stage's micro-batch time.
	Bubble float64 `json:"bubble"`
	// TP is the bottleneck stage's tensor-parallel all-reduce time over the micro-batches.
	TP float64 `json:"tp"`
	// PP is the bottleneck stage's point-to-point activation and gradient time over the
	// micro-batches.
	PP float64 `json:"pp"`
	// DP is the data-parallel synchronisation left exposed after overlap with the backward
	// pass (with ZeRO, the parameter all-gather after the optimizer step too).
	DP float64 `json:"dp"`
	// Optimizer is the optimizer step of the busiest worker: on its GPU, or under ZeRO-Offload
	// on the host (the busiest server's CPU threads) with the gradient and parameter transfers.
	Optimizer float64 `json:"optimizer"`
	// Overhead is the fixed per-iteration overhead (Efficiency.StepOverhead plus the model's
	// ModelFactors.Overhead).
	Overhead float64 `json:"overhead"`
	// Total is the iteration time.
	Total float64 `json:"total"`
	// DPComm is the full data-parallel synchronisation time before overlap (slowest stage).
	DPComm float64 `json:"dp_comm"`
	// MicroBatch is the bottleneck stage's time per micro-batch (compute + TP + PP).
	MicroBatch float64 `json:"micro_batch"`
	// Stage is the bottleneck stage.
	Stage int `json:"stage"`
}

// String formats the breakdown in milliseconds.
func (b Breakdown) String() string {
	return fmt.Sprintf("total %.3f ms = compute %.3f + bubble %.3f + tp %.3f + pp %.3f + dp %.3f (of %.3f) + optimizer %.3f + overhead %.3f (bottleneck stage %d)",
		b.Total*1e3, b.Compute*1e3, b.Bubble*1e3, b.TP*1e3, b.PP*1e3, b.DP*1e3, b.DPComm*1e3, b.Optimizer*1e3, b.Overhead*1e3, b.Stage)
}

// IterationTime compiles model and plan and returns the iteration time of the job placed on
// cluster (see Compiled.IterationTime).
func IterationTime(model *Model, plan Plan, cluster *topology.Cluster, placement []topology.GPUID, o Options) (Breakdown, error) {
	c, err := Compile(model, plan)
	if err != nil {
		return Breakdown{}, err
	}
	return c.IterationTime(cluster, placement, o)
}

// IterationTime returns the time of one training iteration of the job with worker rank r on GPU
// placement[r] of cluster, broken down by cause. It does not check memory (see CheckMemory).
// Errors wrap ErrInvalidPlacement (wrong length, unknown or repeated GPU) or ErrInvalidOptions.
// It is Place followed by Placed.Time with the constants and factors o resolves to.
//
// With b samples per micro-batch, m micro-batches, and for each stage s: forward FLOPs F_s per
// sample, L_s layers, p_s parameters, slowest GPU peak P_s, hardware constants E and model
// factors f (each 1 when unset):
//
//	fwd_s     = f.Compute x (b F_s / TP / (P_s x r_s) + L_s x E.LayerOverhead)
//	            (x f.Parallel too when TP or PP is above 1)
//	r_s       = min(1, E.Compute x (b F_s / TP / L_s / ComputeSizeRef)^E.ComputeSizeExponent)
//	            x (w_s / 1e7)^E.ComputeWidthExponent
//	            (E.ComputeFP32 instead of E.Compute for a 32-bit model): the achieved
//	            fraction of peak grows with the mean work of one layer on one GPU and with
//	            w_s, the FLOPs-weighted geometric mean over the stage's layers of their
//	            parameters per GPU (each layer's parameters / TP)
//	compute_s = 3 fwd_s (4 fwd_s with checkpointing: the forward pass is recomputed)
//	tp_s      = passes x ring all-reduce over the TP group of b x TPAllReduceBytes_s
//	            (passes = 2: forward and backward; 3 with checkpointing), with the ring's
//	            latency paid once per all-reduce; slowest TP group of the stage; x f.Comm
//	pp_s      = p2p(b x SendBytes_s / TP to stage s+1) + p2p(b x SendBytes_{s-1} / TP to s-1)
//	            (activations forward, gradients backward; slowest pair of the boundary); x f.Comm
//	T_s       = compute_s + tp_s + pp_s;  T = max_s T_s (the bottleneck stage)
//	pipeline  = (m + PP - 1) x T   (1F1B; Bubble = (PP - 1) x T)
//	dp_s      = f.Comm x ring all-reduce over the stage's DP ring of ParamBytes_s / TP bytes
//	            (x 1.5 under ZeRO-3, which adds parameter all-gathers); slowest ring; a
//	            ring over several servers adds ceil(ParamBytes_s / TP / GradientBucketBytes)
//	            x 2(n-1) x E.BucketStepLatency (x 1.5 under ZeRO-3): one latency per ring
//	            step and gradient bucket
//	exposed_s = dp_s - min(E.Overlap x dp_s, backward time of one micro-batch of stage s)
//	            without ZeRO; under ZeRO the reduce-scatter half overlaps so and the rest
//	            (the parameter all-gather after the optimizer step) is exposed
//	optimizer = f.Optimizer x E.OptimizerPerParam x max_s p_s / TP (/ DP under ZeRO)
//	            or, under ZeRO-Offload, f.Optimizer x (max over servers of q x
//	            max(E.CPUOptimizerPerParam / threads, E.HostOptimizerPerParam) + max_s
//	            d p_s / TP x (1/DP + 1) / E.HostBandwidth), q the parameters the server's GPUs
//	            update, threads their CPU threads (Plan.CPUThreads each), d the bytes per value:
//	            each worker sends its shard's gradients to the host and receives its share of
//	            the stage's parameters whole (the measured ZeRO-Offload runs move the whole
//	            parameters over PCIe every iteration, however many replicas share the work)
//	Total     = pipeline + max_s exposed_s + optimizer + max(0, E.StepOverhead + f.Overhead)
//
// A ring all-reduce of B bytes over n GPUs takes 2(n-1)/n x B / bw + 2(n-1) x latency, where bw
// is the smaller of the ring's slowest intra-server hop x E.IntraComm and its slowest
// inter-server hop x E.InterComm (topology's ring model), the latter divided by 2 -
// E.PairDuplex when E.RingLayout is HalfDuplexPairs and the ring spans exactly two servers (its
// hops A->B and B->A share one path), and a point-to-point send takes latency + bytes / (bandwidth x the
// efficiency of its kind of link).
//
// Links are shared: o.Load counts other jobs' flows on each link, and the job's own concurrent
// flows share links too. All DP rings run at once, so a server whose NICs carry rings needing
// D NIC-channels in total (a ring with m GPUs there drives topology.ServerSpec.NICChannels(m))
// gives each max(1, D/R) less bandwidth, R the NICs the job's GPUs on that server are attached
// to (NICChannels of the job's GPU count there), and a shared (PCIe) fabric is split among the
// rings with two or more GPUs on it; the same holds for the TP groups and for the pipeline's
// point-to-point flows (each using one NIC). Rack uplinks carry only the load o.Load gives
// them.
func (c *Compiled) IterationTime(cluster *topology.Cluster, placement []topology.GPUID, o Options) (Breakdown, error) {
	pl, err := c.place(cluster, placement, o.Load, o.Scratch)
	if err != nil {
		return Breakdown{}, err
	}
	eff, f, err := o.resolve(c.model, pl.gpuModel)
	if err != nil {
		return Breakdown{}, err
	}
	return c.timing(pl.geo, eff, f), nil
}

// Placed is a compiled job placed on a cluster under a given load of other jobs: everything
// of its iteration time that does not depend on the constants, computed once by Place, so that
// Time can evaluate many sets of constants quickly (as fitting them does). A Placed is
// immutable and safe for concurrent use.
type Placed struct {
	c        *Compiled
	geo      *geometry
	gpuModel string
}

// Place validates a placement of the compiled job (worker rank r on GPU placement[r] of
// cluster) and precomputes the links of its collectives and transfers under load (nil: idle).
// Errors wrap ErrInvalidPlacement.
func (c *Compiled) Place(cluster *topology.Cluster, placement []topology.GPUID, load topology.LinkLoad) (*Placed, error) {
	return c.place(cluster, placement, load, nil)
}

// place is Place with working space from s (nil: none).
func (c *Compiled) place(cluster *topology.Cluster, placement []topology.GPUID, load topology.LinkLoad, s *Scratch) (*Placed, error) {
	if cluster == nil {
		return nil, fmt.Errorf("%w: no cluster", ErrInvalidPlacement)
	}
	p := c.plan
	if len(placement) != p.Workers() {
		return nil, fmt.Errorf("%w: plan %v has %d workers but the placement lists %d GPUs", ErrInvalidPlacement, p, p.Workers(), len(placement))
	}
	ev := s.evaluator(cluster, load, len(placement))
	if s != nil {
		defer s.evaluators.Put(ev)
	}
	if err := ev.place(placement); err != nil {
		return nil, err
	}
	return &Placed{c: c, geo: c.geometry(ev, placement), gpuModel: ev.slowestModel(placement)}, nil
}

// GPUModel returns the GPU model (topology.GPUSpec.Model) whose constants the job's time uses
// by default: that of its slowest GPU.
func (p *Placed) GPUModel() string { return p.gpuModel }

// Compiled returns the placed job's compiled model and plan.
//
// Deprecated: not needed by embedders (keep the Compiled that Place was called on); removed in v0.3.0.
func (p *Placed) Compiled() *Compiled { return p.c }

// Time returns the iteration time of the placed job with the given constants and factors (see
// Compiled.IterationTime; here the zero Efficiency is not resolved, it is invalid). Errors wrap
// ErrInvalidOptions.
func (p *Placed) Time(eff Efficiency, f ModelFactors) (Breakdown, error) {
	if err := eff.Validate(); err != nil {
		return Breakdown{}, err
	}
	if err := f.Validate(); err != nil {
		return Breakdown{}, err
	}
	return p.c.timing(p.geo, eff, f), nil
}

// TimeAll sets out[i] to the total iteration time of jobs[i] with the constants eff and the
// factors factors[i] (see Placed.Time), validating eff once: the inner loop of fitting
// constants to many measurements. out and factors must be as long as jobs. Errors wrap
// ErrInvalidOptions.
func TimeAll(jobs []*Placed, eff Efficiency, factors []ModelFactors, out []float64) error {
	return timeEach(jobs, eff, factors, len(out), func(i int, b Breakdown) { out[i] = b.Total })
}

// BreakdownAll is TimeAll with the whole breakdown: out[i] is the iteration time of jobs[i]
// with the constants eff and the factors factors[i], by cause (see Placed.Time).
func BreakdownAll(jobs []*Placed, eff Efficiency, factors []ModelFactors, out []Breakdown) error {
	return timeEach(jobs, eff, factors, len(out), func(i int, b Breakdown) { out[i] = b })
}

// timeEach times jobs[i] with eff and factors[i] and hands each breakdown to set, validating
// eff once and each run of equal factors once; n is the length of the caller's output.
func timeEach(jobs []*Placed, eff Efficiency, factors []ModelFactors, n int, set func(int, Breakdown)) error {
	if len(factors) != len(jobs) || n != len(jobs) {
		return fmt.Errorf("%w: %d jobs, %d factors, %d outputs", ErrInvalidOptions, len(jobs), len(factors), n)
	}
	if err := eff.Validate(); err != nil {
		return err
	}
	var last ModelFactors
	for i, p := range jobs {
		if f := factors[i]; i == 0 || f != last {
			if err := f.Validate(); err != nil {
				return err
			}
			last = f
		}
		set(i, p.c.timing(p.geo, eff, factors[i]))
	}
	return nil
}

// TimeWith returns the iteration time with the constants and factors o resolves to for the
// placed job (o.Load is ignored: the load was fixed by Place).
func (p *Placed) TimeWith(o Options) (Breakdown, error) {
	eff, f, err := o.resolve(p.c.model, p.gpuModel)
	if err != nil {
		return Breakdown{}, err
	}
	return p.c.timing(p.geo, eff, f), nil
}

// evaluator holds the scratch space of one IterationTime call.
type evaluator struct {
	floats []float64 // backs nics, nic, intra, load.NIC, load.Intra, peak, gpus, reach (n each)
	ints   []int32   // backs cnt (n) and srv (workers)
	cl     *topology.Cluster
	nics   []float64 // NICs per server
	gpus   []float64 // GPUs per server
	reach  []float64 // NICs the job's GPUs on each server are attached to (0: none there)
	peak   []float64 // GPU peak FLOP/s per server
	ext    *topology.DenseLoad
	load   topology.DenseLoad // the current phase's load: ext plus the job's own flows
	nic    []float64          // NIC-channel demand per server in the current phase
	intra  []float64          // flows on each server's fabric in the current phase
	srv    []int32            // server of each rank's GPU
	cnt    []int32
	// touched lists the servers of the group being added; contrib saves its demand so that
	// an identical group can be added again cheaply.
	touched []int32
	contrib []demand
	buf     []topology.GPUID
	ringBuf []topology.GPUID // the DP rings, gathered
	ringSrv []int32          // their servers
}

// demand is one group's contribution to a server's NIC channels and fabric flows.
type demand struct {
	server     int32
	nic, intra float64
}

// evaluator returns an evaluator for a placement of workers GPUs on cl under load l: one an
// earlier call used on the same cluster, reset, or a new one (always a new one from a nil s).
// Geometries never refer to an evaluator's slices, so one is free for reuse once Place
// returns.
func (s *Scratch) evaluator(cl *topology.Cluster, l topology.LinkLoad, workers int) *evaluator {
	if s == nil {
		return newEvaluator(cl, l, workers)
	}
	ev, ok := s.evaluators.Get().(*evaluator)
	if !ok || ev.cl != cl {
		return newEvaluator(cl, l, workers)
	}
	n := cl.NumServers()
	clear(ev.floats[1*n : 5*n]) // nic, intra and the phase's load
	clear(ev.reach)
	if cap(ev.ints) < n+workers {
		ev.ints = make([]int32, n+workers)
	} else {
		ev.ints = ev.ints[:n+workers]
		clear(ev.ints)
	}
	ev.cnt, ev.srv = ev.ints[:n], ev.ints[n:]
	ev.ext = cl.FillDenseLoad(l, ev.ext)
	ev.load.Uplink = ev.ext.Uplink
	ev.touched, ev.contrib = ev.touched[:0], ev.contrib[:0]
	return ev
}

func newEvaluator(cl *topology.Cluster, l topology.LinkLoad, workers int) *evaluator {
	n := cl.NumServers()
	floats := make([]float64, 8*n)
	ints := make([]int32, n+workers)
	ev := &evaluator{
		floats: floats,
		ints:   ints,
		cl:     cl,
		nics:   floats[0*n : 1*n],
		nic:    floats[1*n : 2*n],
		intra:  floats[2*n : 3*n],
		peak:   floats[5*n : 6*n],
		gpus:   floats[6*n : 7*n],
		reach:  floats[7*n : 8*n],
		cnt:    ints[:n],
		srv:    ints[n:],
		ext:    cl.FillDenseLoad(l, nil),
	}
	ev.load.NIC = floats[3*n : 4*n]
	ev.load.Intra = floats[4*n : 5*n]
	ev.load.Uplink = ev.ext.Uplink
	for s := range ev.nics {
		first, k := cl.GPUsOf(s)
		ev.nics[s] = float64(cl.Server(s).NICs)
		ev.gpus[s] = float64(k)
		ev.peak[s] = cl.GPU(first).PeakFLOPS
	}
	return ev
}

// slowestModel returns the GPU model of the placement's slowest GPU (lowest peak; the first
// such in rank order).
func (ev *evaluator) slowestModel(placement []topology.GPUID) string {
	best, model := math.Inf(1), ""
	for r := range placement {
		if pk := ev.peak[ev.srv[r]]; pk < best {
			best, model = pk, ev.cl.GPU(placement[r]).Model
		}
	}
	return model
}

// channels is topology.ServerSpec.NICChannels(m) for server s.
func (ev *evaluator) channels(s int32, m int32) float64 {
	return float64(topology.ServerSpec{GPUs: int(ev.gpus[s]), NICs: int(ev.nics[s])}.NICChannels(int(m)))
}

// place validates a placement (GPUs of the cluster, none twice) and records each rank's server.
func (ev *evaluator) place(placement []topology.GPUID) error {
	cl := ev.cl
	nGPUs := cl.NumGPUs()
	seen := make([]uint64, (nGPUs+63)/64)
	for r, g := range placement {
		if g < 0 || int(g) >= nGPUs {
			return fmt.Errorf("%w: worker %d: %w", ErrInvalidPlacement, r, cl.Check(g))
		}
		w, bit := int(g)/64, uint64(1)<<(uint(g)%64)
		if seen[w]&bit != 0 {
			return fmt.Errorf("%w: GPU %d (%s) is used twice (again by worker %d)", ErrInvalidPlacement, g, cl.GPUName(g), r)
		}
		seen[w] |= bit
		s := int32(cl.ServerOf(g))
		ev.srv[r] = s
		ev.reach[s]++
	}
	for s, k := range ev.reach {
		if k > 0 {
			ev.reach[s] = ev.channels(int32(s), int32(k))
		}
	}
	return nil
}

// resetDemand starts a new phase.
func (ev *evaluator) resetDemand() {
	clear(ev.nic)
	clear(ev.intra)
}

// addGroup records a collective over GPUs on the given servers in the current phase's demand:
// on every server it spans, a ring over several servers drives NICChannels(m) NIC channels
// (m of its GPUs there), and a ring with two or more GPUs there is one flow on the fabric.
// The contribution is kept for againGroup.
func (ev *evaluator) addGroup(servers []int32) {
	for _, s := range servers {
		if ev.cnt[s] == 0 {
			ev.touched = append(ev.touched, s)
		}
		ev.cnt[s]++
	}
	multi := len(ev.touched) > 1
	ev.contrib = ev.contrib[:0]
	for _, s := range ev.touched {
		d := demand{server: s}
		if multi {
			d.nic = ev.channels(s, ev.cnt[s])
		}
		if ev.cnt[s] >= 2 {
			d.intra = 1
		}
		ev.cnt[s] = 0
		if d.nic != 0 || d.intra != 0 {
			ev.nic[s] += d.nic
			ev.intra[s] += d.intra
			ev.contrib = append(ev.contrib, d)
		}
	}
	ev.touched = ev.touched[:0]
}

// againGroup adds the last group's contribution once more (for a group on the same servers).
func (ev *evaluator) againGroup() {
	for _, d := range ev.contrib {
		ev.nic[d.server] += d.nic
		ev.intra[d.server] += d.intra
	}
}

// addPair records a point-to-point flow between servers sa and sb in the current phase's demand.
func (ev *evaluator) addPair(sa, sb int32) {
	if sa == sb {
		ev.intra[sa]++
		return
	}
	ev.nic[sa]++
	ev.nic[sb]++
}

// finishDemand turns the phase's demand into the load its flows see.
func (ev *evaluator) finishDemand() {
	for s := range ev.nic {
		ext := 0.0
		if s < len(ev.ext.NIC) {
			ext = ev.ext.NIC[s]
		}
		// The job's flows share the NICs its GPUs on the server are attached to.
		reach := ev.reach[s]
		if reach == 0 {
			reach = ev.nics[s]
		}
		ev.load.NIC[s] = (1+ext)*max(1, ev.nic[s]/reach) - 1
		ext = 0
		if s < len(ev.ext.Intra) {
			ext = ev.ext.Intra[s]
		}
		ev.load.Intra[s] = (1+ext)*max(1, ev.intra[s]) - 1
	}
}

func sameServers(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// oneServer returns the server all the given servers are, or -1.
func oneServer(servers []int32) int32 {
	s := servers[0]
	for _, x := range servers[1:] {
		if x != s {
			return -1
		}
	}
	return s
}

// ringGeo is what the cost model needs of a ring: its size, slowest intra- and inter-server
// hop bandwidths (bytes/s, +Inf when absent), largest hop latency (s) and the number of servers
// it visits (for the RingLayout).
type ringGeo struct {
	n, intraBW, interBW, lat float64
	servers                  int
}

// ring returns the figures of the ring over gpus, whose servers are given.
func (ev *evaluator) ring(gpus []topology.GPUID, servers []int32) ringGeo {
	if len(gpus) < 2 {
		return ringGeo{n: float64(len(gpus)), servers: len(gpus)}
	}
	if s := oneServer(servers); s >= 0 { // placements never repeat a GPU
		bw, lat := ev.cl.IntraStats(int(s), &ev.load)
		return ringGeo{n: float64(len(gpus)), intraBW: bw, interBW: math.Inf(1), lat: lat, servers: 1}
	}
	var rs topology.RingStats
	rs, ev.buf = ev.cl.RingStatsOf(gpus, &ev.load, ev.buf)
	return ringGeo{n: float64(rs.GPUs), intraBW: rs.IntraBandwidth, interBW: rs.InterBandwidth, lat: rs.Latency(), servers: rs.Servers}
}

// allReduce returns the time of count all-reduces moving bytes in total over the ring.
func (r ringGeo) allReduce(bytes, count float64, eff Efficiency) float64 {
	if r.n < 2 || bytes <= 0 {
		return 0
	}
	bw := min(r.intraBW*eff.IntraComm, r.interBW*eff.InterComm/eff.pairShare(r.servers))
	return 2*(r.n-1)/r.n*bytes/bw + count*2*(r.n-1)*r.lat
}

// bucketSteps returns the time the gradient buckets' steps add to a data-parallel all-reduce
// of bytes (one all-reduce's volume; count of them) over the ring: on a ring over several
// servers, ceil(bytes / GradientBucketBytes) x count x 2(n-1) x eff.BucketStepLatency.
func (r ringGeo) bucketSteps(bytes, count float64, eff Efficiency) float64 {
	if r.n < 2 || r.servers < 2 || bytes <= 0 || eff.BucketStepLatency == 0 {
		return 0
	}
	return math.Ceil(bytes/GradientBucketBytes) * count * 2 * (r.n - 1) * eff.BucketStepLatency
}

// linkGeo is what the cost model needs of a point-to-point path.
type linkGeo struct {
	bw, lat float64
	inter   bool
	self    bool
}

func (ev *evaluator) link(a, b topology.GPUID) linkGeo {
	if a == b {
		return linkGeo{self: true}
	}
	bw, lat, inter := ev.cl.P2PStats(a, b, &ev.load)
	return linkGeo{bw: bw, lat: lat, inter: inter}
}

// send returns the time to send bytes over the path.
func (l linkGeo) send(bytes float64, eff Efficiency) float64 {
	if l.self || bytes <= 0 {
		return 0
	}
	e := eff.IntraComm
	if l.inter {
		e = eff.InterComm
	}
	return l.lat + bytes/(l.bw*e)
}

// geometry is the placement-dependent part of an evaluation, independent of the efficiency
// constants: the pace of each stage's slowest GPU and the links of every collective and
// point-to-point flow, under the load of other jobs and of the job's own concurrent flows.
// Collectives and flows of one stage (or boundary) with identical links are stored once: the
// cost model takes the slowest of them.
type geometry struct {
	peak  []float64 // per stage, FLOP/s
	tp    []ringGeo // distinct TP-group rings, stage by stage
	tpOff []int     // stage s owns tp[tpOff[s]:tpOff[s+1]]
	pp    []linkGeo // distinct point-to-point paths, boundary by boundary
	ppOff []int
	dp    []ringGeo // distinct DP rings, stage by stage
	dpOff []int
	// Under ZeRO-Offload: the most parameters the workers of one server update (host-bound
	// term), and the most parameters per worker of a server (thread-bound term); 0 otherwise.
	// A server with q parameters over g workers of t threads each takes q x max(CPU / (g t),
	// host), so the busiest server's time is max(max q/g x CPU/t, max q x host).
	hostParams, hostPerWorker float64
}

// distinctWindow bounds how far back appendDistinct looks for a duplicate: duplicates it misses
// only cost time, never change a result.
const distinctWindow = 8

func appendDistinct[T comparable](list []T, from int, x T) []T {
	for i := len(list) - 1; i >= from && i >= len(list)-distinctWindow; i-- {
		if list[i] == x {
			return list
		}
	}
	return append(list, x)
}

func (c *Compiled) geometry(ev *evaluator, placement []topology.GPUID) *geometry {
	p := c.plan
	PP, TP, DP := p.PP, p.TP, p.DP
	srv := ev.srv
	geo := &geometry{}
	offs := make([]int, 3*(PP+1))
	geo.tpOff, geo.ppOff, geo.dpOff = offs[:PP+1], offs[PP+1:2*(PP+1)], offs[2*(PP+1):]

	// Compute: the slowest GPU of each stage sets its pace.
	geo.peak = make([]float64, PP)
	for s := range geo.peak {
		peak := math.Inf(1)
		for d := 0; d < DP; d++ {
			base := (d*PP + s) * TP
			for _, sv := range srv[base : base+TP] {
				peak = min(peak, ev.peak[sv])
			}
		}
		geo.peak[s] = peak
	}

	// Tensor parallelism: all TP groups run at once.
	if TP > 1 {
		ev.resetDemand()
		for g := 0; g < DP*PP; g++ {
			ev.addGroup(srv[g*TP : (g+1)*TP])
		}
		ev.finishDemand()
		geo.tp = make([]ringGeo, 0, 2*PP)
		for s := 0; s < PP; s++ {
			geo.tpOff[s] = len(geo.tp)
			for d := 0; d < DP; d++ {
				base := (d*PP + s) * TP
				geo.tp = appendDistinct(geo.tp, geo.tpOff[s], ev.ring(placement[base:base+TP], srv[base:base+TP]))
			}
		}
	}
	geo.tpOff[PP] = len(geo.tp)

	// Pipeline: activations forward and gradients backward between adjacent stages.
	if PP > 1 {
		ev.resetDemand()
		for d := 0; d < DP; d++ {
			for s := 0; s+1 < PP; s++ {
				a, b := srv[p.Rank(d, s, 0):], srv[p.Rank(d, s+1, 0):]
				for t := 0; t < TP; t++ {
					ev.addPair(a[t], b[t])
				}
			}
		}
		ev.finishDemand()
		geo.pp = make([]linkGeo, 0, 2*PP)
		for s := 0; s+1 < PP; s++ {
			geo.ppOff[s] = len(geo.pp)
			lastA, lastB := int32(-1), int32(-1)
			for d := 0; d < DP; d++ {
				ra, rb := p.Rank(d, s, 0), p.Rank(d, s+1, 0)
				for t := 0; t < TP; t++ {
					// A path depends only on its two servers (placements never repeat a GPU):
					// compute it when they change.
					if sa, sb := srv[ra+t], srv[rb+t]; sa != lastA || sb != lastB {
						lastA, lastB = sa, sb
						geo.pp = appendDistinct(geo.pp, geo.ppOff[s], ev.link(placement[ra+t], placement[rb+t]))
					}
				}
			}
		}
		geo.ppOff[PP-1] = len(geo.pp)
	}
	geo.ppOff[PP] = len(geo.pp)

	// Data parallelism: every (stage, TP shard) ring all-reduces its gradients, all at once.
	// Rings are gathered once: ring k = s x TP + t at rings[k*DP:(k+1)*DP].
	if DP > 1 {
		n := PP * TP * DP
		if cap(ev.ringBuf) < n {
			ev.ringBuf = make([]topology.GPUID, n)
			ev.ringSrv = make([]int32, n)
		}
		rings, ringSrv := ev.ringBuf[:n], ev.ringSrv[:n]
		for d := 0; d < DP; d++ {
			for s := 0; s < PP; s++ {
				base := (d*PP + s) * TP
				for t := 0; t < TP; t++ {
					rings[(s*TP+t)*DP+d] = placement[base+t]
					ringSrv[(s*TP+t)*DP+d] = srv[base+t]
				}
			}
		}
		ev.resetDemand()
		for k := 0; k < PP*TP; k++ {
			if k > 0 && sameServers(ringSrv[(k-1)*DP:k*DP], ringSrv[k*DP:(k+1)*DP]) {
				ev.againGroup()
			} else {
				ev.addGroup(ringSrv[k*DP : (k+1)*DP])
			}
		}
		ev.finishDemand()
		geo.dp = make([]ringGeo, 0, 2*PP)
		for s := 0; s < PP; s++ {
			geo.dpOff[s] = len(geo.dp)
			for t := 0; t < TP; t++ {
				k := s*TP + t
				// A ring over the same servers in the same order as the previous one has the
				// same figures (placements never repeat a GPU).
				if t > 0 && sameServers(ringSrv[(k-1)*DP:k*DP], ringSrv[k*DP:(k+1)*DP]) {
					continue
				}
				geo.dp = appendDistinct(geo.dp, geo.dpOff[s], ev.ring(rings[k*DP:(k+1)*DP], ringSrv[k*DP:(k+1)*DP]))
			}
		}
	}
	geo.dpOff[PP] = len(geo.dp)

	// ZeRO-Offload: each worker's optimizer shard is updated by CPU threads on its server.
	if p.Offload {
		geo.hostParams, geo.hostPerWorker = c.hostLoad(srv)
	}
	return geo
}

// hostLoad returns the most parameters the workers of one server update under ZeRO-Offload,
// and the most per worker of a server (see geometry.hostParams).
func (c *Compiled) hostLoad(srv []int32) (params, perWorker float64) {
	p := c.plan
	type load struct{ q, g float64 }
	per := make(map[int32]load, 8)
	for r, s := range srv {
		v := per[s]
		v.q += c.shardParams(p.StageOf(r))
		v.g++
		per[s] = v
	}
	for _, v := range per {
		params = max(params, v.q)
		perWorker = max(perWorker, v.q/v.g)
	}
	return params, perWorker
}

// timing applies the cost model's equations (see IterationTime) to a geometry.
func (c *Compiled) timing(geo *geometry, eff Efficiency, f ModelFactors) Breakdown {
	f = f.or1()
	p := c.plan
	PP, TP := p.PP, p.TP
	var b Breakdown
	m := float64(p.MicroBatches)
	compute := eff.Compute
	if c.model.DTypeBytes() >= 4 && eff.ComputeFP32 > 0 {
		compute = eff.ComputeFP32
	}
	zero := p.ZeRO >= 1
	fc := f.Compute
	if TP > 1 || PP > 1 {
		fc *= f.Parallel
	}
	var fwdB, tpB, ppB float64
	prevBnd := 0.0 // the slowest transfer across boundary s-1
	for s := range c.stages {
		st := &c.stages[s]
		work := c.mb * st.FLOPs / c.tpDiv
		rate := compute
		if a := eff.ComputeSizeExponent; a > 0 && st.End > st.First && work > 0 {
			rate = min(1, compute*math.Pow(work/float64(st.End-st.First)/ComputeSizeRef, a))
		}
		if b := eff.ComputeWidthExponent; b > 0 && c.logWidth[s] != 0 {
			rate = min(1, rate*math.Exp(b*(c.logWidth[s]-math.Log(computeWidthRef*c.tpDiv))))
		}
		fwd := fc * (work/(geo.peak[s]*rate) + float64(st.End-st.First)*eff.LayerOverhead)
		tp := 0.0
		bytes, count := c.tpPasses*c.mb*st.TPAllReduceBytes, c.tpPasses*float64(st.TPAllReduces)
		for _, r := range geo.tp[geo.tpOff[s]:geo.tpOff[s+1]] {
			tp = max(tp, r.allReduce(bytes, count, eff))
		}
		tp *= f.Comm
		pp := prevBnd // backward send to s-1
		if s+1 < PP {
			bytes := c.mb * st.SendBytes / c.tpDiv
			next := 0.0
			for _, l := range geo.pp[geo.ppOff[s]:geo.ppOff[s+1]] {
				next = max(next, l.send(bytes, eff))
			}
			next *= f.Comm
			pp += next // forward send to s+1
			prevBnd = next
		}
		dp := 0.0
		bytes = c.dpFactor * st.ParamBytes / c.tpDiv
		for _, r := range geo.dp[geo.dpOff[s]:geo.dpOff[s+1]] {
			dp = max(dp, r.allReduce(bytes, c.dpFactor, eff)+r.bucketSteps(st.ParamBytes/c.tpDiv, c.dpFactor, eff))
		}
		dp *= f.Comm
		ts := c.computeMul*fwd + tp + pp
		if s == 0 || ts > b.MicroBatch {
			b.MicroBatch, b.Stage = ts, s
			fwdB, tpB, ppB = fwd, tp, pp
		}
		bwd := (c.computeMul - 1) * fwd
		hideable, rest := dp, 0.0
		if zero { // only the gradient reduce-scatter can overlap the backward pass
			hideable = dp / (2 * c.dpFactor)
			rest = dp - hideable
		}
		b.DP = max(b.DP, hideable-min(eff.Overlap*hideable, bwd)+rest)
		b.DPComm = max(b.DPComm, dp)
	}
	b.Compute = m * c.computeMul * fwdB
	b.TP = m * tpB
	b.PP = m * ppB
	b.Bubble = float64(PP-1) * b.MicroBatch
	b.Optimizer = f.Optimizer * c.optimizerTime(geo, eff)
	b.Overhead = max(0, eff.StepOverhead+f.Overhead)
	b.Total = b.Compute + b.TP + b.PP + b.Bubble + b.DP + b.Optimizer + b.Overhead
	return b
}

// shardParams returns the parameters one worker of stage s updates in the optimizer step: its
// tensor-parallel share of the stage, divided among the replicas from ZeRO-1 on.
func (c *Compiled) shardParams(s int) float64 {
	n := c.stages[s].ParamBytes / c.model.DTypeBytes() / c.tpDiv
	if c.plan.ZeRO >= 1 {
		n /= float64(c.plan.DP)
	}
	return n
}

// optimizerTime returns the optimizer step of the busiest worker (see IterationTime), before
// the model's factor.
func (c *Compiled) optimizerTime(geo *geometry, eff Efficiency) float64 {
	shard := 0.0
	for s := range c.stages {
		shard = max(shard, c.shardParams(s))
	}
	if !c.plan.Offload {
		return eff.OptimizerPerParam * shard
	}
	threads := float64(max(c.plan.CPUThreads, 1))
	t := max(geo.hostPerWorker*eff.CPUOptimizerPerParam/threads, geo.hostParams*eff.HostOptimizerPerParam)
	if eff.HostBandwidth > 0 {
		whole := 0.0 // the worker's parameters, which come back whole
		for s := range c.stages {
			whole = max(whole, c.stages[s].ParamBytes/c.tpDiv)
		}
		t += (c.model.DTypeBytes()*shard + whole) / eff.HostBandwidth
	}
	return t
}
