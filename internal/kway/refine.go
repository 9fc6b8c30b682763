package kway

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// refiner holds a partition of one graph under per-part weight limits and
// improves it with k-way Fiduccia-Mattheyses passes: boundary vertices sit
// in a max-heap keyed by the gain of their best move; each pass moves the
// best vertex (even at a loss), locks it, updates its neighbours, and at
// the end rolls back to the best prefix of moves. Inside a pass a part may
// exceed its limit by `slack` (so that a move and its counter-move can
// swap vertices between full parts), but the prefix kept is the best by
// (weight above the limits, cut): with a feasible start a pass therefore
// never increases the cut and never breaks a limit. k = 2 gives classical
// 2-way FM.
//
// For every vertex the refiner keeps its internal degree (edge weight to
// its own part), external degree, and a short list of (part, edge weight)
// entries for the other adjacent parts, updated incrementally on every
// move as METIS does, so a gain is computed in time proportional to the
// number of adjacent parts rather than the degree.
type refiner struct {
	g      *Graph
	k      int
	part   []int32
	pw     []int64
	limit  []int64
	target []float64

	vx   []vtx // per vertex: degrees and where its part entries live
	pool []nbr

	heap      gainHeap
	partHeaps []gainHeap // per-part heaps for forced moves, sharing partPos
	partPos   []int32
	stamp     []int32 // stamp[v] == pass marks v locked in this pass
	pass      int32
	moves     []moveRec
	rng       *rand.Rand
	order     []int32

	slack int64
	// alternate makes fm2Pass move from the side heavier relative to its
	// target (METIS's 2-way FM) instead of taking the best move that
	// respects the limits; see side2.
	alternate bool
	global    bool // small graph: interior vertices may move to the spare part
	// entriesStale: move2 updated only id and ed; the part entries must
	// be rebuilt before bestMove is used again.
	entriesStale bool
	needEntries  bool  // make initConn build the entries even for k = 2
	spare        int32 // part with the most room, or -1
	maxStall     int
	maxPasses    int

	// brokenNoRollback deliberately breaks refinement (keeps every move
	// of a pass, including losing ones). Only tests set it, to show that
	// the "refinement never increases the cut" property catches it.
	brokenNoRollback bool

	interior    []bool // see markInterior
	hasInterior bool
}

// vtx is what the refiner keeps per vertex, in one place so that a vertex
// costs one cache miss, not four: its internal degree (edge weight to its
// own part), its external degree (edge weight to other parts), and its
// part entries, pool[start:start+nn].
type vtx struct {
	id, ed    int64
	start, nn int32
}

type nbr struct {
	p int32
	w int64
}

type moveRec struct {
	v    int32
	from int32
}

// init points the refiner at a partition of g, reusing its buffers.
func (r *refiner) init(g *Graph, part []int32, k int, limit []int64, target []float64) {
	n := g.NumVertices()
	r.g, r.k, r.part, r.limit, r.target = g, k, part, limit, target
	r.pw = grow(r.pw, k)
	clear(r.pw)
	for v, p := range part {
		r.pw[p] += g.vw[v]
	}
	r.stamp = grow(r.stamp, n) // old stamps are < the next pass number
	r.heap.ensure(n)
	for p := range r.partHeaps {
		r.partHeaps[p].reset()
	}
	if cap(r.partPos) < n {
		r.partPos = make([]int32, n)
		for i := range r.partPos {
			r.partPos[i] = -1
		}
	}
	r.partPos = r.partPos[:n]
	for len(r.partHeaps) < k {
		r.partHeaps = append(r.partHeaps, gainHeap{})
	}
	for p := range r.partHeaps {
		r.partHeaps[p].pos = r.partPos
	}
	if k == 2 {
		r.maxStall = min(max(n/100, 15), 100) // as METIS's 2-way FM
		r.maxPasses = 10
	} else {
		r.maxStall = min(max(n/20, 25), 400)
		r.maxPasses = 12
	}
	r.slack = g.maxVW
	r.global = n*k <= globalMoveBudget
	if k == 2 {
		r.global = n*k <= globalMoveBudget2
	}
	r.spare = -1
	r.initConn()
}

