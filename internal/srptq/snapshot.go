package srptq

import (
	"fmt"
	"math"
)

// QueueState is the complete contents of a Queue: its clock, its speed and its jobs. Snapshot
// takes it and RestoreQueue rebuilds the queue from it, so that a scheduler built on a Queue
// can save its virtual machine and continue after a restart exactly where it was.
//
// The jobs are held column by column: job i has ID IDs[i], remaining work Remaining[i],
// weight Weights[i] and release Releases[i]. The fields carry JSON tags, and the columns make
// the JSON form compact and quick to read (a few times quicker for encoding/json than one
// object per job). encoding/json writes float64 values in the shortest form that reads back
// to the same bits, so a state encoded and decoded with it restores the same queue.
type QueueState struct {
	// Now is the clock in seconds.
	Now float64 `json:"now"`
	// Speed is the machine speed in work units per second (0: stopped).
	Speed float64 `json:"speed"`
	// IDs are the unfinished jobs' IDs, in priority order when taken by Snapshot
	// (RestoreQueue accepts any order).
	IDs []int `json:"ids"`
	// Remaining is each job's remaining work in work units.
	Remaining []float64 `json:"remaining"`
	// Weights is each job's weight (1 for jobs added with Add).
	Weights []float64 `json:"weights"`
	// Releases is each job's release: the clock time in seconds at which it was added.
	Releases []float64 `json:"releases"`
}

// Snapshot returns the queue's contents, its jobs in priority order. O(n).
func (q *Queue) Snapshot() QueueState {
	n := q.Len()
	s := QueueState{Now: q.now, Speed: q.speed, IDs: make([]int, 0, n), Remaining: make([]float64, 0, n),
		Weights: make([]float64, 0, n), Releases: make([]float64, 0, n)}
	var walk func(t int32)
	walk = func(t int32) {
		for t != 0 {
			x := &q.nodes[t]
			walk(x.left)
			s.IDs = append(s.IDs, x.id)
			s.Remaining = append(s.Remaining, x.rem)
			s.Weights = append(s.Weights, x.weight)
			s.Releases = append(s.Releases, x.release)
			t = x.right
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
// finite and >= 0, and ErrTimeOrder for a release after the clock; columns of different
// lengths are ErrInvalidParameter. Errors name the job. O(n log n).
func RestoreQueue(s QueueState) (*Queue, error) {
	if !FiniteNonNeg(s.Now) {
		return nil, fmt.Errorf("%w: clock %v s must be finite and >= 0", ErrInvalidParameter, s.Now)
	}
	if !FiniteNonNeg(s.Speed) {
		return nil, fmt.Errorf("%w: speed %v must be finite and >= 0", ErrInvalidParameter, s.Speed)
	}
	n := len(s.IDs)
	if len(s.Remaining) != n || len(s.Weights) != n || len(s.Releases) != n {
		return nil, fmt.Errorf("%w: columns of %d IDs, %d remaining sizes, %d weights and %d releases",
			ErrInvalidParameter, n, len(s.Remaining), len(s.Weights), len(s.Releases))
	}
	if n >= math.MaxInt32-1 {
		return nil, fmt.Errorf("%w: %d jobs is more than a queue holds", ErrInvalidParameter, n)
	}
	q := &Queue{speed: s.Speed, now: s.Now, nodes: make([]qnode, 1, n+1), index: make(map[int]int32, n)}
	for i, id := range s.IDs {
		rem, w, rel := s.Remaining[i], s.Weights[i], s.Releases[i]
		if err := CheckJob(id, rel, rem); err != nil {
			return nil, err
		}
		if err := CheckWeight(id, w); err != nil {
			return nil, err
		}
		if rel > s.Now {
			return nil, fmt.Errorf("%w: job %d released at %v s, after the clock (%v s)", ErrTimeOrder, id, rel, s.Now)
		}
		if _, dup := q.index[id]; dup {
			return nil, fmt.Errorf("%w: job %d is listed twice", ErrDuplicateJob, id)
		}
		q.nodes = append(q.nodes, qnode{key: rem / w, rem: rem, weight: w, release: rel, sum: rem, id: id, size: 1})
		x := int32(len(q.nodes) - 1)
		q.index[id] = x
		q.insert(x)
	}
	return q, nil
}
