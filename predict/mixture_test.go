package predict

import (
	"math"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
)

// TestMixDist checks that the mixture's groups are in order, that its weights sum to one
// and that each source keeps its share of the weight.
func TestMixDist(t *testing.T) {
	f1, f2 := []float64{1, 2, 3}, []float64{4, 5, 6, 7}
	fd := dist{pts: [][]float64{f1, f2}, w: []float64{3, 1}, pre: [][]float64{prefixSums(f1), prefixSums(f2)}}
	g := []float64{0.5, 2, 2.5, 5, 9}
	var sc mixScratch
	d := mixDist(&fd, g, 0.25, &sc)
	var all []float64
	total, fromG := 0.0, 0.0
	for k, pts := range d.pts {
		if len(d.pre[k]) != len(pts)+1 {
			t.Fatalf("group %d: %d prefix sums for %d points", k, len(d.pre[k]), len(pts))
		}
		for i := range pts {
			if got, want := d.pre[k][i+1]-d.pre[k][i], pts[i]; got != want {
				t.Fatalf("group %d: prefix difference %v at %d, want %v", k, got, i, want)
			}
		}
		all = append(all, pts...)
		total += d.w[k]
		for i := range g {
			if &pts[0] == &g[i] { // a run of the group's points
				fromG += d.w[k]
			}
		}
	}
	if !slices.IsSorted(all) || len(all) != len(f1)+len(f2)+len(g) {
		t.Fatalf("points %v: not the sorted union", all)
	}
	if math.Abs(total-1) > 1e-12 {
		t.Errorf("weights sum to %v, want 1", total)
	}
	if math.Abs(fromG-0.25) > 1e-12 {
		t.Errorf("group points weigh %v, want 0.25", fromG)
	}
	if _, ok := newDistribution(&d, 0.4, nil, SourceForest, nil); !ok {
		t.Fatal("mixture gives no distribution")
	}
	// No weight or no points: the forest's distribution unchanged.
	if d := mixDist(&fd, nil, 0.5, &sc); len(d.pts) != 2 {
		t.Errorf("no group points: %d groups, want the forest's 2", len(d.pts))
	}
}

// TestGroupSamples checks the ring's order statistics and its bound.
func TestGroupSamples(t *testing.T) {
	s := newGroupSamples(3, 2)
	for _, y := range []float64{5, 1, 3, 2} {
		s.add("a", y)
	}
	if got := s.appendSorted("a", nil); !slices.Equal(got, []float64{1, 2, 3}) {
		t.Errorf("last 3 of a = %v, want [1 2 3]", got)
	}
	s.add("b", 1)
	s.add("c", 1) // evicts a, the least recently updated
	if got := s.appendSorted("a", nil); got != nil {
		t.Errorf("a after eviction = %v, want nothing", got)
	}
	s.add("", 4)
	if got := s.appendSorted("", nil); got != nil {
		t.Errorf("empty group = %v, want nothing", got)
	}
}