// globalMoveBudget: k-way refiners (k > 2) on graphs with n*k at most
// this also consider moving any vertex, interior ones included, to the
// part with the most room. Plain FM only moves boundary vertices to
// adjacent parts, which on small graphs with nearly empty parts (Hard
// mode: servers with free GPUs) cannot exchange a group for a better one.
// Two-way refiners do so only up to globalMoveBudget2: in the initial
// bisections of the coarse subgraphs of recursive bisection the global
// moves took 10-20% of the time for no better cut, while worker graphs
// into two parts (a coarse graph of 128 tensor-parallel groups) need
// them.
const globalMoveBudget, globalMoveBudget2 = 1024, 256

// relaxLimits returns limits loosened for a coarse level of a hierarchy:
// each limit grows by relaxFactor average vertex weights of that level
// (relax2Way for the levels of a bisection, relaxKWay for the k-way
// levels, K = 2 included), so coarse levels can trade a little balance
// for cut; finer levels, with lighter vertices, restore the balance
// cheaply. buf is reused.
func relaxLimits(limit []int64, g *Graph, relaxFactor float64, buf []int64) []int64 {
	buf = grow(buf, len(limit))
	extra := int64(0)
	if n := g.NumVertices(); n > 0 {
		extra = int64(relaxFactor * float64(g.totalVW) / float64(n))
	}
	for i, l := range limit {
		buf[i] = l + extra
	}
	return buf
}

// Relaxation of coarse-level limits, in average vertex weights of the
// level. Measured on the benchmark set: relaxing bisections lets their
// coarse levels find straighter cuts; relaxing k-way levels hurts graphs
// with heavy cliques (worker graphs), whose finest-level rebalancing then
// has to cut heavy edges.
const relaxKWay, relax2Way = 0.0, 3.0

// initConn computes id, ed and the part entries of every vertex.
func (r *refiner) initConn() {
	g := r.g
	n := g.NumVertices()
	if r.k == 2 && !r.needEntries {
		r.initDegrees()
		return
	}
	r.needEntries = false
	r.entriesStale = false
	inner := r.takeInterior(n)
	r.vx = grow(r.vx, n)
	total := 0
	for v := range n {
		r.vx[v].start = int32(total)
		total += min(g.Degree(v), r.k)
	}
	r.pool = grow(r.pool, total)
	for v := range n {
		if inner != nil && inner[v] {
			r.vx[v].id, r.vx[v].ed, r.vx[v].nn = weightedDegree(g, v), 0, 0
			continue
		}
		pv := r.part[v]
		var id, ed int64
		base := r.vx[v].start
		cnt := int32(0)
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			p, w := r.part[g.adj[i]], g.ew[i]
			if p == pv {
				id += w
				continue
			}
			ed += w
			j := base
			for ; j < base+cnt; j++ {
				if r.pool[j].p == p {
					r.pool[j].w += w
					break
				}
			}
			if j == base+cnt {
				r.pool[j] = nbr{p: p, w: w}
				cnt++
			}
		}
		r.vx[v].id, r.vx[v].ed, r.vx[v].nn = id, ed, cnt
	}
}

// markInterior is called before the refiner moves from a coarse graph to
// the next finer one (cmap: fine vertex -> coarse vertex): it records which
// fine vertices lie inside their part, those whose coarse vertex has no
// edge to another part (all their neighbours belong to that coarse vertex
// or to its neighbours, hence to the same part). The next initConn or
// initDegrees, on the finer graph, takes their internal degree from their
// own edge weights without looking up their neighbours' parts; the result
// is the same as without the mark.
func (r *refiner) markInterior(cmap []int32) {
	r.interior = grow(r.interior, len(cmap))
	for v, c := range cmap {
		r.interior[v] = r.vx[c].ed == 0
	}
	r.hasInterior = true
}

// takeInterior returns the mark of markInterior if it was made for a
// graph of n vertices (and forgets it), else nil.
func (r *refiner) takeInterior(n int) []bool {
	if !r.hasInterior || len(r.interior) != n {
		r.hasInterior = false
		return nil
	}
	r.hasInterior = false
	return r.interior
}

