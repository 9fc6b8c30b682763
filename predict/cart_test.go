package predict

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// splitScore is the impurity (weighted Gini, or SSE of y) of splitting rows by x[f] <= thr,
// computed directly; ok is false if a side has fewer than minLeaf rows.
func splitScore(X [][]float64, class []int, y []float64, classes int, rows []int, f int, thr float64,
	minLeaf int, variance bool) (float64, bool) {
	var l, r []int
	for _, i := range rows {
		if X[i][f] <= thr {
			l = append(l, i)
		} else {
			r = append(r, i)
		}
	}
	if len(l) < minLeaf || len(r) < minLeaf {
		return 0, false
	}
	side := func(s []int) float64 {
		if variance {
			mean := 0.0
			for _, i := range s {
				mean += y[i]
			}
			mean /= float64(len(s))
			sse := 0.0
			for _, i := range s {
				sse += (y[i] - mean) * (y[i] - mean)
			}
			return sse
		}
		cnt := make([]float64, classes)
		for _, i := range s {
			cnt[class[i]]++
		}
		g := 1.0
		for _, c := range cnt {
			g -= (c / float64(len(s))) * (c / float64(len(s)))
		}
		return float64(len(s)) * g
	}
	return side(l) + side(r), true
}

// TestCARTBestSplitBruteForce checks the split search against an exhaustive search over every
// feature and every threshold between distinct values.
func TestCARTBestSplitBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 120).Draw(t, "n")
		nf := rapid.IntRange(1, 4).Draw(t, "features")
		classes := rapid.IntRange(1, 5).Draw(t, "classes")
		minLeaf := rapid.IntRange(1, 4).Draw(t, "minLeaf")
		variance := rapid.Bool().Draw(t, "variance")
		X := make([][]float64, n)
		class := make([]int, n)
		y := make([]float64, n)
		for i := range X {
			X[i] = make([]float64, nf)
			for f := range X[i] {
				X[i][f] = float64(rapid.IntRange(0, 6).Draw(t, "x"))
			}
			class[i] = rapid.IntRange(0, classes-1).Draw(t, "class")
			y[i] = float64(class[i]) + 0.1*float64(rapid.IntRange(0, 3).Draw(t, "jitter"))
		}
		split := SplitGini
		if variance {
			split = SplitVariance
		}
		b := binFeatures(X)
		bld := newCartBuilder(&b, class, y, classes, forestParams{minLeaf: minLeaf, mtry: nf, split: split})
		for i := range bld.idx {
			bld.idx[i] = int32(i)
		}
		feat, code, ok := bld.bestSplit(cartTask{lo: 0, hi: n}, rand.New(rand.NewPCG(1, 2)))

		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		parent, _ := splitScore(X, class, y, classes, all, 0, math.Inf(1), 0, variance)
		best := math.Inf(1)
		for f := 0; f < nf; f++ {
			vals := make([]float64, n)
			for i := range X {
				vals[i] = X[i][f]
			}
			slices.Sort(vals)
			vals = slices.Compact(vals)
			for k := 0; k+1 < len(vals); k++ {
				if s, ok := splitScore(X, class, y, classes, all, f, (vals[k]+vals[k+1])/2, minLeaf, variance); ok {
					best = min(best, s)
				}
			}
		}
		// A split improves when it lowers the impurity by more than rounding: the impurity of
		// equal values computed as a variance can be 1e-34 rather than 0.
		improves := parent-best > 1e-9*math.Max(1, parent) && n >= 2*minLeaf
		if !ok {
			if improves {
				t.Fatalf("no split found, but the best split lowers the impurity from %v to %v", parent, best)
			}
			return
		}
		got, valid := splitScore(X, class, y, classes, all, feat, b.cuts[feat][code], minLeaf, variance)
		if !valid {
			t.Fatalf("split on feature %d at %v leaves fewer than %d rows on a side", feat, b.cuts[feat][code], minLeaf)
		}
		if math.Abs(got-best) > 1e-9*math.Max(1, best) {
			t.Fatalf("split impurity %v, best possible %v", got, best)
		}
	})
}

