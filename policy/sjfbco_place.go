// This file holds SJF-BCO's placement rules: fragment-aware first-fit packing (FA-FFP) for
// small jobs, least-busy server first (LBSGF) for large ones, and the link loads they see.

package policy

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// loadAt is the link load of the planned jobs running at time t.
func loadAt(placed []bcoEntry, t float64) topology.LinkLoad {
	var load topology.LinkLoad
	for _, e := range placed {
		if len(e.links) == 0 || !(e.start <= t && t < e.end) {
			continue
		}
		if load == nil {
			load = topology.LinkLoad{}
		}
		for _, l := range e.links {
			load[l]++
		}
	}
	return load
}

// finish completes a candidate of job i: start when all its GPUs are free, end after the
// job's duration. The entry's GPUs (sorted) are written to dst's array.
func (p *bcoPlanner) finish(i int, gpus, dst []topology.GPUID) (bcoEntry, error) {
	gpus = append(dst[:0], gpus...)
	slices.Sort(gpus)
	free := p.st.free
	start := math.Inf(-1)
	for _, g := range gpus {
		start = max(start, free[g])
	}
	var (
		t     float64
		err   error
		links []topology.Link
	)
	if s := p.single[gpus[0]]; !p.shared[s] && p.single[gpus[len(gpus)-1]] == s {
		// One server with a non-blocking fabric: the job crosses no shared link.
		t, err = p.stepTime(i, gpus)
	} else {
		links = p.linksOf(gpus)
		t, err = p.loadedStepTime(i, gpus, links, start)
	}
	if err != nil {
		return bcoEntry{}, err
	}
	return bcoEntry{gpus: gpus, start: start, end: start + p.jobs[i].Iterations*t, links: links}, nil
}

// linksOf is topology.Cluster.Links for sorted GPUs, without its maps: the servers of sorted
// GPUs come in increasing order.
func (p *bcoPlanner) linksOf(gpus []topology.GPUID) []topology.Link {
	out := p.linkBuf[:0]
	servers := 0
	racks := p.rackBuf[:0]
	for k := 0; k < len(gpus); {
		s := p.single[gpus[k]]
		n := 1
		for k+n < len(gpus) && p.single[gpus[k+n]] == s {
			n++
		}
		k += n
		servers++
		if n > 1 && p.shared[s] {
			out = append(out, topology.Link{Kind: topology.IntraLink, Index: int(s)})
		}
		if r := p.rack[s]; !slices.Contains(racks, r) {
			racks = append(racks, r)
		}
	}
	if servers > 1 {
		for k := 0; k < len(gpus); k++ {
			if s := p.single[gpus[k]]; k == 0 || s != p.single[gpus[k-1]] {
				out = append(out, topology.Link{Kind: topology.NICLink, Index: int(s)})
			}
		}
	}
	if len(racks) > 1 {
		slices.Sort(racks)
		for _, r := range racks {
			if r >= 0 {
				out = append(out, topology.Link{Kind: topology.UplinkLink, Index: r})
			}
		}
	}
	p.linkBuf, p.rackBuf = out, racks
	if len(out) == 0 {
		return nil
	}
	if cap(p.linkArena)-len(p.linkArena) < len(out) {
		p.linkArena = make([]topology.Link, 0, max(1024, 2*len(out), cap(p.linkArena)))
	}
	n := len(p.linkArena)
	p.linkArena = append(p.linkArena, out...)
	return p.linkArena[n:len(p.linkArena):len(p.linkArena)]
}

// owned returns e with GPUs of its own (finish writes them to scratch space), kept in the
// planner's arena: they live as long as the problem's decisions (a plan given out copies them).
func (p *bcoPlanner) owned(e bcoEntry) bcoEntry {
	if cap(p.arena)-len(p.arena) < len(e.gpus) {
		// A new block: the decisions recorded so far keep the old one.
		p.arena = make([]topology.GPUID, 0, max(4096, 2*len(e.gpus), cap(p.arena)))
	}
	n := len(p.arena)
	p.arena = append(p.arena, e.gpus...)
	e.gpus = p.arena[n:len(p.arena):len(p.arena)]
	return e
}