// weightedDegree is the total weight of the edges at v.
func weightedDegree(g *Graph, v int) int64 {
	var d int64
	for _, w := range g.ew[g.xadj[v]:g.xadj[v+1]] {
		d += w
	}
	return d
}

// initDegrees computes only id and ed (enough for fm2Pass) and marks the
// part entries stale.
func (r *refiner) initDegrees() {
	g := r.g
	n := g.NumVertices()
	inner := r.takeInterior(n)
	r.vx = grow(r.vx, n)
	for v := range n {
		if inner != nil && inner[v] {
			r.vx[v].id, r.vx[v].ed = weightedDegree(g, v), 0
			continue
		}
		pv := r.part[v]
		var id, ed int64
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if r.part[g.adj[i]] == pv {
				id += g.ew[i]
			} else {
				ed += g.ew[i]
			}
		}
		r.vx[v].id, r.vx[v].ed = id, ed
	}
	r.entriesStale = true
}

// addConn adds w (possibly negative) to u's entry for part p, creating or
// deleting the entry as needed.
func (r *refiner) addConn(u, p int32, w int64) {
	base := r.vx[u].start
	end := base + r.vx[u].nn
	for j := base; j < end; j++ {
		if r.pool[j].p == p {
			r.pool[j].w += w
			if r.pool[j].w == 0 {
				r.pool[j] = r.pool[end-1]
				r.vx[u].nn--
			}
			return
		}
	}
	r.pool[end] = nbr{p: p, w: w}
	r.vx[u].nn++
}

// shiftConn moves w of u's entries from part a to part b (u lies in
// neither): one scan of u's entries instead of the two of addConn(u, a, -w)
// and addConn(u, b, w), with the same entries (in another order, which no
// reader depends on: ties between parts are broken by lighter).
func (r *refiner) shiftConn(u, a, b int32, w int64) {
	x := &r.vx[u]
	es := r.pool[x.start : x.start+x.nn]
	ia, ib := -1, -1
	for j := range es {
		switch es[j].p {
		case a:
			ia = j
		case b:
			ib = j
		}
	}
	es[ia].w -= w
	switch {
	case es[ia].w != 0 && ib >= 0:
		es[ib].w += w
	case es[ia].w != 0:
		r.pool[x.start+x.nn] = nbr{p: b, w: w}
		x.nn++
	case ib >= 0:
		es[ib].w += w
		es[ia] = es[len(es)-1]
		x.nn--
	default:
		es[ia] = nbr{p: b, w: w}
	}
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
	var c int64
	for i := range r.vx {
		c += r.vx[i].ed
	}
	return c / 2
}

// lighter reports whether part p has more room left than part q (ties:
// the lower index); w is the weight about to be added to either.
func (r *refiner) lighter(p, q int32, w int64) bool {
	rp, rq := r.limit[p]-r.pw[p], r.limit[q]-r.pw[q]
	if rp != rq {
		return rp > rq
	}
	return p < q
}

// bestMove returns the adjacent part that v can move to without taking
// that part more than slack above its limit and that gains the most (ties:
// the relatively lighter part). ok is false if v is not on the boundary or
// no such part exists.
func (r *refiner) bestMove(v int32, slack int64) (to int32, gain int64, ok bool) {
	wv := r.g.vw[v]
	internal := r.vx[v].id
	to, gain = -1, math.MinInt64
	base := r.vx[v].start
	spareAdjacent := false
	for _, e := range r.pool[base : base+r.vx[v].nn] {
		if e.p == r.spare {
			spareAdjacent = true
		}
		if r.pw[e.p]+wv > r.limit[e.p]+slack {
			continue
		}
		gp := e.w - internal
		if gp > gain || (gp == gain && r.lighter(e.p, to, wv)) {
			to, gain = e.p, gp
		}
	}
	if sp := r.spare; sp >= 0 && !spareAdjacent && sp != r.part[v] && r.pw[sp]+wv <= r.limit[sp]+slack {
		if gp := -internal; gp > gain || (gp == gain && r.lighter(sp, to, wv)) {
			to, gain = sp, gp
		}
	}
	return to, gain, to >= 0
}

