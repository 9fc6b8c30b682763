// Package asrpt implements A-SRPT, the prediction-assisted, preemptive, topology-aware scheduler
// for distributed deep-learning training jobs (after Luo, Liu, Lee and Shroff, "Prediction-Assisted
// Online Distributed Deep Learning Workload Scheduling in GPU Clusters", arXiv 2501.05563).
//
// # How it schedules
//
// A Scheduler sees the host's View at every event and keeps, across calls, one virtual
// machine:
//
//  1. On arrival, job j's iterations are predicted (an Estimator: package predict's random
//     forest, or an Oracle with the true counts) and its time per iteration tau_j is taken from
//     the cost model at its best placement (all GPUs free, the GPUs of the fastest kind it may use
//     consolidated by topology's Pack: gpusched.BestPlacement). Its
//     predicted processing time is p^_j = n^_j x tau_j; it needs g_j GPUs.
//  2. The virtual instance: one machine of speed 1 standing for the G GPUs of the cluster; job j
//     is a job of size g_j p^_j / G released at its arrival (see "A changing cluster" below for
//     GPUs that become unavailable and servers that come and go). Preemptive SRPT is optimal there for
//     the total completion time (package srpt), and A-SRPT keeps that SRPT schedule
//     incrementally (a queue of internal/srptq), advancing it to the view's time at every call.
//  3. Priority (the remaining-work conversion, Options.Patience = theta, DefaultPatience = 8):
//     jobs at least theta times their predicted processing time p^_j past their virtual
//     completion ("overdue") come first, in the order the virtual machine finished them; then
//     every other job, whether the virtual machine has finished it or not, by predicted
//     remaining GPU-time (shortest first). With Options.Patient (the patient conversion,
//     Theorem 2, the default before v0.2.0) the virtually finished jobs that are not overdue
//     come next, by predicted remaining GPU-time, and then the jobs the virtual machine has not
//     finished, in the virtual SRPT order (smallest virtual remaining work first). With
//     Patience < 0 every virtually finished job is ordered by virtual completion (the original
//     conversion): among jobs present at the same time that is the order of their virtual
//     completion times, and it never changes between two arrivals.
//  4. Conversion: the longest prefix of the priority order whose GPU demands fit in the cluster
//     must run. Waiting prefix jobs are placed on free GPUs by the Placer (the partition-based
//     placer keeps traffic inside servers); if there are not enough free GPUs, running jobs
//     outside the prefix are preempted, lowest priority first, only as far as needed, and never
//     before they have run MinRunTime since they started or resumed (the rule against
//     thrashing). In strict order (the default) nothing else starts; with Backfill, lower-priority
//     jobs start on whatever the prefix leaves free. The compact conversion (the default; see
//     "Hosts that cannot migrate") starts a multi-GPU job only on a placement within
//     CompactSlack of its best time per iteration, preempting lower-priority jobs for one if
//     needed, and otherwise lets it wait a bounded time for one.
//  5. Adaptation: a running job that reaches its predicted iterations is re-estimated (the
//     Estimator's conditional estimate given the iterations done), and the extra predicted work
//     joins the virtual queue in SRPT order, so an overrunning job's priority falls instead of
//     blocking the queue. Without a usable conditional estimate (an Oracle whose answer is
//     spent, an estimator error) the prediction doubles, to twice the larger of the iterations
//     done and the old prediction: a job under-predicted by a factor mu is re-estimated about
//     log2 mu times, after which its predicted remaining work is about its attained work, the
//     order least-attained-service would give it. This is A-SRPT's hedge against wrong
//     predictions (see "Wrong predictions" below). The Scheduler asks to be woken (Decision.WakeAt) when a running job
//     will reach its prediction at its observed pace. Finished jobs teach the Estimator
//     (Learner) through the host's completion report (gpusched.CompletionObserver). A job
//     re-estimated Options.Strikes times (default 2) has shown that its predictions cannot be
//     trusted: it keeps its place in the order but no longer preempts running jobs, and in
//     strict order no longer holds up the jobs behind it; it starts on free GPUs.
//  6. Consolidation (Options.NoConsolidate turns it off): a job resumed on leftover GPUs may be
//     scattered over many servers and run several times slower than at its best placement. After
//     each decision, a running job the decision keeps in place moves onto fewer servers when
//     GPUs free up and its predicted remaining iterations times the time saved per iteration
//     repay the restore cost twice over (package consolidate). On the Philly trace at five
//     times its arrival rate this cuts A-SRPT's mean JCT from 2.30 days to 2.98 hours.
//
// Why patience. The virtual machine runs any job at the speed of the whole cluster and at its
// best placement, so under sustained overload the real cluster falls behind it: jobs the
// virtual machine has finished but the cluster has not pile up, and the original conversion
// serves that backlog in order of virtual completion, close to arrival order. On the shared
// Philly file overloaded (five virtual clusters on 192 GPUs) A-SRPT with exact predictions
// then had a mean JCT of 135 h (one-GPU jobs waited a median of 126 h; idle GPUs while jobs
// waited were only 1.4% of capacity, so strict order was not the cause), worse than SRPT-oracle
// (46 h), SJF-BCO (34 h) and A-SRPT with its learned forest (26 h), whose re-estimations
// happen to break the backlog up. With patience the backlog is served shortest first, and a
// job that has waited theta times its own length past its virtual completion takes priority
// again: 16 h with theta = 2, 15.6 h with theta = 8. The patience must be generous: on three
// other virtual clusters of the file overloaded on 48 GPUs (not used to choose anything until
// then) theta = 2 gave 53 h against 157 h for the original conversion, because under a
// sustained overload most of the backlog soon becomes overdue and is served in order of
// virtual completion again; theta = 8 gives 14.6 h there and changes nothing on the built-in
// workload, hence DefaultPatience = 8. BENCHMARKS.md "A-SRPT across workload families" has
// the measurements.
//
// # The competitive ratio
//
// Model. G identical GPUs. Job j is released at r_j, needs g_j GPUs at once (1 <= g_j <= g_max
// <= G) and p_j seconds of running, whatever GPUs it gets (placement-independent sizes, the
// FixedCost model). Preemption and resumption are free and immediate, and the scheduler is called
// at every arrival and completion. Predictions are fixed at arrival and within a factor mu >= 1:
// p_j / mu <= p^_j <= mu p_j. Let beta = G / (G - g_max + 1).
//
// Theorem 1 (the original conversion). A-SRPT with Patience < 0, without re-estimation and with
// MinRunTime = 0, in strict order or with Backfill, satisfies, on every instance,
//
//	sum_j C_j <= sum_j (r_j + p_j) + mu^2 beta V  <=  (1 + mu^2 beta) OPT,
//
// where C_j are its completion times, V is the SRPT total completion time of the virtual
// instance with the TRUE sizes g_j p_j / G, and OPT is the least sum of completion times of any
// feasible preemptive schedule. For one-GPU jobs with exact predictions (g_max = 1, mu = 1) the
// ratio is 2; it grows to 1 + mu^2 G when a job may need the whole cluster.
//
// Proof. Both terms are lower bounds on OPT: C_j >= r_j + p_j in every schedule, and V <= OPT
// (package srpt, LowerBounds: any cluster schedule yields a single-machine schedule of the
// virtual instance completing each job no later, and SRPT is optimal on one machine: Schrage
// 1968). So the second inequality follows from the first.
//
// Let ^C_k be the completion time of job k in the virtual SRPT schedule with the predicted sizes,
// and H_j = {k != j : ^C_k < ^C_j} (ties broken by the queue's fixed rule). Claim 1: at every
// time, among jobs present, A-SRPT's priority order is the order of ^C. For jobs both present
// this holds because under SRPT a job that is ahead (less remaining, or finished) of another
// stays ahead until it finishes: only the head's remaining work decreases. So whenever job k is
// ahead of j, k is in H_j.
//
// Claim 2: whenever j is present and not running, the jobs running ahead of it hold at least
// G - g_max + 1 GPUs. The prefix P of the priority order always runs (preemption is immediate).
// If j waits, j is not in P, so the first job i after P (i = j or ahead of j) did not fit:
// sum_{P} g > G - g_i >= G - g_max, and every job of P is ahead of j.
//
// Now j's time in the system is C_j - r_j = p_j + W_j, where W_j is the time it is present and
// not running. During W_j the jobs of H_j keep at least G - g_max + 1 GPUs busy (Claims 1 and 2),
// and they need sum_{k in H_j} g_k p_k GPU-seconds in total, so
//
//	W_j <= sum_{k in H_j} g_k p_k / (G - g_max + 1) <= mu sum_{k in H_j} g_k p^_k / (G - g_max + 1)
//	    <= mu G ^C_j / (G - g_max + 1) = mu beta ^C_j,
//
// because the virtual machine finishes all of H_j (work sum g_k p^_k / G, at speed 1) by ^C_j.
// Summing, sum_j C_j <= sum_j (r_j + p_j) + mu beta ^V, where ^V = sum_j ^C_j is the SRPT total of
// the predicted instance. Finally ^V <= mu V: sizes p^ <= mu p can only lower SRPT's optimal total
// below that of sizes mu p, and any schedule for sizes p dilated in time by mu (everything at t
// happens at mu t, which respects releases) is a schedule for sizes mu p with total mu V. This
// proves the theorem. Backfilling does not break Claim 2 because it never keeps a prefix job
// waiting: backfilled jobs lie outside the prefix and are preempted as soon as the prefix needs
// their GPUs.
//
// Theorem 2 (the patient conversion, Options.Patient). With Patience = theta > 0 and otherwise as in
// Theorem 1,
//
//	sum_j C_j <= sum_j (r_j + p_j + theta p^_j) + mu beta ^V  <=  (1 + theta mu + mu^2 beta) OPT;
//
// with the default theta = 8 and exact predictions that is 9 + beta (Theorem 1: 1 + beta).
// Proof. Split the time job j is present and not running into three parts: before ^C_j (j is
// not virtually finished), the patience window [^C_j, ^C_j + theta p^_j), and after it (j is
// overdue). In the first part every job ahead of j is virtually finished by now (so ^C_k <
// ^C_j) or ahead of j in the SRPT queue (so ^C_k < ^C_j); in the third every job ahead of j is
// overdue with an earlier virtual completion. So in both, the jobs ahead of j are in H_j, and
// the argument of Theorem 1 bounds the time j waits in them together by mu beta ^C_j. The
// window lasts theta p^_j <= theta mu p_j. Summing, and with sum_j p_j <= OPT and ^V <= mu V <=
// mu OPT as before, the theorem follows. PatientRatio returns the ratio.
//
// Theorem 3 (the remaining-work conversion, the default). With Patience = theta > 0
// and otherwise as in Theorem 1,
//
//	sum_j C_j <= sum_j (p_j + theta p^_j) + (1 + mu beta) ^V  <=  (1 + mu + theta mu + mu^2 beta) OPT;
//
// with theta = 8 and exact predictions 10 + beta, one more than Theorem 2: that is what ordering
// by remaining work instead of by the virtual schedule costs in the worst case.
// RemainingWorkRatio returns the ratio. Proof. Split the time job j waits at ^C_j + theta p^_j.
// Before that moment it waits at most ^C_j + theta p^_j - r_j in all. After it, j is overdue,
// and only overdue jobs that the virtual machine finished before j are ahead of it: all in
// H_j, so the argument of Theorem 1 bounds that wait by mu beta ^C_j. Summing, sum_j C_j <=
// sum_j (r_j + p_j) + sum_j (^C_j - r_j + theta p^_j) + mu beta ^V, which is the first
// inequality, and the second follows as before. What the ordering buys is robustness: the
// virtual schedule places a job by predictions integrated over the whole past (every earlier
// job's predicted size moves the moment the virtual machine finishes it), so under sustained
// overload small errors reorder the backlog wholesale, while an order by predicted remaining
// work moves a job only by its own error (BENCHMARKS.md, "The remaining-work conversion":
// on an overloaded Philly slice a 7% error doubled the patient conversion's mean JCT and cost
// this one 7%).
//
// The argument is the list-scheduling argument for rigid jobs (Garey and Graham, "Bounds for
// multiprocessor scheduling with resource constraints", SIAM J. Comput. 4(2), 1975) applied to
// the order of a single-machine relaxation, as in the conversions of Hall, Schulz, Shmoys and
// Wein ("Scheduling to minimize average completion time: off-line and on-line approximation
// algorithms", Math. Oper. Res. 22(3), 1997) and Chekuri, Motwani, Natarajan and Stein
// ("Approximation techniques for average completion time scheduling", SIAM J. Comput. 31(1), 2001).
//
// What the theorem does not cover, said plainly: re-estimation (it changes the virtual instance
// mid-way; on by default because it is what keeps a badly under-predicted job from holding the
// top of the queue); MinRunTime > 0 and preemption costs (a prefix job may wait for a
// non-preemptable one); consolidating migrations (with placement-independent sizes, as in the
// model, they never happen: no move is faster); placement-dependent iteration times (the topology-aware cost model: a
// spread placement makes p_j larger than at the best placement); and total flow time
// sum_j (C_j - r_j), for which no constant ratio is possible even for one-GPU jobs on parallel
// machines (Leonardi and Raz, "Approximating total flow time on parallel machines", STOC 1997);
// for flow time the theorem gives the additive form sum_j F_j <= sum_j p_j + mu^2 beta V.
//
// # Wrong predictions
//
// The theorems assume predictions within mu, fixed at arrival; their ratio grows as mu^2.
// What happens beyond them was measured (BENCHMARKS.md, "A-SRPT with wrong predictions";
// bench/prediction_error.sh, gpusched -prediction-error injecting errors into the true sizes,
// migrations off for every policy, commit 098d322): with errors drawn log-uniformly within
// mu = 16, or with every size divided or multiplied by 16, or with sizes mirrored about the median
// so that the order of the jobs is reversed wherever a factor 16 allows, A-SRPT's mean JCT on the
// built-in workload rises by at most 11% at any mu up to 16 (6.49 h to at most 7.23 h; 7.08 h at
// mu = 16), and stays below Tiresias' (9.33 h), which uses no prediction. On five Philly virtual
// clusters overloaded on 192 GPUs, the reversing error at mu = 16 raises it from 15.7 h to 19.1 h
// (Tiresias: 230 h). The hedge is the re-estimation of step 5: with NoReestimate the same
// reversed predictions gave 521 h there (measured at an earlier commit, with consolidating
// migrations), 2.2 times Tiresias, because an under-predicted long job keeps its priority to
// the end and over-predicted short jobs wait behind it. Re-estimation costs nothing
// when predictions are right (it never fires) and is not covered by the theorems: no bound is
// claimed for it, only these measurements.
//
// Re-estimation has a failure of its own: jobs the estimator keeps under-predicting (long
// jobs, which report last, so the forest learns of them last) overrun in turn, and each
// re-estimation hands the GPUs to another of them: on the synthetic workload with seed 2 the
// largest jobs were preempted 65-150 times each, and A-SRPT with its forest fell behind
// Tiresias. Options.Strikes ends it: after two re-estimations a job no longer preempts (it
// takes free GPUs as they come), which is what Tiresias' last queue does (first come, first
// served among long jobs). Such a job starts only on free GPUs, as the lowest priority, so the
// next arrival would stop it again at once: once started it runs at least StrikeRunTime (600 s)
// before it may be preempted. Like re-estimation neither fires with exact predictions.
//
// # Hosts that cannot migrate
//
// A host tells A-SRPT that it cannot move a running job with Options.NoMigrate (most
// Kubernetes clusters without checkpoint/restore; `gpusched compare -consolidate off`). A-SRPT
// then never emits a migration: no consolidation, and a job on GPUs that became unavailable is
// preempted and started again at the next call (A-SRPT asks for it MinWake later) instead of
// being moved within one decision. A job started scattered then stays scattered to its end, so
// where it starts matters most; the compact conversion (on by default, and always with
// NoMigrate) decides it. A multi-GPU prefix job whose placement on the free GPUs is more than
// 1 + CompactSlack times slower per iteration than its best is not started there at once:
//
//  1. if running jobs of lower priority hold GPUs that, with the free ones, make a compact
//     placement, those whose GPUs it uses are preempted and the job starts compactly;
//  2. otherwise it waits for a compact placement, and other jobs go on starting;
//  3. but never longer than (sigma - 1) p^_j, where sigma is the slow-down of the placement it
//     could have taken and p^_j its predicted remaining processing time: the extra time that
//     placement would have cost it. Then it starts on whatever is free.
//
// Rule 3 is the ski-rental rule: compared with starting at once on the slower placement, the
// job's completion is delayed by at most what that placement would have cost it, so the
// compact conversion at most doubles a job's loss to placement, and avoids it whenever a
// compact placement turns up in time. Without it, on five Philly virtual clusters overloaded on
// 192 GPUs, three quarters of A-SRPT's multi-GPU jobs ran scattered and needed 2.2 times the
// GPU-hours SJF-BCO's placement needed; mean JCT with exact sizes was 55.7 h against SJF-BCO's
// 34.4 h; with it 15.7 h (BENCHMARKS.md, "A-SRPT across workload families, equal means").
//
// What the theorems say about it. Under their model (placement-independent running times)
// every placement is compact, so the compact conversion never waits or preempts for
// compactness: it is the analysed conversion, and Theorems 1 and 2 hold unchanged with or
// without migrations (under that model consolidation never moves a job either). With
// NoMigrate on a changing cluster, a displaced job restarts at the next call instead of at
// once, adding at most MinWake to its completion per displacement. For placement-dependent
// running times no ratio to OPT is claimed, with or without migrations: rule 3 bounds each
// job's extra delay as above, and the jobs preempted in rule 1 are of lower priority, which
// Claim 2 allows.
//
// # Predictions as distributions
//
// An Estimator that also gives a job's predictive distribution (Distributional: Forest does,
// from package predict's calibrated forest) can size jobs by their Gittins rank
// (Options.Gittins): the rank of a job that has done a iterations is
// min over b of E[min(X, b) - a | X > a] / P(X <= b | X > a) (GittinsRank), the expected work
// it still needs per unit of probability of finishing within its next quantum; A-SRPT puts
// g_j tau_j times the rank in the virtual queue and re-ranks the job when it reaches the end of
// its quantum b. For a job whose distribution is one point n the rank is n - a, so A-SRPT with
// an exact Oracle is unchanged. What holds: with NoReestimate the rank at arrival r_j is a
// fixed number per job, and Theorems 1 and 2 hold with p^_j = tau_j r_j, with mu the factor
// within which tau_j r_j lies of the true p_j. Measured, it did not pay, and it is off by
// default: on the workload families the calibrated distributions miss the longest jobs (on the
// synthetic workload, seed 2, the 80% intervals held none of the largest 2% of jobs, whose
// lengths were 30-1,000 times the predicted median), because long jobs report last and the
// forest and its calibration learn only from jobs that finished; the Gittins order then ranks
// those jobs as the point order does.
//
// What paid is a distribution the forest cannot have: the group's own, censored. A recurrence
// group (Features.Group) whose first jobs are all long is invisible to any learner of finished
// jobs until one of them finishes; meanwhile every newcomer of the group is predicted short,
// preempts its running siblings, overruns in turn, and the group is served round-robin (on the
// synthetic workload, seed 3, twenty 8-GPU jobs of one group, 80-207 hours each, finished
// after 98-367 h instead of 80-207 h). The group fallback (on unless Options.NoGroupFallback)
// keeps, per group, its last 64 finished lengths and its live jobs, and takes the Kaplan-Meier
// estimate over them, the live jobs censored at the iterations they have done. A group is
// sized by it, as Gittins ranks (GittinsRank) in place of the Estimator's prediction, once two
// of its live jobs have run past their predictions (before three have finished), and then
// while the group's median at each finished job's arrival erred less than half as much as the
// Estimator did (median absolute log error over its last 64 finished jobs): an online choice
// between two predictors, scored on the group's own jobs. The margin matters: a group median
// cannot tell a group's jobs apart, and where groups hold unlike jobs (the Rubick workloads'
// applications) the forest, though it errs by more, ranks them better. Groups without live
// jobs are forgotten beyond the 4,096 most recently used.
//
// What holds: with exact predictions no job overruns and the Estimator's error is zero, so the
// fallback never fires and Theorems 1 and 2 hold as stated. Where it fires, the rank it puts in
// the virtual queue is a size like any other, and the theorems' bound holds with mu the worst
// factor between the sizes used and the true sizes; nothing bounds that factor for the ranks
// of a group distribution, so, as for re-estimation, no ratio is claimed: the measurements are
// in BENCHMARKS.md, "A-SRPT across workload families, equal means". The Strikes of "Wrong
// predictions" apply to grouped jobs as to the others.
//
// Bursts. A trace that names no groups (the Philly file: submission time, GPU count, virtual
// cluster) still holds most of what sizes its jobs: jobs of one virtual cluster and GPU count
// submitted within seconds of each other are one sweep, and their durations agree (on the
// shared Philly file, the median absolute log error of a job's burst median, leave-one-out, is
// 0.11 against 0.76 for its virtual cluster's and GPU count's median). A job without a group
// joins the burst of the latest job of its Features.User and GPU count when it arrives at most
// Options.BurstGap (60 s by default) after it; bursts are books of the fallback like groups,
// with three differences: lengths are compared in seconds at the jobs' best placements (a
// sweep need not share a model); a finished job's group error is scored against the median of
// the burst's jobs that finished before it (its siblings mostly arrive together, before any
// finishes), the estimate its waiting siblings are given; and when a burst learns something
// (a job finishes or overruns) its live jobs are sized again at the next call, so that jobs
// waiting while their siblings finish are ranked by what those took. Beyond its observations a
// burst's distribution is placed no lower than the Estimator's prediction for the job. With
// exact predictions bursts never fire either (the Estimator's error is zero).
//
// # Weights, rejected jobs and a changing cluster
//
// Weights. A job's Weight (gpusched.Job.Weight, 1 when unset) divides its virtual remaining
// work in the queue's order: the virtual machine runs weighted SRPT (smallest remaining work
// over weight first). Only the head's key decreases as time passes, so Claim 1 holds as before
// and so does the bound on W_j; summing with weights,
//
//	sum_j w_j C_j <= sum_j w_j (r_j + p_j) + mu beta sum_j w_j ^C_j  <=  (1 + 2 mu^2 beta) OPT_w,
//
// because weighted SRPT is 2-competitive for the total weighted completion time on one machine
// (Megow and Schulz, "On-line scheduling to minimize average completion time revisited", Oper.
// Res. Lett. 32(5), 2004), and the optimal weighted total of the virtual instance is a lower
// bound on OPT_w as before (with the dilation step of the proof). With equal weights weighted
// SRPT is SRPT, which is optimal, and the factor 2 disappears: Theorem 1. That is the original
// conversion; the patient one orders its window by remaining GPU-time over weight and adds
// theta sum_j w_j p^_j, for a ratio of 1 + theta mu + 2 mu^2 beta.
//
// Rejected jobs. A job that cannot be admitted (no cost, more GPUs than the cluster has of its
// kind, a plan that fits no GPU, a failing prediction) never enters the virtual instance and is
// listed in Decision.Rejected at every call while it is in the view; the bound is about the
// other jobs. A job that fits no more after servers left stays in the virtual queue but out of
// the priority order (it is listed as rejected) until the cluster can hold it again.
//
// A changing cluster. Virtual sizes are in units of the first cluster's G0 GPUs, and the virtual
// machine runs at speed G(t) / G0, where G(t) is the number of GPUs available at time t
// (View.Unavailable excluded; servers that join or leave change it too): when capacity drops,
// the virtual schedule slows with it. The prefix that must run is the longest that fits in
// G(t). Claims 1 and 2 hold at every time with G(t) in place of G, so if G(t) stays within
// [G_min, G_max] while jobs wait, the proof gives
//
//	sum_j C_j <= sum_j (r_j + p_j) + mu beta' ^V,   beta' = G_max / (G_min - g_max + 1),
//
// (plus theta sum_j p^_j for the patient conversion; for the remaining-work conversion, the
// first inequality of Theorem 3 with beta' in place of beta)
//
// with ^V the total virtual completion time of the predicted instance, as the scheduler itself
// computes it (the virtual machine does at most G_max ^C_j GPU-seconds of work by ^C_j). With
// exact predictions ^V = V <= OPT (SRPT stays optimal on one machine whose speed varies with
// time), so the ratio is 1 + beta'. The last step of the proof, ^V <= mu V, dilates time and
// needs a constant speed: for mu > 1 under a changing cluster no ratio to OPT is claimed. A job
// running on GPUs that became unavailable is placed afresh if it is in the prefix and fits (a
// migration) and preempted otherwise, which is the immediate preemption the claims assume.
//
// # Plan choice
//
// NewPlanChooser (`gpusched policies`: asrpt-plan) runs A-SRPT on reconfigurable jobs
// (gpusched.Job.Plans): when it first sees a job it fixes the plan k that minimises
// g_jk x tau_jk, the job's GPU-time per iteration, and schedules the job under it. What this
// does to the bound: the virtual instance's sizes become s_j = min_k g_jk p_jk / G, and any
// schedule, under any plans, gives job j at least that much GPU-time, so the virtual-SRPT lower
// bound holds against an optimum that may choose plans too. The other lower bound, sum of
// r_j + p_j, does not: such an optimum may run j under a faster plan with more GPUs. Against
// it, p_j must be read as min_k p_jk, and the ratio grows by at most
// sigma = max_j p_j(chosen) / min_k p_jk, the slow-down the GPU-time-minimal plan accepts; g_max
// is taken over the chosen plans. Against an optimum held to the chosen plans the theorems hold
// unchanged. The choice is fixed at admission: A-SRPT never reconfigures a running job.
//
// # Restart and failover
//
// A-SRPT's decisions depend on what it saw before: the virtual queue, each job's prediction
// and re-estimate, the ghosts of jobs that left, the order of virtual completions. A new
// scheduler would treat every live job as just arrived at its full predicted size, and, say,
// preempt a job 90% done for a newcomer half its size. Scheduler implements gpusched.Stateful:
// SaveState writes all of it as versioned JSON (kind "asrpt", version 1: the virtual machine's
// clock, speed and every queued job's exact remaining work, release and weight; the key
// allocator; predictions, times per iteration, weights and virtual completions; rejected jobs
// with their reasons; the last cluster; the migration count; the group fallback's books, bursts
// included (their latest arrival, which burst of a user and GPU count an arrival joins, and the
// bursts to size again at the next call); and, nested, the estimator's state when the estimator
// implements gpusched.Stateful). Floats are written so that they read back
// bit for bit. A host saves after each decision (or periodically, losing only what happened
// since), and on start or when it becomes leader builds the scheduler with the same options
// and calls RestoreState before its first Schedule call: from then on every decision is the
// one the old scheduler would have made, which the package tests check with rapid through the
// simulator at every possible event, with deliberately broken restores caught.
//
// Jobs that finished while no scheduler ran are absent from the first view: A-SRPT forgets them
// as cancelled jobs (their unfinished virtual work stays as a ghost, as for any cancelled job);
// a host that knows they finished reports them with JobCompleted after RestoreState, so that a
// learning estimator learns from them. A cluster that changed meanwhile is handled as any change
// between calls. Caches (sizing candidates, the placer's worker graphs, the cost model's
// compiled jobs) are rebuilt on demand and not saved. The default Forest estimator implements
// gpusched.Stateful: its learned forest, per-group histories and calibration are saved with the
// scheduler (under "estimator"), so a restored default A-SRPT predicts new jobs as the old one
// would. RestoreState refuses bad, foreign or other-version data with an error wrapping
// gpusched.ErrBadState and leaves the scheduler unchanged. With 10,000 live jobs the state is
// under 1 MB and restores in tens of milliseconds
// (benchmarks/asrpt.md "Save and restore: 10,000 live jobs"). A host that saves after every
// decision saves by changes (BaseKey, SaveBase, SaveDelta, RestoreDelta: package host's
// Incremental): a base now and then, and deltas that hold only the jobs and virtual-queue
// entries that changed since, with the Forest's own changes (see package host).
//
// # Views and their deltas
//
// A-SRPT follows a host's view deltas (gpusched.ViewDelta): when a view's delta continues the
// last view a call completed (the same Source, Seq one more) and lists the jobs that started
// and stopped (Transitions), and no job is rejected or unfit, the call walks Running (whose
// progress it reads at every call) and what the delta lists, not Pending: the jobs that stopped
// running wait again, those that arrived are admitted in Pending's order and those that left
// are forgotten, as a walk over the whole view would do. It takes a waiting job's progress to
// be what it was when the job was last listed: a delta that says Transitions promises that no
// waiting job's progress changed (a host that reports one, as package host's Runtime.Report
// does for a late report, leaves Transitions false for the next view). Any other view is
// walked whole. Decisions are the same either way (TestPropertyFollowDelta,
// TestFollowDeltaKeepsDecisions).
//
// The package tests check the first inequality of each theorem with rapid on generated instances (arrivals,
// demands up to g_max, prediction errors within mu) and the ratio against exact optima of tiny
// instances (srpt.ExactOptimum), and check that a deliberately wrong variant (reversed
// priority) violates the inequality, so the test can fail.
package asrpt
