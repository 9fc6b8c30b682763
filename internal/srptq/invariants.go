package srptq

import (
	"fmt"
	"math"
)

// CheckInvariants verifies the queue's internal invariants (for tests): BST order by
// (key, release, id), heap order of priorities, sizes, sums, index map and
// the free list.
func (q *Queue) CheckInvariants() error {
	seen := 0
	var walk func(t int32) (int32, float64, error)
	walk = func(t int32) (int32, float64, error) {
		if t == 0 {
			return 0, 0, nil
		}
		n := &q.nodes[t]
		seen++
		for _, c := range []int32{n.left, n.right} {
			if c != 0 && q.prio(c) > q.prio(t) {
				return 0, 0, fmt.Errorf("heap order broken at job %d", n.id)
			}
		}
		if n.left != 0 && !q.less(n.left, t) {
			return 0, 0, fmt.Errorf("BST order broken left of job %d", n.id)
		}
		if n.right != 0 && !q.less(t, n.right) {
			return 0, 0, fmt.Errorf("BST order broken right of job %d", n.id)
		}
		if n.key != n.rem/n.weight {
			return 0, 0, fmt.Errorf("job %d: key %v != rem/weight %v", n.id, n.key, n.rem/n.weight)
		}
		if q.index[n.id] != t {
			return 0, 0, fmt.Errorf("index of job %d is stale", n.id)
		}
		ls, lsum, err := walk(n.left)
		if err != nil {
			return 0, 0, err
		}
		rs, rsum, err := walk(n.right)
		if err != nil {
			return 0, 0, err
		}
		if n.size != ls+rs+1 {
			return 0, 0, fmt.Errorf("job %d: size %d != %d", n.id, n.size, ls+rs+1)
		}
		// Sums are maintained incrementally: exact on dyadic data, within
		// rounding otherwise.
		if s := lsum + n.rem + rsum; !closeTo(n.sum, s) {
			return 0, 0, fmt.Errorf("job %d: sum %v != %v", n.id, n.sum, s)
		}
		return n.size, n.sum, nil
	}
	if _, _, err := walk(q.root); err != nil {
		return err
	}
	if seen != len(q.index) || seen+len(q.free)+1 != len(q.nodes) {
		return fmt.Errorf("%d nodes in tree, %d in index, %d free, %d allocated", seen, len(q.index), len(q.free), len(q.nodes))
	}
	// Ordering: inorder walk must be strictly increasing.
	var prev int32
	for t := range q.inorder() {
		if prev != 0 && !q.less(prev, t) {
			return fmt.Errorf("inorder walk not sorted at job %d", q.nodes[t].id)
		}
		prev = t
	}
	return nil
}

func (q *Queue) inorder() func(func(int32) bool) {
	return func(yield func(int32) bool) {
		var rec func(t int32) bool
		rec = func(t int32) bool {
			return t == 0 || rec(q.nodes[t].left) && yield(t) && rec(q.nodes[t].right)
		}
		rec(q.root)
	}
}

// closeTo reports whether a and b agree to a relative 1e-9.
func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}
