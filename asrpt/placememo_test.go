package asrpt_test

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/sim"
)

// TestPlaceMemoKeepsDecisions: A-SRPT with its default placer, whose placements of jobs the
// compact conversion keeps waiting are taken from a memo while the free GPUs do not change,
// writes the same job records as A-SRPT given the same placer as an option (no memo), on busy
// Philly-like workloads where jobs wait for compact placements.
func TestPlaceMemoKeepsDecisions(t *testing.T) {
	c, jobs := busyPhilly(t, 500)
	oracle := recordOracle(jobs)
	for _, backfill := range []bool{false, true} {
		var recs [2][]sim.JobRecord
		for k := range 2 {
			opt := asrpt.Options{Estimator: oracle, Backfill: backfill}
			if k == 1 {
				opt.Placer = asrpt.NewPartitioned(partition.PlaceOptions{Seed: 1}).Place
			}
			s, err := asrpt.New(opt)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s})
			if err != nil {
				t.Fatal(err)
			}
			recs[k] = res.Jobs
		}
		if !reflect.DeepEqual(recs[0], recs[1]) {
			t.Errorf("backfill %v: the default placer's memo changes job records", backfill)
		}
	}
}
