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
//     the GPUs of each worker, plus an optional wake-up time; or, for a host that takes it, the
//     same answer as a delta (below). Decision.Validate rejects double-booked GPUs, unknown
//     jobs, wrong GPU counts and missing GPUs; Decision.Diff turns a decision into starts,
//     preemptions and migrations; Decision.Expand turns a delta into the full form.
//   - Scheduler: the one interface, Schedule(View) (Decision, error). Schedulers that learn
//     from finished jobs also implement CompletionObserver.
//
// # Packages and how data flows
//
//	topology     servers, GPUs, links; transfer and collective times
//	graph        a DNN as a layer DAG, parallel plans, worker graphs, per-iteration time
//	perf         measured step times; fitting graph's constants to them
//	partition    placing a job's workers on free GPUs (a balanced graph partitioner inside)
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
// The 16 policies that "gpusched compare" runs, by the names it prints; policy.New(name,
// policy.Config{...}) builds those of package policy, each from the options named:
//
//	fifo             policy.Options: first come, first served
//	sjf              policy.SJFOptions: shortest predicted GPU-time first
//	srpt-oracle      policy.OracleOptions: preemptive SRPT with true sizes
//	tiresias         policy.TiresiasOptions: discretized 2D-LAS (NSDI'19)
//	sjf-bco          policy.SJFBCOOptions: SJF with bandwidth-contention-aware placement (MobiHoc'22)
//	gadget           policy.GADGETOptions: greedy ring embedding (INFOCOM'22)
//	first-fit        policy.Options: first fit, backfilling
//	list-scheduling  policy.Options: Graham's list scheduling
//	random           policy.RandomOptions: random order and placement, seeded
//	rubick           policy.RubickOptions: plans and resources by sensitivity curves (MLSys'25)
//	ps-locality      policy.PSLocalityOptions: locality-aware parameter-server placement (TNSE'22)
//	smd              policy.SMDOptions: sum-of-ratios knapsacks per interval (INFOCOM'21)
//	asrpt            asrpt.New with asrpt.Forest: A-SRPT, learned iterations
//	asrpt-backfill   asrpt.New, Options.Backfill: A-SRPT backfilling
//	asrpt-plan       asrpt.NewPlanChooser: A-SRPT choosing a reconfigurable job's plan
//	asrpt-oracle     asrpt.New with asrpt.Oracle: A-SRPT with true iterations
//
// # The Decision contract
//
// A Decision comes in one of two forms, which ask the same of a host:
//
//   - Full (the default): Run lists every job that should hold GPUs from now on. A running job
//     absent from it is preempted; a waiting job in it starts; a running job in it on other
//     GPUs, in another worker order or under another plan choice, migrates.
//   - Delta (KeepOthers): Run lists only the jobs that start or move (a job listed where it
//     runs is kept, as in the full form), Stop the running jobs to preempt, Rejected as in the
//     full form; every running job that none of them mentions keeps its GPUs and plan choice.
//
// Decision.Expand(view) gives the full form of a delta: the running jobs in the view's order
// (each as Run lists it, as it runs when nothing mentions it, left out when stopped or
// rejected), then the other jobs of Run in Run's order. Validate and Diff take either form and
// treat a delta as its full form; a job in Stop must be running and mentioned nowhere else.
// WakeAt and Rejected mean the same in both forms.
//
// Who may use which: a host that applies deltas says so in every view (View.AcceptsKeepOthers;
// package host does, and so the simulator); a scheduler returns a delta only for such a view,
// and the full form otherwise. A host written for the full form, or an embedder that reads
// Decision.Run as the complete desired state, therefore keeps getting it without a change, and
// every full decision a scheduler returned before keeps working with every host. A wrapper
// that passes its own view to an inner scheduler and reads the decision's Run list calls
// Expand on what it gets back (consolidate.WrapScheduler does).
//
// Why: a scheduler that changes little per call (a job finished, another started) need not
// list the thousands of jobs that keep running, and a host need not check and diff them: the
// host's cost of a delta grows with what it mentions, not with the running jobs (package host
// keeps its own record of who holds which GPU; it walks the running jobs only where GPUs are
// unavailable, jobs are constrained to GPU types or servers have limited CPUs and memory, to
// check the jobs kept without being listed). A-SRPT (package asrpt) and the policies of package
// policy answer such hosts with deltas (SMD at the start of each of its intervals, when it
// reconsiders every job, and a policy whose view hides jobs it rejects answer in the full
// form). The test TestPropertyDecisionForms of
// cmd/gpusched checks, for every policy and call by call, that the expanded decisions a policy
// gives a host that takes deltas equal the full-form decisions it gives one that does not, and
// that the job records of the two simulations are byte-equal.
//
// Times are float64 seconds on the host's clock, bandwidths bytes per second, sizes bytes.
package gpusched
