package predict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	gpusched "github.com/gpusched/gpusched"
)

// FuzzPredictorBadInput feeds a predictor a stream of jobs whose features and lengths come
// from the fuzzer (NaN, ±Inf, negative and huge values included), interleaved with good jobs.
// Nothing may panic; a bad length must be refused with ErrInvalidIterations, naming the job;
// every estimate must be finite, positive and ordered; and the good jobs must go on being
// predicted and learned from whatever came before (one bad job never stops the others). It
// runs with and without GroupMix and calibration, and with the options of real durations
// (arrival features, calibration on first estimates with job weights).
func FuzzPredictorBadInput(f *testing.F) {
	le := func(vs ...float64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	f.Add(le(100, 1, 256, 0.1, 13), uint8(0))
	f.Add(le(math.NaN(), math.Inf(1), -1, math.Inf(-1), math.NaN()), uint8(1))
	f.Add(le(-5, 0, 0, 0, -3, 1e308, 1e-308, 5e-324), uint8(2))
	f.Add(le(math.Inf(1), math.Copysign(0, -1), math.NaN(), 1e300, 24), uint8(3))
	f.Add([]byte{}, uint8(0))
	f.Add(le(100, 1, 256, 0.1, 13, 7, 8, 3600), uint8(5))
	f.Add(le(math.NaN(), math.Inf(1), -1, math.Inf(-1), math.NaN(), -7, math.Inf(-1), math.NaN()), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var vals []float64
		for len(data) >= 8 {
			vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		if len(vals) > 64 {
			vals = vals[:64]
		}
		o := Options{Seed: 1, Trees: 4, MinSamples: 20, RetrainEvery: 25}
		if mode&1 != 0 {
			o.GroupMix = 0.5
		}
		if mode&2 != 0 {
			o.NoCalibration = true
		}
		if mode&4 != 0 {
			o.ArrivalFeatures = true
			o.CalibrationUserStep = 0.01
			o.GroupMixAdaptive = true
			o.CalibrationJobStep = 0.01
			o.CalibrationAtArrival, o.CalibrationJobWeights = true, true
		}
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		at := func(i int) float64 {
			if len(vals) == 0 {
				return math.NaN()
			}
			return vals[i%len(vals)]
		}
		check := func(e Estimate, what string) {
			t.Helper()
			for _, v := range []float64{e.Iterations, e.P10, e.P50, e.P90} {
				if !finite(v) || v < 0 {
					t.Fatalf("%s: estimate %+v not finite and >= 0", what, e)
				}
			}
			if !(e.P10 <= e.P50 && e.P50 <= e.P90) {
				t.Fatalf("%s: percentiles out of order %+v", what, e)
			}
		}
		for i := range 3 * max(len(vals), 10) {
			// A bad job from the fuzzer's values.
			g := int(math.Abs(at(i+4))) % 3
			if math.IsNaN(at(i + 4)) {
				g = 0
			}
			bad := gpusched.Job{
				ID:      gpusched.JobID("bad" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))),
				GPUs:    int(max(-8, min(64, at(i+1)))),
				Arrival: at(i + 7),
				Features: gpusched.Features{
					Group: "g" + string(rune('0'+g)), User: "u", BatchSize: int(max(-1e6, min(1e6, at(i+2)))),
					LearningRate: at(i + 3), SubmitHour: at(i + 4),
					Numeric: map[string]float64{"x": at(i + 5)},
				},
			}
			e, err := p.Predict(&bad)
			if err != nil {
				t.Fatalf("predict bad job: %v", err)
			}
			check(e, "bad job")
			if _, err := p.Conditional(&bad, at(i+6)); err != nil && !errors.Is(err, ErrInvalidIterations) {
				t.Fatalf("conditional: unexpected error %v", err)
			}
			n := at(i)
			err = p.Observe(&bad, n)
			if ok := finite(n) && n >= 0; ok != (err == nil) {
				t.Fatalf("observe %v: error %v", n, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidIterations) {
				t.Fatalf("observe %v: error %v does not wrap ErrInvalidIterations", n, err)
			}
			// A good job after it.
			good := gpusched.Job{ID: gpusched.JobID("good" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))), GPUs: 1, Arrival: float64(i),
				Features: gpusched.Features{Group: "g9", User: "u", BatchSize: 32, SubmitHour: 3}}
			e, err = p.Predict(&good)
			if err != nil {
				t.Fatalf("predict good job: %v", err)
			}
			check(e, "good job")
			if err := p.Observe(&good, 500); err != nil {
				t.Fatalf("observe good job: %v", err)
			}
		}
		e, _ := p.Predict(&gpusched.Job{GPUs: 1, Features: gpusched.Features{Group: "g9", User: "u", BatchSize: 32, SubmitHour: 3}})
		check(e, "last")
		// Whatever it learned from them saves, restores and answers alike (the online state
		// included: a bad job's arrival features, offsets, mixture runs).
		var buf bytes.Buffer
		if err := p.Save(&buf); err != nil {
			t.Fatalf("save: %v", err)
		}
		q, err := Load(&buf)
		if err != nil {
			t.Fatalf("load what it saved: %v", err)
		}
		for k := range 5 {
			job := gpusched.Job{ID: gpusched.JobID("after" + string(rune('a'+k))), GPUs: 1, Arrival: at(k + 7),
				Features: gpusched.Features{Group: "g" + string(rune('0'+k%3)), User: "u", BatchSize: 32, SubmitHour: 3}}
			e1, err1 := p.Predict(&job)
			e2, err2 := q.Predict(&job)
			if e1 != e2 || (err1 == nil) != (err2 == nil) {
				t.Fatalf("job %d after the restore: %+v (%v), restored %+v (%v)", k, e1, err1, e2, err2)
			}
			o1, _ := p.ObserveOutcome(&job, 100*float64(k+1))
			o2, _ := q.ObserveOutcome(&job, 100*float64(k+1))
			if math.Float64bits(o1.PIT) != math.Float64bits(o2.PIT) || o1.First != o2.First {
				t.Fatalf("job %d after the restore: outcome %+v, restored %+v", k, o1, o2)
			}
		}
		// A history of the fuzzer's jobs for Fit: bad lengths and arrivals are refused with
		// ErrInvalidSample naming the sample; the others fit.
		samples := make([]Sample, 0, 8)
		for i := range min(len(vals), 8) {
			samples = append(samples, Sample{Job: gpusched.Job{ID: "s", GPUs: 1, Arrival: at(i + 1),
				Features: gpusched.Features{Group: "g", LearningRate: at(i + 2)}}, Iterations: at(i)})
		}
		err = p.Fit(samples)
		valid := true
		for _, s := range samples {
			valid = valid && finite(s.Iterations) && s.Iterations >= 0 && finite(s.Job.Arrival)
		}
		if valid != (err == nil) || err != nil && !errors.Is(err, ErrInvalidSample) {
			t.Fatalf("fit %d samples (valid %t): %v", len(samples), valid, err)
		}
		e, err = p.Predict(&gpusched.Job{GPUs: 1, Features: gpusched.Features{Group: "g"}})
		if err != nil {
			t.Fatal(err)
		}
		check(e, "after fit")
		a := p.Accuracy()
		if a.Jobs > 0 && !(a.MedianFactor >= 1 && finite(a.MedianFactor)) {
			t.Fatalf("accuracy %+v", a)
		}
	})
}
