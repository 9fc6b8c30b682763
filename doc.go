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
//	topology   servers, GPUs, links; transfer and collective times
//	graph      a DNN as a layer DAG, parallel plans, worker graphs, per-iteration time
//	partition  balanced graph partitioning; placing a job's workers on free GPUs
//	predict    random-forest prediction of a recurring job's iterations
//	srpt       exact single-machine SRPT, lower bounds, tiny-instance optima
//	asrpt      the A-SRPT scheduler
//	policy     baselines: FIFO, SJF, SRPT-oracle, Tiresias, SJF-BCO, GADGET
//	sim        discrete-event simulator: replays a workload through a Scheduler
//	trace      trace readers and synthetic workloads
//
// A trace (package trace) yields jobs with their true lengths. The simulator keeps the true
// lengths to itself, builds a View at every arrival, completion and requested wake-up, calls the
// Scheduler, validates and applies its Decision, advances each running job at the speed the cost
// model (package graph over package topology) gives for its placement, and reports metrics.
// A-SRPT predicts each job's iterations (predict), keeps a virtual single-machine SRPT schedule
// (srpt) and places jobs in that order with the partitioner (partition).
//
// Times are float64 seconds on the host's clock, bandwidths bytes per second, sizes bytes.
package gpusched
