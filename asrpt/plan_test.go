package asrpt_test

import (
	"reflect"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// TestPlanChoice: every reconfigurable job runs under the plan of least GPU-time per iteration
// (checked by brute force over its plans with an independent cost model), every decision
// carries that choice, and every job finishes.
func TestPlanChoice(t *testing.T) {
	const w = "name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla\n" +
		"a,0,100,bert,8,64,0,ga,200,0\nb,10,100,vit,4,32,0,zero-dp,300,0\nc,20,100,t5,4,32,0,ga,100,1\n"
	tr, err := trace.ReadRubick(strings.NewReader(w), "w.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := topology.RubickTestbed()
	truth := map[gpusched.JobID]float64{}
	for _, r := range tr.Records {
		truth[r.Job.ID] = r.Iterations
	}
	s, err := asrpt.NewPlanChooser(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
		n, ok := truth[id]
		return n, ok
	})})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[gpusched.JobID]int{}
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: tr.Records, ValidateViews: true,
		Observer: sim.Observer{Scheduled: func(v *gpusched.View, d gpusched.Decision) {
			for _, a := range d.Run {
				k, ok := asrpt.PlanChoiceForTest(s, a.Job)
				if !ok || k != a.PlanChoice {
					t.Errorf("job %s assigned plan %d, chose %d", a.Job, a.PlanChoice, k)
				}
				seen[a.Job] = a.PlanChoice
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 3 || len(seen) != 3 {
		t.Fatalf("%d jobs left, %d ran", len(res.Jobs), len(seen))
	}
	cost := gpusched.DefaultCost()
	for _, r := range tr.Records {
		j := &r.Job
		best, bestV := -1, 0.0
		for k := range j.Choices() {
			wj := j.WithPlan(k)
			g, ok := c.Pack(c.AllGPUs(), wj.GPUs)
			if !ok {
				continue
			}
			probe := *wj
			probe.ID += gpusched.JobID("/" + string(rune('0'+k%10)) + string(rune('a'+k/10)))
			sc, err := cost.StepCost(&probe, c, g, nil)
			if err != nil {
				continue
			}
			if v := float64(wj.GPUs) * sc.Time; best < 0 || v < bestV {
				best, bestV = k, v
			}
		}
		if seen[j.ID] != best {
			t.Errorf("job %s ran under plan %d, the least GPU-time is plan %d", j.ID, seen[j.ID], best)
		}
	}
}

// TestPlanChoiceViewRecords: plan choice hands its inner A-SRPT a view without plans as it is,
// and otherwise copies of the view's lists together with the host's record of the GPUs the
// running jobs hold (valid for the copies: every view passes gpusched.View.Validate) and the
// host's delta moved onto the copies (the inner scheduler follows it; counted). Both write
// the same job records as when it passed the copies alone (the inner scheduler then works out
// the free GPUs and, mostly, walks the waiting jobs), on busy Philly-like workloads with and
// without failures. A record of held GPUs that lists every GPU, and a delta moved onto the
// wrong copies, are caught.
func TestPlanChoiceViewRecords(t *testing.T) {
	c, jobs := busyPhilly(t, 400)
	oracle := recordOracle(jobs)
	run := func(failures, plain, noPass, brokenHeld, brokenMoved bool) ([]sim.JobRecord, int, error) {
		p, err := asrpt.NewPlanChoice(asrpt.Options{Estimator: oracle})
		if err != nil {
			return nil, 0, err
		}
		var invalid error
		asrpt.PlanViewsForTest(p, plain, noPass, brokenHeld, brokenMoved, func(v gpusched.View) {
			if err := v.Validate(); err != nil && invalid == nil {
				invalid = err
			}
		})
		cfg := sim.Config{Cluster: c, Jobs: jobs, Scheduler: p}
		if failures {
			cfg.Failures = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: 3}
			cfg.Checkpoint = 1800
		}
		res, err := sim.Run(cfg)
		if err != nil {
			return nil, 0, err
		}
		return res.Jobs, asrpt.FollowedForTest(p.Inner()), invalid
	}
	for _, failures := range []bool{false, true} {
		want, _, err := run(failures, true, true, false, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, noPass := range []bool{true, false} {
			got, followed, err := run(failures, false, noPass, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("failures %v, copies %v: job records differ from the copies passed alone", failures, noPass)
			}
			if followed == 0 {
				t.Errorf("failures %v, copies %v: the inner scheduler followed no delta", failures, noPass)
			}
			t.Logf("failures %v, copies %v: %d calls followed a delta", failures, noPass, followed)
		}
		if _, _, err := run(failures, false, true, true, false); err == nil {
			t.Errorf("failures %v: a record of held GPUs listing every GPU was not caught", failures)
		}
		if bad, _, err := run(failures, false, true, false, true); err == nil && reflect.DeepEqual(bad, want) {
			t.Errorf("failures %v: a delta moved onto the wrong copies was not caught", failures)
		}
	}
}
