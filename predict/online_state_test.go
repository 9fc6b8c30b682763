package predict

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// onlineOptions draws options that learn online beside the calibration windows: the group
// mixture (fixed or adaptive), the arrival features, the per-user and per-job tail offsets,
// calibration on first estimates and by job weights, on the small rings of persistOptions.
func onlineOptions(rt *rapid.T) Options {
	o := persistOptions()
	o.Seed = rapid.Uint64Range(1, 5).Draw(rt, "seed")
	if rapid.Bool().Draw(rt, "mix") {
		o.GroupMix = 0.3
		o.GroupMixRuns = rapid.SampledFrom([]int{5, 200}).Draw(rt, "mix runs")
		o.GroupMixAdaptive = rapid.Bool().Draw(rt, "mix adaptive")
	}
	o.ArrivalFeatures = rapid.Bool().Draw(rt, "arrival")
	o.CalibrationUserStep = rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(rt, "user step")
	o.CalibrationUserBound = rapid.SampledFrom([]float64{0, 0.02}).Draw(rt, "user bound")
	o.CalibrationJobStep = rapid.SampledFrom([]float64{0, 0.01}).Draw(rt, "job step")
	o.CalibrationAtArrival = rapid.Bool().Draw(rt, "at arrival")
	o.CalibrationJobWeights = rapid.Bool().Draw(rt, "job weights")
	o.NoCalibration = rapid.IntRange(0, 9).Draw(rt, "no calibration") == 0
	o.MaxPending = rapid.SampledFrom([]int{40, 300}).Draw(rt, "max pending")
	return o
}

// stepAll is step, and after a finish the job's group's accuracy (GroupAccuracy).
func stepAll(t testing.TB, p *Predictor, recs []trace.Record, e replayEvent) []float64 {
	out := step(t, p, recs, e)
	if !e.arrive {
		g, ok := p.GroupAccuracy(recs[e.i].Job.Features.Group)
		b := 0.0
		if ok {
			b = 1
		}
		out = append(out, b, float64(g.Jobs), g.Weight, g.LogError, g.Bias, g.Coverage)
	}
	return out
}

// firstDifference runs the events through a and b and returns the index of the first whose
// answers differ in any bit (-1: none).
func firstDifference(t testing.TB, a, b *Predictor, recs []trace.Record, ev []replayEvent) int {
	for k, e := range ev {
		x, y := stepAll(t, a, recs, e), stepAll(t, b, recs, e)
		if !slices.EqualFunc(x, y, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) }) {
			return k
		}
	}
	return -1
}

// restoreWays restores p in the three ways a host can save it: whole (Save, Load), by parts
// (SaveModel and SaveLearned, RestoreSplit), and from a base written earlier (base, by
// SaveBase, or a new one when BaseKey says one is due, as a host does) and a delta written
// now (SaveDelta, RestoreDelta; skipped when base is nil).
func restoreWays(t testing.TB, p *Predictor, base []byte, baseKey string) map[string]*Predictor {
	t.Helper()
	out := map[string]*Predictor{}
	var whole bytes.Buffer
	if err := p.Save(&whole); err != nil {
		t.Fatal(err)
	}
	q, err := Load(&whole)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	out["whole"] = q
	var m, l bytes.Buffer
	if _, err := p.SaveModel(&m); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SaveLearned(&l); err != nil {
		t.Fatal(err)
	}
	q = mustNew(t, Options{})
	if err := q.RestoreSplit(m.Bytes(), l.Bytes()); err != nil {
		t.Fatalf("restore split: %v", err)
	}
	out["split"] = q
	if base != nil {
		if p.BaseKey() != baseKey {
			var b bytes.Buffer
			if _, err := p.SaveBase(&b); err != nil {
				t.Fatal(err)
			}
			base = b.Bytes()
		}
		var d bytes.Buffer
		if _, err := p.SaveDelta(&d); err != nil {
			t.Fatal(err)
		}
		q = mustNew(t, Options{})
		if err := q.RestoreDelta(base, d.Bytes()); err != nil {
			t.Fatalf("restore delta: %v", err)
		}
		out["delta"] = q
	}
	return out
}

