package srpt

import (
	"fmt"
	"math"
)

// QueueState is the complete contents of a Queue: its clock, its speed and its jobs. Snapshot
// takes it and RestoreQueue rebuilds the queue from it, so that a scheduler built on a Queue
// can save its virtual machine and continue after a restart exactly where it was. The fields
// carry JSON tags: encoding/json writes float64 values in the shortest form that reads back to
// the same bits, so a state encoded and decoded with it restores the same queue.
type QueueState struct {
	// Now is the clock in seconds.
	Now float64 `json:"now"`
	// Speed is the machine speed in work units per second (0: stopped).
	Speed float64 `json:"speed"`
	// Jobs are the unfinished jobs, in priority order when taken by Snapshot (RestoreQueue
	// accepts any order).
	Jobs []QueuedJob `json:"jobs"`
}

// QueuedJob is one job of a QueueState.
type QueuedJob struct {
	// ID is the job's ID in the queue.
	ID int `json:"id"`
	// Remaining is its remaining work in work units.
	Remaining float64 `json:"remaining"`
	// Weight is its weight (1 for jobs added with Add).
	Weight float64 `json:"weight"`
	// Release is the clock time in seconds at which it was added.
	Release float64 `json:"release"`
}

// Snapshot returns the queue's contents, its jobs in priority order. O(n).
func (q *Queue) Snapshot() QueueState {
	s := QueueState{Now: q.now, Speed: q.speed, Jobs: make([]QueuedJob, 0, q.Len())}
	var walk func(t int32)
	walk = func(t int32) {
		for t != 0 {
			n := &q.nodes[t]
			walk(n.left)
			s.Jobs = append(s.Jobs, QueuedJob{ID: n.id, Remaining: n.rem, Weight: n.weight, Release: n.release})
			t = n.right
		}
	}
	walk(q.root)
	return s
}

// RestoreQueue returns a queue holding exactly the given state: the same clock, speed and jobs,
// so that every later operation gives the same results as on the queue the state was taken
// from, bit for bit, except ProjectedCompletion and TotalRemaining, whose subtree sums are
// summed afresh and may differ in the last bits (see Queue). It validates everything: it fails
// with ErrInvalidParameter for a clock that is not finite and >= 0 or a speed that is not
// finite and >= 0, ErrDuplicateJob for an ID listed twice, ErrInvalidJob for a remaining size
// that is not finite and >= 0, a weight that is not finite and > 0 or a release that is not
// finite and >= 0, and ErrTimeOrder for a release after the clock. Errors name the job. O(n
// log n).
func RestoreQueue(s QueueState) (*Queue, error) {
	if !finiteNonNeg(s.Now) {
		return nil, fmt.Errorf("%w: clock %v s must be finite and >= 0", ErrInvalidParameter, s.Now)
	}
	if !finiteNonNeg(s.Speed) {
		return nil, fmt.Errorf("%w: speed %v must be finite and >= 0", ErrInvalidParameter, s.Speed)
	}
	if len(s.Jobs) >= math.MaxInt32-1 {
		return nil, fmt.Errorf("%w: %d jobs is more than a queue holds", ErrInvalidParameter, len(s.Jobs))
	}
	q := &Queue{speed: s.Speed, now: s.Now, nodes: make([]qnode, 1, len(s.Jobs)+1), index: make(map[int]int32, len(s.Jobs))}
	for _, j := range s.Jobs {
		if err := checkJob(j.ID, j.Release, j.Remaining); err != nil {
			return nil, err
		}
		if err := checkWeight(j.ID, j.Weight); err != nil {
			return nil, err
		}
		if j.Release > s.Now {
			return nil, fmt.Errorf("%w: job %d released at %v s, after the clock (%v s)", ErrTimeOrder, j.ID, j.Release, s.Now)
		}
		if _, dup := q.index[j.ID]; dup {
			return nil, fmt.Errorf("%w: job %d is listed twice", ErrDuplicateJob, j.ID)
		}
		q.nodes = append(q.nodes, qnode{key: j.Remaining / j.Weight, rem: j.Remaining, weight: j.Weight,
			release: j.Release, sum: j.Remaining, id: j.ID, size: 1})
		x := int32(len(q.nodes) - 1)
		q.index[j.ID] = x
		q.insert(x)
	}
	return q, nil
}
