package trace_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

func TestGenerateRecurringDeterministic(t *testing.T) {
	cfg := trace.DefaultRecurringConfig(2000, 7)
	a, err := trace.GenerateRecurring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := trace.GenerateRecurring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same config gave different workloads")
	}
	cfg.Seed = 8
	c, err := trace.GenerateRecurring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same workload")
	}
}

func TestGenerateRecurringInvalid(t *testing.T) {
	good := trace.DefaultRecurringConfig(10, 1)
	cases := []struct {
		field  string
		mutate func(*trace.RecurringConfig)
	}{
		{"Jobs", func(c *trace.RecurringConfig) { c.Jobs = 0 }},
		{"Users", func(c *trace.RecurringConfig) { c.Users = -1 }},
		{"Groups", func(c *trace.RecurringConfig) { c.Groups = -3 }},
		{"OneOffFraction", func(c *trace.RecurringConfig) { c.OneOffFraction = math.NaN() }},
		{"KillFraction", func(c *trace.RecurringConfig) { c.KillFraction = 1.5 }},
		{"ArrivalRate", func(c *trace.RecurringConfig) { c.ArrivalRate = math.Inf(1) }},
		{"ArrivalRate", func(c *trace.RecurringConfig) { c.ArrivalRate = 1e-308 }}, // arrivals would overflow
	}
	for _, c := range cases {
		cfg := good
		c.mutate(&cfg)
		_, err := trace.GenerateRecurring(cfg)
		if !errors.Is(err, trace.ErrInvalidRecurringConfig) {
			t.Errorf("%s: got %v, want ErrInvalidRecurringConfig", c.field, err)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %q does not name the field", c.field, err)
		}
	}
}

// TestGenerateRecurringWellFormed checks invariants every generated workload must satisfy.
func TestGenerateRecurringWellFormed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := trace.RecurringConfig{
			Jobs:           rapid.IntRange(1, 300).Draw(t, "jobs"),
			Users:          rapid.IntRange(0, 20).Draw(t, "users"),
			Groups:         rapid.IntRange(0, 40).Draw(t, "groups"),
			OneOffFraction: rapid.Float64Range(0, 1).Draw(t, "oneoff"),
			KillFraction:   rapid.Float64Range(0, 1).Draw(t, "kill"),
			ArrivalRate:    rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(1e-6, 10)).Draw(t, "rate"),
			Seed:           rapid.Uint64().Draw(t, "seed"),
		}
		recs, err := trace.GenerateRecurring(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != cfg.Jobs {
			t.Fatalf("got %d records, want %d", len(recs), cfg.Jobs)
		}
		ids := map[string]bool{}
		groupRuns := map[string]int{}
		prev := 0.0
		for i, r := range recs {
			j := r.Job
			if ids[string(j.ID)] {
				t.Fatalf("duplicate id %q", j.ID)
			}
			ids[string(j.ID)] = true
			if !(j.Arrival >= prev) || math.IsInf(j.Arrival, 0) {
				t.Fatalf("record %d: arrival %v after %v", i, j.Arrival, prev)
			}
			prev = j.Arrival
			if err := j.Validate(nil); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if j.GPUs&(j.GPUs-1) != 0 || j.GPUs > 32 {
				t.Fatalf("record %d: GPUs %d not a power of two <= 32", i, j.GPUs)
			}
			if !(j.StepTime > 0) {
				t.Fatalf("record %d: step time %v", i, j.StepTime)
			}
			if !(r.Iterations >= 1) || r.Iterations != math.Round(r.Iterations) {
				t.Fatalf("record %d: iterations %v not a positive integer", i, r.Iterations)
			}
			f := j.Features
			if f.Family == "" || f.Dataset == "" || f.Optimizer == "" || f.User == "" || f.Group == "" {
				t.Fatalf("record %d: missing features %+v", i, f)
			}
			if f.BatchSize < 1 || !(f.LearningRate > 0) || !(f.SubmitHour >= 0 && f.SubmitHour < 24) {
				t.Fatalf("record %d: bad numeric features %+v", i, f)
			}
			if cfg.KillFraction == 0 && r.Killed {
				t.Fatalf("record %d killed with KillFraction 0", i)
			}
			groupRuns[f.Group]++
		}
		for g, n := range groupRuns {
			if strings.HasPrefix(g, "once-") && n != 1 {
				t.Fatalf("one-off group %q has %d runs", g, n)
			}
			if cfg.OneOffFraction == 1 && !strings.HasPrefix(g, "once-") {
				t.Fatalf("recurring group %q with OneOffFraction 1", g)
			}
		}
	})
}

