package partition

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// refiner holds a partition of one graph under per-part weight limits and
// improves it with k-way Fiduccia-Mattheyses passes: boundary vertices sit
// in a max-heap keyed by the gain of their best feasible move; each pass
// moves the best vertex (even at a loss), locks it, updates its neighbours,
// and at the end rolls back to the best prefix of moves. With a feasible
// start (every part within its limit) a pass therefore never increases the
// cut and never breaks a limit. k = 2 gives classical 2-way FM.
type refiner struct {
	g      *Graph
	k      int
	part   []int32
	pw     []int64
	limit  []int64
	target []float64

	conn    []int64 // per-part connectivity scratch, all zero between uses
	touched []int32
	heap    *gainHeap
	stamp   []int32 // stamp[v] == pass marks v locked in this pass
	pass    int32
	moves   []moveRec
	rng     *rand.Rand
	order   []int32

	maxStall  int
	maxPasses int

	// brokenNoRollback deliberately breaks refinement (keeps every move
	// of a pass, including losing ones). Only tests set it, to show that
	// the "refinement never increases the cut" property catches it.
	brokenNoRollback bool
}

type moveRec struct {
	v    int32
	from int32
}

func newRefiner(g *Graph, part []int32, k int, limit []int64, target []float64, rng *rand.Rand) *refiner {
	n := g.NumVertices()
	r := &refiner{
		g: g, k: k, part: part, limit: limit, target: target,
		pw:    make([]int64, k),
		conn:  make([]int64, k),
		heap:  newGainHeap(n),
		stamp: make([]int32, n),
		rng:   rng,
	}
	for v, p := range part {
		r.pw[p] += g.vw[v]
	}
	r.maxStall = min(max(n/20, 25), 400)
	r.maxPasses = 12
	return r
}

// overload is the total weight above the limits.
func (r *refiner) overload() int64 {
	var o int64
	for p, w := range r.pw {
		if w > r.limit[p] {
			o += w - r.limit[p]
		}
	}
	return o
}

// cut computes the edge cut of the current partition.
func (r *refiner) cut() int64 {
	g := r.g
	var c int64
	for v := range g.vw {
		pv := r.part[v]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if r.part[g.adj[i]] != pv {
				c += g.ew[i]
			}
		}
	}
	return c / 2
}

// gather fills conn/touched with v's connectivity to each adjacent part.
// The caller must call scatter afterwards.
func (r *refiner) gather(v int32) {
	g := r.g
	r.touched = r.touched[:0]
	for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
		p := r.part[g.adj[i]]
		if r.conn[p] == 0 {
			r.touched = append(r.touched, p)
		}
		r.conn[p] += g.ew[i]
	}
}

func (r *refiner) scatter() {
	for _, p := range r.touched {
		r.conn[p] = 0
	}
}

// lighter reports whether adding w to part p leaves it relatively lighter
// than adding w to part q.
func (r *refiner) lighter(p, q int32, w int64) bool {
	fp := float64(r.pw[p]+w) / float64(max(r.limit[p], 1))
	fq := float64(r.pw[q]+w) / float64(max(r.limit[q], 1))
	if fp != fq {
		return fp < fq
	}
	return p < q
}

// bestMove returns the adjacent part that v can move to without breaking
// that part's limit and that gains the most (ties: the relatively lighter
// part). ok is false if v is not on the boundary or no such part exists.
func (r *refiner) bestMove(v int32) (to int32, gain int64, ok bool) {
	r.gather(v)
	a := r.part[v]
	wv := r.g.vw[v]
	internal := r.conn[a]
	to, gain = -1, math.MinInt64
	for _, p := range r.touched {
		if p == a || r.pw[p]+wv > r.limit[p] {
			continue
		}
		gp := r.conn[p] - internal
		if gp > gain || (gp == gain && r.lighter(p, to, wv)) {
			to, gain = p, gp
		}
	}
	r.scatter()
	return to, gain, to >= 0
}

func (r *refiner) dev(p int32, delta int64) float64 {
	d := float64(r.pw[p]) - r.target[p]
	e := d + float64(delta)
	return e*e - d*d
}

// move moves v to part b, returning the change in overload.
func (r *refiner) move(v, b int32) int64 {
	a := r.part[v]
	w := r.g.vw[v]
	before := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)
	r.pw[a] -= w
	r.pw[b] += w
	r.part[v] = b
	after := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)
	return after - before
}

// refine runs FM passes until one brings no improvement.
func (r *refiner) refine() {
	for range r.maxPasses {
		if !r.fmPass() {
			return
		}
	}
}

// boundaryOrder fills r.order with the boundary vertices in random order.
func (r *refiner) boundaryOrder() {
	g := r.g
	r.order = r.order[:0]
	for v := range g.vw {
		pv := r.part[v]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if r.part[g.adj[i]] != pv {
				r.order = append(r.order, int32(v))
				break
			}
		}
	}
	r.rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
}