// faffp is fragment-aware first-fit packing.
func (p *bcoPlanner) faffp(i int, theta float64) (bcoEntry, bool, error) {
	st := &p.st
	bj, minDur := p.jobs[i], p.minDur[i]
	g, free := bj.Job.GPUs, st.free
	var best bcoEntry
	found := false
	if p.opt.EarliestFit {
		// The server where the job ends earliest; among equal ends, the fragment: the fewest
		// of the server's GPUs free by the start that the job leaves idle, then the least idle
		// time in front of the job on its own GPUs; then the lowest index. Servers are
		// evaluated from the earliest start, and skipped once even the job's shortest
		// duration could not beat the best end.
		var bestHole int
		var bestGap float64
		consider := func(s int) error {
			all := st.sorted(s)
			e, err := p.finish(i, all[:g], p.cand)
			if err != nil {
				return err
			}
			p.cand = e.gpus
			// A candidate ending after the best loses whatever theta is (the best ends by
			// theta): only the others are compared with theta, so that the decision's range of
			// theta (see try) is not narrowed by comparisons that cannot change it.
			if (found && e.end > best.end) || p.rng.above(e.end, theta) {
				return nil
			}
			hole, gap := 0, 0.0
			for i, x := range all {
				if i < g {
					gap += e.start - free[x]
				} else if free[x] <= e.start {
					hole++
				}
			}
			if !found || e.end < best.end || (e.end == best.end && (hole < bestHole || (hole == bestHole && gap < bestGap))) {
				best, bestHole, bestGap, found = e, hole, gap, true
				p.cand, p.best = p.best, p.cand
			}
			return nil
		}
		searched := false
		if p.ok[i] == nil && !p.linear {
			// The servers' start times for g kept in a tree (startTree): the servers where
			// the job starts earliest, then those that could beat the best end, are found
			// without a scan. Once the first pass finds a candidate, the second pass only
			// considers servers with start+minDur <= best end (the comparisons with theta it
			// would make then come out as already recorded: they are left out); if the first
			// pass was skipped (first+minDur > theta), every other server is skipped too and
			// records nothing new. Otherwise the scan below runs.
			tr := st.tree(g)
			first := tr.min()
			skipped := math.IsInf(first, 1) || p.rng.above(first+minDur, theta)
			if !skipped {
				for s := tr.next(0, first); s >= 0; s = tr.next(s+1, first) {
					if found && first+minDur > best.end {
						break
					}
					if err := consider(s); err != nil {
						return bcoEntry{}, false, err
					}
				}
			}
			if skipped || found {
				for s := tr.next(0, below(best.end, minDur)); found && s >= 0; s = tr.next(s+1, below(best.end, minDur)) {
					if start := tr.at(s); start == first || start+minDur > best.end {
						continue
					}
					if err := consider(s); err != nil {
						return bcoEntry{}, false, err
					}
				}
				searched = true
			}
		}
		if !searched {
			if err := p.scan(i, theta, &found, &best, consider); err != nil {
				return bcoEntry{}, false, err
			}
		}
		if found {
			return p.owned(best), true, nil
		}
	} else {
		// First fit: the first server with g GPUs that end the job by theta; on it, the g GPUs
		// (consecutive in busy-until order) that leave the least idle time in front of the job.
		bestGap := 0.0
		for s := range len(st.off) - 1 {
			if !p.okServer(i, s) {
				continue
			}
			all := st.sorted(s)
			for i0 := 0; i0+g <= len(all); i0++ {
				if p.rng.above(free[all[i0+g-1]]+minDur, theta) {
					break // later windows start later still
				}
				e, err := p.finish(i, all[i0:i0+g], p.cand)
				if err != nil {
					return bcoEntry{}, false, err
				}
				p.cand = e.gpus
				if p.rng.above(e.end, theta) {
					continue
				}
				gap := 0.0
				for _, x := range all[i0 : i0+g] {
					gap += e.start - free[x]
				}
				if !found || gap < bestGap || (gap == bestGap && e.end < best.end) {
					best, bestGap, found = e, gap, true
					p.cand, p.best = p.best, p.cand
				}
			}
			if found {
				return p.owned(best), true, nil
			}
		}
	}
	// Fewest servers: the largest first, the least busy first among equals (then the lowest
	// index): byMean's order, stably sorted by size.
	servers := st.byMean
	if !p.sameSize {
		servers = append(p.bySize[:0], st.byMean...)
		p.bySize = servers
		slices.SortStableFunc(servers, func(a, b int) int { return cmp.Compare(st.size(b), st.size(a)) })
	}
	gpus := p.pick[:0]
	for _, s := range servers {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		for _, x := range st.sorted(s) {
			if len(gpus) == g {
				break
			}
			gpus = append(gpus, x)
		}
	}
	p.pick = gpus
	e, err := p.finish(i, gpus, p.cand)
	if err != nil {
		return bcoEntry{}, false, err
	}
	return p.owned(e), !p.rng.above(e.end, theta), nil
}

