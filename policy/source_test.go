package policy_test

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// retagged hands its scheduler the host's views with each delta's Source replaced: by a
// slice (a value == cannot compare: a hostile or careless host), or removed with the delta.
type retagged struct {
	gpusched.Scheduler
	drop bool
}

func (r retagged) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if v.Delta != nil {
		if r.drop {
			v.Delta = nil
		} else {
			d := *v.Delta
			d.Source = []int{1}
			v.Delta = &d
		}
	}
	return r.Scheduler.Schedule(v)
}

// TestNonComparableSource: every policy that follows view deltas, handed views whose delta
// names its sequence by a slice, neither panics nor follows them: its job records are those it
// writes given no deltas at all.
func TestNonComparableSource(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(300, 2)
	cfg.ArrivalRate = trace.RateForLoad(1.2, c.NumGPUs())
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	iters := map[gpusched.JobID]float64{}
	for _, r := range recs {
		iters[r.Job.ID] = r.Iterations
	}
	pc := policy.Config{
		Oracle: policy.OracleOptions{Iterations: func(id gpusched.JobID) float64 { return iters[id] }},
		SJFBCO: policy.SJFBCOOptions{Iterations: func(j *gpusched.Job) float64 { return iters[j.ID] }},
	}
	for _, name := range []string{"fifo", "sjf", "srpt-oracle", "tiresias", "sjf-bco", "gadget", "list-scheduling"} {
		var got [2][]sim.JobRecord
		for k, drop := range []bool{false, true} {
			s, err := policy.New(name, pc)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: retagged{s, drop}})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got[k] = res.Jobs
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("%s: a non-comparable Source changes job records", name)
		}
	}
}