// cartData is a learnable problem: the class is the bucket of x0 + x1, x2 is noise.
func cartData(n int, seed uint64) ([][]float64, []int, []float64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	X := make([][]float64, n)
	class := make([]int, n)
	y := make([]float64, n)
	for i := range X {
		a, b := rng.Float64(), rng.Float64()
		X[i] = []float64{a, b, rng.Float64()}
		class[i] = min(int((a+b)*2), 3)
		y[i] = float64(class[i])
	}
	return X, class, y
}

// accuracy is the share of rows whose most-voted class is their class.
func accuracy(c classifier, X [][]float64, class []int, classes int) float64 {
	out := make([]float64, classes)
	hit := 0
	for i := range X {
		v := c.vote(X[i], out)
		best := 0
		for k := range v {
			if v[k] > v[best] {
				best = k
			}
		}
		if best == class[i] {
			hit++
		}
	}
	return float64(hit) / float64(len(X))
}

func TestCARTLearns(t *testing.T) {
	X, class, y := cartData(2000, 1)
	Xt, ct, _ := cartData(1000, 2)
	for _, split := range []SplitCriterion{SplitGini, SplitVariance} {
		f := trainCART(X, class, y, 4, forestParams{trees: 20, minLeaf: 2, mtry: 2, split: split, seed: 3})
		if acc := accuracy(f, Xt, ct, 4); acc < 0.85 {
			t.Errorf("%s: held-out accuracy %.3f, want >= 0.85", split, acc)
		}
		// Votes are a distribution.
		v := f.vote(Xt[0], make([]float64, 4))
		s := 0.0
		for _, p := range v {
			s += p
		}
		if math.Abs(s-1) > 1e-6 {
			t.Errorf("%s: votes sum to %v", split, s)
		}
	}
	// A deliberately wrong variant, trained on shuffled classes, is caught by the same bar.
	shuffled := slices.Clone(class)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	f := trainCART(X, shuffled, y, 4, forestParams{trees: 20, minLeaf: 2, mtry: 2, split: SplitGini, seed: 3})
	if acc := accuracy(f, Xt, ct, 4); acc >= 0.85 {
		t.Errorf("shuffled classes still give accuracy %.3f: the bar does not discriminate", acc)
	}
}

func TestCARTDeterministic(t *testing.T) {
	X, class, y := cartData(500, 4)
	p := forestParams{trees: 8, minLeaf: 1, mtry: 1, split: SplitGini, seed: 5}
	a := trainCART(X, class, y, 4, p)
	b := trainCART(X, class, y, 4, p)
	p.seed = 6
	c := trainCART(X, class, y, 4, p)
	differs := false
	for i := range X[:100] {
		va := a.vote(X[i], make([]float64, 4))
		vb := b.vote(X[i], make([]float64, 4))
		vc := c.vote(X[i], make([]float64, 4))
		if !slices.Equal(va, vb) {
			t.Fatalf("same seed, different votes: %v vs %v", va, vb)
		}
		differs = differs || !slices.Equal(va, vc)
	}
	if !differs {
		t.Error("different seeds gave identical forests")
	}
}

