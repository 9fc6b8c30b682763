package srptq

import (
	"fmt"
	"iter"
	"math"
)

// Completed reports a job that finished on the virtual machine.
type Completed struct {
	// ID is the job.
	ID int
	// Time is the virtual completion time in seconds.
	Time float64
}

// Queue is the incremental (online) form of preemptive SRPT on one machine.
// It holds the released, unfinished jobs of a virtual single machine and a
// clock. Jobs are added at the current clock; Advance moves the clock forward
// and processes jobs in SRPT order, reporting the ones that complete. Feeding
// a Queue every job at its release time (Advance to the release, then Add)
// reproduces Offline bit for bit: same order, same completion times. Extra
// Advance calls in between split the same computation into more steps and
// may change the last bits of the results (none on data whose arithmetic is
// exact, such as integers, or multiples of a power of two at power-of-two
// speeds).
//
// Priority order is: smallest remaining size (divided by weight, for jobs
// added with AddWeighted), then earliest release, then smallest ID.
//
// The jobs live in a treap (randomised balanced search tree) keyed by
// priority and augmented with subtree sizes and subtree sums of remaining
// work, so Add, Remove, Update, Remaining, Rank and ProjectedCompletion cost
// O(log n) expected time, and Advance costs O(log n) per job it completes
// plus O(log n). Treap priorities are a fixed hash of the job ID, so the tree
// shape depends only on the queue's contents and every result only on the
// sequence of calls: no hidden randomness. Subtree sums are maintained by
// adding and subtracting along search paths (reading no siblings, for speed),
// so with sizes whose sums are not exact in float64 they can drift from a
// fresh summation by a few units in the last place; this affects
// ProjectedCompletion and TotalRemaining only, never the order or the
// completion times. Nodes (64 bytes each) live in one slice with a free list;
// once the queue has grown to its peak size, operations do not allocate.
// With queues of up to some thousands of jobs everything stays in cache and
// an operation costs a few hundred nanoseconds; with hundreds of thousands of
// queued jobs an insertion walks about 25 levels that mostly miss the cache,
// and costs microseconds (see benchmarks/srpt.md).
//
// A Queue is not safe for concurrent use.
type Queue struct {
	speed float64
	now   float64
	root  int32
	nodes []qnode // nodes[0] is the nil sentinel (size 0, sum 0)
	free  []int32
	index map[int]int32
	path  []int32 // scratch for the leftmost path
}

type qnode struct {
	key     float64 // rem / weight
	rem     float64 // remaining work
	weight  float64
	release float64
	sum     float64 // sum of rem over the subtree
	id      int
	left    int32
	right   int32
	size    int32
}

// NewQueue returns an empty queue for a machine of the given speed (work
// units per second), with its clock at time 0.
func NewQueue(speed float64) (*Queue, error) {
	if err := CheckSpeed(speed); err != nil {
		return nil, err
	}
	return &Queue{speed: speed, nodes: make([]qnode, 1, 16), index: make(map[int]int32)}, nil
}

// Grow reserves node storage for n more jobs, and, if the queue is empty,
// sizes its ID index for n jobs, so that the next n additions do not
// allocate.
func (q *Queue) Grow(n int) {
	if n <= 0 {
		return
	}
	if need := len(q.nodes) + n - len(q.free); need > cap(q.nodes) {
		nodes := make([]qnode, len(q.nodes), need)
		copy(nodes, q.nodes)
		q.nodes = nodes
	}
	if len(q.index) == 0 {
		q.index = make(map[int]int32, n)
	}
}

// Now returns the queue's clock in seconds.
func (q *Queue) Now() float64 { return q.now }

// Speed returns the machine speed in work units per second.
func (q *Queue) Speed() float64 { return q.speed }

