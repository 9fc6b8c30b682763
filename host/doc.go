// Package host is the bookkeeping that every host of a gpusched.Scheduler needs: the jobs it
// holds and their statuses, the cluster and its unavailable GPUs, the View for each call, the
// validation of each Decision, and its application in a safe order. An embedder (a
// kube-scheduler plugin, an in-house scheduler) and the simulator (package sim) run this same
// code; the host adds only what is its own: where events come from and how actions are
// carried out.
//
// # A host loop
//
//	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 30})
//	...
//	rt.Submit(job, 0)                 // a job arrives (Arrival is when)
//	acts, err := rt.Schedule(now)     // view -> Schedule -> Validate -> apply
//	for _, a := range acts.Steps {    // every Stop comes before every Start
//		switch a.Kind {
//		case host.Stop:  // checkpoint and evict a.Job from a.GPUs
//		case host.Start: // bind a.Job's workers to a.GPUs, in order
//		}
//	}
//	for _, r := range acts.Rejected { // tell the owner why: r.Job, r.Err
//	}
//	rt.Report(id, now, iterations)    // progress, as the job reports it
//	rt.Finish(id, now, 0, false)      // a job finished: its GPUs are free
//	rt.Drain(gpus...); rt.Return(gpus...) // take GPUs out of service, and back
//	rt.Fail(now, gpus...)             // GPUs failed: their jobs restart from a checkpoint
//	rt.SetCluster(bigger, now)        // servers joined or left
//
// Call Schedule at every event (a job arrives or finishes, GPUs change, the wake-up time
// Actions.WakeAt comes); events at one instant should make one call.
//
// # What the runtime keeps
//
// Each job the runtime holds has an Entry: the job as submitted (a copy), whether it waits, runs
// or is parked, its placement, iterations done, time held (Executed), GPU-seconds held
// (Attained), first start, the time it entered its state (Since), preemptions, interruptions,
// migrations, the largest number of servers it spanned, bytes sent across servers, its last
// checkpoint and the progress it lost. Progress comes from the host: a real host reports it
// (Report); a host that times jobs with a cost model (the simulator) gives each running job a
// rate (SetRate) and the runtime extrapolates between calls. TakeDirty lists the running jobs
// whose speed may have changed (placed, migrated, or sharing a link with a job that came or
// went) and LinkLoad the other jobs' flows on their shared links, which is what a
// gpusched.CostModel needs.
//
// The waiting list is kept in submission order incrementally: an arrival appends to it, a
// start removes from it (moving the entries between the job and the nearer end of the list),
// a preemption merges back. A call costs O(running jobs + size of the decision), plus the
// move of removals from the middle of a long queue, and never a scan of the waiting jobs
// (BENCHMARKS.md, "sim", gives the cost per call from 1,000 to 100,000 waiting jobs).
//
// # The View contract, made true
//
// Everything is keyed by gpusched.JobID. Every job the runtime holds is in every view, waiting
// or running, under the same id, except parked jobs (below). A job leaves the runtime only
// through Finish, Cancel or a rejection, and every job that leaves is reported to a
// gpusched.CompletionObserver scheduler (Killed for a cancelled or rejected job) before the
// next Schedule call, so a scheduler never sees a job vanish unreported (unless
// DeferCompletions, below). A parked job is absent from views without a report: the scheduler
// forgets it as cancelled, and sees it as new when it comes back.
//
// The runtime drops its last reference to a job's entry once the job has left and its
// completion has been delivered, so its memory is bounded by the jobs it holds at once, not by
// all it ever held; a cost model with a Forget method (gpusched.ModelCost) is told of every
// job that leaves or is parked, so that per-job caches stay bounded too. Entries are never
// reused, so the *gpusched.Job of one job is never shown for another: caches keyed by pointer
// (gpusched.ModelCost's) cannot mistake one job for another. A view and its statuses point
// into the runtime's entries and are valid only during the Schedule call, as the View contract
// says.
//
// # Applying a decision in a safe order
//
// A decision is declarative, in the full form or as a delta (gpusched.Decision.KeepOthers):
// every view the runtime builds accepts deltas (View.AcceptsKeepOthers). A delta costs the
// runtime in proportion to what it mentions: the jobs it starts, moves, stops and rejects are
// checked against the runtime's record of which job holds each GPU, and the running jobs it
// does not mention are neither read nor rewritten, except where GPUs are unavailable, jobs
// are constrained to GPU types or servers limit CPU cores and memory (then every running job
// is checked, as in the full form). Both forms give the same actions in the same order.
// The runtime diffs a decision against the current state and returns the
// steps in an order a real cluster can follow: every Stop (preemptions, the stop half of every
// migration, rejected running jobs) before every Start (starts and resumptions, the start half
// of every migration). A job migrating onto GPUs it partly holds therefore stops on all its old
// GPUs and starts on all its new ones, and no job starts on a GPU that any job still holds.
// A decision that Decision.Validate would refuse (unknown or repeated jobs, wrong GPU counts,
// missing, double-booked, ineligible or unavailable GPUs, a NaN wake-up, a rejection without
// reason) is refused with a *ScheduleError naming the job, and nothing changes; the runtime
// never repairs a decision.
//
// # Rejected jobs
//
// A job listed in Decision.Rejected is taken out of the runtime's hands: by default
// (RejectRemove) it is stopped if it runs, removed, reported in Actions.Rejected with its
// *gpusched.JobError, and its scheduler is told it was killed; the host tells the job's owner.
// With RejectPark, a job rejected because the cluster is too small for it
// (gpusched.ErrTooLarge: a server left) is instead parked with its progress until the cluster
// changes (SetCluster), and then waits again; other rejections are removed. Hosts that call
// gpusched.Admit when a job is submitted see few rejections.
//
// # A changing cluster, drains and failures
//
// Drain marks GPUs unavailable: the view says so (View.Unavailable), no job may start on them,
// and the next decision must move or preempt the jobs that hold them. Return puts them back.
// Fail marks GPUs unavailable and interrupts every job on them at once: the job waits again,
// goes back to its last checkpoint (Options.CheckpointEvery, Checkpoint, or its placement),
// and the progress thrown away is counted (Stats.LostIterations, LostGPUTime). SetCluster
// replaces the cluster: jobs keep their GPUs on the servers that remain (matched by server id)
// and are interrupted if their servers left.
//
// # Restarts
//
// A Runtime is a gpusched.Stateful as a whole: SaveState writes one blob with its books (every
// job held with its progress and the anchors its progress is extrapolated from, its last
// checkpoint and counters, the parked jobs, the completions not yet delivered, the cluster,
// the unavailable GPUs, the clock) and the scheduler's own state when the scheduler is
// Stateful. A host saves it after carrying out the actions of each Schedule call (or every
// few seconds) and, on start or on becoming leader, builds its scheduler with the same options
// and calls Restore: every later view, and so every decision, is the one the old runtime and
// scheduler would have given, bit for bit (tested with random kills for every stateful policy
// of packages policy and asrpt, A-SRPT with its learned forest included). Resume remains for a
// host that rebuilds its books from what the cluster shows; it takes each job's progress at
// the restart as its last checkpoint.
//
// # Saving by changes
//
// A host that saves after every decision, which exact continuity needs, saves by changes: a
// base now and then (the books whole, and the scheduler's base: for A-SRPT with its forest,
// its own state whole, the trained forest and what the forest learned), and after every
// decision a delta that holds only what changed since that base (the jobs that arrived,
// changed or left, and the scheduler's and its estimator's changes likewise):
//
//	if k := rt.BaseKey(); k != heldKey { // at a retraining, or when the deltas have grown
//		heldKey, _ = rt.SaveBase(baseFile)
//	}
//	rt.SaveDelta(deltaFile) // every time, replacing the last delta
//	...
//	rt, err := host.RestoreDelta(opt, baseFile, deltaFile) // on restart
//
// BaseKey changes when the scheduler's base does (A-SRPT's forest is retrained) or when the
// deltas have outgrown a part of what the base holds (a seventh of the whole base, a
// quarter of the books, half the forest's learned state), so a delta stays small (at 10,000
// live jobs with A-SRPT and its forest, at most about 1 MB and 16 ms of CPU after each event,
// 18 ms with the bases spread over the saves; RestoreDelta of a base and a delta about 85-95 ms,
// read in one pass by internal/statejson's FastUnmarshal; see benchmarks/host-31.md and
// bench/host_state.sh). A delta restored with a base of another key is refused. Bases and deltas are of version 2; those of version 1
// (the scheduler's base alone, and deltas holding the books whole) still restore, and a delta
// of version 2 with a base of version 1 is refused with an error that names both versions.
//
// # What the simulator adds
//
// A host that times jobs with a cost model instead of reports (the simulator, the kube
// planner) gives each running job a rate (SetRate) for the jobs TakeDirty lists, with the link
// loads LinkLoad gives. Options.OnSegment reports every interval during which a job held a
// placement, as it ends; the simulator records them (sim.Config.RecordSegments). Entry.Tag,
// Options.RecordSegments, Runtime.Segments and Runtime.SchedulerName are deprecated and go
// after one release.
//
// # Slow observers off the host's path
//
// A learning scheduler's JobCompleted may be slow: A-SRPT's default forest
// (asrpt.ForestOptions) retrains over a window of 10,000 jobs every 20,000 completions (sooner
// while it has seen fewer). Over the 70,361 jobs of the shared Philly file that is 8 calls of
// more than 100 ms, the slowest 0.6 s of CPU and 1.9 s of wall time on this project's shared
// 2-core machine (BenchmarkPhilly2048ASRPTCompletions in package sim; BENCHMARKS.md, "sim"),
// against well under a millisecond for a Schedule call. By default the runtime delivers completions at the start of the next Schedule call,
// on the path from an event to its actions. With Options.DeferCompletions the host delivers
// them itself (Deliver), after it has carried out the actions or from its own goroutine while
// no other call runs; until then the scheduler sees the finished job absent from the view and
// treats it as cancelled, and the late report still teaches its predictor. The simulator
// never defers, so its results stay deterministic.
//
// The runtime starts no goroutines and is not safe for concurrent use.
package host