// moveGains returns in one scan the gains bestMove(v, r.slack) and
// bestMove(v, 0) would return (without choosing target parts).
func (r *refiner) moveGains(v int32) (gs int64, oks bool, g0 int64, ok0 bool) {
	wv := r.g.vw[v]
	internal := r.vx[v].id
	gs, g0 = math.MinInt64, math.MinInt64
	base := r.vx[v].start
	spareAdjacent := false
	consider := func(p int32, gp int64) {
		room := r.limit[p] - r.pw[p] - wv
		if room >= -r.slack && gp > gs {
			gs, oks = gp, true
		}
		if room >= 0 && gp > g0 {
			g0, ok0 = gp, true
		}
	}
	for _, e := range r.pool[base : base+r.vx[v].nn] {
		if e.p == r.spare {
			spareAdjacent = true
		}
		consider(e.p, e.w-internal)
	}
	if sp := r.spare; sp >= 0 && !spareAdjacent && sp != r.part[v] {
		consider(sp, -internal)
	}
	return gs, oks, g0, ok0
}

// updateSpare picks the part with the most room as the target of moves
// to non-adjacent parts (global mode only).
func (r *refiner) updateSpare() {
	r.spare = -1
	if !r.global {
		return
	}
	var best int64
	for p := range int32(r.k) {
		if room := r.limit[p] - r.pw[p]; room > best {
			r.spare, best = p, room
		}
	}
}

func (r *refiner) dev(p int32, delta int64) float64 {
	d := float64(r.pw[p]) - r.target[p]
	e := d + float64(delta)
	return e*e - d*d
}

// move moves v to part b, updating weights and connectivity, and returns
// the change in overload.
func (r *refiner) move(v, b int32) int64 {
	g := r.g
	a := r.part[v]
	w := g.vw[v]
	before := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)
	r.pw[a] -= w
	r.pw[b] += w
	after := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)

	// v's own entries: the old internal degree becomes the entry for a,
	// the entry for b becomes the internal degree.
	base := r.vx[v].start
	var wb int64
	for j := base; j < base+r.vx[v].nn; j++ {
		if r.pool[j].p == b {
			wb = r.pool[j].w
			r.pool[j] = r.pool[base+r.vx[v].nn-1]
			r.vx[v].nn--
			break
		}
	}
	if old := r.vx[v].id; old > 0 {
		r.pool[base+r.vx[v].nn] = nbr{p: a, w: old}
		r.vx[v].nn++
	}
	r.vx[v].ed += r.vx[v].id - wb
	r.vx[v].id = wb
	r.part[v] = b

	for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
		u, ew := g.adj[i], g.ew[i]
		switch r.part[u] {
		case a:
			r.vx[u].id -= ew
			r.vx[u].ed += ew
			r.addConn(u, b, ew)
		case b:
			r.vx[u].id += ew
			r.vx[u].ed -= ew
			r.addConn(u, a, -ew)
		default:
			r.shiftConn(u, a, b, ew)
		}
	}
	return after - before
}

// refine runs FM passes until one brings no improvement. For k > 2 the
// first FM pass is preceded by up to greedySweeps greedy sweeps
// (greedyPass); sweeps before every pass cost 20% more time for no
// better cuts on the benchmark set.
func (r *refiner) refine() {
	pass := r.fmPass
	if r.k == 2 {
		pass = r.fm2Pass
	}
	cut := r.cut()
	for it := range r.maxPasses {
		if r.k > 2 && it == 0 {
			for range greedySweeps {
				d := r.greedyPass()
				cut += d
				if -d*minPassGain < cut {
					break
				}
			}
		}
		improved, delta := pass()
		if !improved {
			return
		}
		// stop once a pass gains less than 0.1% of the cut
		cut += delta
		if r.overload() == 0 && -delta*minPassGain < cut {
			return
		}
	}
}

// greedySweeps bounds the greedy sweeps before the first k-way FM pass;
// the sweeps stop early once one gains less than 1/minPassGain of the cut.
const greedySweeps = 4

