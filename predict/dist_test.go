package predict

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// drawDist draws a valid dist: ascending groups of ascending points (ties included), some
// weights zero.
func drawDist(t *rapid.T) dist {
	ng := rapid.IntRange(1, 6).Draw(t, "groups")
	var d dist
	lo := rapid.Float64Range(0, 3).Draw(t, "lo")
	for g := 0; g < ng; g++ {
		np := rapid.IntRange(0, 5).Draw(t, "points")
		var pts []float64
		for k := 0; k < np; k++ {
			lo += rapid.SampledFrom([]float64{0, 0.25, 1}).Draw(t, "step")
			pts = append(pts, lo)
		}
		d.pts = append(d.pts, pts)
		d.w = append(d.w, rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, "w"))
	}
	return d
}

// TestPriorDist: the prior's median is PriorIterations and its 10th percentile near the
// log-normal's.
func TestPriorDist(t *testing.T) {
	d := priorDist(5000, 1.5)
	x, ok := newDistribution(&d, math.Log1p(0.5), nil, SourcePrior, nil)
	if !ok {
		t.Fatal("no distribution")
	}
	if m := x.Quantile(0.5); math.Abs(m-5000) > 1e-6 {
		t.Errorf("prior median %v, want 5000", m)
	}
	if z := (math.Log(x.Quantile(0.1)) - math.Log(5000)) / 1.5; math.Abs(z+1.2816) > 0.1 {
		t.Errorf("prior p10 at z = %v, want about -1.28", z)
	}
}

func TestFitBins(t *testing.T) {
	y := []float64{5, 1, 1, 1, 2, 3, 4, 4, 4, 4, 6, 7, 8, 9, 10, 10}
	b := fitBins(y, 4)
	// Every bin is non-empty, every target lands in the bin whose points contain it.
	seen := make([]int, b.classes())
	for _, v := range y {
		c := b.class(v)
		seen[c]++
		if !slices.Contains(b.points[c], v) && len(b.points[c]) == len(y) {
			t.Errorf("target %v not among bin %d's points", v, c)
		}
		if c > 0 && v < b.edges[c-1] || c < len(b.edges) && v >= b.edges[c] {
			t.Errorf("target %v in bin %d with edges %v", v, c, b.edges)
		}
	}
	for c, n := range seen {
		if n == 0 {
			t.Errorf("bin %d empty (edges %v)", c, b.edges)
		}
	}
	// Ties never straddle an edge and there are at most 4 bins.
	if b.classes() > 4 {
		t.Errorf("%d bins", b.classes())
	}
	one := fitBins([]float64{3, 3, 3}, 8)
	if one.classes() != 1 || one.class(3) != 0 || one.class(100) != 0 {
		t.Errorf("constant targets: %+v", one)
	}
}
