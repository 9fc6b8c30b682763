// Package perf (internal) calibrates gpusched's performance model (package graph) to measured
// step times for `gpusched perf`: it reads measurements (its own CSV format, and the two public
// data sets beside the project), fits each GPU type's hardware constants jointly across the
// models measured on it, refines a model's few free coefficients from a handful of its
// profiles, and scores predictions against measurements. The public package perf exports
// Calibrate (Read, Prepare and Fit in one call) for an embedder that calibrates from Go.
//
// # The model and what is fitted
//
// graph.Compiled.IterationTime predicts the time of one iteration of a model under a parallel
// plan on a placement: compute per pipeline stage (with a fixed cost per layer and
// micro-batch, so small micro-batches run below peak), the pipeline bubble, tensor-, pipeline-
// and data-parallel communication over the links the placement uses (with ZeRO's exposed
// parameter all-gather), the optimizer step of the parameters each GPU updates (on the host
// under ZeRO-Offload, with its CPU threads and PCIe transfers), and a fixed overhead. Two kinds
// of coefficients enter it:
//
//   - graph.Efficiency, the hardware constants of a GPU type and its interconnect (achieved
//     fraction of peak FLOP/s and how it grows with a layer's work per GPU and, when asked
//     for (FitOptions.ComputeWidth, `gpusched perf fit -compute-width`, or a prior with a
//     ComputeWidthExponent), with the width of the layers per GPU, per-layer overhead,
//     intra- and inter-server collective efficiency, overlap of gradient synchronisation with
//     the backward pass, step overhead, optimizer time per parameter, CPU optimizer and PCIe
//     figures, ring layout and, under HalfDuplexPairs, how much of a two-server path each
//     direction keeps and the latency of each ring step per gradient bucket over servers).
//     FitHardware fits them jointly across several models of one GPU type, each model with
//     its own factors held near 1 by a prior JointFactorStrength times as firm as a
//     refinement's, so that the constants describe what the models share and predict a
//     model the fit did not see. Of the ring layouts, it keeps the one whose
//     predicted synchronisation ranks the measured sync times best across placements (the
//     lower loss where no row has one); under HalfDuplexPairs it then fits PairDuplex and
//     BucketStepLatency (a latency per ring step and gradient bucket over servers) too.
//     graph.HardwareConstants ships the constants fitted on ../shared/data.
//   - graph.ModelFactors, a model's own coefficients (compute, communication, optimizer,
//     tensor/pipeline-parallel compute factors and an overhead of its own). RefineFrom fits
//     them to k measured configurations of the model with the hardware constants fixed, as a
//     regularised update of the factors a prior calibration holds for it (factors of 1 when
//     none; k = 0: the prior alone), the overhead held near the prior's on an absolute scale
//     (RefineOverheadScale). RefineCV chooses how strongly the prior holds by the
//     median leave-one-profile-out error, keeps the prior unless refinement beats it on the held-out
//     profiles by more than the standard error of the difference, and reports that error; Fit
//     (and `gpusched perf fit`) reports it per model and warns above CVWarn (15%).
//
// Where a row has a measured sync_time, the fits weigh it against the predicted exposed
// synchronisation (SyncWeight), so that a step is split between compute and communication as
// measured.
//
// Fit does both for a set of measurements and returns a graph.Calibration, which
// graph.Options.Calibration, gpusched.NewCalibratedCost and `gpusched -perf FILE` take. The
// fits use gonum's optimisers (L-BFGS with finite-difference gradients, then Nelder-Mead), are
// deterministic, and refine one model's factors in milliseconds.
//
// # Measurement CSV
//
// One row per measured configuration; a header names the columns, in any order; blank lines
// and lines starting with '#' are skipped; a UTF-8 byte-order mark and CRLF line ends are
// accepted. Columns (required ones marked *):
//
//	model*          a zoo name (graph.ZooNames) or a model JSON file (graph.Model's JSON form;
//	                relative to the CSV file's directory)
//	precision       fp16 or bf16 (the default), fp32: the training precision
//	seq_len         a transformer's sequence length in tokens, if not the model's own
//	gpu*            the GPU type, as a topology preset: t4, a800, a100, h100
//	placement*      GPUs per server, one digit per server: 4, 22, 1111, 88888888
//	dp, tp, pp      the parallel degrees (default tp = pp = 1, dp = GPUs / (tp x pp))
//	micro_batches   micro-batches each replica runs per iteration, one after another (default
//	                1: the replica's whole batch at once): a pipeline's micro-batches, or the
//	                steps of gradient accumulation without one
//	grad_accum      the same count under its frameworks' name (DeepSpeed's
//	                gradient_accumulation_steps; Megatron-LM's global batch / (micro-batch
//	                size x dp)); given with micro_batches, the two must agree
//	micro_batch_size samples per micro-batch (Megatron-LM's --micro-batch-size, DeepSpeed's
//	                train_micro_batch_size_per_gpu): the replica's batch / micro_batch_size
//	                micro-batches; it must divide the replica's batch and agree with the others
//	                The count matters: each micro-batch pays the per-layer overheads and a
//	                pipeline's bubble shrinks with more of them. Say what was run: nothing
//	                infers it (the Rubick reader takes RubickApp.MicroBatchSize).
//	global_batch*   samples per iteration over all replicas, or
//	local_batch*    samples per replica and iteration (one of the two is required)
//	zero            ZeRO stage 0-3 (default 0)
//	offload         1 for ZeRO-Offload (the optimizer on the host; needs zero >= 1)
//	cpu_threads     CPU threads per GPU of the host optimizer under offload
//	checkpointing   1 for activation checkpointing
//	uneven_heads    1 when tp does not divide the attention heads and the framework split
//	                them unevenly (T5-3B's 32 heads on 3 GPUs; graph.Plan.UnevenHeads)
//	rank_order      tp-pp-dp (gpusched's, the default) or tp-dp-pp (Megatron-LM's): how the
//	                plan's ranks map onto the placement's GPUs, numbered server by server
//	step_time*      measured seconds per iteration, > 0
//	sync_time       measured seconds of it waiting for gradient synchronisation (optional)
//	compute_time    measured seconds of forward and backward passes (optional)
//	tag             a free-form label
//
// Every error names the file, the line and the field, and wraps ErrBadRow (malformed or
// impossible rows) or ErrUnknown (an unknown model or GPU type); Prepare adds the graph
// package's errors for plans a model cannot run (a tensor-parallel degree not dividing its
// heads, more stages than layers).
//
// # The shared data sets
//
// ReadPollux reads the Pollux artifact's placements (../shared/data/placements: BERT-base on
// SQuAD, ResNet-18 on CIFAR-10, ResNet-50 on ImageNet, data parallel on 4-GPU T4 servers with
// 50 Gb/s Ethernet); ReadRubick and ReadRubickProfile the Rubick artifact's (../shared/data/
// rubick: BERT-large, GPT-2 1.5B, LLaMA-7B, T5 1.2B and ViT-Base under data, tensor and
// pipeline parallelism, ZeRO-2, ZeRO-Offload and checkpointing on 8-GPU A800 servers). Their
// documentation says how each row maps to a model, a plan and a placement.
//
// # Evaluation
//
// Evaluate measures how well the model predicts models it was not fitted on: for each model,
// the hardware constants are fitted on the other models of its GPU type and the model is
// predicted with them alone (k = 0), then its factors are refined on k profiles chosen by
// SelectProfiles and its other rows predicted. Score gives the mean and worst relative error,
// the rank correlation over configurations, the regret of the predicted-fastest
// configuration per GPU count, and the 1-to-8-GPU speed-ups. benchmarks/graph.md "Performance model" has the figures
// (bench/perf_model.sh reproduces them).
package perf