// greedyPass visits the boundary vertices once, in random order, and
// moves each to the adjacent part with room that it gains most from, if
// the gain is positive, or zero while the move takes weight from a part
// heavier (relative to its target) than the receiving one: METIS's greedy
// k-way refinement. It returns the change of the cut (never positive) and
// keeps every part within its limit.
//
// It complements fmPass, whose heap drops a vertex whose best part is
// full and does not bring it back when room appears elsewhere, and whose
// forced moves (swaps between full parts) can make a pass end before the
// plain moves are done: on a power-law graph into 64 parts (plaw100000)
// FM alone left thousands of positive moves and a cut 8% above METIS's;
// with the sweeps it is within 1%.
func (r *refiner) greedyPass() int64 {
	if r.entriesStale {
		r.needEntries = true
		r.initConn()
	}
	r.boundaryOrder()
	var delta int64
	for _, v := range r.order {
		if r.vx[v].ed == 0 {
			continue // interior now (global mode lists every vertex)
		}
		a := r.part[v]
		wv := r.g.vw[v]
		internal := r.vx[v].id
		to, gain := int32(-1), int64(math.MinInt64)
		base := r.vx[v].start
		for _, e := range r.pool[base : base+r.vx[v].nn] {
			if r.pw[e.p]+wv > r.limit[e.p] {
				continue
			}
			gp := e.w - internal
			if gp > gain || (gp == gain && r.lighter(e.p, to, wv)) {
				to, gain = e.p, gp
			}
		}
		if to < 0 || gain < 0 {
			continue
		}
		if gain == 0 && float64(r.pw[to]+wv)-r.target[to] >= float64(r.pw[a])-r.target[a] {
			continue
		}
		r.move(v, to)
		delta -= gain
	}
	return delta
}

// minPassGain: refine stops after a pass that improves the cut by less
// than 1/minPassGain of it.
const minPassGain = 1000

// fm2Pass is fmPass specialised to two parts, in the style of METIS's
// 2-way FM: one gain heap per side (gain = external - internal degree),
// and each move is taken from the side that is heavier relative to its
// target, which alternates the sides when both are near their targets.
// The kept prefix is the best by (weight above the limits, cut, balance),
// so with a feasible start the cut never grows.
func (r *refiner) fm2Pass() (bool, int64) {
	g := r.g
	r.pass++
	hs := &r.partHeaps
	(*hs)[0].reset()
	(*hs)[1].reset()
	r.boundaryOrder()
	for _, v := range r.order {
		(*hs)[r.part[v]].add(v, r.vx[v].ed-r.vx[v].id)
	}
	(*hs)[0].heapify()
	(*hs)[1].heapify()
	r.moves = r.moves[:0]
	var delta, over int64
	var dev float64
	var bestDelta, bestOver int64
	var bestDev float64
	bestIdx, stall := 0, 0
	for {
		from := r.side2()
		if from < 0 {
			break // no side has a vertex that the other side can take
		}
		to := 1 - from
		v, gain := (*hs)[from].pop()
		w := g.vw[v]
		dev += r.dev(from, -w) + r.dev(to, w)
		r.stamp[v] = r.pass
		over += r.move2(v, to, true)
		delta -= gain
		r.moves = append(r.moves, moveRec{v: v, from: from})
		if over < bestOver || (over == bestOver && (delta < bestDelta || (delta == bestDelta && dev < bestDev-1e-9))) {
			bestDelta, bestOver, bestDev = delta, over, dev
			bestIdx = len(r.moves)
			stall = 0
		} else if stall++; stall >= r.maxStall {
			break
		}
	}
	if r.brokenNoRollback {
		return false, delta
	}
	for i := len(r.moves) - 1; i >= bestIdx; i-- {
		m := r.moves[i]
		r.move2(m.v, m.from, false)
	}
	return bestIdx > 0 && (bestOver < 0 || bestDelta < 0), bestDelta
}

