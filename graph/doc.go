// Package graph describes a distributed deep-learning training job: the network as a DAG of
// layers, a parallel plan (data x tensor x pipeline), the expansion of the two into a worker
// graph with the bytes per iteration on each edge, and the time of one training iteration of
// the job placed on a topology.Cluster. A zoo holds well-known models.
//
// Units everywhere: FLOPs and FLOP/s for compute, bytes for sizes, bytes per second for
// bandwidths, seconds for times. Sizes in a Layer are per training sample.
//
// # Models
//
// A Model is built from a ModelSpec (layers with forward FLOPs, parameter bytes, output
// activation bytes and activation memory per sample, plus the edges between them), validated by
// NewModel: a cycle, a dangling edge, an unconnected layer, or a negative, NaN or infinite size
// is an error wrapping ErrInvalidModel that names the layer. Topological order, cycle detection
// and connected components come from github.com/yourbasic/graph. The pipeline order of the
// layers is the order given when it is topological.
//
//	m, err := graph.NewModel(graph.ModelSpec{Name: "mlp", Layers: layers, Edges: edges})
//
// Transformers are described by their hyper-parameters (TransformerConfig: layers, hidden size,
// heads, feed-forward width, sequence length, vocabulary, encoder-decoder or not) and expanded
// into an embedding layer, one layer per block and a head, with the FLOPs, parameter and
// activation-memory formulas documented on TransformerConfig. ZooModel returns the zoo's
// models (ZooNames lists them: ResNets, VGG, Inception, BERT, RoBERTa, GPT-2/3, LLaMA, T5, ViT,
// DeepSpeech2, NCF), each derived from its published architecture (the source is cited beside
// each definition; tests check the parameter counts against the published totals), in mixed
// precision with the sequence length of its training recipe. Zoo entries describe what was
// measured where the shipped constants come from: "bert-base-squad" is BERT-base at SQuAD's 384
// tokens with a span head (the Pollux bert measurements), "t5-1.2b" and "vit-base" are sized as
// the Rubick artifact measured them. Model.WithDTypeBytes and Model.WithSeqLen make variants
// with another precision or sequence length, named apart ("resnet50@fp32"), so that fitted
// per-model factors never apply silently to a model described differently. Convolutional
// networks are split per block or module, transformers per block.
//
// A Model marshals to JSON as {"zoo": name} (with "dtype_bytes" and "seq_len" for a variant),
// {"transformer": config} or its full ModelSpec, so a job description can carry it either by
// name or in full.
//
// # Plans
//
// A Plan gives the data-, tensor- and pipeline-parallel degrees, the micro-batches (pipelining,
// or gradient accumulation without it), the global batch, activation checkpointing, the ZeRO
// stage, and ZeRO-Offload with its CPU threads per GPU. Worker ranks are canonical:
//
//	rank = (dp x PP + pp) x TP + tp
//
// so each tensor-parallel group is a run of consecutive ranks, and a placement is a
// []topology.GPUID indexed by rank. Plan.Validate checks the degrees (at least one, TP dividing
// the attention heads, DP x MicroBatches dividing the batch, no more stages than layers);
// Compile validates, splits the layers into stages (balancing forward FLOPs, or as Plan.Stages
// says) and precomputes what the cost model needs; Compiled.CheckMemory says whether the
// busiest worker fits a GPU, and by how many bytes it does not (ErrOutOfMemory). Memory per
// worker is parameters + gradients + Adam state (16 bytes per parameter in all, the shares
// ZeRO shards divided by DP, the Adam state in host memory under offload) for 1/TP of its
// stage, plus activations for the micro-batches in flight under 1F1B (or only layer inputs
// with checkpointing).
//
// DefaultPlan picks a plan for a model and a GPU count: pure data parallelism when a replica
// fits, otherwise tensor parallelism inside a server, then pipelining across servers.
//
// # Worker graph
//
// Compiled.WorkerGraph expands a job into one vertex per worker and undirected edges weighted
// by the bytes exchanged per iteration: tensor-parallel all-reduce rings inside each group,
// point-to-point activations and gradients between adjacent pipeline stages, and a
// data-parallel ring per (stage, tensor shard). A ring all-reduce of B bytes over n workers
// makes every worker send 2(n-1)/n x B to its successor, so each DP ring's edges sum to
// n x 2(n-1)/n x its shard's gradient bytes. Vertices and edges are plain slices for a
// partitioner; Plan.TPGroup, Plan.DPRing and Plan.StageOf give the structure back.
//
// # Iteration time
//
// Compiled.IterationTime evaluates a placed job in O(workers): per-stage compute at the
// slowest GPU's pace with a fixed cost per layer and micro-batch (small micro-batches and thin
// tensor-parallel shards run below peak), the 1F1B pipeline bubble with the plan's
// micro-batches, tensor-parallel all-reduces and pipeline transfers over the links the
// placement actually uses (topology's ring and point-to-point models), the data-parallel
// all-reduce partly hidden behind the last backward pass (under ZeRO only its reduce-scatter
// half: the parameter all-gather after the optimizer step is exposed), the optimizer step of
// the parameters each GPU updates (1/DP of them under ZeRO; on the host's CPU threads with the
// PCIe transfers under ZeRO-Offload), and a fixed overhead per iteration. It returns a
// Breakdown (compute, bubble, tp, pp, dp, optimizer, overhead, total). Other jobs' traffic
// enters as a topology.LinkLoad; a job's own concurrent rings and flows share NICs and shared
// PCIe fabrics too, its rings on a server only the NICs its GPUs there are attached to. The
// equations are on Compiled.IterationTime. Place computes everything that does not depend on
// the constants once, so that Placed.Time and TimeAll evaluate many sets of constants fast.
//
// # Constants per GPU type, factors per model
//
// The constants that are fitted rather than derived belong to the hardware: an Efficiency
// (fractions of peak FLOP/s and of link bandwidth, the growth of the compute fraction with a
// layer's work per GPU, per-layer overhead, overlap, step overhead,
// optimizer time per parameter, CPU and PCIe figures for offload, and the RingLayout that says
// how rings use the paths between servers: ServerGrouped, or HalfDuplexPairs where the two
// directions of a server pair's path share its capacity, as the Pollux T4 testbed measured,
// each keeping PairDuplex of it for itself, and BucketStepLatency, a latency per ring step
// and 25 MiB gradient bucket of the data-parallel all-reduce over servers, half a
// millisecond on that testbed's Ethernet).
// With Options{} a job gets the constants of the GPU type it is placed on (HardwareConstants),
// fitted by package perf jointly across every model measured on that type in ../shared/data:
// the A800 on the Rubick artifact's five models (carried over to the A100, same chip, and the
// H100, unvalidated), the T4 on the Pollux artifact's three. ModelFactors are one model's own
// coefficients (compute, communication, optimizer, tensor/pipeline-parallel compute, an
// overhead of its own), fitted from a few of its profiles; a Calibration holds constants per
// GPU type and factors per model name and is what `gpusched perf fit` writes.
//
// How close the model comes (benchmarks/perf.md has the tables and bench/perf_model.sh
// reproduces them): predicting a model with the constants fitted on the other models of its
// GPU type alone, the step-time error is 5-9% for BERT-large and GPT-2 but 25-43% for
// LLaMA-7B, T5 and ViT on the A800, and 11-18% on the T4; refining each model on 5 profiles
// brings the A800 models to 5-10% except ViT (43%) and the T4 models to 5-11%.
// What the constants cannot carry across models is each one's implementation: the A800's
// tensor- and pipeline-parallel (Megatron-LM) runs of LLaMA-7B and T5 compute at 0.65x and
// 2.9x the pace the other models' runs predict (their fitted factors), and ViT and T5 pay a
// fixed ~0.3 s per iteration on placements with an odd number of GPUs on a server, which no
// bandwidth explains. On the T4 data the rank of sync times across placements
// is 0.87 (bert), 0.40 (cifar10) and 0.57 (imagenet): between placements a cost model cannot
// tell apart the measurements are noise (in-sample oracles that predict each placement by the
// mean of its shape reach only 0.89, 0.62 and 0.72).
package graph
