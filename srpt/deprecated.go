package srpt

import "github.com/gpusched/gpusched/internal/srptq"

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// Completions is Offline without the segments: it appends the SRPT completion time (seconds)
// of every job, in input order, to dst and returns the extended slice.
//
// Deprecated: use Offline (Schedule.Completion) or LowerBounds; removed in v0.3.0.
func Completions(jobs []Job, speed float64, dst []float64) ([]float64, error) {
	return completions(jobs, speed, dst)
}

// Queue is the incremental (online) form of preemptive SRPT on one machine.
//
// Deprecated: A-SRPT, its only user, keeps its own copy (an internal package); Offline and
// OfflineWeighted give the same schedule for a whole instance. Removed in v0.4.0.
type Queue = srptq.Queue

// QueueState is the complete contents of a Queue, as Queue.Snapshot takes it.
//
// Deprecated: see Queue; removed in v0.4.0.
type QueueState = srptq.QueueState

// Completed reports a job that finished on a Queue's virtual machine.
//
// Deprecated: see Queue; removed in v0.4.0.
type Completed = srptq.Completed

// NewQueue returns an empty queue for a machine of the given speed (work units per second),
// with its clock at time 0.
//
// Deprecated: see Queue; removed in v0.4.0.
func NewQueue(speed float64) (*Queue, error) { return srptq.NewQueue(speed) }

// RestoreQueue rebuilds the queue a QueueState was taken from.
//
// Deprecated: see Queue; removed in v0.4.0.
func RestoreQueue(s QueueState) (*Queue, error) { return srptq.RestoreQueue(s) }