// TestRestoreOnlineState: for random option sets, among them every option that learns online
// (GroupMix, GroupMixAdaptive, ArrivalFeatures, CalibrationUserStep, CalibrationJobStep,
// CalibrationAtArrival, CalibrationJobWeights), a predictor restored mid-run from its saved
// state — whole, by parts, or from a base written earlier and a delta — answers every later
// call bit for bit as the one that ran on (estimates, conditional estimates, quantiles,
// outcomes, group accuracies), through retrainings, and then saves to the same bytes.
// TestRestoreOnlineStateCatchesDroppedParts shows that each part of the online state matters
// to it.
func TestRestoreOnlineState(t *testing.T) {
	recs := workload(t, 260, 23)
	ev := replayEvents(recs)
	rapid.Check(t, func(rt *rapid.T) {
		o := onlineOptions(rt)
		cut := rapid.IntRange(1, len(ev)-1).Draw(rt, "cut")
		baseAt := rapid.IntRange(0, cut).Draw(rt, "base at")
		// run returns a predictor that ran the events before the cut, and the base it
		// wrote at baseAt: the same calls give the same predictor.
		run := func() (*Predictor, []byte, string) {
			p := mustNew(t, o)
			var base []byte
			key := ""
			for k := 0; k <= cut; k++ {
				if k == baseAt {
					var b bytes.Buffer
					var err error
					if key, err = p.SaveBase(&b); err != nil {
						rt.Fatal(err)
					}
					base = b.Bytes()
				}
				if k < cut {
					stepAll(t, p, recs, ev[k])
				}
			}
			return p, base, key
		}
		p, base, key := run()
		ways := restoreWays(t, p, base, key)
		rest := ev[cut:]
		// The original goes on once per restored copy: the same run again (not a copy
		// restored from its state, which is what is tested).
		for _, way := range []string{"whole", "split", "delta"} {
			q := ways[way]
			if q == nil {
				continue
			}
			orig, _, _ := run()
			if k := firstDifference(t, orig, q, recs, rest); k >= 0 {
				rt.Fatalf("%s: event %d after the restore (job %d, arrival %v) answered differently", way, cut+k, rest[k].i, rest[k].arrive)
			}
			a, _ := orig.MarshalJSON()
			b, _ := q.MarshalJSON()
			if !bytes.Equal(a, b) {
				rt.Fatalf("%s: the states differ at the end", way)
			}
		}
	})
}

// TestRestoreOnlineStateCatchesDroppedParts: a state with one part of the online state
// dropped (as saves did before it was added) restores a predictor that answers differently
// from the one that ran on, so TestRestoreOnlineState would catch a save or a restore that
// lost it.
func TestRestoreOnlineStateCatchesDroppedParts(t *testing.T) {
	recs := workload(t, 260, 23)
	ev := replayEvents(recs)
	cut := len(ev) / 2
	for _, c := range []struct {
		name string
		o    func(*Options)
		drop func(st map[string]any)
	}{
		{"group mixture", func(o *Options) { o.GroupMix, o.GroupMixAdaptive = 0.3, true }, func(st map[string]any) {
			delete(st["online"].(map[string]any), "mix")
		}},
		{"group mixture's scores", func(o *Options) { o.GroupMix, o.GroupMixAdaptive = 0.3, true }, func(st map[string]any) {
			for _, r := range st["online"].(map[string]any)["mix"].(map[string]any)["groups"].(map[string]any) {
				r.(map[string]any)["score"] = 0
			}
		}},
		{"arrival store", func(o *Options) { o.ArrivalFeatures = true }, func(st map[string]any) {
			delete(st["online"].(map[string]any), "arrivals")
		}},
		{"remembered jobs' arrival features", func(o *Options) { o.ArrivalFeatures = true }, func(st map[string]any) {
			for _, pj := range st["pending"].([]any) {
				delete(pj.(map[string]any), "extra")
			}
		}},
		{"user offsets", func(o *Options) { o.CalibrationUserStep = 0.05 }, func(st map[string]any) {
			delete(st["online"].(map[string]any), "offsets")
		}},
		{"job offsets", func(o *Options) { o.CalibrationJobStep = 0.01 }, func(st map[string]any) {
			delete(st["online"].(map[string]any), "offsets")
		}},
		{"first quantiles", func(o *Options) { o.CalibrationAtArrival = true }, func(st map[string]any) {
			for _, pj := range st["pending"].([]any) {
				delete(pj.(map[string]any), "extra")
			}
		}},
		{"group accuracies", func(*Options) {}, func(st map[string]any) {
			delete(st["online"].(map[string]any), "group_accuracy")
		}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			o := persistOptions()
			c.o(&o)
			run := func() *Predictor {
				p := mustNew(t, o)
				for _, e := range ev[:cut] {
					stepAll(t, p, recs, e)
				}
				return p
			}
			p := run()
			b, err := p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]any
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			c.drop(st)
			if b, err = json.Marshal(st); err != nil {
				t.Fatal(err)
			}
			q, err := Load(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("the state without it does not load: %v", err)
			}
			whole := restoreWays(t, p, nil, "")["whole"]
			if k := firstDifference(t, run(), whole, recs, ev[cut:]); k >= 0 {
				t.Fatalf("the whole state restored answers differently at event %d", cut+k)
			}
			if firstDifference(t, p, q, recs, ev[cut:]) < 0 {
				t.Fatal("without it the restored predictor answers alike: the property would not catch its loss")
			}
		})
	}
}

