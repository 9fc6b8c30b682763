// Package queues shares a cluster's GPUs between teams: a gpusched.Scheduler wrapper (Wrap)
// that gives each queue its guaranteed GPUs, lets a queue borrow the GPUs others leave idle,
// and splits the GPUs beyond the guarantees between the queues that want them in proportion to
// their weights, while the wrapped scheduler (A-SRPT by default) orders and places the jobs
// inside and across the queues.
//
// # Queues
//
// A job's queue is its Features.Categorical["gpusched.io/queue"] (package mapping sets it from
// the annotation gpusched.io/queue), else the queue that lists its namespace (the job id is
// "podgroup/NAMESPACE/NAME" or "job/NAMESPACE/NAME"), else Config.Default.
//
// # Shares
//
// At every call the queues' shares of the available GPUs are computed by water-filling
// (Shares): each queue first gets its demand (the GPUs of its jobs, waiting and running) up to
// its guarantee; the GPUs left go to the queues whose demand is not met, in proportion to their
// weights, each capped at its demand (a queue with NoBorrowing gets no more than its
// guarantee). Then:
//
//   - reclaim: when a queue runs fewer GPUs than its guarantee (or its demand, if smaller) and
//     the free GPUs do not cover the difference, the jobs of queues that run more than their
//     share are preempted, the most recently started first, until the guarantees can be met;
//   - admission: the wrapped scheduler sees the waiting jobs only of the queues that run less
//     than their share, and a start that would take a queue past its share is dropped from its
//     decision. So a queue borrows only what the others do not claim, and the fair share
//     between weights is enforced as jobs start (the wrapper preempts only to give back
//     guarantees).
//
// The wrapped scheduler's order decides which of a queue's jobs run, and which queue's job goes
// first when several have room: with A-SRPT, the predicted shortest first, across queues too.
// Jobs of a queue without room are absent from the wrapped scheduler's view, as parked jobs are
// (it forgets them and sees them again as new); its saved state and its completions pass
// through.
//
// The alternative split is Kueue's: Kueue admits workloads by its ClusterQueues and cohorts
// (quotas, borrowing, fair sharing) and gpusched orders and places the admitted pods; then leave
// this wrapper off.
package queues
