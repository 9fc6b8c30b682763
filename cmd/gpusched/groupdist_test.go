package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/trace"
)

// groupDist is an Estimator that knows, for every job, the true iterations of the OTHER jobs of
// its group in the whole workload (its recurrence group, or its user where a trace has no
// groups, and its GPU count), future included, but not the job's own: a predictor that knows
// exactly what the group says about a job and nothing else. It sizes a job by the median (or
// mean) of its group's sample above the iterations done. A job alone in its group gets the
// whole workload's sizes, its own included.
type groupDist struct {
	sample map[gpusched.JobID][]float64 // ascending, the job's own size left out
	mean   bool
}

// groupKey names job j's group: its recurrence group (or user) and its GPU count.
func groupKey(j *gpusched.Job) string {
	g := j.Features.Group
	if g == "" {
		g = "user:" + j.Features.User
	}
	return fmt.Sprintf("%s|%d", g, j.GPUs)
}

func newGroupDist(recs []trace.Record, mean bool) *groupDist {
	by := map[string][]float64{}
	var all []float64
	for _, r := range recs {
		k := groupKey(&r.Job)
		by[k] = append(by[k], r.Iterations)
		all = append(all, r.Iterations)
	}
	for _, s := range by {
		slices.Sort(s)
	}
	slices.Sort(all)
	g := &groupDist{sample: map[gpusched.JobID][]float64{}, mean: mean}
	for _, r := range recs {
		s := by[groupKey(&r.Job)]
		i, _ := slices.BinarySearch(s, r.Iterations)
		own := slices.Concat(s[:i], s[i+1:])
		if len(own) == 0 {
			own = all
		}
		g.sample[r.Job.ID] = own
	}
	return g
}

func (g *groupDist) Estimate(j *gpusched.Job, done float64) (float64, error) {
	s := g.sample[j.ID]
	above := s[sort.SearchFloat64s(s, math.Nextafter(done, math.Inf(1))):] // the sizes above done
	if len(above) == 0 {
		return 2 * math.Max(done, 1), nil
	}
	if g.mean {
		sum := 0.0
		for _, v := range above {
			sum += v
		}
		return sum / float64(len(above)), nil
	}
	return above[len(above)/2], nil
}

// TestGroupDistEstimator: groupDist leaves each job's own size out of its group's sample,
// answers above the iterations done (doubling past the group's largest size), and gives a job
// alone in its group the whole workload's sample (its own size included).
func TestGroupDistEstimator(t *testing.T) {
	job := func(id string, group string, gpus int) gpusched.Job {
		return gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, Features: gpusched.Features{Group: group}}
	}
	recs := []trace.Record{
		{Job: job("a10", "a", 1), Iterations: 10}, {Job: job("a20", "a", 1), Iterations: 20},
		{Job: job("a30", "a", 1), Iterations: 30}, {Job: job("b", "b", 1), Iterations: 40},
	}
	med, mean := newGroupDist(recs, false), newGroupDist(recs, true)
	for _, c := range []struct {
		g          *groupDist
		id         string
		done, want float64
	}{
		{med, "a10", 0, 30},  // sample 20, 30 (with its own 10 the median would be 20)
		{mean, "a10", 0, 25}, // with its own 10 the mean would be 20
		{med, "a10", 20, 30}, // above 20: 30
		{med, "a10", 30, 60}, // nothing above 30: twice the iterations done
		{med, "b", 0, 30},    // alone in its group: the whole sample 10, 20, 30, 40
	} {
		if got, err := c.g.Estimate(&gpusched.Job{ID: gpusched.JobID(c.id)}, c.done); err != nil || got != c.want {
			t.Errorf("%s mean=%v after %v: %v, %v; want %v", c.id, c.g.mean, c.done, got, err, c.want)
		}
	}
}

// TestGroupDistribution measures, on the cell whose compare flags GPUSCHED_GROUP_DIST holds,
// A-SRPT sized from its groups' true distributions (groupDist) beside asrpt, asrpt-oracle,
// tiresias and tiresias with 2D-Gittins (migrations as the flags say: off by default).
// benchmarks/asrpt.md, "What the Rubick workloads' features can tell", has the figures. A
// measurement for issue #28, not a check: it skips unless the variable is set.
func TestGroupDistribution(t *testing.T) {
	spec := os.Getenv("GPUSCHED_GROUP_DIST")
	if spec == "" {
		t.Skip("set GPUSCHED_GROUP_DIST to a cell's compare flags to measure A-SRPT sized from its groups' true distributions")
	}
	fs, o := newFlags("compare", io.Discard)
	fs.StringVar(&o.policies, "policies", "all", "")
	if err := parseFlags(fs, o, append(strings.Fields(spec), "-policies", "asrpt,asrpt-oracle,tiresias", "-progress", "off")); err != nil {
		t.Fatal(err)
	}
	specs, c, err := o.setup()
	if err != nil {
		t.Fatal(err)
	}
	w, err := o.loadWorkload(c, o.load, o.seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.applyRate(w); err != nil {
		t.Fatal(err)
	}
	cost := o.costModel()
	off := o.consolidate == "off"
	run := func(s gpusched.Scheduler) float64 {
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: w.records, Scheduler: s, Cost: cost, RestoreTime: o.restoreSeconds()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary.AvgJCT / 3600
	}
	got := map[string]float64{}
	for _, p := range specs {
		s, err := p.New(policyEnv{Cluster: c, Jobs: w.records, Cost: cost, Seed: o.seed, Restore: o.restoreSeconds(),
			NoConsolidate: off, Tiresias: o.tiresias, BurstGap: burstGap(o.burstGap), Patient: o.conversion == "patient"})
		if err != nil {
			t.Fatal(err)
		}
		got[p.Name] = run(s)
	}
	for _, v := range []struct {
		name string
		mean bool
		fb   bool
	}{{"group-median", false, false}, {"group-mean", true, false}, {"group-median+fb", false, true}} {
		s, err := asrpt.New(asrpt.Options{Estimator: newGroupDist(w.records, v.mean), Cost: cost, Name: v.name,
			RestoreTime: o.restoreSeconds(), NoConsolidate: off, NoMigrate: off, NoGroupFallback: !v.fb,
			BurstGap: burstGap(o.burstGap), Patient: o.conversion == "patient"})
		if err != nil {
			t.Fatal(err)
		}
		got[v.name] = run(s)
	}
	tg := o.tiresias
	tg.Gittins = true
	g, err := policy.New("tiresias", policy.Config{Tiresias: tg})
	if err != nil {
		t.Fatal(err)
	}
	got["tiresias-gittins"] = run(g)
	ao := got["asrpt-oracle"]
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t.Logf("%-20s %8.3f h  x%.3f asrpt-oracle", n, got[n], got[n]/ao)
	}
}
