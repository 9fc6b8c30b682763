package predict

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// TestFirstPIT checks the PIT read from a job's kept first quantiles against the exact
// distribution function of the distribution they were taken from (an independent method: the
// knots, not the quantile grid), for forest-like distributions of every shape rapid draws:
// within one step of the grid (2.5% of probability; both are ascending and agree at the kept
// levels, so no more can separate them), ascending in y, exact at the kept levels; and, where
// the distribution is linear between two levels, exact between them too.
func TestFirstPIT(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Groups of weighted points in order, as the forest's bins and a mixture give them.
		var d dist
		all := rapid.SliceOfN(rapid.Float64Range(0, 15), 1, 80).Draw(t, "pts")
		for i := range all {
			all[i] = math.Round(all[i]*64) / 64 // distinct points apart, as the forest's bins are
		}
		sortFloats(all)
		for len(all) > 0 {
			n := rapid.IntRange(1, len(all)).Draw(t, "group size")
			d.pts = append(d.pts, all[:n])
			d.w = append(d.w, rapid.Float64Range(0.01, 1).Draw(t, "w"))
			all = all[n:]
		}
		s := math.Log1p(rapid.Float64Range(0.05, 2).Draw(t, "tail"))
		dd, ok := newDistribution(&d, s, nil, SourceForest, nil)
		if !ok {
			t.Skip("no distribution")
		}
		q := firstQuantiles(&dd)
		prev := 0.0
		for k := -40; k <= 200; k++ {
			y := float64(k) / 10
			u := firstPIT(q, y, s)
			want := math.Min(1-pitEps, math.Max(pitEps, dd.fcdf(y)))
			if lo, hi, ok := plateau(q, y); ok {
				// y is a point of mass (a run of equal quantiles): any PIT in its span.
				if !(u >= lo && u <= hi) {
					t.Fatalf("y %v: PIT %v outside the span [%v, %v] of its point of mass", y, u, lo, hi)
				}
			} else if math.IsNaN(u) || math.Abs(u-want) > 1.0/calLevels+1e-9 {
				t.Fatalf("y %v: PIT %v from the kept quantiles, %v from the distribution", y, u, want)
			}
			if u < prev {
				t.Fatalf("y %v: PIT %v below %v at a smaller y", y, u, prev)
			}
			prev = u
		}
		for k, l := range firstLevels {
			if k > 0 && q[k] == q[k-1] || k < len(q)-1 && q[k] == q[k+1] {
				continue // a run of equal quantiles: its middle level
			}
			if u := firstPIT(q, float64(q[k]), s); math.Abs(u-l) > 1e-6 {
				t.Fatalf("level %v: PIT %v at its own quantile", l, u)
			}
		}
	})
}

// plateau returns the levels spanned by the kept quantiles equal to y, when two or more are.
func plateau(q []float32, y float64) (lo, hi float64, ok bool) {
	n := 0
	for k, v := range q {
		if float64(v) == y {
			if n == 0 {
				lo = firstLevels[k]
			}
			hi = firstLevels[k]
			n++
		}
	}
	return lo, hi, n >= 2
}