// TestCARTDegenerate: constant features, one class, one row, depth limit.
func TestCARTDegenerate(t *testing.T) {
	X := [][]float64{{1, 1}, {1, 1}, {1, 1}}
	f := trainCART(X, []int{0, 1, 1}, []float64{0, 1, 1}, 2, forestParams{trees: 3, mtry: 1, seed: 1})
	v := f.vote([]float64{1, 1}, make([]float64, 2))
	if math.IsNaN(v[0]) || math.Abs(v[0]+v[1]-1) > 1e-6 {
		t.Errorf("constant features: votes %v", v)
	}
	f = trainCART([][]float64{{0}}, []int{0}, []float64{0}, 1, forestParams{trees: 2, mtry: 1, seed: 1})
	if v := f.vote([]float64{math.NaN()}, make([]float64, 1)); v[0] != 1 {
		t.Errorf("single row: votes %v", v)
	}
	Xd, cd, yd := cartData(300, 7)
	f = trainCART(Xd, cd, yd, 4, forestParams{trees: 2, maxDepth: 1, mtry: 3, seed: 1})
	for _, tr := range f.trees {
		if len(tr.nodes) > 3 {
			t.Errorf("depth 1 tree has %d nodes", len(tr.nodes))
		}
	}
}

// TestMalaschitzEmptyLeaf shows the library's NaN votes on a node it cannot split and that
// our adapter skips them.
func TestMalaschitzEmptyLeaf(t *testing.T) {
	X := [][]float64{{1, 1}, {1, 1}, {1, 1}, {1, 1}}
	class := []int{0, 1, 0, 1}
	m := trainMalaschitz(X, class, 2, forestParams{trees: 4, minLeaf: 1, mtry: 1, maxDepth: 3})
	lib := m.f.Vote([]float64{-1, -1}) // goes to the empty side of the forced split x[0] > 0
	if !math.IsNaN(lib[0]) {
		// Each tree's bootstrap is pure (no split at all) with probability 1/8.
		t.Logf("library vote %v: the empty-leaf NaN did not occur this time", lib)
	}
	v := m.vote([]float64{-1, -1}, make([]float64, 2))
	for _, p := range v {
		if math.IsNaN(p) {
			t.Fatalf("adapter vote %v contains NaN", v)
		}
	}
	v = m.vote([]float64{1, 1}, make([]float64, 2))
	if math.Abs(v[0]+v[1]-1) > 1e-9 {
		t.Errorf("adapter vote %v does not sum to 1", v)
	}
}

func TestMalaschitzLearns(t *testing.T) {
	X, class, _ := cartData(1000, 1)
	Xt, ct, _ := cartData(500, 2)
	m := trainMalaschitz(X, class, 4, forestParams{trees: 10, minLeaf: 2, mtry: 2, maxDepth: 12})
	if acc := accuracy(m, Xt, ct, 4); acc < 0.8 {
		t.Errorf("held-out accuracy %.3f, want >= 0.8", acc)
	}
}

// TestVoteMatchesOneTreeAtATime: the interleaved walk of vote gives exactly the sums of
// walking each tree alone, in tree order (forests of fewer, as many and more trees than it
// walks at once).
func TestVoteMatchesOneTreeAtATime(t *testing.T) {
	X, class, y := cartData(600, 5)
	Xt, _, _ := cartData(200, 6)
	for _, trees := range []int{1, voteLanes - 1, voteLanes, 2*voteLanes + 3} {
		f := trainCART(X, class, y, 4, forestParams{trees: trees, minLeaf: 3, mtry: 2, seed: 9})
		got := make([]float64, 4)
		for _, x := range Xt {
			want := make([]float64, 4)
			for k := range f.trees {
				tr := &f.trees[k]
				i := 0
				for tr.nodes[i].feat >= 0 {
					n := tr.nodes[i]
					if x[n.feat] <= n.thr {
						i = int(n.kid)
					} else {
						i = int(n.kid) + 1
					}
				}
				n := tr.nodes[i]
				for _, e := range tr.leaves[n.kid : n.kid-n.feat] {
					want[e.class] += float64(e.frac)
				}
			}
			for c := range want {
				want[c] *= 1 / float64(trees)
			}
			f.vote(x, got)
			for c := range want {
				if got[c] != want[c] {
					t.Fatalf("%d trees: class %d: vote %v, one tree at a time %v", trees, c, got[c], want[c])
				}
			}
		}
	}
}
