package predict

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// drawDist draws a valid dist: ascending groups of ascending points, some weights zero.
func drawDist(t *rapid.T) dist {
	ng := rapid.IntRange(1, 6).Draw(t, "groups")
	d := dist{median: rapid.Bool().Draw(t, "median")}
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
	if rapid.Bool().Draw(t, "sums") { // the forest's precomputed group sums
		for _, pts := range d.pts {
			s := 0.0
			for _, v := range pts {
				s += v
			}
			d.sums = append(d.sums, s)
		}
	}
	return d
}

// bruteSummary computes the summary by flattening the points with their weights, filtering,
// sorting and walking: an independent implementation.
func bruteSummary(d dist, after float64) summary {
	type wp struct{ v, w float64 }
	var all []wp
	for g, pts := range d.pts {
		for _, v := range pts {
			if v > after && d.w[g] > 0 {
				all = append(all, wp{v, d.w[g] / float64(len(pts))})
			}
		}
	}
	var s summary
	if len(all) == 0 {
		return s
	}
	slices.SortStableFunc(all, func(a, b wp) int { return cmp.Compare(a.v, b.v) })
	var sum float64
	for _, p := range all {
		s.mass += p.w
		sum += p.w * p.v
	}
	q := func(f float64) float64 {
		c := 0.0
		for _, p := range all {
			c += p.w
			if c >= f*s.mass*(1-1e-9) {
				return p.v
			}
		}
		return all[len(all)-1].v
	}
	s.p10, s.p50, s.p90 = q(0.1), q(0.5), q(0.9)
	s.point = sum / s.mass
	if d.median {
		s.point = s.p50
	}
	return s
}

func TestDistSummaryBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDist(t)
		after := rapid.Float64Range(-1, 12).Draw(t, "after")
		got, want := d.summarize(after), bruteSummary(d, after)
		if math.Abs(got.mass-want.mass) > 1e-9 {
			t.Fatalf("mass %v, want %v", got.mass, want.mass)
		}
		if want.mass == 0 {
			return
		}
		for _, c := range [][3]any{{"point", got.point, want.point}, {"p10", got.p10, want.p10},
			{"p50", got.p50, want.p50}, {"p90", got.p90, want.p90}} {
			if math.Abs(c[1].(float64)-c[2].(float64)) > 1e-9 {
				t.Fatalf("%s = %v, want %v (dist %+v, after %v)", c[0], c[1], c[2], d, after)
			}
		}
	})
}

// TestDistSummaryMonotone: the truncated point estimate and percentiles never decrease as the
// truncation point rises, and lie above it.
func TestDistSummaryMonotone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDist(t)
		prev := summary{point: math.Inf(-1), p10: math.Inf(-1), p50: math.Inf(-1), p90: math.Inf(-1)}
		for after := -0.5; after < 12; after += 0.125 {
			s := d.summarize(after)
			if s.mass == 0 {
				break
			}
			const tol = 1e-12
			if s.point < prev.point-tol || s.p10 < prev.p10-tol || s.p50 < prev.p50-tol || s.p90 < prev.p90-tol {
				t.Fatalf("summary fell at %v: %+v after %+v", after, s, prev)
			}
			if s.p10 <= after || s.point <= after {
				t.Fatalf("summary %+v not above %v", s, after)
			}
			prev = s
		}
	})
}

func TestPriorDist(t *testing.T) {
	d := priorDist(5000, 1.5)
	s := d.summarize(math.Inf(-1))
	if math.Abs(math.Exp(s.point)-5000) > 1e-6 {
		t.Errorf("prior median %v, want 5000", math.Exp(s.point))
	}
	// The 10th percentile of 17 quantile points is the 2nd point: Phi^-1(1.5/17) ~ -1.35.
	if z := (s.p10 - math.Log(5000)) / 1.5; math.Abs(z+1.352) > 0.01 {
		t.Errorf("prior p10 at z = %v", z)
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
