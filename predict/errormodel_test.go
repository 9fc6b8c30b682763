package predict

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// Every kind keeps each prediction within its bound, and the seeded kinds draw per job: a
// job's prediction does not depend on which other jobs are in the workload.
func TestErrorModelWithinBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom([]ErrorKind{NoError, LogUniform, Under, Over, Adversarial}).Draw(t, "kind")
		m := ErrorModel{Kind: kind, Mu: rapid.Float64Range(1, 64).Draw(t, "mu"), Seed: rapid.Uint64().Draw(t, "seed")}
		n := rapid.IntRange(1, 40).Draw(t, "jobs")
		truth := map[gpusched.JobID]float64{}
		for i := range n {
			truth[gpusched.JobID(fmt.Sprint("j", i))] = rapid.Float64Range(1, 1e7).Draw(t, "size")
		}
		got, err := m.Perturb(truth)
		if err != nil {
			t.Fatal(err)
		}
		for id, v := range truth {
			f := got[id] / v
			if f < 1/m.Bound()*(1-1e-12) || f > m.Bound()*(1+1e-12) {
				t.Fatalf("%v: job %s factor %v outside [1/%v, %v]", m, id, f, m.Bound(), m.Bound())
			}
		}
		if kind == LogUniform {
			one, _ := m.Perturb(map[gpusched.JobID]float64{"j0": truth["j0"]})
			if one["j0"] != got["j0"] {
				t.Fatalf("job j0 predicted %v alone and %v among others", one["j0"], got["j0"])
			}
		}
	})
}

// Adversarial predictions reverse the order of the jobs within a factor mu of the median
// (mirrored about it: 40 looks like 250 and 250 like 40); jobs farther away are pulled in by
// the whole factor and keep their order.
func TestAdversarialReversesOrder(t *testing.T) {
	truth := map[gpusched.JobID]float64{"a": 10, "b": 40, "c": 100, "d": 250, "e": 10000}
	got, err := ErrorModel{Kind: Adversarial, Mu: 4}.Perturb(truth)
	if err != nil {
		t.Fatal(err)
	}
	want := map[gpusched.JobID]float64{"a": 40, "b": 160, "c": 100, "d": 62.5, "e": 2500}
	for id, w := range want {
		if math.Abs(got[id]-w) > 1e-9 {
			t.Errorf("job %s predicted %v, want %v", id, got[id], w)
		}
	}
	under, _ := ErrorModel{Kind: Under, Mu: 4}.Perturb(truth)
	over, _ := ErrorModel{Kind: Over, Mu: 4}.Perturb(truth)
	if under["e"] != 2500 || over["a"] != 40 {
		t.Errorf("under %v over %v", under, over)
	}
}

func TestLogNormalSpread(t *testing.T) {
	truth := map[gpusched.JobID]float64{}
	for i := range 4000 {
		truth[gpusched.JobID(fmt.Sprint(i))] = 100
	}
	got, err := ErrorModel{Kind: LogNormal, Sigma: 1, Seed: 3}.Perturb(truth)
	if err != nil {
		t.Fatal(err)
	}
	var s, s2 float64
	for _, v := range got {
		l := math.Log(v / 100)
		s += l
		s2 += l * l
	}
	mean, sd := s/4000, math.Sqrt(s2/4000-(s/4000)*(s/4000))
	if math.Abs(mean) > 0.06 || math.Abs(sd-1) > 0.05 {
		t.Errorf("log error mean %v sd %v, want 0 and 1", mean, sd)
	}
}

func TestParseErrorModel(t *testing.T) {
	for _, s := range []string{"none", "loguniform:4,seed=9", "lognormal:0.5,seed=1", "under:2", "over:16", "adversarial:8"} {
		m, err := ParseErrorModel(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if m.String() != s {
			t.Errorf("%q parsed and printed as %q", s, m.String())
		}
	}
	for _, s := range []string{"loguniform", "loguniform:0.5", "over:-2", "under:NaN", "adversarial:Inf", "lognormal:-1",
		"lognormal:100", "gamma:2", "none:1", "over:2,seed=x", "over:2,speed=1", "over:1e7"} {
		if _, err := ParseErrorModel(s); !errors.Is(err, ErrErrorModel) {
			t.Errorf("%q: got %v, want ErrErrorModel", s, err)
		}
	}
	if _, err := (ErrorModel{Kind: ErrorKind(42)}).Perturb(nil); !errors.Is(err, ErrErrorModel) {
		t.Errorf("unknown kind: %v", err)
	}
}

// Non-positive and infinite sizes pass through unchanged.
func TestPerturbKeepsOddSizes(t *testing.T) {
	truth := map[gpusched.JobID]float64{"z": 0, "n": -3, "i": math.Inf(1), "x": 50}
	got, err := ErrorModel{Kind: Over, Mu: 2}.Perturb(truth)
	if err != nil {
		t.Fatal(err)
	}
	if got["z"] != 0 || got["n"] != -3 || !math.IsInf(got["i"], 1) || got["x"] != 100 {
		t.Errorf("got %v", got)
	}
}

func FuzzParseErrorModel(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseErrorModel(s)
		if err != nil {
			if !errors.Is(err, ErrErrorModel) {
				t.Fatalf("%q: error %v does not wrap ErrErrorModel", s, err)
			}
			return
		}
		back, err := ParseErrorModel(m.String())
		if err != nil || back.Kind != m.Kind || back.Mu != m.Mu || back.Sigma != m.Sigma {
			t.Fatalf("%q -> %v -> %v, %v", s, m, back, err)
		}
		if _, err := m.Perturb(map[gpusched.JobID]float64{"a": 1, "b": 1e9}); err != nil {
			t.Fatal(err)
		}
	})
}