// SetSpeed changes the machine speed (work units per second) from Now() on: Advance to the time
// of the change first, then SetSpeed, and later Advance calls process work at the new speed. A
// speed of 0 stops the machine (no job completes, projected completions are +Inf) until a
// positive speed is set. It fails with ErrInvalidParameter for a negative, NaN or infinite
// speed.
func (q *Queue) SetSpeed(speed float64) error {
	if speed != 0 {
		if err := CheckSpeed(speed); err != nil {
			return err
		}
	}
	q.speed = speed
	return nil
}

// Len returns the number of unfinished jobs in the queue.
func (q *Queue) Len() int { return int(q.nodes[q.root].size) }

// TotalRemaining returns the remaining work of all jobs in work units.
func (q *Queue) TotalRemaining() float64 { return q.nodes[q.root].sum }

// Add adds job id with the given size (work units) at the current clock;
// its release time is Now(). A size of 0 is allowed: the job completes at the
// next Advance, at the current time. It fails with ErrDuplicateJob if the ID
// is already in the queue and ErrInvalidJob for a NaN, infinite or negative
// size.
func (q *Queue) Add(id int, size float64) error {
	return q.add(id, size, 1)
}

// AddWeighted is Add for a weighted job: its priority is remaining size
// divided by weight. Mixing weights makes the queue a heuristic (see
// OfflineWeighted); prefix sums and projected completions stay exact for the
// order the queue uses.
func (q *Queue) AddWeighted(id int, size, weight float64) error {
	if err := CheckWeight(id, weight); err != nil {
		return err
	}
	return q.add(id, size, weight)
}

func (q *Queue) add(id int, size, weight float64) error {
	if err := CheckJob(id, q.now, size); err != nil {
		return err
	}
	if _, ok := q.index[id]; ok {
		return fmt.Errorf("%w: job %d is already in the queue", ErrDuplicateJob, id)
	}
	if q.Len() == math.MaxInt32-1 {
		return fmt.Errorf("%w: queue is full (%d jobs)", ErrInvalidParameter, q.Len())
	}
	var x int32
	if k := len(q.free); k > 0 {
		x = q.free[k-1]
		q.free = q.free[:k-1]
	} else {
		q.nodes = append(q.nodes, qnode{})
		x = int32(len(q.nodes) - 1)
	}
	q.nodes[x] = qnode{key: size / weight, rem: size, weight: weight, release: q.now,
		sum: size, id: id, size: 1}
	q.index[id] = x
	q.insert(x)
	return nil
}

// Advance moves the clock to t (seconds) and processes jobs in priority order
// until then: the head job runs at the machine speed; when it completes the
// next one starts. Completed jobs are appended to done, in completion order,
// and removed from the queue; the extended slice is returned. Passing a
// reused buffer (done[:0]) keeps Advance allocation-free.
//
// t must be finite and >= Now(); otherwise Advance fails with ErrTimeOrder or
// ErrInvalidParameter and changes nothing.
func (q *Queue) Advance(t float64, done []Completed) ([]Completed, error) {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return done, fmt.Errorf("%w: advance to time %v s", ErrInvalidParameter, t)
	}
	if t < q.now {
		return done, fmt.Errorf("%w: advance to %v s, clock is at %v s", ErrTimeOrder, t, q.now)
	}
	for q.root != 0 {
		q.leftPath()
		h := q.path[len(q.path)-1]
		hn := &q.nodes[h]
		rem, finish, ok := AdvanceHead(hn.rem, q.now, t, q.speed)
		if ok && q.speed > 0 {
			q.now = finish
			done = append(done, Completed{ID: hn.id, Time: finish})
			q.removeHead()
			continue
		}
		delta := hn.rem - rem
		hn.rem = rem
		hn.key = rem / hn.weight
		for _, a := range q.path {
			q.nodes[a].sum -= delta
		}
		break
	}
	q.now = t
	return done, nil
}