func sortFloats(v []float64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// TestFirstPITBadInput: malformed kept quantiles or a NaN length give NaN (the caller falls
// back to the PIT at completion), never a panic or an out-of-range PIT.
func TestFirstPITBadInput(t *testing.T) {
	good := make([]float32, len(firstLevels))
	for k := range good {
		good[k] = float32(k)
	}
	nan := append([]float32(nil), good...)
	nan[3] = float32(math.NaN())
	inf := append([]float32(nil), good...)
	inf[40] = float32(math.Inf(1))
	desc := append([]float32(nil), good...)
	desc[5], desc[6] = desc[6], desc[5]
	for _, c := range []struct {
		name string
		q    []float32
		y, s float64
	}{{"nil", nil, 1, 0.4}, {"short", good[:10], 1, 0.4}, {"NaN quantile", nan, 1, 0.4},
		{"infinite quantile", inf, 1, 0.4}, {"descending", desc, 1, 0.4}, {"NaN y", good, math.NaN(), 0.4},
		{"zero scale", good, 1, 0}} {
		if u := firstPIT(c.q, c.y, c.s); !math.IsNaN(u) {
			t.Errorf("%s: PIT %v, want NaN", c.name, u)
		}
	}
	for _, y := range []float64{math.Inf(-1), -1e300, 1e300, math.Inf(1)} {
		if u := firstPIT(good, y, 0.4); !(u >= pitEps && u <= 1-pitEps) {
			t.Errorf("y %v: PIT %v out of range", y, u)
		}
	}
}

// TestCalibratorJobWeights: with job weights a burst of fifty PITs moves the map as fifty
// single jobs do (and not as one, the batch weighting of TestCalibratorBatchesCountOnce);
// setJobWeights on a calibrator filled without them gives the same map.
func TestCalibratorJobWeights(t *testing.T) {
	f := gpusched.Features{Group: "g"}
	fill := func(jobs bool, burst bool) *calibrator {
		c := newCalibrator(1000, 20, 0, 16)
		c.jobWeights = jobs
		for k := 0; k < 99; k++ {
			c.add(&f, fmt.Sprint("single", k), (float64(k)+0.5)/99)
		}
		for k := 0; k < 50; k++ {
			key := "burst"
			if !burst {
				key = fmt.Sprint("one", k)
			}
			c.add(&f, key, 0.999)
		}
		return c
	}
	burst, singles, batch := fill(true, true), fill(true, false), fill(false, true)
	for _, w := range []struct {
		name string
		a, b *pitWindow
	}{{"overall", &burst.global, &singles.global}, {"group", burst.groups["g"], singles.groups["g"]}} {
		for m := range w.a.grid {
			if d := w.a.grid[m] - w.b.grid[m]; math.Abs(d) > 1e-12 {
				t.Fatalf("%s level %d: %v for a burst of 50, %v for 50 single jobs", w.name, m, w.a.grid[m], w.b.grid[m])
			}
		}
	}
	if hi := calLevels * 3 / 4; !(burst.global.grid[hi] > batch.global.grid[hi]+0.1) {
		t.Fatalf("75th percentile level %v with job weights, %v with batch weights: the burst did not count as 50",
			burst.global.grid[hi], batch.global.grid[hi])
	}
	batch.setJobWeights(true)
	for m := range batch.global.grid {
		if batch.global.grid[m] != burst.global.grid[m] || batch.groups["g"].grid[m] != burst.groups["g"].grid[m] {
			t.Fatalf("level %d after setJobWeights: %v, want %v", m, batch.global.grid[m], burst.global.grid[m])
		}
	}
}

// TestCalibrationAtArrival: a job predicted while its group's runs were short and observed
// after the group's runs had turned long is calibrated on where it fell in its first
// distribution (far in the upper tail), not in the one it would get at its completion (where
// it is typical).
func TestCalibrationAtArrival(t *testing.T) {
	for _, atArrival := range []bool{false, true} {
		o := Options{Seed: 1, Trees: 4, MinSamples: 1 << 20, GroupMix: 0.3, CalibrationAtArrival: atArrival}
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		job := func(i int) *gpusched.Job {
			return &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: 1, Features: gpusched.Features{Group: "g", User: "u"}}
		}
		for i := range 30 {
			if _, err := p.Predict(job(i)); err != nil {
				t.Fatal(err)
			}
			if err := p.Observe(job(i), 100); err != nil {
				t.Fatal(err)
			}
		}
		x := job(1000)
		first, err := p.Distribution(x, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 30; i < 60; i++ {
			if err := p.Observe(job(i), 1e6); err != nil {
				t.Fatal(err)
			}
		}
		out, err := p.ObserveOutcome(x, 1e6)
		if err != nil {
			t.Fatal(err)
		}
		c := p.cal[SourceGroup]
		b := c.global.batches[batchKey(&x.Features, &History{GroupRuns: 30}, true, 0)]
		if b == nil || len(b.pits) != 1 {
			t.Fatalf("at arrival %v: the job's batch is not in the window", atArrival)
		}
		got := b.pits[0]
		want := out.PIT
		if atArrival {
			want = math.Min(1-pitEps, first.CDF(1e6))
		}
		if math.Abs(got-want) > 0.01 {
			t.Errorf("at arrival %v: calibrated on PIT %v, want %v (first distribution %v, at completion %v)",
				atArrival, got, want, first.CDF(1e6), out.PIT)
		}
		if atArrival && !(got > 0.99 && out.PIT < 0.9) {
			t.Errorf("PIT %v in the first distribution, %v at completion: the test does not tell them apart", got, out.PIT)
		}
	}
}

// TestSaveLoadJobWeights: with CalibrationJobWeights a restored predictor answers every later
// call exactly as the original (its calibration maps weigh every job 1 from the start, not
// only once a window is next updated).
func TestSaveLoadJobWeights(t *testing.T) {
	recs := workload(t, 1600, 11)
	ev := replayEvents(recs)
	o := persistOptions()
	o.CalibrationJobWeights = true
	orig := mustNew(t, o)
	cut := len(ev) / 2
	for _, e := range ev[:cut] {
		step(t, orig, recs, e)
	}
	var buf bytes.Buffer
	if err := orig.Save(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range ev[cut:] {
		a, b := step(t, orig, recs, e), step(t, back, recs, e)
		if !slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }) {
			t.Fatalf("event %d after the restore (job %d, arrival %v): original %v, restored %v", k, e.i, e.arrive, a, b)
		}
	}
}
