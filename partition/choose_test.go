package partition

import (
	"slices"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestChooseServersMatchesReference: the scratch-reusing chooseServers picks exactly what the
// straightforward version (maps, fresh slices) picks, on random free counts, racks and unit
// sizes, also when one chooser serves many calls.
func TestChooseServersMatchesReference(t *testing.T) {
	var ch serverChooser
	rapid.Check(t, func(t *rapid.T) {
		servers := rapid.IntRange(1, 12).Draw(t, "servers")
		racks := rapid.IntRange(0, 4).Draw(t, "racks")
		var c *topology.Cluster
		var err error
		if racks > 0 {
			c, err = topology.UniformRacks(topology.T4(), servers, (servers+racks-1)/racks, 3)
		} else {
			c, err = topology.Uniform(topology.T4(), servers)
		}
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, c.NumServers())
		for s := range counts {
			_, k := c.GPUsOf(s)
			counts[s] = rapid.IntRange(0, k).Draw(t, "free")
		}
		n := rapid.IntRange(1, 4*servers).Draw(t, "n")
		tp := rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "tp")
		ws, wt, wok := chooseServersRef(c, counts, n, tp)
		gs, gt, gok := ch.chooseServers(c, counts, n, tp)
		if wok != gok || !slices.Equal(ws, gs) || !slices.Equal(wt, gt) {
			t.Fatalf("counts %v n %d tp %d: got %v %v %v, want %v %v %v", counts, n, tp, gs, gt, gok, ws, wt, wok)
		}
	})
}

// chooseServersRef is the reference version of serverChooser.chooseServers: it picks servers for n workers in units of tp GPUs: one server (best fit) if
// possible, else the fewest servers, within one rack if one suffices. takes[i] GPUs are taken on
// servers[i] (a multiple of tp), servers in increasing order.
func chooseServersRef(c *topology.Cluster, counts []int, n, tp int) (servers, takes []int, ok bool) {
	capOf := func(s int) int { return counts[s] / tp * tp }
	best := -1
	for s := range counts {
		if k := capOf(s); k >= n && (best < 0 || k < capOf(best)) {
			best = s
		}
	}
	if best >= 0 {
		return []int{best}, []int{n}, true
	}
	plan := func(list []int) ([]int, []int, bool) {
		slices.SortStableFunc(list, func(a, b int) int { return capOf(b) - capOf(a) })
		var ss, tt []int
		need := n
		for i, s := range list {
			if capOf(s) >= need {
				pick := s
				for _, t := range list[i:] {
					if capOf(t) >= need && capOf(t) < capOf(pick) {
						pick = t
					}
				}
				return append(ss, pick), append(tt, need), true
			}
			if capOf(s) == 0 {
				break
			}
			ss, tt = append(ss, s), append(tt, capOf(s))
			need -= capOf(s)
		}
		return nil, nil, false
	}
	byRack := map[int][]int{}
	for s := range counts {
		if capOf(s) > 0 {
			byRack[c.RackOf(s)] = append(byRack[c.RackOf(s)], s)
		}
	}
	rackIDs := make([]int, 0, len(byRack))
	for r := range byRack {
		rackIDs = append(rackIDs, r)
	}
	slices.Sort(rackIDs)
	for _, r := range rackIDs {
		if ss, tt, ok := plan(slices.Clone(byRack[r])); ok && (servers == nil || len(ss) < len(servers)) {
			servers, takes = ss, tt
		}
	}
	if servers == nil && len(rackIDs) > 1 {
		// Across racks: racks with the most capacity first, servers by capacity within.
		rackCap := map[int]int{}
		for r, list := range byRack {
			for _, s := range list {
				rackCap[r] += capOf(s)
			}
		}
		slices.SortStableFunc(rackIDs, func(a, b int) int { return rackCap[b] - rackCap[a] })
		var ss, tt []int
		need := n
		for _, r := range rackIDs {
			list := slices.Clone(byRack[r])
			slices.SortStableFunc(list, func(a, b int) int { return capOf(b) - capOf(a) })
			for _, s := range list {
				if need == 0 {
					break
				}
				t := min(capOf(s), need)
				ss, tt = append(ss, s), append(tt, t)
				need -= t
			}
		}
		if need == 0 {
			servers, takes = ss, tt
		}
	}
	if servers == nil {
		return nil, nil, false
	}
	order := make([]int, len(servers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return servers[a] - servers[b] })
	ss, tt := make([]int, len(order)), make([]int, len(order))
	for i, o := range order {
		ss[i], tt[i] = servers[o], takes[o]
	}
	return ss, tt, true
}

// TestChooseIndexedMatchesReference: choosing from the index of free counts picks exactly what
// the reference picks, on clusters without racks of up to 150 servers (several words of
// servers per count), with one chooser serving many calls, and the index kept by moves from
// one call's counts to the next.
func TestChooseIndexedMatchesReference(t *testing.T) {
	var ch serverChooser
	rapid.Check(t, func(t *rapid.T) {
		servers := rapid.IntRange(1, 150).Draw(t, "servers")
		spec := rapid.SampledFrom([]topology.ServerSpec{topology.T4(), topology.A100()}).Draw(t, "spec")
		c, err := topology.Uniform(spec, servers)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, c.NumServers())
		var x serverIndex
		for call := range 4 {
			for s := range counts {
				_, k := c.GPUsOf(s)
				if call == 0 || rapid.IntRange(0, 3).Draw(t, "change") == 0 {
					to := rapid.IntRange(0, k).Draw(t, "free")
					if call > 0 {
						x.move(s, counts[s], to)
					}
					counts[s] = to
				}
			}
			if call == 0 {
				x.build(c, counts)
			}
			if !x.ok {
				t.Fatal("no index for a cluster without racks")
			}
			n := rapid.IntRange(1, 2*servers*4).Draw(t, "n")
			tp := rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "tp")
			ws, wt, wok := chooseServersRef(c, counts, n, tp)
			gs, gt, gok := ch.chooseIndexed(&x, n, tp)
			if wok != gok || !slices.Equal(ws, gs) || !slices.Equal(wt, gt) {
				t.Fatalf("call %d: counts %v n %d tp %d: got %v %v %v, want %v %v %v", call, counts, n, tp, gs, gt, gok, ws, wt, wok)
			}
		}
	})
}
