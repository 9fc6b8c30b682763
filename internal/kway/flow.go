package kway

import (
	"cmp"
	"slices"
)

// flowRefine improves a partition of g by minimum cuts between pairs of
// adjacent parts (KaHIP's flow-based refinement): for each pair (a, b)
// that shares a cut edge, it grows a region around their common boundary
// (breadth first inside a and inside b, each side up to a weight bound),
// joins the rest of a to a source and the rest of b to a sink, and
// computes a minimum source-sink cut of the region by maximum flow. Of the
// two extreme minimum cuts (the vertices the source reaches in the
// residual network, and those that do not reach the sink) it applies the
// feasible one that weighs closest to the targets, if it cuts less than
// the current partition of the region. The region bounds start at alpha
// times the tolerance of the receiving part and halve until a cut is
// feasible. The cut never grows and no part exceeds its limit (if none
// did before). part and pw (the part weights) are updated in place; the
// return value is the decrease of the cut.
func (f *flowScratch) flowRefine(g *Graph, part []int32, pw, limit []int64, target []float64) int64 {
	// adjacent pairs, in increasing order, each with the boundary
	// vertices of both sides (in vertex order)
	index := make(map[[2]int32]int)
	var pairs [][2]int32
	var seeds [][2][]int32
	var others []int32
	for v := range g.NumVertices() {
		pv := part[v]
		others = others[:0]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			if pu := part[g.adj[i]]; pu != pv && !slices.Contains(others, pu) {
				others = append(others, pu)
			}
		}
		for _, pu := range others {
			key, side := [2]int32{pv, pu}, 0
			if pu < pv {
				key, side = [2]int32{pu, pv}, 1
			}
			j, ok := index[key]
			if !ok {
				j = len(pairs)
				index[key] = j
				pairs = append(pairs, key)
				seeds = append(seeds, [2][]int32{})
			}
			seeds[j][side] = append(seeds[j][side], int32(v))
		}
	}
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(pairs[x][0], pairs[y][0]); c != 0 {
			return c
		}
		return cmp.Compare(pairs[x][1], pairs[y][1])
	})
	var total int64
	k := len(pw)
	f.changed = growBool(f.changed, k)
	f.active = growBool(f.active, k)
	if !f.onlyChanged {
		for p := range f.active {
			f.active[p] = true
		}
	} else {
		copy(f.active, f.changed)
	}
	clear(f.changed)
	for _, j := range order {
		a, b := pairs[j][0], pairs[j][1]
		if !f.active[a] && !f.active[b] {
			continue
		}
		// region bounds, in tolerances of the receiving part, tried
		// until a cut fits
		for _, alpha := range [...]float64{4, 1} {
			gain, done := f.pair(g, part, pw, limit, target, a, b, seeds[j], alpha)
			if gain > 0 {
				total += gain
				f.changed[a], f.changed[b] = true, true
			}
			if done {
				break
			}
		}
	}
	return total
}

// flowHubDegree: vertices of more than this degree (and more than 8 times
// the average) are left out of flow regions.
const flowHubDegree = 64

// flowScratch holds the buffers of flowRefine.
type flowScratch struct {
	id     []int32 // region index of a graph vertex, or -1
	region []int32 // graph vertex of each region index
	queue  []int32
	// flow network in CSR form: nodes 0..nr-1 are region vertices, nr the
	// source, nr+1 the sink
	head   []int32
	to     []int32
	capa   []int64
	rev    []int32
	level  []int32
	iter   []int32
	reach  []bool
	reachT []bool

	// onlyChanged restricts flowRefine to the pairs with a part that
	// changed in its last call (changed); active is its scratch.
	onlyChanged     bool
	changed, active []bool

	// brokenNoBalance applies a minimum cut even where it overfills a
	// part. Only tests set it, to show that the flow property catches it.
	brokenNoBalance bool
}

