package policy

import (
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

func drawKnapsack(t *rapid.T) ([]smdJob, int, int) {
	n := rapid.IntRange(1, 4).Draw(t, "jobs")
	sel := make([]smdJob, n)
	for i := range sel {
		k := rapid.IntRange(1, 3).Draw(t, "items")
		for range k {
			sel[i].items = append(sel[i].items, smdItem{
				gpus:  rapid.IntRange(1, 4).Draw(t, "g"),
				cpus:  rapid.IntRange(0, 6).Draw(t, "c"),
				ratio: float64(rapid.IntRange(1, 100).Draw(t, "r")),
			})
		}
	}
	return sel, rapid.IntRange(1, 10).Draw(t, "capG"), rapid.IntRange(0, 15).Draw(t, "capC")
}

// knapsackBrute enumerates every selection (an independent method).
func knapsackBrute(sel []smdJob, capG, capC int) (float64, bool) {
	best, ok := math.Inf(1), false
	var rec func(i, g, c int, v float64)
	rec = func(i, g, c int, v float64) {
		if g > capG || c > capC {
			return
		}
		if i == len(sel) {
			if v < best {
				best, ok = v, true
			}
			return
		}
		for _, it := range sel[i].items {
			rec(i+1, g+it.gpus, c+it.cpus, v+it.ratio)
		}
	}
	rec(0, 0, 0, 0)
	return best, ok
}

func exactProp(solve func([]smdJob, int, int, float64) []int) func(*rapid.T) {
	return func(t *rapid.T) {
		sel, capG, capC := drawKnapsack(t)
		want, ok := knapsackBrute(sel, capG, capC)
		pick := solve(sel, capG, capC, math.Inf(1))
		if !ok {
			if pick != nil {
				t.Fatalf("no selection fits, solver picked %v", pick)
			}
			return
		}
		if pick == nil {
			t.Fatalf("solver found nothing; optimum %g", want)
		}
		got, g, c := 0.0, 0, 0
		for i, k := range pick {
			got += sel[i].items[k].ratio
			g += sel[i].items[k].gpus
			c += sel[i].items[k].cpus
		}
		if g > capG || c > capC || math.Abs(got-want) > 1e-9 {
			t.Fatalf("picked %v: %g with %d GPUs %d cores; optimum %g within %d, %d", pick, got, g, c, want, capG, capC)
		}
		// The LP relaxation is a lower bound, and the greedy is never below it either.
		if lb, err := smdLP(sel, capG, capC, math.Inf(1)); err == nil && lb > want+1e-7 {
			t.Fatalf("LP bound %g above the optimum %g", lb, want)
		}
	}
}

func TestSMDExactIsOptimal(t *testing.T) {
	rapid.Check(t, exactProp(smdExact))
}

// TestSMDExactHasTeeth: a dynamic program that forgets the cores dimension is caught.
func TestSMDExactHasTeeth(t *testing.T) {
	noCores := func(sel []smdJob, capG, capC int, capM float64) []int {
		cp := make([]smdJob, len(sel))
		for i, jb := range sel {
			cp[i] = smdJob{items: append([]smdItem(nil), jb.items...)}
			for k := range cp[i].items {
				cp[i].items[k].cpus = 0
			}
		}
		return smdExact(cp, capG, capC, capM)
	}
	if !teeth.Fails(exactProp(noCores)) {
		t.Fatal("the exactness property does not catch a DP without the cores dimension")
	}
}

// TestSMDGreedyFeasible: the approximation's selection, started from the least-resource items,
// always fits when those do.
func TestSMDGreedyFeasible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sel, capG, capC := drawKnapsack(t)
		g, c := 0, 0
		for _, jb := range sel {
			small := 0
			for k, it := range jb.items {
				if it.gpus < jb.items[small].gpus || (it.gpus == jb.items[small].gpus && it.cpus < jb.items[small].cpus) {
					small = k
				}
			}
			g += jb.items[small].gpus
			c += jb.items[small].cpus
		}
		for i := range sel {
			small := 0
			for k, it := range sel[i].items {
				if it.gpus < sel[i].items[small].gpus || (it.gpus == sel[i].items[small].gpus && it.cpus < sel[i].items[small].cpus) {
					small = k
				}
			}
			sel[i].small = small
		}
		if g > capG || c > capC {
			return
		}
		pick := smdGreedy(sel, capG, capC, math.Inf(1))
		gg, cc := 0, 0
		for i, k := range pick {
			gg += sel[i].items[k].gpus
			cc += sel[i].items[k].cpus
		}
		if gg > capG || cc > capC {
			t.Fatalf("greedy uses %d GPUs %d cores of %d, %d", gg, cc, capG, capC)
		}
	})
}

