package predict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// pitOf returns the PIT of a value drawn from N(mu, sigma) under a forecast of N(0, 1), kept
// inside [pitEps, 1 - pitEps] as Distribution.pit keeps it: what a forecaster biased by mu and
// over- or under-dispersed by sigma produces.
func pitOf(rng *rand.Rand, mu, sigma float64) float64 {
	z := mu + sigma*rng.NormFloat64()
	return math.Min(1-pitEps, math.Max(pitEps, 0.5*math.Erfc(-z/math.Sqrt2)))
}

// pitGroup is a group whose forecasts are off by mu and sigma (see pitOf).
type pitGroup struct{ mu, sigma float64 }

// worstGroupCoverage feeds a calibrator 1,000 single-job batches from each of two groups of
// one user, then returns the coverage of fresh PITs by each group's calibrated 80% interval
// that is farthest from 80%. grid computes a job's calibration map (the real one, or a broken
// variant).
func worstGroupCoverage(gs [2]pitGroup, seed uint64, grid func(c *calibrator, f *gpusched.Features, dst []float64) []float64) float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := newCalibrator(1000, 20, 0, 1<<10)
	feat := [2]gpusched.Features{{Group: "a", User: "u"}, {Group: "b", User: "u"}}
	for k := 0; k < 1000; k++ {
		for i := range gs {
			c.add(&feat[i], fmt.Sprint(i, "/", k), pitOf(rng, gs[i].mu, gs[i].sigma))
		}
	}
	dst := make([]float64, calLevels+1)
	worst := 0.8
	for i := range gs {
		g := grid(c, &feat[i], dst)
		lo, hi := g[calLevels/10], g[calLevels*9/10]
		in := 0
		const n = 3000
		for k := 0; k < n; k++ {
			if u := pitOf(rng, gs[i].mu, gs[i].sigma); u >= lo && u <= hi {
				in++
			}
		}
		if cov := float64(in) / n; math.Abs(cov-0.8) > math.Abs(worst-0.8) {
			worst = cov
		}
	}
	return worst
}

// calibrationCases are pairs of groups whose forecasts are wrong in different ways: biased,
// overconfident (sigma > 1), underconfident (sigma < 1).
var calibrationCases = [][2]pitGroup{
	{{0, 1}, {0, 1}},
	{{0, 0.4}, {0, 2.5}},
	{{1, 3}, {-1, 0.5}},
	{{0.5, 1}, {-0.5, 1}},
	{{-1, 1.5}, {0, 0.3}},
}

// TestCalibratorGroupCoverage: the group-level calibration reaches nominal coverage (80% +-
// 5 points; the sampling error is about 1.5 points) in each group of every case; calibrating
// with the overall window only, which ignores the groups, misses it.
func TestCalibratorGroupCoverage(t *testing.T) {
	caught := false
	for k, gs := range calibrationCases {
		if w := worstGroupCoverage(gs, uint64(k+1), (*calibrator).grid); math.Abs(w-0.8) > 0.05 {
			t.Errorf("case %v: a group's calibrated 80%% interval holds %.1f%%", gs, 100*w)
		}
		overallOnly := func(c *calibrator, f *gpusched.Features, dst []float64) []float64 {
			return c.grid(&gpusched.Features{}, dst)
		}
		if w := worstGroupCoverage(gs, uint64(k+1), overallOnly); math.Abs(w-0.8) > 0.05 {
			caught = true
		}
	}
	if !caught {
		t.Error("a calibration that ignores the groups reached nominal coverage in every case")
	}
}