// pair runs one flow refinement between parts a and b with region bound
// factor alpha. done reports that no smaller region needs trying (the cut
// was applied, or the region cut cannot improve).
func (f *flowScratch) pair(g *Graph, part []int32, pw, limit []int64, target []float64, a, b int32, seeds [2][]int32, alpha float64) (gain int64, done bool) {
	n := g.NumVertices()
	if len(f.id) < n {
		f.id = make([]int32, n)
		for i := range f.id {
			f.id[i] = -1
		}
	}
	f.region = f.region[:0]
	// Vertices of very high degree (the hubs of power-law and circuit
	// graphs) stay out of the regions: each would cost a scan of its
	// edges in every region it joined.
	hub := max(flowHubDegree, 8*len(g.adj)/max(n, 1))
	// grow inside part ps from its boundary vertices with the other part
	// (seeds, which may have moved since they were listed), up to weight
	// bound
	grow := func(ps int32, seeds []int32, bound float64) {
		start := len(f.region)
		var w int64
		for _, v := range seeds {
			if part[v] != ps || f.id[v] >= 0 || float64(w+g.vw[v]) > bound || g.Degree(int(v)) > hub {
				continue
			}
			f.id[v] = int32(len(f.region))
			f.region = append(f.region, v)
			w += g.vw[v]
		}
		for q := start; q < len(f.region); q++ {
			v := f.region[q]
			for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
				u := g.adj[i]
				if part[u] != ps || f.id[u] >= 0 || float64(w+g.vw[u]) > bound || g.Degree(int(u)) > hub {
					continue
				}
				f.id[u] = int32(len(f.region))
				f.region = append(f.region, u)
				w += g.vw[u]
			}
		}
	}
	slackA := float64(limit[a]) - target[a]
	slackB := float64(limit[b]) - target[b]
	grow(a, seeds[0], alpha*slackB)
	na := len(f.region)
	grow(b, seeds[1], alpha*slackA)
	nr := len(f.region)
	defer func() {
		for _, v := range f.region {
			f.id[v] = -1
		}
	}()
	if na == 0 || nr == na {
		return 0, true
	}
	src, snk := int32(nr), int32(nr+1)
	// count arcs per node
	f.head = grow32(f.head, nr+3)
	clear(f.head)
	var oldCut int64
	for r, v := range f.region {
		pv := part[v]
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			u := g.adj[i]
			pu := part[u]
			if pu != a && pu != b {
				continue
			}
			if f.id[u] >= 0 {
				f.head[r+1]++ // both directions are added from each end
				if pv == a && pu == b {
					oldCut += g.ew[i]
				}
				continue
			}
			// outside the region: to the source (a) or the sink (b)
			f.head[r+1]++
			if pu == a {
				f.head[src+1]++
			} else {
				f.head[snk+1]++
			}
			if pv != pu {
				oldCut += g.ew[i]
			}
		}
	}
	for i := 1; i < len(f.head); i++ {
		f.head[i] += f.head[i-1]
	}
	m := int(f.head[nr+2])
	f.to = grow32(f.to, m)
	f.capa = grow64(f.capa, m)
	f.rev = grow32(f.rev, m)
	f.iter = grow32(f.iter, nr+2)
	pos := f.iter[:nr+2]
	copy(pos, f.head[:nr+2])
	addArc := func(x, y int32, c int64, rc int64) {
		i, j := pos[x], pos[y]
		f.to[i], f.capa[i], f.rev[i] = y, c, j
		f.to[j], f.capa[j], f.rev[j] = x, rc, i
		pos[x]++
		pos[y]++
	}
	for r, v := range f.region {
		for i := g.xadj[v]; i < g.xadj[v+1]; i++ {
			u := g.adj[i]
			pu := part[u]
			if pu != a && pu != b {
				continue
			}
			if ru := f.id[u]; ru >= 0 {
				if int32(r) < ru { // each region edge once, both directions
					addArc(int32(r), ru, g.ew[i], g.ew[i])
				}
				continue
			}
			if pu == a {
				addArc(src, int32(r), g.ew[i], 0)
			} else {
				addArc(int32(r), snk, g.ew[i], 0)
			}
		}
	}
	flow := f.maxFlow(nr+2, src, snk)
	if flow >= oldCut {
		return 0, true
	}
	// the two extreme minimum cuts
	f.reach = reachable(f, nr+2, src, false, f.reach)
	f.reachT = reachable(f, nr+2, snk, true, f.reachT)
	var wa [2]int64 // weight of the region going to a under each cut
	for r, v := range f.region {
		if f.reach[r] {
			wa[0] += g.vw[v]
		}
		if !f.reachT[r] {
			wa[1] += g.vw[v]
		}
	}
	var regA, regB int64
	for _, v := range f.region[:na] {
		regA += g.vw[v]
	}
	for _, v := range f.region[na:] {
		regB += g.vw[v]
	}
	restA, restB := pw[a]-regA, pw[b]-regB
	best, bestDev := -1, 0.0
	for c := range 2 {
		pa := restA + wa[c]
		pb := restB + (regA + regB - wa[c])
		if pa > limit[a] || pb > limit[b] {
			continue
		}
		da, db := float64(pa)-target[a], float64(pb)-target[b]
		dev := da*da + db*db
		if best < 0 || dev < bestDev {
			best, bestDev = c, dev
		}
	}
	if f.brokenNoBalance && best < 0 {
		best = 0 // tests only: apply an infeasible cut
	}
	if best < 0 {
		return 0, false
	}
	for r, v := range f.region {
		in := f.reach[r]
		if best == 1 {
			in = !f.reachT[r]
		}
		if in {
			part[v] = a
		} else {
			part[v] = b
		}
	}
	pw[a] = restA + wa[best]
	pw[b] = restB + (regA + regB - wa[best])
	return oldCut - flow, true
}