// fmPass runs one FM pass and reports whether it improved the state
// (lower overload, or equal overload and lower cut).
func (r *refiner) fmPass() bool {
	g := r.g
	r.pass++
	h := r.heap
	h.reset()
	r.boundaryOrder()
	for _, v := range r.order {
		if to, gain, ok := r.bestMove(v); ok {
			_ = to
			h.push(v, gain)
		}
	}
	r.moves = r.moves[:0]
	var delta, over int64 // relative to the start of the pass
	var dev float64
	var bestDelta, bestOver int64
	var bestDev float64
	bestIdx, stall := 0, 0
	for h.len() > 0 {
		v, key := h.pop()
		b, gain, ok := r.bestMove(v)
		if !ok {
			continue
		}
		if gain != key {
			h.push(v, gain)
			continue
		}
		a := r.part[v]
		w := g.vw[v]
		dev += r.dev(a, -w) + r.dev(b, w)
		over += r.move(v, b)
		delta -= gain
		r.stamp[v] = r.pass
		r.moves = append(r.moves, moveRec{v: v, from: a})
		if over < bestOver || (over == bestOver && (delta < bestDelta || (delta == bestDelta && dev < bestDev-1e-9))) {
			bestDelta, bestOver, bestDev = delta, over, dev
			bestIdx = len(r.moves)
			stall = 0
		} else if stall++; stall >= r.maxStall {
			break
		}
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			u := g.adj[i]
			if r.stamp[u] == r.pass {
				continue
			}
			if _, gu, ok := r.bestMove(u); ok {
				h.push(u, gu)
			} else {
				h.remove(u)
			}
		}
	}
	if r.brokenNoRollback {
		return false
	}
	for i := len(r.moves) - 1; i >= bestIdx; i-- {
		m := r.moves[i]
		r.move(m.v, m.from)
	}
	return bestIdx > 0 && (bestOver < 0 || bestDelta < 0)
}

// balance moves vertices out of parts above their limits, choosing the
// moves that lose the least cut. It is best effort; forceFit guarantees a
// feasible result where one is guaranteed to exist.
func (r *refiner) balance() {
	over := r.overload()
	if over == 0 {
		return
	}
	g := r.g
	h := r.heap
	h.reset()
	for v := range g.vw {
		if a := r.part[v]; r.pw[a] > r.limit[a] {
			if _, gain, ok := r.balanceMove(int32(v)); ok {
				h.push(int32(v), gain)
			}
		}
	}
	for over > 0 && h.len() > 0 {
		v, key := h.pop()
		a := r.part[v]
		if r.pw[a] <= r.limit[a] {
			continue
		}
		b, gain, ok := r.balanceMove(v)
		if !ok {
			continue
		}
		if gain != key {
			h.push(v, gain)
			continue
		}
		over += r.move(v, b)
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			u := g.adj[i]
			if pu := r.part[u]; r.pw[pu] > r.limit[pu] {
				if _, gu, ok := r.balanceMove(u); ok {
					h.push(u, gu)
				} else {
					h.remove(u)
				}
			} else {
				h.remove(u)
			}
		}
	}
}

// balanceMove returns the best part with room for v: an adjacent part
// with the highest gain, or else the relatively lightest part with room.
func (r *refiner) balanceMove(v int32) (to int32, gain int64, ok bool) {
	r.gather(v)
	a := r.part[v]
	wv := r.g.vw[v]
	internal := r.conn[a]
	to, gain = -1, math.MinInt64
	for _, p := range r.touched {
		if p == a || r.pw[p]+wv > r.limit[p] {
			continue
		}
		gp := r.conn[p] - internal
		if gp > gain || (gp == gain && r.lighter(p, to, wv)) {
			to, gain = p, gp
		}
	}
	r.scatter()
	if to >= 0 && gain >= -internal {
		return to, gain, true
	}
	for p := range int32(r.k) {
		if p == a || r.pw[p]+wv > r.limit[p] {
			continue
		}
		if to < 0 || r.lighter(p, to, wv) {
			to = p
		}
	}
	if to < 0 {
		return -1, 0, false
	}
	return to, -internal, true
}

// forceFit makes the partition feasible if it is not: it takes vertices
// out of overloaded parts (the least attached first) and re-inserts them,
// heaviest first, into the part with room they are most attached to.
// Whenever each limit is at least ceil(target)+maxVW-1 (Balanced mode) or
// all vertex weights are 1 (Hard mode), this always succeeds. It reports
// whether the result is feasible.
func (r *refiner) forceFit() bool {
	if r.overload() == 0 {
		return true
	}
	g := r.g
	var out []int32
	for a := range int32(r.k) {
		if r.pw[a] <= r.limit[a] {
			continue
		}
		var vs []int32
		var att []int64
		for v := range g.vw {
			if r.part[v] == a {
				vs = append(vs, int32(v))
			}
		}
		att = make([]int64, g.NumVertices())
		for _, v := range vs {
			r.gather(v)
			att[v] = r.conn[a]
			r.scatter()
		}
		slices.SortStableFunc(vs, func(x, y int32) int { return cmp.Compare(att[x], att[y]) })
		for _, v := range vs {
			if r.pw[a] <= r.limit[a] {
				break
			}
			r.pw[a] -= g.vw[v]
			r.part[v] = -1
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(x, y int32) int { return cmp.Compare(g.vw[y], g.vw[x]) })
	for _, v := range out {
		wv := g.vw[v]
		best := int32(-1)
		var bestConn int64 = -1
		r.touched = r.touched[:0]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if p := r.part[g.adj[i]]; p >= 0 {
				if r.conn[p] == 0 {
					r.touched = append(r.touched, p)
				}
				r.conn[p] += g.ew[i]
			}
		}
		for p := range int32(r.k) {
			if r.pw[p]+wv > r.limit[p] {
				continue
			}
			c := r.conn[p]
			if c > bestConn || (c == bestConn && r.lighter(p, best, wv)) {
				best, bestConn = p, c
			}
		}
		r.scatter()
		if best < 0 {
			// No room anywhere: put it in the lightest part and report.
			best = 0
			for p := range int32(r.k) {
				if r.lighter(p, best, wv) {
					best = p
				}
			}
		}
		r.part[v] = best
		r.pw[best] += wv
	}
	return r.overload() == 0
}
