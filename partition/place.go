package partition

import (
	"encoding/binary"
	"fmt"
	"github.com/gpusched/gpusched/internal/kway"
	"math"
	mathbits "math/bits"
	"slices"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// PlaceOptions configure Place.
type PlaceOptions struct {
	// Seed drives the partitioner; equal inputs and seeds give equal placements.
	Seed uint64
	// Trials is the number of multilevel runs per partitioning (0 means 1).
	Trials int
}

// Placement is where Place puts a job's workers.
type Placement struct {
	// GPUs[r] is the GPU of the worker of rank r.
	GPUs []topology.GPUID
	// Servers is the number of servers the job spans; Racks the number of racks (0 without racks).
	Servers, Racks int
	// CrossServerBytes is the worker graph's traffic per iteration between workers on different
	// servers, in bytes; CrossRackBytes the part of it between different racks.
	CrossServerBytes, CrossRackBytes float64
}

// Place maps a job's workers (its worker graph, see graph.Compiled.WorkerGraph) onto free GPUs,
// one worker per GPU, so that little traffic crosses servers and less still crosses racks.
//
// It first chooses servers, then maps workers to them:
//
//   - Servers. If one server has enough free GPUs, the job goes to the one with the fewest that
//     suffice (best fit), and no byte crosses a server. Otherwise it spans as few servers as the
//     free GPUs allow, within one rack when a rack can hold it: servers with the most free GPUs
//     first, the last one best-fit. Servers are counted in whole tensor-parallel groups when
//     the free GPUs allow it, so that no TP group (whose all-reduces are the heaviest traffic)
//     is split across servers; only when whole groups cannot fit does Place split them.
//   - Workers. Each TP group is contracted to one vertex, and the contracted graph is
//     partitioned (multilevel, hard capacities = the GPUs taken on each server) to minimise the
//     bytes between servers; across racks it is partitioned first among racks, then among each
//     rack's servers, so that the fewest bytes cross the oversubscribed uplinks. The plain
//     rank-order assignment (consecutive ranks on the same server) is evaluated too, over the
//     servers in chosen order and in the order the partition uses them, and the cheapest is
//     kept, cost being cross-server bytes plus cross-rack bytes weighted by the racks'
//     oversubscription. So the result is never worse than rank order over its own servers.
//
// Errors: ErrInfeasible when free holds fewer GPUs than the job has workers; ErrInvalidGraph for
// an empty or malformed worker graph.
func Place(c *topology.Cluster, free topology.GPUSet, wg *graph.WorkerGraph, opts PlaceOptions) (Placement, error) {
	return place(c, free, wg, opts, nil)
}

// PlaceMemo places one worker graph as Place does, remembering which workers go to which
// servers for the server choices it has met, so that placing the graph again on servers of the
// same shape costs no partitioning: only the choice of servers and the reading of the free
// GPUs. A shape is what the assignment of workers depends on: the unit size, the GPUs taken on
// each chosen server in order, which of them share a rack, and those racks' oversubscription
// (not which servers they are, nor which other GPUs are free). Schedulers that place the same
// job, or jobs of the same model and plan, again and again (a consolidation pass proposing a
// move at every decision) share one per graph. Its results are exactly Place's. The zero
// value is ready to use; it is not safe for concurrent use.
type PlaceMemo struct {
	wg      *graph.WorkerGraph
	c       *topology.Cluster
	opts    PlaceOptions
	valid   bool             // wg's edges were checked
	entries map[string][]int // shape -> assignment of units to chosen servers (indices)
	counts  []int            // scratch: free GPUs per server
	chooser serverChooser    // scratch
	key     []byte           // scratch: the current shape, encoded
	rackIDs []int            // scratch: racks of the current choice in order of first use
	// counts holds the free GPUs per server of last, the free set of the last call (when
	// counted), with total their sum; diff is scratch.
	last, diff topology.GPUSet
	counted    bool
	total      int
	// index groups the servers by their count in counts (kept with them).
	index serverIndex
}

// placeMemoSize is how many shapes a PlaceMemo remembers before it starts afresh.
const placeMemoSize = 4096

// Place is Place(c, free, wg, opts), reusing what earlier calls with the same cluster, graph and
// options computed (a call with others starts afresh).
func (m *PlaceMemo) Place(c *topology.Cluster, free topology.GPUSet, wg *graph.WorkerGraph, opts PlaceOptions) (Placement, error) {
	if m.wg != wg || m.c != c || m.opts != opts {
		*m = PlaceMemo{wg: wg, c: c, opts: opts, counts: m.counts[:0], key: m.key[:0], rackIDs: m.rackIDs[:0], chooser: m.chooser}
	}
	return place(c, free, wg, opts, m)
}

// shapeKey encodes the shape of a server choice into m.key: tp, then per server the GPUs taken
// and its rack as 1 + its index among the choice's racks in order of first use (0: none), then
// those racks' oversubscription.
func (m *PlaceMemo) shapeKey(c *topology.Cluster, tp int, servers, takes []int) {
	k := binary.AppendUvarint(m.key[:0], uint64(tp))
	m.rackIDs = m.rackIDs[:0]
	for i, s := range servers {
		k = binary.AppendUvarint(k, uint64(takes[i]))
		rk := c.RackOf(s)
		if rk < 0 {
			k = append(k, 0)
			continue
		}
		j := slices.Index(m.rackIDs, rk)
		if j < 0 {
			j = len(m.rackIDs)
			m.rackIDs = append(m.rackIDs, rk)
		}
		k = binary.AppendUvarint(k, uint64(j+1))
	}
	for _, rk := range m.rackIDs {
		k = binary.AppendUvarint(k, math.Float64bits(c.Rack(rk).Oversubscription))
	}
	m.key = k
}

// countFree returns the free GPUs per server (and sets m.total), updated from the last call's
// for the GPUs whose state changed when few did, else counted afresh.
func (m *PlaceMemo) countFree(c *topology.Cluster, free topology.GPUSet) []int {
	counts := growInts(&m.counts, c.NumServers())
	d := &m.diff
	if m.counted {
		// GPUs no longer free, then GPUs newly free.
		d.RemoveAll(*d)
		d.AddAll(m.last)
		d.RemoveAll(free)
		gone := d.Len()
		if gone <= maxFreeDiff {
			d.Range(func(g topology.GPUID) bool {
				if int(g) < c.NumGPUs() {
					sv := c.ServerOf(g)
					counts[sv]--
					m.index.move(sv, counts[sv]+1, counts[sv])
					m.total--
				}
				return true
			})
			d.RemoveAll(*d)
			d.AddAll(free)
			d.RemoveAll(m.last)
			if d.Len() <= maxFreeDiff {
				d.Range(func(g topology.GPUID) bool {
					if int(g) < c.NumGPUs() {
						sv := c.ServerOf(g)
						counts[sv]++
						m.index.move(sv, counts[sv]-1, counts[sv])
						m.total++
					}
					return true
				})
				m.last.RemoveAll(m.last)
				m.last.AddAll(free)
				return counts
			}
		}
	}
	m.total = 0
	for s := range counts {
		first, k := c.GPUsOf(s)
		counts[s] = free.CountRange(first, k)
		m.total += counts[s]
	}
	m.last = free.Clone()
	m.counted = true
	m.index.build(c, counts)
	return counts
}

// maxFreeDiff is how many GPUs may change state between two calls of a PlaceMemo for it to
// update its counts of free GPUs rather than count them afresh.
const maxFreeDiff = 64

// lookup returns the remembered assignment for the shape in m.key, if any.
func (m *PlaceMemo) lookup() []int { return m.entries[string(m.key)] }

// store remembers the assignment for the shape in m.key.
func (m *PlaceMemo) store(best []int) {
	if m.entries == nil || len(m.entries) >= placeMemoSize {
		m.entries = make(map[string][]int)
	}
	m.entries[string(m.key)] = slices.Clone(best)
}

// place is Place, with a memo when m is not nil.
func place(c *topology.Cluster, free topology.GPUSet, wg *graph.WorkerGraph, opts PlaceOptions, m *PlaceMemo) (Placement, error) {
	if wg == nil || len(wg.Workers) == 0 {
		return Placement{}, fmt.Errorf("%w: empty worker graph", ErrInvalidGraph)
	}
	n := len(wg.Workers)
	if m == nil || !m.valid {
		for _, e := range wg.Edges {
			if e.U < 0 || e.V < 0 || e.U >= n || e.V >= n || e.U == e.V || !(e.Bytes >= 0) || math.IsInf(e.Bytes, 0) {
				return Placement{}, fmt.Errorf("%w: worker edge (%d, %d) with %v bytes", ErrInvalidGraph, e.U, e.V, e.Bytes)
			}
		}
		if m != nil {
			m.valid = true
		}
	}
	var counts []int
	var ch *serverChooser
	var index *serverIndex
	total := 0
	if m != nil {
		counts, total, ch, index = m.countFree(c, free), m.total, &m.chooser, &m.index
	} else {
		counts, ch = make([]int, c.NumServers()), &serverChooser{}
		for s := range counts {
			first, k := c.GPUsOf(s)
			counts[s] = free.CountRange(first, k)
			total += counts[s]
		}
	}
	if total < n {
		return Placement{}, fmt.Errorf("%w: %d workers, %d free GPUs", ErrInfeasible, n, total)
	}
	// The unit of placement: whole TP groups if the free GPUs allow, else the largest divisor
	// of the TP degree that does (halves of groups, ...), else single workers.
	tp := 1
	if t := max(wg.Plan.TP, 1); n%t == 0 {
		tp = t
	}
	var servers, takes []int
	for ; tp >= 1; tp-- {
		if wg.Plan.TP%tp != 0 && tp != 1 {
			continue
		}
		var ok bool
		if index != nil && index.ok {
			servers, takes, ok = ch.chooseIndexed(index, n, tp)
		} else {
			servers, takes, ok = ch.chooseServers(c, counts, n, tp)
		}
		if ok {
			break
		}
	}
	var best []int
	if m != nil {
		m.shapeKey(c, tp, servers, takes)
		best = m.lookup()
	}
	if best == nil {
		var err error
		if best, err = assignUnits(c, wg, servers, takes, tp, opts); err != nil {
			return Placement{}, err
		}
		if m != nil {
			m.store(best)
		}
	}
	// GPUs: each server's workers, in rank order, on its free GPUs in increasing order.
	out := Placement{GPUs: make([]topology.GPUID, n)}
	next := make([]topology.GPUID, len(servers))
	for i, s := range servers {
		first, _ := c.GPUsOf(s)
		next[i] = first
	}
	for r := 0; r < n; r++ {
		i := best[r/tp]
		s := servers[i]
		first, k := c.GPUsOf(s)
		for g := next[i]; g < first+topology.GPUID(k); g++ {
			if free.Contains(g) {
				out.GPUs[r] = g
				next[i] = g + 1
				break
			}
		}
	}
	// Servers and racks spanned: few, so a linear scan beats a map.
	usedS := make([]int, 0, len(servers))
	var usedR []int
	for _, gpu := range out.GPUs {
		s := c.ServerOf(gpu)
		if slices.Contains(usedS, s) {
			continue
		}
		usedS = append(usedS, s)
		if rk := c.RackOf(s); rk >= 0 && !slices.Contains(usedR, rk) {
			usedR = append(usedR, rk)
		}
	}
	out.Servers, out.Racks = len(usedS), len(usedR)
	for _, e := range wg.Edges {
		su, sv := c.ServerOf(out.GPUs[e.U]), c.ServerOf(out.GPUs[e.V])
		if su != sv {
			out.CrossServerBytes += e.Bytes
			if c.RackOf(su) != c.RackOf(sv) {
				out.CrossRackBytes += e.Bytes
			}
		}
	}
	return out, nil
}

// assignUnits maps the contracted vertices (units of tp workers) to the chosen servers: the
// cheapest of rank order, the partition, and rank order along the partition's servers. It
// returns indices into servers, one per unit.
func assignUnits(c *topology.Cluster, wg *graph.WorkerGraph, servers, takes []int, tp int, opts PlaceOptions) ([]int, error) {
	n := len(wg.Workers)
	// Contract units: vertex r/tp holds workers r..r+tp-1 (ranks are (dp, pp, tp) with tp
	// fastest, see graph.Plan, so a unit lies inside one TP group).
	nv := n / tp
	// Candidate 1: rank order.
	seq := make([]int, nv) // vertex -> index into servers
	{
		v := 0
		for i, t := range takes {
			for k := 0; k < t/tp; k++ {
				seq[v] = i
				v++
			}
		}
	}
	best := seq
	// Candidate 2: partitioned (hierarchically over racks). Candidate 3: rank order over the
	// servers in the order the partition first uses them, which can beat candidate 1 across
	// racks (it keeps a rack's servers adjacent) and makes the kept placement never worse than
	// rank order in its own server order.
	if len(servers) > 1 {
		bestCost := placementCost(c, wg, servers, seq, tp)
		weights, _ := edgeWeights(wg)
		b := kway.NewBuilder(nv)
		for v := 0; v < nv; v++ {
			_ = b.SetVertexWeight(v, int64(tp))
		}
		for i, e := range wg.Edges {
			if u, v := e.U/tp, e.V/tp; u != v && weights[i] > 0 {
				if err := b.AddEdge(u, v, weights[i]); err != nil {
					return nil, err
				}
			}
		}
		g, err := b.Build()
		if err != nil {
			return nil, err
		}
		if part, err := partitionOntoServers(c, g, servers, takes, tp, opts); err == nil {
			if cost := placementCost(c, wg, servers, part, tp); cost < bestCost {
				best, bestCost = part, cost
			}
			ranked := rankOrderAlong(part, takes, tp)
			if cost := placementCost(c, wg, servers, ranked, tp); cost < bestCost {
				best = ranked
			}
		}
	}
	return best, nil
}

// rankOrderAlong returns the rank-order assignment of units (consecutive units on the same
// server, takes[i]/tp units on server i) with the servers in the order in which assign first
// uses them.
func rankOrderAlong(assign, takes []int, tp int) []int {
	order := make([]int, 0, len(takes))
	seen := make([]bool, len(takes))
	for _, i := range assign {
		if !seen[i] {
			seen[i] = true
			order = append(order, i)
		}
	}
	for i := range takes { // servers the assignment leaves empty (not reached: capacities are hard)
		if !seen[i] {
			order = append(order, i)
		}
	}
	out := make([]int, 0, len(assign))
	for _, i := range order {
		for k := 0; k < takes[i]/tp; k++ {
			out = append(out, i)
		}
	}
	return out
}

// edgeWeights scales the worker graph's byte counts to positive integers for the partitioner:
// the heaviest edge gets about 2^30; every edge with traffic gets at least 1.
func edgeWeights(wg *graph.WorkerGraph) ([]int64, float64) {
	maxB := 0.0
	for _, e := range wg.Edges {
		maxB = math.Max(maxB, e.Bytes)
	}
	w := make([]int64, len(wg.Edges))
	if maxB == 0 {
		return w, 1
	}
	scale := float64(1<<30) / maxB
	for i, e := range wg.Edges {
		if e.Bytes > 0 {
			w[i] = max(1, int64(math.Round(e.Bytes*scale)))
		}
	}
	return w, scale
}

// chooseServers picks servers for n workers in units of tp GPUs: one server (best fit) if
// possible, else the fewest servers, within one rack if one suffices. takes[i] GPUs are taken on
// servers[i] (a multiple of tp), servers in increasing order. The results are ch's scratch,
// valid until its next call.
func (ch *serverChooser) chooseServers(c *topology.Cluster, counts []int, n, tp int) (servers, takes []int, ok bool) {
	caps := growInts(&ch.caps, len(counts))
	best := -1
	for s, k := range counts {
		if tp > 1 {
			k = k / tp * tp
		}
		caps[s] = k
		if k >= n && (best < 0 || k < caps[best]) {
			best = s
		}
	}
	if best >= 0 {
		ch.ss, ch.tt = append(ch.ss[:0], best), append(ch.tt[:0], n)
		return ch.ss, ch.tt, true
	}
	// Servers with room, grouped by rack (slot 0: no rack; slot r+1: rack r), in index order
	// within each: a counting sort, no map.
	slots := c.NumRacks() + 1
	off := growInts(&ch.off, slots+1)
	var list []int
	if slots == 1 { // no racks: one slot, the servers with room in index order
		list = ch.list[:0]
		for s, k := range caps {
			if k > 0 {
				list = append(list, s)
			}
		}
		ch.list = list
		off[0], off[1] = 0, len(list)
	} else {
		clear(off)
		for s, k := range caps {
			if k > 0 {
				off[c.RackOf(s)+2]++
			}
		}
		for r := 1; r <= slots; r++ {
			off[r] += off[r-1]
		}
		list = growInts(&ch.list, off[slots])
		for s, k := range caps {
			if k > 0 {
				r := c.RackOf(s) + 1
				list[off[r]] = s
				off[r]++
			}
		}
		copy(off[1:], off[:slots]) // back to starts: rack slot r holds list[off[r]:off[r+1]]
		off[0] = 0
	}
	// Within one rack: the fewest servers of any rack, the first rack (by id) on ties.
	ss, tt := ch.ss[:0], ch.tt[:0]
	found := false
	racks := 0
	for r := range slots {
		members := list[off[r]:off[r+1]]
		if len(members) == 0 {
			continue
		}
		racks++
		sorted := ch.byCapDesc(members, caps)
		ps, pt := ch.ps[:0], ch.pt[:0]
		need, done := n, false
		for i, s := range sorted {
			if caps[s] >= need {
				pick := s
				for _, t := range sorted[i:] {
					if caps[t] >= need && caps[t] < caps[pick] {
						pick = t
					}
				}
				ps, pt, done = append(ps, pick), append(pt, need), true
				break
			}
			ps, pt = append(ps, s), append(pt, caps[s])
			need -= caps[s]
		}
		ch.ps, ch.pt = ps, pt
		if done && (!found || len(ps) < len(ss)) {
			ss, tt, found = append(ss[:0], ps...), append(tt[:0], pt...), true
		}
	}
	if !found && racks > 1 {
		// Across racks: racks with the most capacity first, servers by capacity within.
		order := ch.order[:0]
		rackCap := growInts(&ch.rackCap, slots)
		for r := range slots {
			rackCap[r] = 0
			for _, s := range list[off[r]:off[r+1]] {
				rackCap[r] += caps[s]
			}
			if off[r+1] > off[r] {
				order = append(order, r)
			}
		}
		ch.order = order
		slices.SortStableFunc(order, func(a, b int) int { return rackCap[b] - rackCap[a] })
		ss, tt = ss[:0], tt[:0]
		need := n
		for _, r := range order {
			sorted := ch.byCapDesc(list[off[r]:off[r+1]], caps)
			for _, s := range sorted {
				if need == 0 {
					break
				}
				t := min(caps[s], need)
				ss, tt = append(ss, s), append(tt, t)
				need -= t
			}
		}
		found = need == 0
	}
	ch.ss, ch.tt = ss, tt
	if !found {
		return nil, nil, false
	}
	return ch.inServerOrder(ss, tt)
}

// inServerOrder returns the servers ss with their takes tt in increasing order of server, in
// ch's scratch.
func (ch *serverChooser) inServerOrder(ss, tt []int) (servers, takes []int, ok bool) {
	// In increasing order of server (distinct servers: any sort gives the same result).
	perm := growInts(&ch.perm, len(ss))
	for i := range perm {
		perm[i] = i
	}
	slices.SortFunc(perm, func(a, b int) int { return ss[a] - ss[b] })
	os, ot := growInts(&ch.os, len(ss)), growInts(&ch.ot, len(ss))
	for i, o := range perm {
		os[i], ot[i] = ss[o], tt[o]
	}
	return os, ot, true
}

// byCapDesc returns servers (in increasing order) sorted by capacity, largest first, ties in
// their given order: a stable sort, by counting when capacities are small (GPUs per server).
// The result is ch.tmp, valid until the next call.
func (ch *serverChooser) byCapDesc(servers, caps []int) []int {
	out := growInts(&ch.tmp, len(servers))
	top := 0
	for _, s := range servers {
		top = max(top, caps[s])
	}
	if top > 4096 {
		copy(out, servers)
		slices.SortStableFunc(out, func(a, b int) int { return caps[b] - caps[a] })
		return out
	}
	// Slot top-k holds capacity k: largest first.
	start := growInts(&ch.bucket, top+2)
	clear(start)
	for _, s := range servers {
		start[top-caps[s]+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	for _, s := range servers {
		k := top - caps[s]
		out[start[k]] = s
		start[k]++
	}
	return out
}

// serverChooser is chooseServers' scratch space.
type serverChooser struct {
	caps, off, list, tmp, ps, pt, ss, tt, order, rackCap, perm, os, ot, bucket []int
	groups                                                                     []capGroup
	union                                                                      []uint64
}

// serverIndex groups a cluster's servers by their number of free GPUs: set k (words
// [k*words, (k+1)*words) of bits) holds the servers with k free GPUs. It stands for a
// cluster without racks whose servers hold at most maxIndexed GPUs each (ok false
// otherwise), and PlaceMemo keeps it with its counts, so that choosing servers reads the
// few counts there are instead of every server.
type serverIndex struct {
	ok    bool
	words int
	maxK  int // the most GPUs a server holds
	bits  []uint64
}

// maxIndexed is the most GPUs per server a serverIndex keeps a set for.
const maxIndexed = 64

// build makes the index of counts (free GPUs per server of c).
func (x *serverIndex) build(c *topology.Cluster, counts []int) {
	x.ok = false
	if c.NumRacks() > 0 {
		return
	}
	maxK := 0
	for s := range counts {
		_, k := c.GPUsOf(s)
		maxK = max(maxK, k)
	}
	if maxK > maxIndexed {
		return
	}
	x.words, x.maxK = (len(counts)+63)/64, maxK
	n := (maxK + 1) * x.words
	if cap(x.bits) < n {
		x.bits = make([]uint64, n)
	}
	x.bits = x.bits[:n]
	clear(x.bits)
	for s, k := range counts {
		x.bits[k*x.words+s/64] |= 1 << (s % 64)
	}
	x.ok = true
}

// move records that server s went from from to to free GPUs.
func (x *serverIndex) move(s, from, to int) {
	if !x.ok {
		return
	}
	if from < 0 || to < 0 || from > x.maxK || to > x.maxK {
		x.ok = false // not with counts of free GPUs; the scan takes over until the next build
		return
	}
	x.bits[from*x.words+s/64] &^= 1 << (s % 64)
	x.bits[to*x.words+s/64] |= 1 << (s % 64)
}

// set returns the servers with k free GPUs.
func (x *serverIndex) set(k int) []uint64 { return x.bits[k*x.words : (k+1)*x.words] }

// capGroup is the servers of one capacity (free GPUs rounded down to a multiple of the unit).
type capGroup struct {
	cap  int
	bits []uint64
}

// lowest returns the lowest server in bits, or -1.
func lowest(bits []uint64) int {
	for w, b := range bits {
		if b != 0 {
			return w*64 + mathbits.TrailingZeros64(b)
		}
	}
	return -1
}

// chooseIndexed is chooseServers for a cluster without racks, from the index of its free
// counts: the same servers and takes, in the same scratch. Servers of equal capacity come in
// increasing order, as chooseServers' stable sort by capacity leaves them.
func (ch *serverChooser) chooseIndexed(x *serverIndex, n, tp int) (servers, takes []int, ok bool) {
	// The capacities that occur, largest first, each with its servers: for tp > 1 several
	// counts share a capacity, and their sets are joined in ch.union.
	groups := ch.groups[:0]
	union := ch.union[:0]
	joined := -1 // the group whose bits live in union
	for k := x.maxK; k >= 1; k-- {
		set := x.set(k)
		if lowest(set) < 0 {
			continue
		}
		cp := k
		if tp > 1 {
			cp = k / tp * tp
		}
		if cp == 0 {
			break
		}
		if last := len(groups) - 1; last >= 0 && groups[last].cap == cp {
			g := &groups[last]
			if joined != last {
				off := len(union)
				union = append(union, g.bits...)
				g.bits, joined = union[off:len(union):len(union)], last
			}
			for w := range g.bits {
				g.bits[w] |= set[w]
			}
			continue
		}
		groups = append(groups, capGroup{cap: cp, bits: set})
	}
	ch.groups, ch.union = groups, union
	// One server: the least capacity that holds n, its lowest server.
	for i := len(groups) - 1; i >= 0; i-- {
		if groups[i].cap >= n {
			ch.ss, ch.tt = append(ch.ss[:0], lowest(groups[i].bits)), append(ch.tt[:0], n)
			return ch.ss, ch.tt, true
		}
	}
	// Else the largest first until one holds what is left; there, the least capacity that
	// does among the servers not yet taken (the current one, first of its group, or the
	// lowest of a group of smaller capacity).
	ss, tt := ch.ss[:0], ch.tt[:0]
	need := n
	for gi, g := range groups {
		for w, b := range g.bits {
			for b != 0 {
				s := w*64 + mathbits.TrailingZeros64(b)
				b &= b - 1
				if g.cap >= need {
					pick := s
					for gj := len(groups) - 1; gj > gi; gj-- {
						if groups[gj].cap >= need {
							pick = lowest(groups[gj].bits)
							break
						}
					}
					ss, tt = append(ss, pick), append(tt, need)
					ch.ss, ch.tt = ss, tt
					return ch.inServerOrder(ss, tt)
				}
				ss, tt = append(ss, s), append(tt, g.cap)
				need -= g.cap
			}
		}
	}
	ch.ss, ch.tt = ss, tt
	return nil, nil, false
}

// growInts returns (*buf)[:n], reallocating when it is too short.
func growInts(buf *[]int, n int) []int {
	if cap(*buf) < n {
		*buf = make([]int, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// partitionOntoServers assigns the contracted vertices to servers (indices into servers): among
// racks first when the servers span racks, then among each rack's servers.
func partitionOntoServers(c *topology.Cluster, g *kway.Graph, servers, takes []int, tp int, opts PlaceOptions) ([]int, error) {
	assign := make([]int, g.NumVertices())
	// Group server indices by rack.
	var rackOrder []int
	members := map[int][]int{}
	for i, s := range servers {
		r := c.RackOf(s)
		if _, ok := members[r]; !ok {
			rackOrder = append(rackOrder, r)
		}
		members[r] = append(members[r], i)
	}
	all := make([]int, g.NumVertices())
	for v := range all {
		all[v] = v
	}
	if len(rackOrder) == 1 {
		return assign, splitAmong(g, all, members[rackOrder[0]], takes, opts, assign)
	}
	caps := make([]int64, len(rackOrder))
	for i, r := range rackOrder {
		for _, si := range members[r] {
			caps[i] += int64(takes[si])
		}
	}
	res, err := kway.Partition(g, kway.Options{K: len(rackOrder), Capacities: caps, Mode: kway.Hard, Seed: opts.Seed, Trials: opts.Trials, Quick: true})
	if err != nil {
		return nil, err
	}
	for i, r := range rackOrder {
		var vs []int
		for v, p := range res.Part {
			if p == i {
				vs = append(vs, v)
			}
		}
		if err := splitAmong(g, vs, members[r], takes, opts, assign); err != nil {
			return nil, err
		}
	}
	return assign, nil
}

// splitAmong partitions the subgraph induced by vs among the given servers (indices into takes),
// writing server indices into assign.
func splitAmong(g *kway.Graph, vs []int, serverIdx []int, takes []int, opts PlaceOptions, assign []int) error {
	// One server, or one vertex per server: every assignment crosses the same edges.
	single := true
	for i, si := range serverIdx {
		if i >= len(vs) || int64(takes[si]) != g.VertexWeight(vs[i]) {
			single = false
			break
		}
	}
	if len(serverIdx) == 1 || (single && len(vs) == len(serverIdx)) {
		for i, v := range vs {
			assign[v] = serverIdx[min(i, len(serverIdx)-1)]
		}
		return nil
	}
	local := make(map[int]int, len(vs))
	for i, v := range vs {
		local[v] = i
	}
	b := kway.NewBuilder(len(vs))
	for i, v := range vs {
		_ = b.SetVertexWeight(i, g.VertexWeight(v))
		for u, w := range g.Neighbors(v) {
			if j, ok := local[u]; ok && i < j {
				if err := b.AddEdge(i, j, w); err != nil {
					return err
				}
			}
		}
	}
	sub, err := b.Build()
	if err != nil {
		return err
	}
	caps := make([]int64, len(serverIdx))
	for i, si := range serverIdx {
		caps[i] = int64(takes[si])
	}
	res, err := kway.Partition(sub, kway.Options{K: len(serverIdx), Capacities: caps, Mode: kway.Hard, Seed: opts.Seed, Trials: opts.Trials, Quick: true})
	if err != nil {
		return err
	}
	for i, v := range vs {
		assign[v] = serverIdx[res.Part[i]]
	}
	return nil
}

// placementCost is the bytes per iteration crossing servers plus the bytes crossing racks
// weighted by (oversubscription - 1), for the assignment of contracted vertices to servers.
func placementCost(c *topology.Cluster, wg *graph.WorkerGraph, servers, assign []int, tp int) float64 {
	cost := 0.0
	for _, e := range wg.Edges {
		su, sv := servers[assign[e.U/tp]], servers[assign[e.V/tp]]
		if su == sv {
			continue
		}
		cost += e.Bytes
		ru, rv := c.RackOf(su), c.RackOf(sv)
		if ru != rv && ru >= 0 && rv >= 0 {
			f := math.Max(c.Rack(ru).Oversubscription, c.Rack(rv).Oversubscription)
			cost += e.Bytes * (f - 1)
		}
	}
	return cost
}
