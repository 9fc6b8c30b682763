// Package sim is a trace-driven discrete-event simulator for GPU-cluster schedulers: it replays
// a workload through any gpusched.Scheduler on a topology.Cluster and measures what happened.
//
// # Running a simulation
//
// A workload is a []trace.Record: each job as the scheduler sees it, plus its true length in
// iterations, which only the simulator knows. Read one (trace.ReadPhilly, ReadPollux,
// ReadJSONL) or generate one (trace.GeneratePhilly, GenerateRecurring), pick a cluster and a
// scheduler, and call Run:
//
//	c, _ := topology.Uniform(topology.A100(), 8)
//	recs, _ := trace.GeneratePhilly(trace.DefaultPhillyConfig(2000, 1))
//	s, _ := policy.New("fifo", policy.Config{})
//	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s})
//	fmt.Println(res.Summary.AvgJCT, res.Summary.Utilisation)
//	res.WriteCSV(f) // one row per job; WriteJSON for everything
//
// # What the simulator does
//
// The simulator is an event loop on top of package host's Runtime, the bookkeeping that every
// host of a scheduler runs (a real cluster's too): job statuses, the view, validation and the
// safe application of decisions. The simulator adds what only it knows: when jobs arrive,
// their true lengths, their speeds from the cost model, and when servers fail.
//
// Events are arrivals, completions, server failures and repairs, and the wake-up time the
// scheduler last asked for (Decision.WakeAt). All events at one instant are handled together
// and make one Schedule call: finished jobs leave first (a scheduler that implements
// gpusched.CompletionObserver is told, before the call), then servers fail or come back, then
// arrivals join the queue. The scheduler sees only the View: waiting and running jobs with
// their progress, the unavailable GPUs, never a job's true length.
//
// Every decision is checked exactly as Decision.Validate checks it (unknown or repeated jobs,
// wrong GPU counts, missing, double-booked, ineligible or unavailable GPUs, a NaN wake-up, a
// rejection without a reason); an invalid one ends the run with ErrInvalidDecision, naming the
// scheduler, the time and the job. The simulator never repairs a decision. A valid one is
// carried out as Decision.Diff describes it: running jobs left out are preempted and wait
// again; listed waiting jobs start; running jobs listed on other GPUs (or in another worker
// order) migrate. A job the decision rejects (Decision.Rejected) leaves the simulation
// unfinished, and its record says why (JobRecord.Rejected): every job of the workload either
// finishes or is reported rejected with a reason.
//
// # Failures and checkpoints
//
// Config.Failures makes servers fail and be repaired: each server independently with
// exponential times between failures (MTBF) and to repair (MTTR) drawn from an explicit seed,
// or as a failure trace lists them (ReadOutages reads one: CSV with columns server, down, up).
// A failed server's GPUs are unavailable (View.Unavailable) until it is repaired, and the jobs
// on them are stopped at once by the host: they wait again, go back to their last checkpoint
// and pay the restore time when they start again. Jobs checkpoint every Config.Checkpoint
// seconds of each placement and whenever they are preempted or migrated (0: only then). The
// progress thrown away is counted as lost GPU-time (GPUs x productive seconds since the
// checkpoint), per job and in the summary, with each job's restarts. A run whose random
// failures leave some job no chance to keep any progress (it lost MaxLostAttempts starts in
// a row, with no checkpoint in between) stops with ErrNoProgress naming the job.
//
// Preemption and migration are not free: a job started again after a preemption, or
// migrated, holds its GPUs but makes no progress for Config.RestoreTime seconds (default
// DefaultRestoreTime, 30 s) while it restores its checkpoint. A job's first start is free;
// a job preempted during its restore loses it and pays again at its next start.
//
// A running job past its restore makes 1/StepCost.Time iterations per second, the step cost
// coming from Config.Cost (default gpusched.DefaultCost: package graph's iteration time for
// a job with a model and a plan, Job.StepTime for a job without) for its placement and
// the load on the shared links it uses: topology's Cluster.Links of its GPUs, where the load
// of a link is the number of other running jobs on it (restoring jobs included). The
// simulator keeps the set of jobs on every link and recomputes a job's step cost only when it
// is placed or migrated or when a job joins or leaves one of its links, and asks the cost
// model only when the job's GPUs, plan choice or link loads differ from those of its last
// answer (one job joining and another leaving its links within one event leave them as they
// were): Config.Cost must be a function of its arguments. Completion times sit in a heap
// whose stale entries are skipped. A job finishes exactly when it has done its
// iterations.
//
// # Time resolution and the horizon
//
// Times are float64 seconds, whose spacing at time t is t x 2^-52. Every time of a run must
// stay below Horizon, 2^32 s (about 136 years), where that spacing is at most 2^-20 s, about
// a microsecond: below it a job's 0.1 s iterations, a restore and the gap between two events
// all move the clock, and the timeline can be binned. (At 1e15 s the spacing is 0.125 s:
// short intervals vanish.) Run rejects a job arriving after Horizon, or whose length known up
// front (iterations x Job.StepTime) would end it after Horizon, with ErrInvalidConfig naming
// the job, and stops with ErrLimit, naming the job or the wake-up, if an event would fall
// past Horizon as the run goes (when a cost model's step times or queueing push it there).
// Arithmetic that overflows (1e308 iterations of 10 s) is caught by the same checks: no input
// makes Run panic. Package trace's readers keep arrivals within 100 years and run times
// within 10, well inside the horizon.
//
// The simulator is deterministic (no map order reaches the results; failures come from their
// seed) and cheap per event: the runtime keeps the View's pending and running lists
// incrementally and checks a decision in time proportional to its size, so an event costs the
// same with 1,000 or 100,000 jobs waiting (BenchmarkEventCost) and the whole shared Philly
// trace (70,361 jobs) on 2,048 GPUs takes seconds (see BENCHMARKS.md).
//
// # Metrics
//
// Result.Jobs holds one JobRecord per job: arrival, first start, finish, JCT (finish -
// arrival), queueing delay (first start - arrival), total wait, GPUs, the most servers any of
// its placements spanned, preemptions, migrations, run and productive time, GPU-seconds held,
// bytes sent across servers (iterations x StepCost.CrossServerBytes), restarts after failures,
// lost GPU-time, and the reason it was rejected, if it was. Result.Summary aggregates them:
// mean, median, 95th and 99th percentile JCT (linear interpolation, as numpy; over the jobs
// that finished), makespan (first arrival to last completion), mean queueing delay,
// utilisation (busy GPU-seconds / (GPUs x makespan)), preemptions, migrations and restarts per
// job, total cross-server bytes, rejected jobs, server failures and lost GPU-time.
// Result.Timeline samples busy GPUs, queued and running jobs after every event;
// Config.RecordSegments adds every placement interval of every job, and Result.Outages lists
// the failures that happened.
package sim
