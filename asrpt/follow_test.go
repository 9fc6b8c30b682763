package asrpt_test

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/sim"
)

// noDelta hands its scheduler the host's views without their deltas (gpusched.ViewDelta).
type noDelta struct{ *asrpt.Scheduler }

func (n noDelta) Schedule(v gpusched.View) (gpusched.Decision, error) {
	v.Delta = nil
	return n.Scheduler.Schedule(v)
}

// TestFollowDeltaKeepsDecisions: A-SRPT on the simulator's host runtime, whose views carry
// their deltas, follows them (walking only the running jobs; counted), and writes the same job
// records as A-SRPT handed the same views without their deltas (every view walked whole), on
// busy Philly-like workloads with preemptions, strict and backfilling, with and without
// failures.
func TestFollowDeltaKeepsDecisions(t *testing.T) {
	c, jobs := busyPhilly(t, 500)
	oracle := recordOracle(jobs)
	for _, backfill := range []bool{false, true} {
		for _, failures := range []bool{false, true} {
			var recs [2][]sim.JobRecord
			var followed int
			for k := range 2 {
				s, err := asrpt.New(asrpt.Options{Estimator: oracle, Backfill: backfill})
				if err != nil {
					t.Fatal(err)
				}
				cfg := sim.Config{Cluster: c, Jobs: jobs, Scheduler: s}
				if k == 1 {
					cfg.Scheduler = noDelta{s}
				}
				if failures {
					cfg.Failures = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: 3}
					cfg.Checkpoint = 1800
				}
				res, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				recs[k] = res.Jobs
				if k == 0 {
					followed = asrpt.FollowedForTest(s)
				}
			}
			if followed == 0 {
				t.Errorf("backfill %v, failures %v: no call followed a delta", backfill, failures)
			}
			if !reflect.DeepEqual(recs[0], recs[1]) {
				t.Errorf("backfill %v, failures %v: following the deltas changes job records", backfill, failures)
			}
			t.Logf("backfill %v, failures %v: %d calls followed a delta", backfill, failures, followed)
		}
	}
}

// sliceSource hands its scheduler the host's views with a delta whose Source is a slice, a
// value == cannot compare (a hostile or careless host).
type sliceSource struct{ gpusched.Scheduler }

func (s sliceSource) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if v.Delta != nil {
		d := *v.Delta
		d.Source = []int{1}
		v.Delta = &d
	}
	return s.Scheduler.Schedule(v)
}

// TestNonComparableSource: a view whose delta names its sequence by a value == cannot
// compare (a slice) neither panics A-SRPT nor is followed: the job records are those of
// A-SRPT given no deltas at all.
func TestNonComparableSource(t *testing.T) {
	c, jobs := busyPhilly(t, 200)
	oracle := recordOracle(jobs)
	var recs [2][]sim.JobRecord
	for k := range 2 {
		s, err := asrpt.New(asrpt.Options{Estimator: oracle})
		if err != nil {
			t.Fatal(err)
		}
		var inner gpusched.Scheduler = sliceSource{s}
		if k == 1 {
			inner = noDelta{s}
		}
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: inner})
		if err != nil {
			t.Fatal(err)
		}
		recs[k] = res.Jobs
		if k == 0 && asrpt.FollowedForTest(s) != 0 {
			t.Errorf("A-SRPT followed %d deltas of a sequence it cannot identify", asrpt.FollowedForTest(s))
		}
	}
	if !reflect.DeepEqual(recs[0], recs[1]) {
		t.Error("a non-comparable Source changes job records")
	}
}