// TestGenerateRecurringFractions checks that the one-off and kill fractions are honoured
// (within 4 binomial standard deviations) and that the arrival rate is.
func TestGenerateRecurringFractions(t *testing.T) {
	const n = 8000
	cfg := trace.RecurringConfig{Jobs: n, OneOffFraction: 0.3, KillFraction: 0.1, ArrivalRate: 0.5, Seed: 3}
	recs, err := trace.GenerateRecurring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var once, killed int
	for _, r := range recs {
		if strings.HasPrefix(r.Job.Features.Group, "once-") {
			once++
		}
		if r.Killed {
			killed++
		}
	}
	within := func(name string, got int, p float64) {
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(got)-n*p) > 4*sd {
			t.Errorf("%s: %d of %d, want about %.0f", name, got, n, n*p)
		}
	}
	within("one-offs", once, cfg.OneOffFraction)
	within("killed", killed, cfg.KillFraction)
	rate := float64(n) / recs[n-1].Job.Arrival
	if math.Abs(rate-cfg.ArrivalRate) > 0.05*cfg.ArrivalRate {
		t.Errorf("arrival rate %.3f, want %.3f", rate, cfg.ArrivalRate)
	}
}

// TestGenerateRecurringIterationModel checks the iteration model n ∝ E N_d / B: within a
// group, runs with twice the batch size run about half the iterations (the slope of
// log n on log B is about -1), and recurring jobs vary far less within their group than
// across groups.
func TestGenerateRecurringIterationModel(t *testing.T) {
	cfg := trace.RecurringConfig{Jobs: 8000, Groups: 100, KillFraction: 0, Seed: 11}
	recs, err := trace.GenerateRecurring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type run struct{ logN, logB float64 }
	byGroup := map[string][]run{}
	var all []float64
	for _, r := range recs {
		g := r.Job.Features.Group
		byGroup[g] = append(byGroup[g], run{math.Log(r.Iterations), math.Log(float64(r.Job.Features.BatchSize))})
		all = append(all, math.Log(r.Iterations))
	}
	// Within-group regression of log n on log B (demeaned per group).
	var sxy, sxx, within float64
	var m int
	for _, runs := range byGroup {
		if len(runs) < 2 {
			continue
		}
		var mn, mb float64
		for _, r := range runs {
			mn += r.logN
			mb += r.logB
		}
		mn /= float64(len(runs))
		mb /= float64(len(runs))
		for _, r := range runs {
			sxy += (r.logN - mn) * (r.logB - mb)
			sxx += (r.logB - mb) * (r.logB - mb)
			within += (r.logN - mn) * (r.logN - mn)
			m++
		}
	}
	slope := sxy / sxx
	if math.Abs(slope+1) > 0.1 {
		t.Errorf("within-group slope of log iterations on log batch = %.3f, want about -1", slope)
	}
	var mean, total float64
	for _, v := range all {
		mean += v
	}
	mean /= float64(len(all))
	for _, v := range all {
		total += (v - mean) * (v - mean)
	}
	withinSD, totalSD := math.Sqrt(within/float64(m)), math.Sqrt(total/float64(len(all)))
	if withinSD > totalSD/3 {
		t.Errorf("within-group SD of log iterations %.3f is not much below the overall SD %.3f", withinSD, totalSD)
	}
}

func ExampleGenerateRecurring() {
	cfg := trace.DefaultRecurringConfig(1000, 42)
	recs, err := trace.GenerateRecurring(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	runs := map[string]int{}
	killed := 0
	for _, r := range recs {
		runs[r.Job.Features.Group]++
		if r.Killed {
			killed++
		}
	}
	first := recs[0].Job
	fmt.Println(len(recs), "jobs; first:", first.ID, first.Features.Group != "", first.GPUs >= 1)
	fmt.Println("arrivals ordered:", recs[0].Job.Arrival <= recs[len(recs)-1].Job.Arrival)
	fmt.Println("some groups recur:", len(runs) < len(recs), "some jobs killed:", killed > 0)
	// Output:
	// 1000 jobs; first: r000000 true true
	// arrivals ordered: true
	// some groups recur: true some jobs killed: true
}