// TestGroupMixPredicts checks that a predictor with GroupMix predicts and learns, that its
// intervals move towards a group's recent runs, and that bad options are refused.
func TestGroupMixPredicts(t *testing.T) {
	for _, bad := range []float64{-0.1, 1, math.NaN(), math.Inf(1)} {
		if _, err := New(Options{GroupMix: bad}); err == nil {
			t.Errorf("GroupMix %v accepted", bad)
		}
	}
	p, err := New(Options{Seed: 1, GroupMix: 0.5, MinSamples: 50, NoCalibration: true})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := New(Options{Seed: 1, MinSamples: 50, NoCalibration: true})
	for i := range 400 {
		g := "g" + string(rune('a'+i%4))
		n := 100.0 * float64(1+i%4)
		if g == "ga" {
			n = 1000 * (1 + float64(i%7)/10)
		}
		j := gpusched.Job{ID: gpusched.JobID("j" + string(rune(i))), GPUs: 1, Features: gpusched.Features{Group: g, User: "u"}}
		for _, pr := range []*Predictor{p, q} {
			if _, err := pr.Predict(&j); err != nil {
				t.Fatal(err)
			}
			if err := pr.Observe(&j, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	j := gpusched.Job{GPUs: 1, Features: gpusched.Features{Group: "ga", User: "u"}}
	e, err := p.Predict(&j)
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != SourceForest || !(e.P10 > 0) || !(e.P90 >= e.P10) {
		t.Fatalf("mixed estimate %+v", e)
	}
	if e.P50 < 900 || e.P50 > 1800 {
		t.Errorf("mixed median %v, want within the group's runs 1000-1600", e.P50)
	}
}

// TestGroupMixAdaptive checks that a group whose recent runs predict it well comes to weigh
// more than the base weight, and that the weight stays within its bounds.
func TestGroupMixAdaptive(t *testing.T) {
	s := newGroupSamples(200, 16)
	for range 50 {
		s.add("g", 1)
	}
	base := s.weight("g", 50, 0.3, true)
	if want := 0.3 * 50 / 58.0; math.Abs(base-want) > 1e-12 {
		t.Fatalf("weight with no score %v, want %v", base, want)
	}
	for range 100 {
		s.addScore("g", 10) // capped at mixScoreCap
	}
	if w := s.weight("g", 50, 0.3, true); !(w > base && w <= 0.98) {
		t.Errorf("weight after good scores %v, want in (%v, 0.98]", w, base)
	}
	for range 200 {
		s.addScore("g", -10)
	}
	if w := s.weight("g", 50, 0.3, true); !(w < base && w >= 0.02) {
		t.Errorf("weight after bad scores %v, want in [0.02, %v)", w, base)
	}
	if w := s.weight("g", 50, 0.3, false); math.Abs(w-0.3*50/58.0) > 1e-12 {
		t.Errorf("non-adaptive weight %v", w)
	}
	s.addScore("unknown", 1) // no panic, nothing recorded
	s.addScore("g", math.NaN())
	if w := s.weight("g", 50, 0.3, true); math.IsNaN(w) {
		t.Error("NaN score term poisoned the weight")
	}
}

// TestGroupAccuracy checks the per-group accuracy a predictor reports: none before a finished
// job with an estimate, then the decayed means of its errors, and a bounded number of groups.
func TestGroupAccuracy(t *testing.T) {
	p := mustNew(t, Options{Seed: 1, MaxKeys: 4})
	if _, ok := p.GroupAccuracy("g"); ok {
		t.Fatal("accuracy before any job")
	}
	j := &gpusched.Job{ID: "a", GPUs: 1, Features: gpusched.Features{Group: "g"}}
	e, err := p.Predict(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Observe(j, e.Iterations*math.E); err != nil {
		t.Fatal(err)
	}
	a, ok := p.GroupAccuracy("g")
	if !ok || a.Jobs != 1 || math.Abs(a.LogError-1) > 1e-9 || math.Abs(a.Bias-1) > 1e-9 || a.Weight != 1 {
		t.Fatalf("after one job 2.7x longer than predicted: %+v %v", a, ok)
	}
	// A job observed without a prediction does not count.
	if err := p.Observe(&gpusched.Job{ID: "b", GPUs: 1, Features: gpusched.Features{Group: "g"}}, 5); err != nil {
		t.Fatal(err)
	}
	if a, _ := p.GroupAccuracy("g"); a.Jobs != 1 {
		t.Fatalf("unpredicted job counted: %+v", a)
	}
	for i := range 10 {
		g := "h" + string(rune('0'+i))
		j := &gpusched.Job{ID: gpusched.JobID(g), GPUs: 1, Features: gpusched.Features{Group: g}}
		if _, err := p.Predict(j); err != nil {
			t.Fatal(err)
		}
		if err := p.Observe(j, 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.gacc.m); n > 4 {
		t.Errorf("%d groups kept, more than MaxKeys 4", n)
	}
	var empty groupAccuracies // maxKeys 0: the default bound, no panic
	empty.add("x", 1, true)
	if _, ok := empty.get("x"); !ok {
		t.Error("zero-value store lost its group")
	}
}

// TestCalibrationFirstEstimateSteps checks the direction of the adaptations on the coverage
// of first estimates: jobs above their interval widen it upwards, for all jobs
// (CalibrationJobStep) and for their user (CalibrationUserStep) only.
func TestCalibrationFirstEstimateSteps(t *testing.T) {
	c := newCalibrator(10, 20, 0, 16)
	c.jobStep, c.userStep = 0.01, 0.01
	f := &gpusched.Features{Group: "g", User: "u"}
	other := &gpusched.Features{Group: "h", User: "v"}
	c.add(f, "b", 0.5)
	var g0, gOther0 [calLevels + 1]float64
	c.grid(f, g0[:])
	c.grid(other, gOther0[:])
	for range 4 {
		c.adaptUser(f, "b", false, true)
	}
	if !(c.jobOff[1] > 0 && c.local["u"].off[1] > 0) {
		t.Fatalf("misses above did not raise the upper levels: all %v, user %v", c.jobOff, c.local["u"].off)
	}
	var g1, gOther1 [calLevels + 1]float64
	c.grid(f, g1[:])
	c.grid(other, gOther1[:])
	hi := calLevels * 9 / 10
	if !(g1[hi] > gOther1[hi] && gOther1[hi] > gOther0[hi]) {
		t.Errorf("90th percentile level: user %v, other user %v (before %v)", g1[hi], gOther1[hi], gOther0[hi])
	}
	// The levels the overall adaptation reads stay those without the offsets.
	var raw [calLevels + 1]float64
	c.gridWith(f, raw[:], false)
	if raw[hi] != g0[hi] {
		t.Errorf("overall grid moved: %v, want %v", raw[hi], g0[hi])
	}
}
