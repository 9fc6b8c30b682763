package topology

import (
	"slices"
)

// Pack chooses n GPUs from free so that they span as few servers as possible, and among those
// choices wastes the least: if one server has at least n free GPUs, the one with the fewest
// free GPUs that suffices (best fit, leaving large holes for large jobs); otherwise whole
// servers in decreasing order of free GPUs (within a rack first when the cluster has racks,
// so that a job that must span servers spans few racks), the last one best-fit. It returns
// false when free holds fewer than n GPUs. GPUs are returned server by server in increasing
// order. Ties go to the lower server index, so the result is deterministic.
func (c *Cluster) Pack(free GPUSet, n int) ([]GPUID, bool) {
	if n <= 0 {
		return nil, n == 0
	}
	counts := make([]int, len(c.servers))
	total := 0
	for s := range c.servers {
		counts[s] = free.CountRange(GPUID(c.first[s]), c.first[s+1]-c.first[s])
		total += counts[s]
	}
	if total < n {
		return nil, false
	}
	// Best fit on one server.
	best := -1
	for s, k := range counts {
		if k >= n && (best < 0 || k < counts[best]) {
			best = s
		}
	}
	if best >= 0 {
		return c.takeFrom(free, []int{best}, []int{n}), true
	}
	// Several servers: prefer the rack (or the whole cluster) that needs the fewest servers.
	groups := map[int][]int{}
	for s, k := range counts {
		if k > 0 {
			groups[c.rackOf[s]] = append(groups[c.rackOf[s]], s)
		}
	}
	byFree := func(list []int) {
		slices.SortStableFunc(list, func(a, b int) int { return counts[b] - counts[a] })
	}
	plan := func(list []int) (servers, takes []int, ok bool) {
		need := n
		for i, s := range list {
			if need == 0 {
				break
			}
			// The last server: best fit among the remaining ones that can close the gap.
			if counts[s] >= need {
				pick := s
				for _, t := range list[i:] {
					if counts[t] >= need && counts[t] < counts[pick] {
						pick = t
					}
				}
				return append(servers, pick), append(takes, need), true
			}
			servers, takes = append(servers, s), append(takes, counts[s])
			need -= counts[s]
		}
		return servers, takes, need == 0
	}
	rackIDs := make([]int, 0, len(groups))
	for r := range groups {
		rackIDs = append(rackIDs, r)
	}
	slices.Sort(rackIDs)
	var bestServers, bestTakes []int
	for _, r := range rackIDs {
		list := groups[r]
		byFree(list)
		if s, t, ok := plan(list); ok && (bestServers == nil || len(s) < len(bestServers)) {
			bestServers, bestTakes = s, t
		}
	}
	if bestServers == nil { // no single rack suffices: span racks
		all := make([]int, 0, len(counts))
		for s, k := range counts {
			if k > 0 {
				all = append(all, s)
			}
		}
		slices.SortStableFunc(all, func(a, b int) int {
			if ra, rb := c.rackOf[a], c.rackOf[b]; ra != rb {
				return ra - rb
			}
			return counts[b] - counts[a]
		})
		// Take racks with the most free GPUs first.
		rackFree := map[int]int{}
		for _, s := range all {
			rackFree[c.rackOf[s]] += counts[s]
		}
		slices.SortStableFunc(all, func(a, b int) int {
			if ra, rb := c.rackOf[a], c.rackOf[b]; ra != rb {
				if d := rackFree[rb] - rackFree[ra]; d != 0 {
					return d
				}
				return ra - rb
			}
			return counts[b] - counts[a]
		})
		bestServers, bestTakes, _ = plan(all)
	}
	order := make([]int, len(bestServers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bestServers[a] - bestServers[b] })
	ss, tt := make([]int, len(order)), make([]int, len(order))
	for i, o := range order {
		ss[i], tt[i] = bestServers[o], bestTakes[o]
	}
	return c.takeFrom(free, ss, tt), true
}

func (c *Cluster) takeFrom(free GPUSet, servers, takes []int) []GPUID {
	out := make([]GPUID, 0, 8)
	for i, s := range servers {
		need := takes[i]
		for g := c.first[s]; g < c.first[s+1] && need > 0; g++ {
			if free.Contains(GPUID(g)) {
				out = append(out, GPUID(g))
				need--
			}
		}
	}
	return out
}
