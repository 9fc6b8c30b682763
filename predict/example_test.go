package predict_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

// Example trains a predictor on a synthetic recurring workload, predicts a re-submission of a
// group it knows, and re-estimates the job once it has run past its prediction.
func Example() {
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(3000, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := predict.New(predict.Options{Trees: 16, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	est, _ := p.Predict(&recs[0].Job) // the prior: Options.PriorIterations
	fmt.Printf("nothing observed: %s, %.0f iterations\n", est.Source, est.Iterations)

	// Learn the first 2,000 jobs as they finish (Fit would do the same in one call).
	for i := range recs[:2000] {
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			fmt.Println(err)
			return
		}
	}

	// A new submission of a known group, with a larger batch than usual.
	job := recs[2000].Job
	job.Features.BatchSize *= 2
	est, err = p.Predict(&job)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after 2000 jobs:", est.Source, est.P10 <= est.P50 && est.P50 <= est.P90)

	// The job has run past its 90th percentile: its estimate moves above what it has done.
	done := 1.5 * est.P90
	re, _ := p.Conditional(&job, done)
	fmt.Println("re-estimate above done:", re.Iterations > done, "survival below 10%:", re.Survival < 0.1)

	// Unknown categories and missing values still give an estimate.
	odd := gpusched.Job{ID: "odd", GPUs: 3, Features: gpusched.Features{Family: "never-seen", SubmitHour: -1}}
	est, err = p.Predict(&odd)
	fmt.Println("unseen family:", est.Source, est.Iterations >= 1, err)
	// Output:
	// nothing observed: prior, 10000 iterations
	// after 2000 jobs: forest true
	// re-estimate above done: true survival below 10%: true
	// unseen family: forest true <nil>
}

// ExamplePredictor_Distribution asks for any quantile of a job's calibrated predictive
// distribution, at arrival and once the job has run past its 90th percentile.
func ExamplePredictor_Distribution() {
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(2000, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := predict.New(predict.Options{Trees: 16, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range recs[:1500] {
		if _, err := p.Predict(&recs[i].Job); err != nil { // at arrival
			fmt.Println(err)
			return
		}
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil { // when it ends
			fmt.Println(err)
			return
		}
	}
	job := &recs[1500].Job
	d, err := p.Distribution(job, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	q05, q50, q95 := d.Quantile(0.05), d.Quantile(0.5), d.Quantile(0.95)
	fmt.Println("ordered:", q05 < q50 && q50 < q95, "CDF at the median:", math.Round(100*d.CDF(q50))/100)

	// Past its 90th percentile: the conditional quantiles lie above what it has done.
	done := d.Quantile(0.9)
	c := d.Given(done)
	fmt.Println("given done:", c.Quantile(0.1) > done, c.Point() > done, math.Round(100*c.Survival())/100)
	// Output:
	// ordered: true CDF at the median: 0.5
	// given done: true true 0.1
}

// ExamplePredictor_Save saves a predictor's learned state and restores it: the copy predicts
// exactly as the original.
func ExamplePredictor_Save() {
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(600, 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := predict.New(predict.Options{Trees: 8, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range recs[:500] {
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			fmt.Println(err)
			return
		}
	}
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		fmt.Println(err)
		return
	}
	q, err := predict.Load(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := p.Predict(&recs[500].Job)
	b, _ := q.Predict(&recs[500].Job)
	fmt.Println("same estimate:", a == b)
	_, err = predict.Load(strings.NewReader(`{"version": 99}`))
	fmt.Println(errors.Is(err, predict.ErrInvalidState))
	// Output:
	// same estimate: true
	// true
}

// ExamplePredictor_GroupAccuracy shows the per-group signal a scheduler can use to stop
// trusting a group's predictions: one group whose lengths the predictor gets right, one whose
// lengths swing by a factor of 100 from run to run.
func ExamplePredictor_GroupAccuracy() {
	p, err := predict.New(predict.Options{Seed: 1, Trees: 8, MinSamples: 50,
		ArrivalFeatures: true, GroupMix: 0.15, GroupMixAdaptive: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 400 {
		group, n := "steady", 1000.0
		if i%2 == 1 {
			group, n = "erratic", math.Pow(100, float64(i/2%3)) // 1, 100, 10000, ...
		}
		job := gpusched.Job{ID: gpusched.JobID(fmt.Sprint(i)), Arrival: float64(60 * i), GPUs: 1,
			Features: gpusched.Features{User: "team", Group: group}}
		if _, err := p.Predict(&job); err != nil {
			fmt.Println(err)
			return
		}
		if err := p.Observe(&job, n); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, g := range []string{"steady", "erratic"} {
		a, ok := p.GroupAccuracy(g)
		fmt.Printf("%s: known %v, typical error factor below 2: %v\n", g, ok, math.Exp(a.LogError) < 2)
	}
	// Output:
	// steady: known true, typical error factor below 2: true
	// erratic: known true, typical error factor below 2: false
}

// ExamplePredictor_SaveDelta saves a predictor by changes, as a host that saves after every
// event does: a base when BaseKey changes, a delta every time, which holds only what changed
// since the base; a new predictor restored from both predicts as the original.
func ExamplePredictor_SaveDelta() {
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(1200, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := predict.New(predict.Options{Trees: 8, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	var base, delta bytes.Buffer
	held := ""
	for i := range recs[:1000] {
		if err := p.Observe(&recs[i].Job, recs[i].Iterations); err != nil {
			fmt.Println(err)
			return
		}
		if k := p.BaseKey(); k != held { // at a retraining, or when the deltas have grown
			base.Reset()
			if held, err = p.SaveBase(&base); err != nil {
				fmt.Println(err)
				return
			}
		}
		delta.Reset()
		if _, err := p.SaveDelta(&delta); err != nil {
			fmt.Println(err)
			return
		}
	}
	q, _ := predict.New(predict.Options{})
	if err := q.RestoreDelta(base.Bytes(), delta.Bytes()); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := p.Predict(&recs[1100].Job)
	b, _ := q.Predict(&recs[1100].Job)
	fmt.Println("the delta is smaller than the base:", delta.Len() < base.Len()/5)
	fmt.Println("same prediction:", a == b)
	// Output:
	// the delta is smaller than the base: true
	// same prediction: true
}
