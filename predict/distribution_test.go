package predict

import (
	"math"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// drawDistribution draws a Distribution: a dist of random groups and weights (as drawDist),
// tails of a random scale and, half the time, a random monotone calibration map.
func drawDistribution(t *rapid.T) Distribution {
	d := drawDist(t)
	if !rapid.Bool().Draw(t, "any weight") {
		return Distribution{}
	}
	s := rapid.Float64Range(0.05, 2).Draw(t, "tail scale")
	var g []float64
	if rapid.Bool().Draw(t, "calibrated") {
		g = make([]float64, calLevels+1)
		for m := 1; m < calLevels; m++ {
			g[m] = g[m-1] + rapid.SampledFrom([]float64{0, 0.001, 0.02, 0.05}).Draw(t, "step")
		}
		top := g[calLevels-1] + rapid.Float64Range(0.001, 0.2).Draw(t, "top")
		for m := range g {
			g[m] = math.Min(1-pitEps, math.Max(pitEps, g[m]/top)) // as calibrator.grid keeps it
		}
		g[0], g[calLevels] = 0, 1
	}
	out, ok := newDistribution(&d, s, g, SourceForest, nil)
	if !ok {
		return Distribution{}
	}
	return out
}

// quadMean is the mean log-iterations of d above done by the midpoint rule over the
// calibrated quantile function, 20,000 steps: independent of the closed-form integrals.
func quadMean(d *Distribution, q0 float64) float64 {
	const n = 20000
	sum := 0.0
	for i := 0; i < n; i++ {
		q := q0 + (1-q0)*(float64(i)+0.5)/n
		sum += d.hinv(q)
	}
	return sum / n
}

// TestDistributionAgainstQuadrature: the point estimate (closed-form integrals of the
// piecewise-linear quantile function and its exponential tails) matches a numerical
// integral of the quantile function, unconditioned and given a done; CDF inverts Quantile.
func TestDistributionAgainstQuadrature(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDistribution(t)
		if len(d.grp) == 0 {
			t.Skip("no weight")
		}
		done := 0.0
		if rapid.Bool().Draw(t, "conditioned") {
			done = math.Exp(rapid.Float64Range(-1, 14).Draw(t, "log done"))
		}
		c := d.Given(done)
		if c.tail {
			want := math.Exp(c.from + d.s)
			if math.Abs(c.Point()/want-1) > 1e-9 {
				t.Fatalf("tail point %v, want %v", c.Point(), want)
			}
			return
		}
		got, want := math.Log(c.Point()), quadMean(&d, c.q0)
		// The midpoint rule's error is largest in the log-shaped tails: allow 2e-3 (of a
		// scale of at most 2) there.
		if math.Abs(got-want) > 2e-3*(1+math.Abs(want)) {
			t.Fatalf("mean log %v, quadrature %v (q0 %v)", got, want, c.q0)
		}
		for _, q := range []float64{0.05, 0.1, 0.37, 0.5, 0.9, 0.99} {
			x := c.Quantile(q)
			if done > 0 && !(x >= done) {
				t.Fatalf("quantile %v = %v below done %v", q, x, done)
			}
			// The quantile inverts the distribution function: q lies between the CDF just
			// below and just above it (ties make CDF jump).
			if lo, hi := c.CDF(x*(1-1e-9)), c.CDF(x*(1+1e-9)); lo > q+1e-6 || hi < q-1e-6 {
				t.Fatalf("Quantile(%v) = %v, but CDF is %v just below and %v just above", q, x, lo, hi)
			}
		}
	})
}

// conditionalMonotone is the property that the point, the quantiles and the survival of
// Given(done) move the right way as done grows, and the quantiles stay above done.
func conditionalMonotone(given func(d Distribution, done float64) Distribution) func(*rapid.T) {
	return func(t *rapid.T) {
		d := drawDistribution(t)
		if len(d.grp) == 0 {
			t.Skip("no weight")
		}
		prev := given(d, 0)
		done := 0.0
		for k := 0; k < 30; k++ {
			done += rapid.Float64Range(0, 1.5).Draw(t, "step") * math.Max(1, done)
			c := given(d, done)
			const tol = 1e-9
			if c.Point() < prev.Point()*(1-tol) {
				t.Fatalf("point fell from %v to %v at done %v", prev.Point(), c.Point(), done)
			}
			for _, q := range []float64{0.1, 0.5, 0.9} {
				if c.Quantile(q) < prev.Quantile(q)*(1-tol) {
					t.Fatalf("quantile %v fell from %v to %v at done %v", q, prev.Quantile(q), c.Quantile(q), done)
				}
				if !(c.Quantile(q) >= done*(1-tol)) {
					t.Fatalf("quantile %v = %v below done %v", q, c.Quantile(q), done)
				}
			}
			if c.Survival() > prev.Survival()+tol {
				t.Fatalf("survival rose from %v to %v at done %v", prev.Survival(), c.Survival(), done)
			}
			prev = c
		}
	}
}

// TestGivenMonotone: conditioning on more work done never lowers the estimate; a variant
// that conditions on the wrong side (below done) is caught.
func TestGivenMonotone(t *testing.T) {
	rapid.Check(t, conditionalMonotone(Distribution.Given))
	wrong := func(d Distribution, done float64) Distribution {
		if done <= 0 {
			return d
		}
		c := d.Given(done)
		// Mirror: the mass below done instead of above.
		c.q0, c.survival = 0, 1-c.survival
		c.tail = false
		c.g = nil
		return c
	}
	if !teeth.Fails(conditionalMonotone(wrong)) {
		t.Fatal("conditioning on the wrong side was not caught")
	}
}

// TestDistributionEdges: NaN and out-of-range arguments, and the zero Distribution.
func TestDistributionEdges(t *testing.T) {
	var zero Distribution
	if !math.IsNaN(zero.Point()) || !math.IsNaN(zero.Quantile(0.5)) || !math.IsNaN(zero.CDF(3)) {
		t.Fatal("the zero Distribution should give NaN")
	}
	d := dist{pts: [][]float64{{math.Log(100), math.Log(200)}}, w: []float64{1}}
	x, ok := newDistribution(&d, math.Log1p(0.5), nil, SourceGroup, nil)
	if !ok {
		t.Fatal("no distribution")
	}
	if !math.IsNaN(x.Quantile(math.NaN())) || !math.IsNaN(x.CDF(math.NaN())) {
		t.Fatal("NaN in, NaN out")
	}
	if x.Quantile(0) != 0 || !math.IsInf(x.Quantile(1), 1) || x.CDF(0) != 0 || x.CDF(math.Inf(1)) != 1 {
		t.Fatal("bounds")
	}
	if got := x.Quantile(0.5); math.Abs(got-math.Sqrt(100*200)) > 1e-9 {
		t.Fatalf("median %v", got)
	}
	if x.Given(math.NaN()).Done() != 0 || x.Given(-1).Survival() != 1 {
		t.Fatal("NaN or negative done should give the unconditioned distribution")
	}
	inf := x.Given(math.Inf(1))
	if inf.Survival() != 0 || !math.IsInf(inf.Point(), 1) {
		t.Fatalf("given +Inf: %v %v", inf.Survival(), inf.Point())
	}
	if x.Source() != SourceGroup {
		t.Fatal("source")
	}
}