// TestCalibratorBatchesCountOnce: a burst of PITs of one batch moves the map as one job
// does, whatever its size; the oldest batches leave the window first.
func TestCalibratorBatchesCountOnce(t *testing.T) {
	f := gpusched.Features{Group: "g"}
	base := func() *calibrator {
		c := newCalibrator(1000, 20, 0, 16)
		for k := 0; k < 99; k++ {
			c.add(&f, fmt.Sprint("single", k), (float64(k)+0.5)/99)
		}
		return c
	}
	one, burst := base(), base()
	one.add(&f, "burst", 0.999)
	for k := 0; k < 50; k++ {
		burst.add(&f, "burst", 0.999)
	}
	if len(burst.global.ring) != 100 || len(burst.global.batches["burst"].pits) != 50 {
		t.Fatalf("%d batches, burst of %d", len(burst.global.ring), len(burst.global.batches["burst"].pits))
	}
	for m := range one.global.grid {
		if d := burst.global.grid[m] - one.global.grid[m]; math.Abs(d) > 1e-12 {
			t.Fatalf("level %d: %v for a burst of 50, %v for one job", m, burst.global.grid[m], one.global.grid[m])
		}
	}
	// Half the burst far below: the batch's weight splits between its two values.
	for k := 0; k < 50; k++ {
		burst.add(&f, "burst", 0.001)
	}
	lo := burst.global.grid[1]
	if !(lo < one.global.grid[1]) {
		t.Fatalf("the burst's low half did not lower the lowest level: %v", lo)
	}
	// Oldest batches leave first.
	small := newCalibrator(3, 20, 0, 16)
	for k := 0; k < 5; k++ {
		small.add(&f, fmt.Sprint(k), float64(k)/10)
	}
	if len(small.global.sorted) != 3 || small.global.sorted[0].u != 0.2 {
		t.Fatalf("window %v", small.global.sorted)
	}
}

// TestPITWindowGridUnitWeights: with single-job batches the grid is the plotting-position
// interpolation i/(n+1) of the sorted PITs, computed here independently.
func TestPITWindowGridUnitWeights(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		var w pitWindow
		us := make([]float64, n)
		for i := range us {
			us[i] = rapid.Float64Range(0, 1).Draw(t, "u")
			w.add(fmt.Sprint(i), us[i], 1000, 1)
		}
		slices.Sort(us)
		pos := append(append([]float64{0}, us...), 1) // position i at level i/(n+1)
		for m := 0; m <= calLevels; m++ {
			x := float64(m) / calLevels * float64(n+1)
			i := min(int(x), n)
			want := pos[i] + (x-float64(i))*(pos[i+1]-pos[i])
			if math.Abs(w.grid[m]-want) > 1e-12 {
				t.Fatalf("level %d: %v, want %v (PITs %v)", m, w.grid[m], want, us)
			}
		}
	})
}

// TestCalibratorGridBounds: the blended map is monotone, starts at 0, ends at 1 and keeps
// its inner levels inside (0, 1), whatever the PITs.
func TestCalibratorGridBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCalibrator(rapid.IntRange(1, 20).Draw(t, "window"), rapid.Float64Range(0, 50).Draw(t, "prior"), rapid.SampledFrom([]float64{0, 0.01, 0.3}).Draw(t, "step"), 4)
		n := rapid.IntRange(1, 60).Draw(t, "jobs")
		for k := 0; k < n; k++ {
			f := gpusched.Features{
				Group: rapid.SampledFrom([]string{"", "a", "b", "c", "d", "e", "f"}).Draw(t, "group"),
				User:  rapid.SampledFrom([]string{"", "u", "v"}).Draw(t, "user"),
			}
			u := rapid.SampledFrom([]float64{0, pitEps, 0.3, 0.5, 1 - pitEps, 1}).Draw(t, "pit")
			c.add(&f, rapid.SampledFrom([]string{"x", "y", fmt.Sprint(k)}).Draw(t, "batch"), u)
		}
		g := c.grid(&gpusched.Features{Group: "a", User: "u"}, make([]float64, calLevels+1))
		if g[0] != 0 || g[calLevels] != 1 {
			t.Fatalf("ends %v %v", g[0], g[calLevels])
		}
		for m := 1; m < calLevels; m++ {
			if g[m] < g[m-1] || !(g[m] >= pitEps && g[m] <= 1-pitEps) {
				t.Fatalf("level %d: %v after %v", m, g[m], g[m-1])
			}
		}
	})
}
