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
//   - admission: the wrapped scheduler sees every running job (but those reclaimed) and the
//     waiting jobs of the queues that run less than their share (queues with room) and of the
//     full queues that run jobs. It orders and places them as it would without queues, and
//     its decision is kept except where it breaks one of two rules:
//     (1) a start may take the GPUs of a job the decision stops only if that job is of the same
//     queue or of a queue that runs more than its share: a queue at or below its share loses
//     GPUs only to its own jobs and to the reclaim, never to another queue's preemption;
//     (2) a queue never grows beyond the larger of its share and the GPUs it runs: a queue
//     with room fills up to its share, and a full queue starts a job only in place of its own
//     jobs that the decision stops.
//     A start that breaks a rule is dropped (the starts are checked in the decision's order),
//     and a running job stopped only to make room for dropped starts keeps running. The
//     wrapped scheduler, which may have given a dropped job GPUs that a lower-priority job of
//     a queue with room could take, is then asked again without the jobs dropped so far (and
//     of the full queues, with only the jobs the first call started); a third call, the last,
//     shows it no full queue's waiting job. So a queue borrows only what the others do not
//     claim, the fair share between weights is enforced as jobs start (the wrapper itself
//     preempts only to give back guarantees), and the wrapped scheduler's preemptions stay
//     within the shares.
//
// # Intra-queue preemption
//
// The wrapped scheduler orders the jobs inside each queue too: with A-SRPT, a short job of a
// full queue preempts a longer running job of the same queue when that job is the one A-SRPT
// stops for it (A-SRPT stops the running jobs of lowest priority first). Where A-SRPT would stop another queue's job instead (one at or below its
// share: rule 1), the short job waits for its queue's GPUs, and the other queue keeps its own.
// With all jobs in one queue (no NoBorrowing), the decisions are the wrapped scheduler's.
//
// The wrapped scheduler's order decides which of a queue's jobs run, and which queue's job goes
// first when several have room: with A-SRPT, the predicted shortest first, across queues too.
// Waiting jobs of a full queue that runs nothing (and, in a second or third call, the jobs
// dropped) are absent from the wrapped scheduler's view, as parked jobs are (it forgets them and
// sees them again as new); its saved state and its completions pass through. A decision costs
// up to three calls of the wrapped scheduler: the second and third only where a start was
// dropped.
//
// The alternative split is Kueue's: Kueue admits workloads by its ClusterQueues and cohorts
// (quotas, borrowing, fair sharing) and gpusched orders and places the admitted pods; then leave
// this wrapper off.
package queues
