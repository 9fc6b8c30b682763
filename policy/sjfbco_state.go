// This file holds the SJF-BCO planner's per-try state: per-server GPU orders by
// earliest start, the undo log, and the per-demand trees of earliest starts.

package policy

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// planState is the GPUs' busy-until times during one planning pass, with every server's GPUs
// kept sorted by busy-until time (then id) and the servers' sums of busy-until times, and a log
// to undo the assignments made since the initial state.
type planState struct {
	free []float64
	ids  []topology.GPUID // every server's GPUs, server after server: see sorted
	off  []int            // server s's GPUs are ids[off[s]:off[s+1]]
	sum  []float64
	// byMean lists the servers by mean busy-until time (least busy first), then index; means
	// holds the servers' means (sum / GPUs).
	byMean []int
	means  []float64
	c      *topology.Cluster // the cluster of the last init
	// trees[g]: the servers' start times for g GPUs (see tree); changed: the servers changed
	// by assignments and undos in this pass, in order
	trees   []startTree
	changed []int32
	// the orders of the last init, where the next starts, and the busy-until times, servers'
	// sums and means it started from
	initIDs    []topology.GPUID
	initByMean []int
	initFree   []float64
	initSum    []float64
	initMeans  []float64
	initMin    []float64
	// scan's notes for the next init: per server, whether it is as at the last init's start,
	// and its least busy-until time; scanned: they are for the next init's times
	same    []bool
	srvMin  []float64
	scanned bool
	// The undo log: per assignment, where its entries of the logs below begin (marks), the
	// GPUs' former busy-until times, the touched servers' former sums and GPU orders, and the
	// positions in byMean they were moved from and to.
	marks   []undoMark
	oldFree []gpuWas
	oldSrv  []srvWas
	oldIDs  []topology.GPUID
	touched []int
}

type undoMark struct{ gpus, srvs, ids int }

type gpuWas struct {
	g    topology.GPUID
	free float64
}

type srvWas struct {
	s        int
	sum      float64
	from, to int // positions in byMean
}

// sorted returns server s's GPUs by busy-until time, then id.
func (st *planState) sorted(s int) []topology.GPUID { return st.ids[st.off[s]:st.off[s+1]] }

func (st *planState) mean(s int) float64 { return st.means[s] }

// size returns server s's number of GPUs.
func (st *planState) size(s int) int { return st.off[s+1] - st.off[s] }