// onlinePredictor returns a small predictor with every option that learns online, after a
// replay of 120 jobs and one job left waiting: its state has every part of the online section.
func onlinePredictor(t testing.TB) *Predictor {
	t.Helper()
	recs := workload(t, 120, 2)
	o := persistOptions()
	o.Trees, o.Window, o.MinSamples, o.MinLeaf = 2, 60, 30, 5
	o.GroupMix, o.GroupMixAdaptive, o.ArrivalFeatures = 0.3, true, true
	o.CalibrationUserStep, o.CalibrationJobStep, o.CalibrationAtArrival = 0.01, 0.01, true
	p := mustNew(t, o)
	for _, e := range replayEvents(recs) {
		step(t, p, recs, e)
	}
	if _, err := p.Predict(&recs[0].Job); err != nil { // remembered again, with its extras
		t.Fatal(err)
	}
	return p
}

// TestCalibrationUserBound: however many jobs of a user miss on one side, its offsets stay
// within Options.CalibrationUserBound (and reach it), and the option is validated.
func TestCalibrationUserBound(t *testing.T) {
	for _, bound := range []float64{0, 0.03, 0.2} {
		p := mustNew(t, Options{CalibrationUserStep: 0.05, CalibrationUserBound: bound})
		c := p.cal[SourcePrior]
		f := gpusched.Features{User: "u", Group: "g"}
		want := userBound(bound)
		lo, hi := 0.0, 0.0
		for k := range 200 {
			c.add(&f, "b"+strconv.Itoa(k), 0.99)
			c.adaptUser(&f, "b"+strconv.Itoa(k), k%2 == 0, k%2 == 1)
			o := c.local["u"].off
			if math.Abs(o[0]) > want || math.Abs(o[1]) > want {
				t.Fatalf("bound %v: offsets %v after %d misses", bound, o, k+1)
			}
			lo, hi = min(lo, o[0]), max(hi, o[1])
		}
		if lo != -want || hi != want {
			t.Errorf("bound %v: offsets reached %v and %v in 200 misses, want -%v and %v", bound, lo, hi, want, want)
		}
	}
	for _, bad := range []float64{-0.1, 0.6, math.NaN(), math.Inf(1)} {
		if _, err := New(Options{CalibrationUserBound: bad}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("CalibrationUserBound %v: %v", bad, err)
		}
	}
}

// TestLoadStateBeforeOnline: a state written before the online section existed (by b1cf4e4,
// with GroupMix, ArrivalFeatures, CalibrationUserStep, CalibrationJobStep and
// CalibrationAtArrival set) still restores, with those parts empty as it did then, goes on
// learning, and then saves them.
func TestLoadStateBeforeOnline(t *testing.T) {
	b, err := os.ReadFile("testdata/state-before-online.json")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"online"`)) || bytes.Contains(b, []byte(`"extra"`)) {
		t.Fatal("the old state has an online section")
	}
	p, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the old state does not load: %v", err)
	}
	if o := p.Options(); !(o.GroupMix > 0 && o.ArrivalFeatures && o.CalibrationUserStep > 0 && o.CalibrationAtArrival) {
		t.Fatalf("options %+v", o)
	}
	if len(p.mix.m) != 0 || len(p.arr.groups) != 0 || len(p.gacc.m) != 0 {
		t.Fatal("the online parts are not empty")
	}
	recs := workload(t, 60, 9)
	for _, e := range replayEvents(recs) {
		stepAll(t, p, recs, e)
	}
	if len(p.mix.m) == 0 || len(p.arr.groups) == 0 || len(p.gacc.m) == 0 {
		t.Fatal("the online parts learned nothing")
	}
	saved, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Load(bytes.NewReader(saved))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := q.MarshalJSON(); !bytes.Equal(saved, again) || !bytes.Contains(saved, []byte(`"online"`)) {
		t.Fatal("the state it saves after learning does not hold the online section, or restores differently")
	}
}
