// Package gpusched schedules distributed deep-learning training jobs on GPU clusters.
//
// It is a library to embed: a host (the trace-driven simulator in package sim, or an adapter
// inside kube-scheduler, Volcano, Slurm or an in-house scheduler) owns the jobs and the
// cluster, and asks a Scheduler what should run where. This package holds the vocabulary they
// share and nothing else:
//
//   - Job: what a scheduler knows of a training job before it runs: its GPU demand (one worker
//     per GPU, a gang), arrival time, weight, and Features for iteration prediction. Never its
//     true length.
//   - View: what a scheduler may see at one instant: the time, the cluster (package topology)
//     and the jobs waiting and running, with the service each has received so far.
//   - Decision: the scheduler's answer, declarative: the jobs that should run from now on and
//     the GPUs of each worker, plus an optional wake-up time. Decision.Validate rejects
//     double-booked GPUs, unknown jobs, wrong GPU counts and missing GPUs; Decision.Diff turns
//     a decision into starts, preemptions and migrations.
//   - Scheduler: the one interface, Schedule(View) (Decision, error). Schedulers that learn
//     from finished jobs also implement CompletionObserver.
//
// # Packages and how data flows
//
//	topology     servers, GPUs, links; transfer and collective times
//	graph        a DNN as a layer DAG, parallel plans, worker graphs, per-iteration time
//	perf         measured step times; fitting graph's constants to them
//	partition    balanced graph partitioning; placing a job's workers on free GPUs
//	predict      random-forest prediction of a recurring job's iterations
//	srpt         exact single-machine SRPT, lower bounds, tiny-instance optima
//	asrpt        the A-SRPT scheduler
//	consolidate  migrations onto fewer servers, added to any Scheduler (Wrap)
//	policy       the baseline schedulers (below)
//	ps           parameter-server jobs: spec, shapes, shard placement, per-iteration cost
//	host         the bookkeeping every host needs: jobs, views, validation, safe-order actions
//	sim          discrete-event simulator: replays a workload through a Scheduler (on host)
//	trace        trace readers and synthetic workloads
//
// The command gpusched (cmd/gpusched) simulates, compares and plots the policies; the
// directories examples, bench and kube (a separate module: a kube-scheduler plugin) hold
// runnable examples, benchmark scripts and the Kubernetes integration.
//
// A trace (package trace) yields jobs with their true lengths. The simulator keeps the true
// lengths to itself, builds a View at every arrival, completion and requested wake-up, calls the
// Scheduler, validates and applies its Decision, advances each running job at the speed the cost
// model (package graph over package topology) gives for its placement, and reports metrics.
// A-SRPT predicts each job's iterations (predict), keeps a virtual single-machine SRPT schedule
// (srpt) and places jobs in that order with the partitioner (partition).
//
// # Policies
//
// The 16 policies that "gpusched compare" runs, by the names it prints:
//
//	fifo             policy.FIFO: first come, first served
//	sjf              policy.SJF: shortest predicted GPU-time first
//	srpt-oracle      policy.SRPTOracle: preemptive SRPT with true sizes
//	tiresias         policy.Tiresias: discretized 2D-LAS (NSDI'19)
//	sjf-bco          policy.SJFBCO: SJF with bandwidth-contention-aware placement (MobiHoc'22)
//	gadget           policy.GADGET: greedy ring embedding (INFOCOM'22)
//	first-fit        policy.FirstFit: first fit, backfilling
//	list-scheduling  policy.ListScheduling: Graham's list scheduling
//	random           policy.Random: random order and placement, seeded
//	rubick           policy.Rubick: plans and resources by sensitivity curves (MLSys'25)
//	ps-locality      policy.PSLocality: locality-aware parameter-server placement (TNSE'22)
//	smd              policy.SMD: sum-of-ratios knapsacks per interval (INFOCOM'21)
//	asrpt            asrpt.New with asrpt.Forest: A-SRPT, learned iterations
//	asrpt-backfill   asrpt.New, Options.Backfill: A-SRPT backfilling
//	asrpt-plan       asrpt.NewPlanChoice: A-SRPT choosing a reconfigurable job's plan
//	asrpt-oracle     asrpt.New with asrpt.Oracle: A-SRPT with true iterations
//
// Times are float64 seconds on the host's clock, bandwidths bytes per second, sizes bytes.
package gpusched