func (st *planState) meanLess(a, b int) int {
	if c := cmp.Compare(st.mean(a), st.mean(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// init sets the state to the GPUs' initial busy-until times. On the cluster of the last
// pass, it starts from that pass's initial orders (the busy-until times of consecutive plans
// are much alike), which the sorts then only repair: the orders are total, so the result is
// the same whatever the starting order. A server whose GPUs' busy-until times are those of the
// last pass's start (most servers from one event to the next: their jobs' estimated ends stay
// the same) keeps that pass's initial sum, mean and GPU order, which depend on nothing else.
func (st *planState) init(c *topology.Cluster, busy []float64) {
	ns := c.NumServers()
	if !st.scanned || len(st.same) != ns {
		st.scan(c, busy)
	}
	st.scanned = false
	warm := st.warm(c, len(busy))
	if warm {
		copy(st.ids, st.initIDs)
		copy(st.byMean, st.initByMean)
	} else {
		st.c = c
		st.ids = resize(st.ids, len(busy))
		st.off = resize(st.off, ns+1)
		st.byMean = resize(st.byMean, ns)
		st.off[0] = 0
		for s := range ns {
			first, n := c.GPUsOf(s)
			st.off[s+1] = st.off[s] + n
			for i, gs := 0, st.sorted(s); i < n; i++ {
				gs[i] = first + topology.GPUID(i)
			}
			st.byMean[s] = s
		}
	}
	st.free = append(st.free[:0], busy...)
	st.sum = resize(st.sum, ns)
	st.means = resize(st.means, ns)
	for s := range ns {
		if warm && st.same[s] {
			st.sum[s], st.means[s] = st.initSum[s], st.initMeans[s]
			continue
		}
		first, n := c.GPUsOf(s)
		sum := 0.0
		for _, t := range busy[int(first) : int(first)+n] {
			sum += t
		}
		st.sum[s] = sum
		st.means[s] = sum / float64(n)
		st.resort(s)
	}
	// Insertion sort, bounded: a byMean far from the new order is sorted afresh.
	bm, moves := st.byMean, 0
	for i := 1; i < len(bm) && moves <= 8*len(bm); i++ {
		x := bm[i]
		j := i
		for ; j > 0 && st.meanLess(bm[j-1], x) > 0; j-- {
			bm[j] = bm[j-1]
		}
		bm[j] = x
		moves += i - j
	}
	if moves > 8*len(bm) {
		slices.SortFunc(bm, st.meanLess)
	}
	st.marks, st.oldFree, st.oldSrv, st.oldIDs = st.marks[:0], st.oldFree[:0], st.oldSrv[:0], st.oldIDs[:0]
	for g := range st.trees {
		st.trees[g].built = false
	}
	st.changed = st.changed[:0]
	st.initIDs = append(st.initIDs[:0], st.ids...)
	st.initByMean = append(st.initByMean[:0], st.byMean...)
	st.initFree = append(st.initFree[:0], busy...)
	st.initSum = append(st.initSum[:0], st.sum...)
	st.initMeans = append(st.initMeans[:0], st.means...)
	st.initMin = append(st.initMin[:0], st.srvMin...)
}

// warm reports whether init on cluster c with n GPUs starts from the last init's start.
func (st *planState) warm(c *topology.Cluster, n int) bool {
	ns := c.NumServers()
	return st.c == c && len(st.off) == ns+1 && len(st.ids) == n && len(st.initIDs) == n &&
		len(st.initFree) == n && len(st.initSum) == ns && len(st.initMeans) == ns && len(st.initMin) == ns
}

// scan prepares init for busy: it notes, per server, whether its GPUs' busy-until times are
// those of the last init's start (same) and their least (srvMin, -0 below +0; kept from that
// start for a server that is the same). It returns the least busy-until time of all GPUs (the
// least of the servers' least: the same value, -0 below +0) and the first GPU whose time is NaN
// or infinite (-1: none; such a time makes t0 meaningless). A server that is the same holds
// only times that an earlier scan saw.
func (st *planState) scan(c *topology.Cluster, busy []float64) (t0 float64, bad int) {
	ns := c.NumServers()
	warm := st.warm(c, len(busy))
	st.same = resize(st.same, ns)
	st.srvMin = resize(st.srvMin, ns)
	t0, bad = math.Inf(1), -1
	for s := range ns {
		first, n := c.GPUsOf(s)
		lo, hi := int(first), int(first)+n
		m := math.Inf(1)
		if warm && sameBits(busy[lo:hi], st.initFree[lo:hi]) {
			st.same[s] = true
			m = st.initMin[s]
		} else {
			st.same[s] = false
			for g := lo; g < hi; g++ {
				t := busy[g]
				if t-t != 0 { // NaN or infinite
					if bad < 0 {
						bad = g
					}
					continue
				}
				if t < m || (t == 0 && m == 0 && math.Signbit(t)) { // min(m, t), -0 below +0
					m = t
				}
			}
		}
		st.srvMin[s] = m
		if m < t0 || (m == 0 && t0 == 0 && math.Signbit(m)) {
			t0 = m
		}
	}
	st.scanned = true
	return t0, bad
}

// sameBits reports whether a and b hold the same values bit for bit (-0 is not +0: the least
// time tells them apart).
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// resort sorts server s's GPUs by busy-until time, then id (insertion sort: an assignment
// moves a few GPUs of an ordered list).
func (st *planState) resort(s int) {
	gs, free := st.sorted(s), st.free
	for i := 1; i < len(gs); i++ {
		x := gs[i]
		j := i
		for ; j > 0 && (free[gs[j-1]] > free[x] || (free[gs[j-1]] == free[x] && gs[j-1] > x)); j-- {
			gs[j] = gs[j-1]
		}
		gs[j] = x
	}
}

// assign makes gpus busy until end; server[g] is GPU g's server.
func (st *planState) assign(server []int32, gpus []topology.GPUID, end float64) {
	st.marks = append(st.marks, undoMark{gpus: len(st.oldFree), srvs: len(st.oldSrv), ids: len(st.oldIDs)})
	st.touched = st.touched[:0]
	for _, g := range gpus {
		s := int(server[g])
		if !slices.Contains(st.touched, s) {
			st.touched = append(st.touched, s)
			st.oldSrv = append(st.oldSrv, srvWas{s: s, sum: st.sum[s]})
			st.oldIDs = append(st.oldIDs, st.sorted(s)...)
		}
		st.oldFree = append(st.oldFree, gpuWas{g: g, free: st.free[g]})
		st.sum[s] += end - st.free[g]
		st.free[g] = end
	}
	// The touched servers move to their new places in byMean one after the other, each as its
	// mean changes: before each move the list is ordered by the means so far (the touched
	// servers not yet moved keep their former means), so each finds its place by bisection and
	// only the servers between its two places shift. byMean's order is total (mean, then
	// index), so the result is the same whatever the order of the touched servers.
	was := st.oldSrv[len(st.oldSrv)-len(st.touched):]
	for i := range was {
		s := was[i].s
		st.means[s] = st.sum[s] / float64(st.size(s))
		st.resort(s)
		st.retree(s)
		from := slices.Index(st.byMean, s)
		was[i].from, was[i].to = from, st.move(from, st.placeOf(s, from))
	}
}

// less reports whether server a comes before server b in byMean.
func (st *planState) less(a, b int) bool {
	ma, mb := st.means[a], st.means[b]
	return ma < mb || (ma == mb && a < b)
}

// placeOf returns server s's place in byMean without its entry at index from (the first
// place whose server does not come before s).
func (st *planState) placeOf(s, from int) int {
	bm := st.byMean
	lo, hi := 0, len(bm)-1
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		x := h
		if h >= from {
			x++
		}
		if st.less(bm[x], s) {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// move moves byMean's entry at index from to index to, shifting those between; it returns to.
func (st *planState) move(from, to int) int {
	bm := st.byMean
	s := bm[from]
	if to >= from {
		copy(bm[from:to], bm[from+1:to+1])
	} else {
		copy(bm[to+1:from+1], bm[to:from])
	}
	bm[to] = s
	return to
}

// undo takes back the assignments after the first n.
func (st *planState) undo(n int) {
	for len(st.marks) > n {
		m := st.marks[len(st.marks)-1]
		st.marks = st.marks[:len(st.marks)-1]
		was := st.oldSrv[m.srvs:]
		ids := st.oldIDs[m.ids:]
		for i := len(was) - 1; i >= 0; i-- {
			s := was[i].s
			st.move(was[i].to, was[i].from) // the moves of assign, taken back in reverse
			st.sum[s] = was[i].sum
			st.means[s] = was[i].sum / float64(st.size(s))
			gs := st.sorted(s)
			copy(gs, ids[len(ids)-len(gs):])
			ids = ids[:len(ids)-len(gs)]
		}
		for _, w := range st.oldFree[m.gpus:] {
			st.free[w.g] = w.free
		}
		for i := range was {
			st.retree(was[i].s)
		}
		st.oldFree, st.oldSrv, st.oldIDs = st.oldFree[:m.gpus], st.oldSrv[:m.srvs], st.oldIDs[:m.ids]
	}
}

// startTree holds, for one GPU demand g, every server's start time for a job of g GPUs (the
// busy-until time of its g-th earliest-free GPU; +Inf where it has fewer GPUs) in a tree of
// minima over the servers' indices.
type startTree struct {
	built  bool
	synced int       // the entries of planState.changed it reflects
	n      int       // servers
	size   int       // leaves: a power of two >= n
	t      []float64 // t[size+s]: server s; t[k] = min(t[2k], t[2k+1])
}

// tree returns the start tree for g, built on first use in this pass and brought up to date
// with the servers that assign and undo changed since its last use.
func (st *planState) tree(g int) *startTree {
	for len(st.trees) <= g {
		st.trees = append(st.trees, startTree{})
	}
	tr := &st.trees[g]
	if !tr.built {
		n := len(st.off) - 1
		tr.n, tr.size = n, 1
		for tr.size < n {
			tr.size *= 2
		}
		tr.t = resize(tr.t, 2*tr.size)
		for s := range tr.size {
			tr.t[tr.size+s] = st.startOf(s, g)
		}
		for k := tr.size - 1; k >= 1; k-- {
			tr.t[k] = min(tr.t[2*k], tr.t[2*k+1])
		}
		tr.built = true
		tr.synced = len(st.changed)
	}
	// Bring the servers changed since the last use up to date.
	for _, s := range st.changed[tr.synced:] {
		k := tr.size + int(s)
		tr.t[k] = st.startOf(int(s), g)
		for k > 1 {
			k /= 2
			m := min(tr.t[2*k], tr.t[2*k+1])
			if math.Float64bits(m) == math.Float64bits(tr.t[k]) {
				break // the nodes above keep their minima
			}
			tr.t[k] = m
		}
	}
	tr.synced = len(st.changed)
	return tr
}

// startOf returns server s's start time for g GPUs (+Inf where it has fewer).
func (st *planState) startOf(s, g int) float64 {
	if s >= len(st.off)-1 || st.size(s) < g {
		return math.Inf(1)
	}
	return st.free[st.ids[st.off[s]+g-1]]
}

// retree notes that server s changed, for the trees to catch up when next used.
func (st *planState) retree(s int) { st.changed = append(st.changed, int32(s)) }

func (tr *startTree) min() float64 { return tr.t[1] }

func (tr *startTree) at(s int) float64 { return tr.t[tr.size+s] }

// next returns the first server from index from whose start is at most x, or -1.
func (tr *startTree) next(from int, x float64) int {
	if from >= tr.n {
		return -1
	}
	k := tr.size + from
	for !(tr.t[k] <= x) {
		for k&1 == 1 {
			k /= 2
		}
		if k == 0 {
			return -1
		}
		k++
	}
	for k < tr.size {
		k *= 2
		if !(tr.t[k] <= x) {
			k++
		}
	}
	if s := k - tr.size; s < tr.n {
		return s
	}
	return -1
}
