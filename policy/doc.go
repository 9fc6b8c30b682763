// Package policy holds baseline scheduling policies behind the one gpusched.Scheduler
// interface, so that A-SRPT (package asrpt) can be compared with them in the simulator
// (package sim) and in `gpusched compare`.
//
// # The policies
//
//	name             options              source                                   preempts  order (default)
//	fifo             Options              first come, first served                 no        strict
//	sjf              SJFOptions           shortest job first, predicted size       no        backfill
//	srpt-oracle      OracleOptions        SRPT with the true remaining GPU-time    yes       backfill
//	tiresias         TiresiasOptions      Gu et al., NSDI'19: discretized 2D-LAS   yes       backfill
//	sjf-bco          SJFBCOOptions        Yu et al., MobiHoc'22 (arXiv 2207.07817) no        plan (backfill)
//	gadget           GADGETOptions        Yu et al., INFOCOM'22 (arXiv 2202.01158) no        backfill
//	first-fit        Options              SJF-BCO paper's baseline                 no        backfill
//	list-scheduling  Options              SJF-BCO paper's baseline (Graham)        no        backfill
//	random           RandomOptions        SJF-BCO paper's baseline                 no        backfill
//	rubick           RubickOptions        Zhang et al., MLSys'25 (arXiv 2408.08586) plans     slope, guaranteed first
//	ps-locality      PSLocalityOptions    Yu et al., TNSE'22 (arXiv 2108.02917)    no        arrival (backfill)
//	smd              SMDOptions           Yu et al., INFOCOM'21 (arXiv 2105.13855) yes       least remaining time, per interval
//
// New(name, Config{...}) builds each policy from the options the table names and returns it
// as a gpusched.Scheduler (the concrete types are unexported; the policies that keep state or
// learn from completions are reached as gpusched.Stateful and gpusched.CompletionObserver by
// type assertion, and DiagnosticsOf reports what some of them keep: PS statistics, the last
// SJF-BCO plan, Tiresias' queues, List-Scheduling's GPU loads). Each policy's source file
// states its source, how this implementation adapts it to online
// arrivals and to a real placement, and where the paper's text was not available and a choice
// was made (SJF-BCO and GADGET were available as abstracts only). The adaptations, in short:
//
//   - FIFO and SJF are the textbook rules; SJF's sizes come from a Size function (a predictor)
//     and are fixed when a job is first seen.
//   - SRPT-oracle ranks jobs by true remaining GPU-time (the host passes the true iterations);
//     a hysteresis Margin (default 10%) and an optional MinRunTime lease keep it from
//     preempting for little gain.
//   - Tiresias follows its public simulator's dlas-gpu schedule: thresholds on attained
//     GPU-seconds (default 3250 and 7200, three queues), FIFO within a queue with running jobs
//     first, preemption only for a higher queue, optional starvation promotion (PromoteKnob),
//     wake-ups at demotions and promotions; it places jobs instead of only counting GPUs.
//     LAS on plain time (Service = PlainTime) and 2D-Gittins (Gittins: each queue ordered by
//     the Gittins index from the learned distribution of finished jobs' service) are the
//     simulator's dlas and dlas-gpu-gittins schedules.
//   - SJF-BCO's offline algorithm (PlanSJFBCO: for each kappa, a bisection on the per-GPU
//     load threshold theta; FA-FFP packing for jobs of at most kappa GPUs, LBSGF with spread
//     factor lambda for larger ones) runs as is on batches (SJFBCOOptions.Batch), or online by
//     re-planning the smallest waiting jobs at every event and starting those planned to start
//     now. BCOCost is the paper's contention model as a gpusched.CostModel, so the simulator
//     can run the comparison in the paper's own model.
//   - GADGET embeds each job's ring greedily into servers with a per-job bandwidth reservation
//     on every server link it crosses and admits the job only when the ring fits.
//
// # Shared rules
//
// A scheduler returns the complete desired state at every call: every running job it keeps is
// listed with its current GPUs, in the same worker order; a running job it leaves out is
// preempted. Non-preemptive policies keep every running job. Waiting jobs are placed by a
// Placer (default gpusched.Pack: topology's consolidating best fit); Options.Placer plugs in another
// one, such as a partition-based placer for worker graphs. Options.Order chooses strict order
// (head-of-line blocking) or backfilling where the policy has an order to keep.
//
// The preemptive policies choose greedily in priority order the jobs whose GPU demands fit,
// keep the chosen running jobs where they are, place the chosen waiting ones, and preempt the
// rest, except a running job whose GPUs nobody would take. They ask the host to call again
// (Decision.WakeAt) when their choice would change at a known time without any event.
//
// Most policies keep per-job state between calls (sizes, queues, plans): a scheduler must see
// the events of one host in time order and is not safe for concurrent use unless its
// documentation says so.
//
// Cost per call. With a host's View.Delta (gpusched.ViewDelta) the policies keep what they
// know of the queue between calls instead of scanning it: FIFO, First-Fit, List-Scheduling,
// Random and GADGET walk the host's queue in place and stop once no GPU is free; SJF,
// SRPT-oracle and Tiresias keep their waiting jobs in their own order (a waiting job's rank
// changes only while it runs) and look at the head of it; SJF-BCO keeps its waiting jobs by
// GPU demand. What remains per call is per running job and per job started. Without a delta
// (or when it does not continue the last view) a policy rescans the view.
//
// # Bad jobs, bad views, zero values
//
// Every policy admits each job through the same gate: a job that cannot run as described
// (gpusched.Job.Validate fails: no GPU, non-finite features, no cost; the cluster has too few
// GPUs of the kind it may use; its plan fits no GPU's memory) is left out and listed in
// Decision.Rejected with a *gpusched.JobError naming it, and every other job is scheduled.
// Schedule returns an error only for a view it cannot use at all: no cluster, a time that is
// not finite, a status without a job. The zero value of every (deprecated) policy type works
// as New with zero options (the SRPT oracle's returns the constructor's error: it needs
// Iterations), and a nil pointer returns an error.
//
// # Restart and failover
//
// The policies that keep state between calls (sjf, srpt-oracle, tiresias, sjf-bco,
// list-scheduling, random) implement gpusched.Stateful: SaveState writes it as versioned JSON
// and RestoreState, on a policy built again with the same options before its first Schedule
// call, restores it so that every later decision is the one the saved policy would have made.
// fifo, first-fit and gadget keep no state and need nothing. The admission gate in front of
// every policy keeps only verdicts that it recomputes identically after a restart.
//
// A minimal use, with the simulator:
//
//	t, _ := policy.New("tiresias", policy.Config{Tiresias: policy.TiresiasOptions{PromoteKnob: 8}})
//	res, err := sim.Run(sim.Config{Cluster: c, Jobs: records, Scheduler: t})
//
// Times are seconds, attained service GPU-seconds, bandwidths bytes per second, sizes bytes.
package policy