// maxFlow computes a maximum flow from s to t by Dinic's algorithm on
// the network in f (nodes 0..nn-1), leaving the residual capacities.
func (f *flowScratch) maxFlow(nn int, s, t int32) int64 {
	f.level = grow32(f.level, nn)
	var total int64
	for {
		// breadth-first levels
		for i := range f.level[:nn] {
			f.level[i] = -1
		}
		f.level[s] = 0
		f.queue = append(f.queue[:0], s)
		for q := 0; q < len(f.queue); q++ {
			x := f.queue[q]
			if lt := f.level[t]; lt >= 0 && f.level[x] >= lt {
				break // the level graph needs no node beyond the sink's level
			}
			for i := f.head[x]; i < f.head[x+1]; i++ {
				if y := f.to[i]; f.capa[i] > 0 && f.level[y] < 0 {
					f.level[y] = f.level[x] + 1
					f.queue = append(f.queue, y)
				}
			}
		}
		if f.level[t] < 0 {
			return total
		}
		copy(f.iter[:nn], f.head[:nn])
		for {
			d := f.augment(s, t, 1<<62)
			if d == 0 {
				break
			}
			total += d
		}
	}
}

// augment sends flow along one path of the level graph (iteratively, with
// an explicit stack) and returns the amount sent.
func (f *flowScratch) augment(s, t int32, limit int64) int64 {
	// depth-first search with the current-arc pointers f.iter
	path := f.queue[:0] // arcs on the current path
	x := s
	for {
		if x == t {
			// bottleneck
			d := limit
			for _, i := range path {
				d = min(d, f.capa[i])
			}
			for _, i := range path {
				f.capa[i] -= d
				f.capa[f.rev[i]] += d
			}
			f.queue = path
			return d
		}
		advanced := false
		for ; f.iter[x] < f.head[x+1]; f.iter[x]++ {
			i := f.iter[x]
			if y := f.to[i]; f.capa[i] > 0 && f.level[y] == f.level[x]+1 {
				path = append(path, i)
				x = y
				advanced = true
				break
			}
		}
		if advanced {
			continue
		}
		// dead end: retreat
		f.level[x] = -1
		if len(path) == 0 {
			f.queue = path
			return 0
		}
		last := path[len(path)-1]
		path = path[:len(path)-1]
		x = f.to[f.rev[last]]
		f.iter[x]++
	}
}

// reachable marks the nodes reachable from x in the residual network
// (backward: the nodes that reach x).
func reachable(f *flowScratch, nn int, x int32, backward bool, mark []bool) []bool {
	mark = growBool(mark, nn)
	clear(mark)
	mark[x] = true
	f.queue = append(f.queue[:0], x)
	for q := 0; q < len(f.queue); q++ {
		y := f.queue[q]
		for i := f.head[y]; i < f.head[y+1]; i++ {
			z := f.to[i]
			c := f.capa[i]
			if backward {
				c = f.capa[f.rev[i]] // residual capacity of the arc z -> y
			}
			if c > 0 && !mark[z] {
				mark[z] = true
				f.queue = append(f.queue, z)
			}
		}
	}
	return mark
}

func grow32(s []int32, n int) []int32 { return grow(s, n) }
func grow64(s []int64, n int) []int64 { return grow(s, n) }
func growBool(s []bool, n int) []bool { return grow(s, n) }