// side2 chooses the side fm2Pass moves the next vertex from, or -1 when
// no move is possible. A side above its limit must give. Otherwise, with
// alternate (METIS's 2-way FM) it is the side heavier relative to its
// target, which keeps both sides within a vertex of their targets; without
// it, it is the side whose best vertex gains the most among moves that
// leave the other side at most slack above its limit (ties: the heavier
// side), so that a tolerance is used where it lowers the cut.
func (r *refiner) side2() int32 {
	heavier := int32(0)
	if float64(r.pw[1])-r.target[1] > float64(r.pw[0])-r.target[0] {
		heavier = 1
	}
	fits := func(from int32) bool {
		h := &r.partHeaps[from]
		if h.len() == 0 {
			return false
		}
		to := 1 - from
		return r.pw[to]+r.g.vw[h.items[0].v] <= r.limit[to]+r.slack
	}
	over0, over1 := r.pw[0]-r.limit[0], r.pw[1]-r.limit[1]
	if r.alternate || over0 > 0 || over1 > 0 {
		from := heavier
		if over0 > 0 || over1 > 0 {
			from = 0
			if over1 > over0 {
				from = 1
			}
		}
		if !fits(from) {
			return -1
		}
		return from
	}
	f0, f1 := fits(0), fits(1)
	switch {
	case f0 && f1:
		g0, g1 := r.partHeaps[0].items[0].key, r.partHeaps[1].items[0].key
		if g0 > g1 || (g0 == g1 && heavier == 0) {
			return 0
		}
		return 1
	case f0:
		return 0
	case f1:
		return 1
	}
	return -1
}

// move2 is move for two parts: only id and ed change (the part entries
// are rebuilt by initConn if a k-way pass follows).
func (r *refiner) move2(v, b int32, updateHeaps bool) int64 {
	g := r.g
	a := 1 - b
	w := g.vw[v]
	before := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)
	r.pw[a] -= w
	r.pw[b] += w
	after := max(r.pw[a]-r.limit[a], 0) + max(r.pw[b]-r.limit[b], 0)
	x := &r.vx[v]
	x.id, x.ed = x.ed, x.id
	r.part[v] = b
	for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
		u, ew := g.adj[i], g.ew[i]
		pu := r.part[u]
		if pu == b {
			r.vx[u].id += ew
			r.vx[u].ed -= ew
		} else {
			r.vx[u].id -= ew
			r.vx[u].ed += ew
		}
		// keep unlocked neighbours' heap keys exact (fm2Pass)
		if updateHeaps && r.stamp[u] != r.pass {
			if hu := &r.partHeaps[pu]; r.vx[u].ed > 0 || r.global {
				hu.push(u, r.vx[u].ed-r.vx[u].id)
			} else {
				hu.remove(u)
			}
		}
	}
	r.entriesStale = true
	return after - before
}

// boundaryOrder fills r.order with the boundary vertices in random order.
func (r *refiner) boundaryOrder() {
	r.order = r.order[:0]
	for v := range r.vx {
		if r.vx[v].ed > 0 || r.global {
			r.order = append(r.order, int32(v))
		}
	}
	shuffle(r.rng, r.order)
}