// scan is FA-FFP's earliest-fit search over every server that may take job i (in two passes:
// the servers where it starts earliest, then the others), in index order.
func (p *bcoPlanner) scan(i int, theta float64, found *bool, best *bcoEntry, consider func(s int) error) error {
	st := &p.st
	g, minDur, free := p.jobs[i].Job.GPUs, p.minDur[i], st.free
	first := math.Inf(1)
	cands, firsts := p.starts[:0], p.firsts[:0]
	ok, ids, off := p.ok[i], st.ids, st.off
	for s := range len(off) - 1 {
		if off[s+1]-off[s] >= g && (ok == nil || ok[s]) {
			start := free[ids[off[s]+g-1]]
			cands = append(cands, serverStart{s: s, start: start})
			if start < first {
				first, firsts = start, firsts[:0]
			}
			if start == first {
				firsts = append(firsts, s)
			}
		}
	}
	p.starts, p.firsts = cands, firsts
	// (Once a candidate is found, ending by theta, the test against theta is implied by the
	// test against the best.)
	if len(firsts) > 0 && !p.rng.above(first+minDur, theta) {
		for _, s := range firsts {
			if *found && first+minDur > best.end {
				break
			}
			if err := consider(s); err != nil {
				return err
			}
		}
	}
	for _, c := range cands {
		start := c.start
		if start == first || (*found && start+minDur > best.end) || p.rng.above(start+minDur, theta) {
			continue
		}
		if err := consider(c.s); err != nil {
			return err
		}
	}
	return nil
}

// below returns a bound on the starts x with x+d <= b (rounded): every such x is at most the
// bound (b-d, widened by far more than the rounding errors of both sums).
func below(b, d float64) float64 {
	return b - d + (math.Abs(b)+math.Abs(d))*1e-15
}

// serverStart is a server and the time a job could start there.
type serverStart struct {
	s     int
	start float64
}

// lbsgf is least-busy-server GPU first with spread factor lambda.
func (p *bcoPlanner) lbsgf(i int, theta float64) (bcoEntry, bool, error) {
	st := &p.st
	g := p.jobs[i].Job.GPUs
	// took[s]: the GPUs taken from server s; all 0 between calls (reset below from the GPUs
	// taken, instead of clearing every server's count).
	if len(p.took) != len(st.off)-1 {
		p.took = make([]int, len(st.off)-1)
	}
	took := p.took
	gpus := p.pick[:0]
	for _, s := range st.byMean {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		list := st.sorted(s)
		limit := min(len(list), max(1, int(math.Ceil(p.opt.Lambda*float64(len(list))))))
		for took[s] < limit && len(gpus) < g {
			gpus = append(gpus, list[took[s]])
			took[s]++
		}
	}
	for _, s := range st.byMean {
		if len(gpus) == g {
			break
		}
		if !p.okServer(i, s) {
			continue
		}
		list := st.sorted(s)
		for took[s] < len(list) && len(gpus) < g {
			gpus = append(gpus, list[took[s]])
			took[s]++
		}
	}
	p.pick = gpus
	for _, x := range gpus {
		took[p.single[x]] = 0
	}
	e, err := p.finish(i, gpus, p.cand)
	if err != nil {
		return bcoEntry{}, false, err
	}
	return p.owned(e), !p.rng.above(e.end, theta), nil
}
