package asrpt_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/sim"
)

// formLog runs A-SRPT and logs each decision in its full form. With full it hides
// View.AcceptsKeepOthers, so A-SRPT answers in the full form.
type formLog struct {
	s     *asrpt.Scheduler
	full  bool
	log   []string
	stops int
}

func (f *formLog) Schedule(v gpusched.View) (gpusched.Decision, error) {
	in := v
	if f.full {
		in.AcceptsKeepOthers = false
	}
	d, err := f.s.Schedule(in)
	if err != nil {
		return d, err
	}
	f.stops += len(d.Stop)
	e := d.Expand(v)
	slices.SortFunc(e.Run, func(a, b gpusched.Assignment) int {
		if a.Job < b.Job {
			return -1
		}
		if a.Job > b.Job {
			return 1
		}
		return 0
	})
	f.log = append(f.log, fmt.Sprint(e.Run, e.WakeAt))
	return d, nil
}

func (f *formLog) JobCompleted(c gpusched.Completion) { f.s.JobCompleted(c) }

// TestDeltaWithoutConsolidation: A-SRPT without consolidation (a host that cannot migrate, the
// default of gpusched compare) builds its delta decisions without listing the running jobs it
// keeps. On busy Philly-like workloads, strict and backfilling, with and without server
// failures (which displace jobs), every decision expanded is the full-form decision of the
// same call, and the job records are the same; the deltas do stop jobs. A delta without
// consolidation that stops nobody fails it.
func TestDeltaWithoutConsolidation(t *testing.T) {
	c, jobs := busyPhilly(t, 500)
	oracle := recordOracle(jobs)
	for _, backfill := range []bool{false, true} {
		for _, failures := range []bool{false, true} {
			var logs [2]*formLog
			var recs [2][]sim.JobRecord
			for k := range 2 {
				s, err := asrpt.New(asrpt.Options{Estimator: oracle, Backfill: backfill, NoConsolidate: true, NoMigrate: true})
				if err != nil {
					t.Fatal(err)
				}
				logs[k] = &formLog{s: s, full: k == 1}
				var fail sim.Failures
				if failures {
					fail = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: 3}
				}
				res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: logs[k], Failures: fail, Checkpoint: 600})
				if err != nil {
					t.Fatal(err)
				}
				recs[k] = res.Jobs
			}
			name := fmt.Sprintf("backfill %v, failures %v", backfill, failures)
			for i := range min(len(logs[0].log), len(logs[1].log)) {
				if logs[0].log[i] != logs[1].log[i] {
					t.Fatalf("%s: call %d: delta expanded %s, full form %s", name, i, logs[0].log[i], logs[1].log[i])
				}
			}
			if len(logs[0].log) != len(logs[1].log) || !reflect.DeepEqual(recs[0], recs[1]) {
				t.Fatalf("%s: the runs differ (%d and %d calls)", name, len(logs[0].log), len(logs[1].log))
			}
			if logs[0].stops == 0 {
				t.Errorf("%s: no delta stopped a job: the test does not exercise Stop", name)
			}
		}
	}
}