// Remove deletes job id from the queue, e.g. because it was cancelled or
// finished for real before its virtual completion. It fails with
// ErrUnknownJob if the queue does not hold the ID.
func (q *Queue) Remove(id int) error {
	x, ok := q.index[id]
	if !ok {
		return fmt.Errorf("%w: remove job %d", ErrUnknownJob, id)
	}
	q.delete(x)
	delete(q.index, id)
	q.free = append(q.free, x)
	return nil
}

// Update sets the remaining size (work units, from now on) of job id, e.g.
// when its prediction is revised, and repositions it. Its release time and
// weight are kept. It fails with ErrUnknownJob or ErrInvalidJob.
func (q *Queue) Update(id int, remaining float64) error {
	x, ok := q.index[id]
	if !ok {
		return fmt.Errorf("%w: update job %d", ErrUnknownJob, id)
	}
	if !FiniteNonNeg(remaining) {
		return fmt.Errorf("%w: job %d: remaining size %v must be finite and >= 0", ErrInvalidJob, id, remaining)
	}
	q.delete(x)
	n := &q.nodes[x]
	n.rem, n.key, n.sum = remaining, remaining/n.weight, remaining
	n.left, n.right, n.size = 0, 0, 1
	q.insert(x)
	return nil
}

// Remaining returns the remaining work (work units) of job id, and false if
// the queue does not hold it.
func (q *Queue) Remaining(id int) (float64, bool) {
	x, ok := q.index[id]
	if !ok {
		return 0, false
	}
	return q.nodes[x].rem, true
}

// Rank returns the 0-based position of job id in priority order (0 is the
// job that runs now), and false if the queue does not hold it.
func (q *Queue) Rank(id int) (int, bool) {
	x, ok := q.index[id]
	if !ok {
		return 0, false
	}
	r := int32(0)
	for t := q.root; ; {
		n := &q.nodes[t]
		switch {
		case t == x:
			return int(r + q.nodes[n.left].size), true
		case q.less(x, t):
			t = n.left
		default:
			r += q.nodes[n.left].size + 1
			t = n.right
		}
	}
}

// ProjectedCompletion returns the virtual completion time (seconds) of job id
// if no further job arrives and nothing is updated: Now() plus the remaining
// work of it and of every job ahead of it, divided by the speed. It returns
// false if the queue does not hold the job. Up to floating-point rounding it
// equals the time Advance would report.
func (q *Queue) ProjectedCompletion(id int) (float64, bool) {
	x, ok := q.index[id]
	if !ok {
		return 0, false
	}
	acc := 0.0
	for t := q.root; ; {
		n := &q.nodes[t]
		switch {
		case t == x:
			if q.speed == 0 {
				return math.Inf(1), true
			}
			return q.now + (acc+q.nodes[n.left].sum+n.rem)/q.speed, true
		case q.less(x, t):
			t = n.left
		default:
			acc += q.nodes[n.left].sum + n.rem
			t = n.right
		}
	}
}

// Head returns the job that runs now (the first in priority order) and its
// remaining work; ok is false if the queue is empty.
func (q *Queue) Head() (id int, remaining float64, ok bool) {
	if q.root == 0 {
		return 0, 0, false
	}
	t := q.root
	for q.nodes[t].left != 0 {
		t = q.nodes[t].left
	}
	return q.nodes[t].id, q.nodes[t].rem, true
}

// Order appends the IDs of all queued jobs in priority order to dst and
// returns the extended slice. O(n).
func (q *Queue) Order(dst []int) []int {
	for id := range q.All() {
		dst = append(dst, id)
	}
	return dst
}

// All iterates over the queued jobs in priority order, yielding each ID and
// its remaining work (work units). The queue must not be modified during the
// iteration. Stopping early costs only the jobs visited plus O(log n).
func (q *Queue) All() iter.Seq2[int, float64] {
	return func(yield func(int, float64) bool) {
		q.walk(q.root, yield)
	}
}

func (q *Queue) walk(t int32, yield func(int, float64) bool) bool {
	for t != 0 {
		n := &q.nodes[t]
		if !q.walk(n.left, yield) || !yield(n.id, n.rem) {
			return false
		}
		t = n.right
	}
	return true
}

