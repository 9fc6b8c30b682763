package boundcheck

import (
	"flag"
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/srpt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// ratio is the competitive ratio we claim for GreedyShortest on these workloads: one-GPU jobs
// all released at time 0. There it is shortest-processing-time list scheduling, and its k-th
// completion is at most (the first k jobs' work)/G + p_(k) = V_(k) + R_(k) <= 2 max(V_(k), R_(k)),
// so sum C <= 2 x srpt's Rank bound.
//
// Do not widen the claim without testing it: for rigid jobs (random GPU demands) the same
// property with ratio 3 fails, and rapid finds it in a few thousand cases (for example
// sum C = 207 against a lower bound of 58.5): non-preemptive greedy lets a large job wait
// behind lower-priority jobs that were backfilled into the holes it needs.
const ratio = 2.0

// checkAgainstBounds runs the scheduler on a generated workload and checks
// sum C_j <= ratio x (best lower bound on OPT).
func checkAgainstBounds(t *rapid.T, reverse bool) {
	G := rapid.IntRange(1, 8).Draw(t, "GPUs")
	spec := topology.T4()
	spec.GPUs = G
	cluster, err := topology.New("one", []topology.Server{{ID: "s", ServerSpec: spec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := rapid.IntRange(1, 12).Draw(t, "jobs")
	var jobs []trace.Record
	var gang []srpt.GangJob
	for i := 0; i < n; i++ {
		g := 1
		p := float64(rapid.IntRange(1, 50).Draw(t, "p"))
		jobs = append(jobs, trace.Record{
			Job:        gpusched.Job{ID: gpusched.JobID(fmt.Sprint(i)), GPUs: g, StepTime: 1},
			Iterations: p,
		})
		gang = append(gang, srpt.GangJob{ID: i, GPUs: g, ProcTime: p})
	}
	truth := map[gpusched.JobID]float64{}
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	s := GreedyShortest{Predict: func(j *gpusched.Job) float64 { return truth[j.ID] }, Reverse: reverse}
	res, err := sim.Run(sim.Config{Cluster: cluster, Jobs: jobs, Scheduler: s, RestoreTime: -1})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, j := range res.Jobs {
		sum += j.Finish
	}
	lb, err := srpt.LowerBounds(gang, G)
	if err != nil {
		t.Fatal(err)
	}
	if sum > ratio*lb.Best()*(1+1e-9) {
		t.Fatalf("%s: sum C = %v > %v x lower bound %v", s, sum, ratio, lb.Best())
	}
}

func TestGreedyShortestWithinRatio(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkAgainstBounds(t, false) })
}

// TestCheckCatchesLongestFirst shows that the property can fail: running the largest job first
// breaks the claimed ratio on some generated workload. The search is the one of the project's
// internal/teeth package, written out here because this example is meant to be copied into
// other modules, which cannot import an internal package.
func TestCheckCatchesLongestFirst(t *testing.T) {
	// Search deterministically: fixed seeds, 1,000 cases each, no fail file left behind.
	for name, val := range map[string]string{"rapid.nofailfile": "true", "rapid.checks": "1000"} {
		if f := flag.Lookup(name); f != nil {
			old := f.Value.String()
			_ = f.Value.Set(val)
			defer func() { _ = f.Value.Set(old) }()
		}
	}
	seed := flag.Lookup("rapid.seed")
	if seed != nil {
		old := seed.Value.String()
		defer func() { _ = seed.Value.Set(old) }()
	}
	for i := 1; i <= 20; i++ {
		if seed != nil {
			_ = seed.Value.Set(fmt.Sprint(i))
		}
		if fails(func(t *rapid.T) { checkAgainstBounds(t, true) }) {
			return
		}
	}
	t.Fatal("longest-first passed the ratio check: the check has no teeth")
}

func fails(prop func(*rapid.T)) (failed bool) {
	r := &recorder{}
	defer func() {
		if e := recover(); e != nil && e != errStop {
			panic(e)
		}
		failed = r.failed
	}()
	rapid.Check(r, prop)
	return r.failed
}

var errStop = fmt.Errorf("stop")

// recorder is a rapid.TB that notes failure instead of failing the test.
type recorder struct{ failed bool }

func (r *recorder) Helper()               {}
func (r *recorder) Name() string          { return "recorder" }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Log(...any)            {}
func (r *recorder) Skipf(string, ...any)  { panic(errStop) }
func (r *recorder) Skip(...any)           { panic(errStop) }
func (r *recorder) SkipNow()              { panic(errStop) }
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Error(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(errStop) }
func (r *recorder) Fatal(...any)          { r.failed = true; panic(errStop) }
func (r *recorder) FailNow()              { r.failed = true; panic(errStop) }
func (r *recorder) Fail()                 { r.failed = true }
func (r *recorder) Failed() bool          { return r.failed }
