// Package srpt holds the exact single-machine side of A-SRPT: preemptive
// Shortest-Remaining-Processing-Time (SRPT) scheduling on one machine with
// release times, offline and incremental; the relaxation of a rigid-job GPU
// cluster onto that machine with the lower bounds it yields; and an exact
// solver for tiny cluster instances that tests across the project compare
// bounds and schedulers with.
//
// The package is pure: it imports nothing from the project, starts no
// goroutines and keeps no global state. Times are float64 seconds; sizes are
// in work units, processed at a machine speed in work units per second.
//
// # One machine, offline
//
// A Job has a caller-chosen integer ID, a release time and a size. Offline
// runs preemptive SRPT: at every instant the released, unfinished job with the
// smallest remaining size runs; ties go to the earlier release, then to the
// smaller ID, so results are deterministic and a running job is never
// preempted by an equal newcomer.
//
//	s, err := srpt.Offline([]srpt.Job{{ID: 1, Release: 0, Size: 4}, {ID: 2, Release: 1, Size: 1}}, 1)
//	// s.Completion = [5 2], s.Segments = [{1 0 1} {2 1 2} {1 2 5}]
//
// SRPT minimises the total completion time sum_j C_j, and hence the total
// flow time sum_j (C_j - r_j), among all preemptive schedules of one machine
// with release times, the problem 1 | r_j, pmtn | sum C_j. It does more: at
// every instant it has completed at least as many jobs as any other schedule,
// so its k-th completion time is the earliest possible for every k (L. Schrage,
// "A proof of the optimality of the shortest remaining processing time
// discipline", Operations Research 16(3), 1968; D. R. Smith, "A new proof of
// the optimality of the shortest remaining processing time discipline",
// Operations Research 26(1), 1978; K. R. Baker, Introduction to Sequencing and
// Scheduling, Wiley, 1974). Offline runs in O(n log n) with a binary heap;
// Completions is the same without building segments.
//
// Jobs may be passed in any order; they are sorted internally. Bad input
// (NaN, infinite or negative size or release, a non-positive speed, duplicate
// IDs) is reported with errors wrapping ErrInvalidJob, ErrInvalidParameter or
// ErrDuplicateJob that name the job and the value; nothing panics.
//
// # One machine, incremental
//
// The incremental form that A-SRPT keeps across scheduling events (Queue, NewQueue,
// RestoreQueue, deprecated) lives in an internal package of the module: feeding it the jobs of
// an instance at their release times reproduces Offline exactly, so a caller outside the module
// that needs the schedule of a whole instance calls Offline or OfflineWeighted.
//
// # The cluster relaxation and lower bounds
//
// A GangJob needs g_j GPUs at once for p_j seconds (rigid, preemptible).
// Virtual maps a cluster of G GPUs onto one machine of speed 1: job j becomes
// a job of size g_j p_j / G with the same release. (The same schedule results
// from sizes g_j p_j on a machine of speed G.) A-SRPT follows the SRPT order
// of this virtual instance. LowerBounds returns, for sum_j C_j of any feasible
// cluster schedule: the virtual SRPT total; the trivial sum_j (r_j + p_j); and
// their per-rank combination sum_k max(V_(k), R_(k)), which dominates both.
// SubsetBound is stronger still and costs O(n^2 log n). The proofs are in
// their documentation; subtract sum_j r_j (Bounds.SumRelease) for flow time.
//
// # Exact optimum of tiny instances
//
// ExactOptimum solves instances with integer data (a handful of jobs, a few
// GPUs) by dynamic programming over time slots of 1/resolution seconds and
// returns the optimal sum of completion times and of flow times over such
// slotted schedules. For one machine and for one-GPU jobs integer slots are
// exact; for rigid jobs they are not (see ExactOptimum for a four-job
// example), so the true optimum is at most the slotted one. Tests use it to
// check that bounds lie below the optimum and schedulers within their ratio.
//
// # Weighted heuristic
//
// OfflineWeighted (and the queue's AddWeighted) order jobs by remaining size divided
// by weight. This is a heuristic: 1 | r_j, pmtn | sum w_j C_j is strongly
// NP-hard (J. Labetoulle, E. L. Lawler, J. K. Lenstra, A. H. G. Rinnooy Kan,
// "Preemptive scheduling of uniform machines subject to release dates", in
// Progress in Combinatorial Optimization, Academic Press, 1984). Without
// release times it is Smith's ratio rule (W. E. Smith, "Various optimizers
// for single-stage production", Naval Research Logistics Quarterly 3, 1956)
// and optimal.
package srpt