// TestSMDLagrangeIsABound: the Lagrangian bound never exceeds the knapsack's optimum (brute
// force), and never the LP relaxation's either.
func TestSMDLagrangeIsABound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sel, capG, capC := drawKnapsack(t)
		want, ok := knapsackBrute(sel, capG, capC)
		if !ok {
			return
		}
		lb := smdLagrange(sel, capG)
		if lb > want+1e-7 {
			t.Fatalf("Lagrangian bound %g above the optimum %g", lb, want)
		}
	})
}

// smdExactFull is smdExact before its table was narrowed to the GPUs and cores the jobs can
// use: the table over the whole capacities (TestSMDExactSameChoices's reference).
func smdExactFull(sel []smdJob, capG, capC int, capM float64) []int {
	W := (capG + 1) * (capC + 1)
	inf := math.Inf(1)
	cur := make([]float64, W)
	memUsed := make([]float64, W)
	for i := range cur {
		cur[i] = inf
	}
	cur[0] = 0
	choice := make([][]int16, len(sel))
	for jn, jb := range sel {
		nxt := make([]float64, W)
		nmem := make([]float64, W)
		for i := range nxt {
			nxt[i] = inf
		}
		ch := make([]int16, W)
		for st, v := range cur {
			if v == inf {
				continue
			}
			g, c := st/(capC+1), st%(capC+1)
			for k, it := range jb.items {
				g2, c2 := g+it.gpus, c+it.cpus
				m2 := memUsed[st] + it.mem
				if g2 > capG || c2 > capC || m2 > capM*(1+1e-12) {
					continue
				}
				s2 := g2*(capC+1) + c2
				if v+it.ratio < nxt[s2] {
					nxt[s2], nmem[s2], ch[s2] = v+it.ratio, m2, int16(k)
				}
			}
		}
		cur, memUsed = nxt, nmem
		choice[jn] = ch
	}
	best := -1
	for st, v := range cur {
		if v < inf && (best < 0 || v < cur[best]) {
			best = st
		}
	}
	if best < 0 {
		return nil
	}
	pick := make([]int, len(sel))
	st := best
	for jn := len(sel) - 1; jn >= 0; jn-- {
		k := int(choice[jn][st])
		pick[jn] = k
		it := sel[jn].items[k]
		g, c := st/(capC+1)-it.gpus, st%(capC+1)-it.cpus
		st = g*(capC+1) + c
	}
	return pick
}

// sameChoicesProp: solve picks exactly the items the table over the whole capacities picks,
// ties and memory included, with capacities far beyond what the jobs use (a800 servers' 96
// cores for jobs that ask for none) as well as binding ones. Larger items mostly have smaller
// ratios (more GPUs, less time), and ratios take a few values, so that the best selections
// fill the capacities and ties are common.
func sameChoicesProp(solve func([]smdJob, int, int, float64) []int) func(*rapid.T) {
	return func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "jobs")
		sel := make([]smdJob, n)
		noCores := rapid.Bool().Draw(t, "no-cores")
		for i := range sel {
			for range rapid.IntRange(1, 4).Draw(t, "items") {
				it := smdItem{gpus: rapid.IntRange(0, 4).Draw(t, "g"), mem: float64(rapid.IntRange(0, 3).Draw(t, "m"))}
				if !noCores {
					it.cpus = rapid.IntRange(0, 6).Draw(t, "c")
				}
				it.ratio = float64(12 - it.gpus - it.cpus/2 + rapid.IntRange(0, 2).Draw(t, "r"))
				sel[i].items = append(sel[i].items, it)
			}
		}
		capG := rapid.IntRange(0, 40).Draw(t, "capG")
		capC := rapid.SampledFrom([]int{0, 3, 10, 768}).Draw(t, "capC")
		capM := rapid.SampledFrom([]float64{2, 6, math.Inf(1)}).Draw(t, "capM")
		got, want := solve(sel, capG, capC, capM), smdExactFull(sel, capG, capC, capM)
		if len(got) != len(want) {
			t.Fatalf("picks %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("picks %v, want %v", got, want)
			}
		}
	}
}

// TestSMDExactSameChoices: narrowing the table changes no choice; a table one GPU short, and
// one that visits the jobs in reverse order (other ties), are caught.
func TestSMDExactSameChoices(t *testing.T) {
	rapid.Check(t, sameChoicesProp(smdExact))
	short := func(sel []smdJob, capG, capC int, capM float64) []int {
		sum := 0
		for _, jb := range sel {
			g := 0
			for _, it := range jb.items {
				g = max(g, it.gpus)
			}
			sum += g
		}
		return smdExact(sel, max(0, min(capG, sum)-1), capC, capM)
	}
	reversed := func(sel []smdJob, capG, capC int, capM float64) []int {
		rev := slices.Clone(sel)
		slices.Reverse(rev)
		pick := smdExact(rev, capG, capC, capM)
		slices.Reverse(pick)
		return pick
	}
	if !teeth.Fails(sameChoicesProp(short)) || !teeth.Fails(sameChoicesProp(reversed)) {
		t.Fatal("the property misses a table one GPU short or other ties")
	}
}