// fmPass runs one FM pass and reports whether it improved the state
// (lower overload, or equal overload and lower cut).
//
// Two kinds of moves alternate. A free move takes the boundary vertex
// with the best gain among moves that leave the target part at most slack
// above its limit (global heap). If that move overfills its target, the
// next move is forced out of that part, to a part with room (the part's
// own heap, keyed by gains under the exact limits): together they swap
// vertices between full parts, which single moves cannot do when the
// limits are tight.
func (r *refiner) fmPass() (bool, int64) {
	g := r.g
	if r.entriesStale {
		r.needEntries = true
		r.initConn()
	}
	r.pass++
	h := &r.heap
	h.reset()
	useForced := r.slack > 0
	for p := range r.k {
		r.partHeaps[p].reset()
	}
	push := func(v int32) {
		gs, oks, g0, ok0 := r.moveGains(v)
		if oks {
			h.push(v, gs)
		} else {
			h.remove(v)
		}
		if useForced {
			ph := &r.partHeaps[r.part[v]]
			if ok0 {
				ph.push(v, g0)
			} else {
				ph.remove(v)
			}
		}
	}
	r.updateSpare()
	r.boundaryOrder()
	// Fill the heaps in linear time (the heaps are empty, and pop order
	// depends only on keys and insertion order, not on how they were built).
	for _, v := range r.order {
		gs, oks, g0, ok0 := r.moveGains(v)
		if oks {
			h.add(v, gs)
		}
		if useForced && ok0 {
			r.partHeaps[r.part[v]].add(v, g0)
		}
	}
	h.heapify()
	if useForced {
		for p := range r.k {
			r.partHeaps[p].heapify()
		}
	}
	r.moves = r.moves[:0]
	var delta, over int64 // relative to the start of the pass
	var dev float64
	var bestDelta, bestOver int64
	var bestDev float64
	bestIdx, stall := 0, 0
	forced := int32(-1)
	for {
		var v, b int32
		var gain int64
		if forced >= 0 {
			ph := &r.partHeaps[forced]
			if ph.len() == 0 {
				forced = -1
				continue
			}
			var key int64
			var ok bool
			v, key = ph.pop()
			if b, gain, ok = r.bestMove(v, 0); !ok {
				continue
			}
			if gain != key {
				ph.push(v, gain)
				continue
			}
			h.remove(v)
		} else {
			if h.len() == 0 {
				break
			}
			var key int64
			var ok bool
			v, key = h.pop()
			if b, gain, ok = r.bestMove(v, r.slack); !ok {
				continue
			}
			if gain != key {
				h.push(v, gain)
				continue
			}
			if useForced {
				r.partHeaps[r.part[v]].remove(v)
			}
		}
		a := r.part[v]
		w := g.vw[v]
		dev += r.dev(a, -w) + r.dev(b, w)
		over += r.move(v, b)
		delta -= gain
		r.stamp[v] = r.pass
		r.moves = append(r.moves, moveRec{v: v, from: a})
		forced = -1
		if r.pw[b] > r.limit[b] && r.pw[b]-w <= r.limit[b] {
			forced = b
		}
		r.updateSpare()
		if over < bestOver || (over == bestOver && (delta < bestDelta || (delta == bestDelta && dev < bestDev-1e-9))) {
			bestDelta, bestOver, bestDev = delta, over, dev
			bestIdx = len(r.moves)
			stall = 0
		} else if stall++; stall >= r.maxStall {
			break
		}
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if u := g.adj[i]; r.stamp[u] != r.pass {
				push(u)
			}
		}
	}
	if r.brokenNoRollback {
		return false, delta
	}
	for i := len(r.moves) - 1; i >= bestIdx; i-- {
		m := r.moves[i]
		r.move(m.v, m.from)
	}
	return bestIdx > 0 && (bestOver < 0 || bestDelta < 0), bestDelta
}

// balance moves vertices out of parts above their limits, choosing the
// moves that lose the least cut. It is best effort; forceFit guarantees a
// feasible result where one is guaranteed to exist.
func (r *refiner) balance() {
	over := r.overload()
	if over == 0 {
		return
	}
	if r.entriesStale {
		r.needEntries = true
		r.initConn()
	}
	g := r.g
	h := &r.heap
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
	if to, gain, ok := r.bestMove(v, 0); ok {
		return to, gain, true
	}
	a := r.part[v]
	wv := r.g.vw[v]
	to = -1
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
	return to, -r.vx[v].id, true
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
		for v := range g.vw {
			if r.part[v] == a {
				vs = append(vs, int32(v))
			}
		}
		slices.SortStableFunc(vs, func(x, y int32) int { return cmp.Compare(r.vx[x].id, r.vx[y].id) })
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
	conn := make([]int64, r.k)
	for _, v := range out {
		wv := g.vw[v]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if p := r.part[g.adj[i]]; p >= 0 {
				conn[p] += g.ew[i]
			}
		}
		best := int32(-1)
		var bestConn int64 = -1
		for p := range int32(r.k) {
			if r.pw[p]+wv > r.limit[p] {
				continue
			}
			if c := conn[p]; c > bestConn || (c == bestConn && r.lighter(p, best, wv)) {
				best, bestConn = p, c
			}
		}
		clear(conn)
		if best < 0 {
			// No room anywhere: put it in the lightest part; the caller
			// sees the overload.
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
	r.initConn()
	return r.overload() == 0
}
