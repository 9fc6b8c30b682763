package gpusched

import (
	"errors"
	"math"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestZeroViewsDoNotPanic: a view without a cluster, and statuses without a job, are errors
// (Validate) or empty answers (Free, Available, Diff), never panics.
func TestZeroViewsDoNotPanic(t *testing.T) {
	var v View
	if free := v.Free(); free.Len() != 0 {
		t.Errorf("View{}.Free() = %v, want empty", free)
	}
	if n := v.Available(); n != 0 {
		t.Errorf("View{}.Available() = %d, want 0", n)
	}
	if err := (Decision{}).Validate(v); !errors.Is(err, ErrInvalidView) {
		t.Errorf("Decision.Validate(View{}) = %v, want ErrInvalidView", err)
	}
	c := testCluster(t, 1)
	for _, v := range []View{
		{Now: 1, Cluster: c, Pending: []JobStatus{{}}},
		{Now: 1, Cluster: c, Running: []JobStatus{{GPUs: []topology.GPUID{0}}}},
	} {
		if err := (Decision{}).Validate(v); !errors.Is(err, ErrInvalidView) {
			t.Errorf("Decision.Validate with a status without a job = %v, want ErrInvalidView", err)
		}
		if ch := (Decision{}).Diff(v); len(ch.Preempt)+len(ch.Start)+len(ch.Keep)+len(ch.Migrate) != 0 {
			t.Errorf("Diff = %+v, want nothing", ch)
		}
	}
}

// TestNonFiniteFeaturesAreInvalid: a job whose numeric features are NaN or infinite fails
// Validate with ErrInvalidJob naming the job and the feature; finite ones pass.
func TestNonFiniteFeaturesAreInvalid(t *testing.T) {
	for _, f := range []Features{
		{LearningRate: math.NaN()},
		{LearningRate: math.Inf(-1)},
		{SubmitHour: math.NaN()},
		{Numeric: map[string]float64{"ok": 1, "bad": math.NaN(), "worse": math.Inf(1)}},
	} {
		j := Job{ID: "j", GPUs: 1, StepTime: 1, Features: f}
		if err := j.Validate(nil); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("features %+v: Validate = %v, want ErrInvalidJob", f, err)
		}
	}
	j := Job{ID: "j", GPUs: 1, StepTime: 1, Features: Features{LearningRate: 1e-3, SubmitHour: -1, Numeric: map[string]float64{"x": 2}}}
	if err := j.Validate(nil); err != nil {
		t.Errorf("finite features: %v", err)
	}
	bad := Job{ID: "j", GPUs: 1, StepTime: 1, Features: Features{Numeric: map[string]float64{"b": math.NaN(), "a": math.Inf(1)}}}
	first := bad.Validate(nil).Error()
	for range 20 {
		if got := bad.Validate(nil).Error(); got != first {
			t.Fatalf("the error changes between calls: %q, then %q", first, got)
		}
	}
}
