package predict_test

import (
	"fmt"

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