// mix is the splitmix64 finaliser: a bijection on uint64, so distinct IDs get
// distinct treap priorities.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// less orders nodes by (key, release, id).
func (q *Queue) less(a, b int32) bool {
	x, y := &q.nodes[a], &q.nodes[b]
	if x.key != y.key {
		return x.key < y.key
	}
	if x.release != y.release {
		return x.release < y.release
	}
	return x.id < y.id
}

func (q *Queue) pull(t int32) {
	n := &q.nodes[t]
	l, r := &q.nodes[n.left], &q.nodes[n.right]
	n.size = l.size + r.size + 1
	n.sum = l.sum + n.rem + r.sum
}

// prio is the treap priority of node t: a fixed hash of its ID, recomputed
// rather than stored to keep a node at 64 bytes.
func (q *Queue) prio(t int32) uint64 { return mix(uint64(q.nodes[t].id)) }

// insert inserts the single node x (left = right = 0, size 1, sum = rem).
// It walks down from the root while the priorities on the path are higher
// than x's, adding x to each subtree's size and sum on the way (so no
// sibling is read), then splits the subtree found there around x.
func (q *Queue) insert(x int32) {
	px, rem := q.prio(x), q.nodes[x].rem
	link := &q.root
	for *link != 0 && q.prio(*link) > px {
		n := &q.nodes[*link]
		n.size++
		n.sum += rem
		if q.less(x, *link) {
			link = &n.left
		} else {
			link = &n.right
		}
	}
	l, r := q.split(*link, x)
	n := &q.nodes[x]
	n.left, n.right = l, r
	q.pull(x)
	*link = x
}

// split splits subtree t into the nodes ordered before x and after x; x is
// not in t.
func (q *Queue) split(t, x int32) (int32, int32) {
	if t == 0 {
		return 0, 0
	}
	if q.less(t, x) {
		l, r := q.split(q.nodes[t].right, x)
		q.nodes[t].right = l
		q.pull(t)
		return t, r
	}
	l, r := q.split(q.nodes[t].left, x)
	q.nodes[t].left = r
	q.pull(t)
	return l, t
}

// merge joins two treaps where every node of a is ordered before every node
// of b.
func (q *Queue) merge(a, b int32) int32 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	if q.prio(a) > q.prio(b) {
		c := q.merge(q.nodes[a].right, b)
		q.nodes[a].right = c
		q.pull(a)
		return a
	}
	c := q.merge(a, q.nodes[b].left)
	q.nodes[b].left = c
	q.pull(b)
	return b
}

// delete unlinks node x, which must be in the tree, subtracting it from the
// size and sum of every ancestor on the way down and merging its subtrees
// in its place.
func (q *Queue) delete(x int32) {
	rem := q.nodes[x].rem
	link := &q.root
	for *link != x {
		n := &q.nodes[*link]
		n.size--
		n.sum -= rem
		if q.less(x, *link) {
			link = &n.left
		} else {
			link = &n.right
		}
	}
	n := &q.nodes[x]
	*link = q.merge(n.left, n.right)
}

// leftPath fills q.path with the path from the root to the head (leftmost
// node). The queue must not be empty.
func (q *Queue) leftPath() {
	q.path = q.path[:0]
	for t := q.root; t != 0; t = q.nodes[t].left {
		q.path = append(q.path, t)
	}
}

// removeHead deletes the head found by leftPath and frees its node.
func (q *Queue) removeHead() {
	k := len(q.path) - 1
	h := q.path[k]
	hn := &q.nodes[h]
	if k == 0 {
		q.root = hn.right
	} else {
		q.nodes[q.path[k-1]].left = hn.right
		for _, a := range q.path[:k] {
			n := &q.nodes[a]
			n.size--
			n.sum -= hn.rem
		}
	}
	delete(q.index, q.nodes[h].id)
	q.free = append(q.free, h)
}
