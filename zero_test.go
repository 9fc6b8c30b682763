package gpusched_test

import (
	"fmt"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/topology"
)

// TestZeroSchedulersOutsidePolicy: the zero values and nil pointers of the scheduler types
// outside package policy (whose own TestZeroAndNilPolicies covers its twelve) answer Schedule
// with an error, never a panic or a decision (issue #34). consolidate.Scheduler's zero value
// panicked before this round, and so did a nil *asrpt.PlanChoice.
func TestZeroSchedulersOutsidePolicy(t *testing.T) {
	spec, err := topology.Preset("a100")
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Uniform(spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}}}}
	for _, s := range []gpusched.Scheduler{
		&asrpt.Scheduler{}, (*asrpt.Scheduler)(nil),
		//lint:ignore SA1019 the deprecated type's zero value must not panic until it goes (v0.4.0)
		&asrpt.PlanChoice{}, (*asrpt.PlanChoice)(nil),
		//lint:ignore SA1019 the deprecated type's zero value must not panic until it goes (v0.4.0)
		&consolidate.Scheduler{}, (*consolidate.Scheduler)(nil),
	} {
		name := fmt.Sprintf("%T %v", s, s == nil)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: Schedule panics: %v", name, p)
				}
			}()
			d, err := s.Schedule(v)
			if err == nil || len(d.Run) != 0 {
				t.Errorf("%s: Schedule = %v, %v; want an error", name, d.Run, err)
			}
		}()
	}
}
