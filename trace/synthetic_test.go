package trace_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/trace"
)

func TestGeneratePhillyDeterministicAndValid(t *testing.T) {
	cfg := trace.DefaultPhillyConfig(3000, 4)
	a, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := trace.GeneratePhilly(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same config, different workloads")
	}
	cfg.Seed = 5
	if c, _ := trace.GeneratePhilly(cfg); reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same workload")
	}
	checkTrace(t, &trace.Trace{Records: a})
	groups := map[string]int{}
	for _, r := range a {
		groups[r.Job.Features.Group]++
		if r.Job.Features.User == "" || r.Job.Features.Family == "" {
			t.Fatalf("features missing: %+v", r.Job)
		}
	}
	// Recurring groups exist and re-submissions keep their group's GPUs and model.
	recurring := 0
	for g, n := range groups {
		if n > 1 {
			recurring += n
			if g[:4] == "once" {
				t.Fatalf("one-off group %s has %d jobs", g, n)
			}
		}
	}
	if frac := float64(recurring) / float64(len(a)); frac < 0.6 || frac > 0.8 {
		t.Errorf("%.2f of jobs recur, want about 0.7", frac)
	}
}

// TestGeneratePhillyMatchesFit: a large one-off workload reproduces the fitted GPU shares,
// log-duration quantiles and arrival rate.
func TestGeneratePhillyMatchesFit(t *testing.T) {
	const n = 60000
	recs, err := trace.GeneratePhilly(trace.PhillyConfig{Jobs: n, OneOffFraction: 1, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	fit := trace.PhillyFittedForTest()
	total := 0.0
	for _, s := range fit.GPUShare {
		total += s
	}
	count := map[int]int{}
	logs := [3][]float64{}
	for _, r := range recs {
		count[r.Job.GPUs]++
		c := 2
		if r.Job.GPUs == 1 {
			c = 0
		} else if r.Job.GPUs <= 4 {
			c = 1
		}
		logs[c] = append(logs[c], math.Log10(r.Iterations*r.Job.StepTime))
	}
	for i, g := range fit.GPUs {
		p := fit.GPUShare[i] / total
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(count[g]) / n; math.Abs(got-p) > 5*sd+1e-4 {
			t.Errorf("%d GPUs: share %.4f, fitted %.4f", g, got, p)
		}
	}
	// The 1-GPU class is large enough to check its central quantiles closely.
	slices.Sort(logs[0])
	for k, p := range fit.QuantileP {
		if p < 0.05 || p > 0.95 {
			continue
		}
		got := logs[0][int(p*float64(len(logs[0])-1))]
		if math.Abs(got-fit.LogDuration[0][k]) > 0.05 {
			t.Errorf("1-GPU log10 duration quantile %v: %.3f, fitted %.3f", p, got, fit.LogDuration[0][k])
		}
	}
	rate := float64(n-1) / recs[n-1].Job.Arrival
	if math.Abs(rate-trace.PhillyArrivalRateForTest)/trace.PhillyArrivalRateForTest > 0.02 {
		t.Errorf("arrival rate %v, fitted %v", rate, trace.PhillyArrivalRateForTest)
	}
}

func TestRateForLoad(t *testing.T) {
	m := trace.PhillyMeanGPUTimeForTest()
	if r := trace.RateForLoad(0.5, 512); math.Abs(r*m-256) > 1e-9 {
		t.Errorf("RateForLoad(0.5, 512) = %v, mean GPU time %v", r, m)
	}
	// The model's mean agrees with a large sample's within sampling noise (heavy tail: 10%).
	recs, _ := trace.GeneratePhilly(trace.PhillyConfig{Jobs: 200000, OneOffFraction: 1, Seed: 3})
	s := 0.0
	for _, r := range recs {
		s += r.Iterations * r.Job.StepTime * float64(r.Job.GPUs)
	}
	if got := s / float64(len(recs)); math.Abs(got-m)/m > 0.1 {
		t.Errorf("sample mean GPU time %v, model %v", got, m)
	}
}

func TestGeneratePhillyInvalid(t *testing.T) {
	for _, cfg := range []trace.PhillyConfig{
		{Jobs: 0}, {Jobs: 1, ArrivalRate: -1}, {Jobs: 1, ArrivalRate: math.Inf(1)},
		{Jobs: 1, OneOffFraction: 1.5}, {Jobs: 1, OneOffFraction: math.NaN()}, {Jobs: 1, Groups: -1},
	} {
		if _, err := trace.GeneratePhilly(cfg); !errors.Is(err, trace.ErrInvalidPhillyConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// ExampleGeneratePhilly draws a small Philly-like workload that offers 70% load to a
// 256-GPU cluster.
func ExampleGeneratePhilly() {
	cfg := trace.DefaultPhillyConfig(1000, 1)
	cfg.ArrivalRate = trace.RateForLoad(0.7, 256)
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	multi := 0
	for _, r := range recs {
		if r.Job.GPUs > 1 {
			multi++
		}
	}
	fmt.Printf("%d jobs, %d multi-GPU, one every %.0f s\n", len(recs), multi, 1/cfg.ArrivalRate)
	// Output:
	// 1000 jobs, 73 multi-GPU, one every 160 s
}
