package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

func TestFIFOStrictBlocksBackfillDoesNot(t *testing.T) {
	c := cluster(t, 4)
	a, b, x := job("a", 3, 0, 1), job("b", 2, 1, 1), job("c", 1, 2, 1)
	v := gpusched.View{Now: 2, Cluster: c, Pending: []gpusched.JobStatus{waiting(a), waiting(b), waiting(x)}}
	strict, _ := newFIFO(Options{})
	if got := runs(decide(t, strict, v)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("strict FIFO runs %v, want [a]: b does not fit and blocks c", got)
	}
	bf, _ := newFIFO(Options{Order: Backfill})
	if got := runs(decide(t, bf, v)); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("backfilling FIFO runs %v, want [a c]", got)
	}
}

func TestFIFOKeepsRunningJobsInPlace(t *testing.T) {
	c := cluster(t, 4)
	r := job("r", 2, 0, 1)
	v := gpusched.View{Now: 5, Cluster: c,
		Running: []gpusched.JobStatus{running(r, 5, 0, 3, 1)},
		Pending: []gpusched.JobStatus{waiting(job("p", 4, 1, 1))}}
	f, _ := newFIFO(Options{})
	d := decide(t, f, v)
	if ch := d.Diff(v); len(ch.Preempt)+len(ch.Migrate)+len(ch.Start) != 0 || !slices.Equal(ch.Keep, []gpusched.JobID{"r"}) {
		t.Errorf("FIFO changed %+v; want r kept on [3 1] and p waiting", ch)
	}
}

func TestSJFPicksSmallerPredictedJob(t *testing.T) {
	c := cluster(t, 4)
	big, small := job("big", 4, 0, 1), job("small", 4, 1, 1)
	calls := 0
	size := map[gpusched.JobID]float64{"big": 100, "small": 10}
	s, _ := newSJF(SJFOptions{Size: func(j *gpusched.Job) float64 { calls++; return size[j.ID] }})
	v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(big), waiting(small)}}
	if got := runs(decide(t, s, v)); !slices.Equal(got, []string{"small"}) {
		t.Errorf("SJF runs %v, want the smaller predicted job", got)
	}
	decide(t, s, v)
	if calls != 2 {
		t.Errorf("Size called %d times for 2 jobs over 2 calls, want once per job", calls)
	}
	// The default size is GPUs x StepTime: a 1-GPU job with a long step beats a 4-GPU job with
	// a short one only if its GPU-time per iteration is smaller.
	d, _ := newSJF(SJFOptions{})
	v = gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{waiting(job("wide", 4, 0, 1)), waiting(job("long", 4, 0, 0.5))}}
	if got := runs(decide(t, d, v)); !slices.Equal(got, []string{"long"}) {
		t.Errorf("default SJF runs %v, want [long] (2 GPU-s per iteration against 4)", got)
	}
}

func oracle(t tb, iters map[gpusched.JobID]float64, opt OracleOptions) *oraclePolicy {
	t.Helper()
	opt.Iterations = func(id gpusched.JobID) float64 { return iters[id] }
	o, err := newSRPTOracle(opt)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSRPTOraclePreemptsForLessRemainingWork(t *testing.T) {
	c := cluster(t, 4)
	long, short := job("long", 4, 0, 1), job("short", 4, 10, 1)
	// long has done 10 of 1000 iterations: 3960 GPU-s left; short needs 4 x 100 = 400.
	iters := map[gpusched.JobID]float64{"long": 1000, "short": 100}
	v := gpusched.View{Now: 10, Cluster: c,
		Running: []gpusched.JobStatus{running(long, 10, 0, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{waiting(short)}}
	d := decide(t, oracle(t, iters, OracleOptions{}), v)
	if ch := d.Diff(v); !slices.Equal(ch.Preempt, []gpusched.JobID{"long"}) || len(ch.Start) != 1 || ch.Start[0].Job != "short" {
		t.Errorf("oracle changes %+v; want long preempted for short", ch)
	}
	// A longer newcomer does not preempt.
	iters["short"] = 2000
	d = decide(t, oracle(t, iters, OracleOptions{}), v)
	if got := runs(d); !slices.Equal(got, []string{"long"}) {
		t.Errorf("oracle runs %v, want [long]: the newcomer has more work left", got)
	}
}

func TestSRPTOracleAntiThrash(t *testing.T) {
	c := cluster(t, 4)
	long, short := job("long", 4, 0, 1), job("short", 4, 10, 1)
	// long has 4 x 990 = 3960 GPU-s left; short 4 x 970 = 3880: only 2% less.
	iters := map[gpusched.JobID]float64{"long": 1000, "short": 970}
	v := gpusched.View{Now: 10, Cluster: c,
		Running: []gpusched.JobStatus{running(long, 10, 0, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{waiting(short)}}
	if got := runs(decide(t, oracle(t, iters, OracleOptions{}), v)); !slices.Equal(got, []string{"long"}) {
		t.Errorf("with the default 10%% margin the oracle runs %v, want [long]", got)
	}
	if got := runs(decide(t, oracle(t, iters, OracleOptions{Margin: -1}), v)); !slices.Equal(got, []string{"short"}) {
		t.Errorf("without margin the oracle runs %v, want [short]", got)
	}
	// MinRunTime: long resumed 10 s ago and may not be preempted before 60 s.
	iters["short"] = 100
	o := oracle(t, iters, OracleOptions{MinRunTime: 60})
	d := decide(t, o, v)
	if got := runs(d); !slices.Equal(got, []string{"long"}) {
		t.Errorf("within its lease long was preempted: runs %v", got)
	}
	if d.WakeAt != 60 {
		t.Errorf("WakeAt = %v, want 60, the end of long's lease", d.WakeAt)
	}
	v.Now, v.Running[0] = 60, running(long, 60, 0, 0, 1, 2, 3)
	if got := runs(decide(t, o, v)); !slices.Equal(got, []string{"short"}) {
		t.Errorf("after the lease the oracle runs %v, want [short]", got)
	}
}

func TestSRPTOracleNeedsIterations(t *testing.T) {
	if _, err := newSRPTOracle(OracleOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewSRPTOracle without Iterations: %v, want ErrInvalidOptions", err)
	}
	// A NaN answer rejects that job alone (TestOracleRejectsAJobWithBadTruthAlone), naming
	// the options' fault.
	o := oracle(t, map[gpusched.JobID]float64{"a": math.NaN()}, OracleOptions{})
	d, err := o.Schedule(gpusched.View{Cluster: cluster(t, 4), Pending: []gpusched.JobStatus{waiting(job("a", 1, 0, 1))}})
	if err != nil || len(d.Rejected) != 1 || !errors.Is(d.Rejected[0], ErrInvalidOptions) {
		t.Errorf("NaN iterations: %v, rejects %v; want the job rejected with ErrInvalidOptions", err, d.Rejected)
	}
}

func TestTiresiasDefaultsAreTheSimulators(t *testing.T) {
	if !slices.Equal(DefaultTiresiasThresholds(), []float64{3250, 7200}) {
		t.Errorf("DefaultTiresiasThresholds() = %v", DefaultTiresiasThresholds())
	}
	// The defaults are not a mutable global: changing one copy changes no other.
	d := DefaultTiresiasThresholds()
	d[0] = 1
	if got := DefaultTiresiasThresholds()[0]; got != 3250 {
		t.Errorf("a caller's change leaked into the defaults: %v", got)
	}
	for _, bad := range [][]float64{{0}, {10, 5}, {5, 5}, {math.Inf(1)}} {
		if _, err := newTiresias(TiresiasOptions{Thresholds: bad}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("thresholds %v: %v, want ErrInvalidOptions", bad, err)
		}
	}
}

func TestTiresiasDemotesAndPreemptsLowerQueue(t *testing.T) {
	c := cluster(t, 4)
	tr, _ := newTiresias(TiresiasOptions{})
	old, fresh := job("old", 4, 0, 1), job("new", 4, 1000, 1)
	// old ran 1000 s on 4 GPUs: 4000 GPU-s, past the first threshold (3250).
	v := gpusched.View{Now: 1000, Cluster: c,
		Running: []gpusched.JobStatus{running(old, 1000, 0, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{waiting(fresh)}}
	d := decide(t, tr, v)
	if q, _ := tr.Queue("old"); q != 1 {
		t.Errorf("old is in queue %d, want 1", q)
	}
	if q, _ := tr.Queue("new"); q != 0 {
		t.Errorf("new is in queue %d, want 0", q)
	}
	if ch := d.Diff(v); !slices.Equal(ch.Preempt, []gpusched.JobID{"old"}) || len(ch.Start) != 1 {
		t.Errorf("Tiresias changes %+v, want old preempted for the queue-0 newcomer", ch)
	}
	// new demotes after 3250 / 4 s of running: the scheduler asks to be woken then.
	if want := 1000 + 3250.0/4; d.WakeAt != want {
		t.Errorf("WakeAt = %v, want %v (new's demotion)", d.WakeAt, want)
	}
}

func TestTiresiasRunningFirstWithinQueue(t *testing.T) {
	c := cluster(t, 4)
	tr, _ := newTiresias(TiresiasOptions{})
	a, b := job("a", 4, 0, 1), job("b", 4, 1, 1)
	// a runs in queue 0 (400 GPU-s); b waits in queue 0: FIFO would favour a anyway, and b must
	// not preempt a within the same queue.
	v := gpusched.View{Now: 100, Cluster: c,
		Running: []gpusched.JobStatus{running(a, 100, 0, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{waiting(b)}}
	d := decide(t, tr, v)
	if got := runs(d); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Tiresias runs %v, want [a]", got)
	}
	if want := 100 + (3250-400)/4.0; d.WakeAt != want {
		t.Errorf("WakeAt = %v, want a's demotion at %v", d.WakeAt, want)
	}
	// At the demotion, b (queue 0) takes over.
	v.Now, v.Running[0] = d.WakeAt, running(a, d.WakeAt, 0, 0, 1, 2, 3)
	if got := runs(decide(t, tr, v)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after a's demotion Tiresias runs %v, want [b]", got)
	}
}

func TestTiresiasStarvationPromotion(t *testing.T) {
	c := cluster(t, 4)
	// Two queues, so that b does not fall below a again before the promotion.
	tr, _ := newTiresias(TiresiasOptions{PromoteKnob: 2, Thresholds: []float64{3250}})
	a, b := job("a", 4, 0, 1), job("b", 4, 1000, 1)
	// t=1000: a has run 1000 s (queue 1); b arrives in queue 0 and preempts it.
	v := gpusched.View{Now: 1000, Cluster: c,
		Running: []gpusched.JobStatus{running(a, 1000, 0, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{waiting(b)}}
	if got := runs(decide(t, tr, v)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("t=1000: runs %v, want [b]", got)
	}
	aWait := gpusched.JobStatus{Job: a, Iterations: 1000, Executed: 1000, Attained: 4000, Started: true, FirstStart: 0, Since: 1000, Preemptions: 1}
	// t=2000: b ran 1000 s and is in queue 1 too, but runs, so it keeps the GPUs. a has waited
	// 1000 s of the 2 x 1000 its knob asks: it is promoted at t=3000.
	v = gpusched.View{Now: 2000, Cluster: c,
		Running: []gpusched.JobStatus{running(b, 2000, 1000, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{aWait}}
	d := decide(t, tr, v)
	if got := runs(d); !slices.Equal(got, []string{"b"}) {
		t.Errorf("t=2000: runs %v, want [b]", got)
	}
	if d.WakeAt != 3000 {
		t.Errorf("t=2000: WakeAt = %v, want 3000 (a's promotion)", d.WakeAt)
	}
	if tr.Promotions("a") != 0 {
		t.Errorf("a promoted early")
	}
	v.Now, v.Running[0] = 3000, running(b, 3000, 1000, 0, 1, 2, 3)
	if got := runs(decide(t, tr, v)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("t=3000: runs %v, want [a], promoted to queue 0", got)
	}
	if q, _ := tr.Queue("a"); q != 0 || tr.Promotions("a") != 1 {
		t.Errorf("a in queue %d after %d promotions, want queue 0 after 1", q, tr.Promotions("a"))
	}
	// Without the knob a is never promoted.
	off, _ := newTiresias(TiresiasOptions{Thresholds: []float64{3250}})
	decide(t, off, gpusched.View{Now: 1000, Cluster: c, Running: []gpusched.JobStatus{running(a, 1000, 0, 0, 1, 2, 3)}, Pending: []gpusched.JobStatus{waiting(b)}})
	if got := runs(decide(t, off, v)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("knob off, t=3000: runs %v, want [b]", got)
	}
}

func TestTiresiasLease(t *testing.T) {
	c := cluster(t, 4)
	tr, _ := newTiresias(TiresiasOptions{MinRunTime: 100})
	old, fresh := job("old", 4, 0, 1), job("new", 4, 1000, 1)
	// old resumed at t=950 after earlier runs worth 4000 GPU-s: queue 1, but leased until 1050.
	st := running(old, 1000, 950, 0, 1, 2, 3)
	st.Executed, st.Attained = 1000, 4000
	v := gpusched.View{Now: 1000, Cluster: c, Running: []gpusched.JobStatus{st}, Pending: []gpusched.JobStatus{waiting(fresh)}}
	d := decide(t, tr, v)
	if got := runs(d); !slices.Equal(got, []string{"old"}) || d.WakeAt != 1050 {
		t.Errorf("runs %v, WakeAt %v; want [old] until its lease ends at 1050", got, d.WakeAt)
	}
}

func TestBCOCostFormula(t *testing.T) {
	c := cluster(t, 4, 4)
	j := job("j", 4, 0, 0.02)
	b := BCOCost{Alpha: 0.5, Overhead: 0.1, Bandwidth: 1e9, Bytes: func(*gpusched.Job) float64 { return 1e9 }}
	// One server: compute only.
	sc, err := b.StepCost(j, c, gpuRange(0, 4), nil)
	if err != nil || sc.Time != 0.02 || sc.CrossServerBytes != 0 {
		t.Errorf("one server: %+v, %v; want 0.02 s and no bytes", sc, err)
	}
	// Two servers, one other ring on server 0's link, none on server 1's: n = 2 on server 0,
	// B = 1e9 / (2 + 0.5) = 4e8; volume 2 x 3/4 x 1e9 = 1.5e9 bytes: 3.75 s; overhead 0.1.
	load := topology.LinkLoad{{Kind: topology.NICLink, Index: 0}: 1}
	sc, err = b.StepCost(j, c, []topology.GPUID{0, 1, 4, 5}, load)
	if err != nil || math.Abs(sc.Time-(0.02+3.75+0.1)) > 1e-12 || sc.CrossServerBytes != 3e9 {
		t.Errorf("two servers: %+v, %v; want 3.87 s and 3e9 bytes", sc, err)
	}
	// Default bandwidth: the server's NICs x NICBandwidth; default bytes: the feature.
	j.Features.Numeric = map[string]float64{ModelBytesFeature: 1e9}
	sc, _ = BCOCost{}.StepCost(j, c, []topology.GPUID{0, 1, 4, 5}, nil)
	sv := c.Server(0)
	if want := 0.02 + 1.5e9/(float64(sv.NICs)*sv.NICBandwidth); math.Abs(sc.Time-want) > 1e-12 {
		t.Errorf("defaults: %v s, want %v", sc.Time, want)
	}
	if _, err := (BCOCost{}).StepCost(job("x", 1, 0, 0), c, gpuRange(0, 1), nil); !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("no step time: %v, want ErrInvalidJob", err)
	}
	if _, err := (BCOCost{Alpha: -1}).StepCost(j, c, gpuRange(0, 4), nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative alpha: %v, want ErrInvalidOptions", err)
	}
}

func bcoJobs(specs ...[3]float64) []BCOJob {
	var out []BCOJob
	for i, s := range specs {
		out = append(out, BCOJob{Job: job(string(rune('a'+i)), int(s[0]), 0, s[1]), Iterations: s[2]})
	}
	return out
}

func TestSJFBCOBisectionFindsTheThreshold(t *testing.T) {
	c := cluster(t, 4, 4)
	jobs := bcoJobs([3]float64{1, 1, 30}, [3]float64{1, 1, 20}, [3]float64{2, 1, 40}, [3]float64{4, 1, 25}, [3]float64{3, 1, 10}, [3]float64{2, 1, 35})
	opt := BCOPlanOptions{Tolerance: 1e-6}
	_ = opt.defaults()
	for _, kappa := range []int{0, 2, 4} {
		p, err := newBCOPlanner(c, jobs, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := p.bisect(kappa)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Makespan > plan.Theta {
			t.Errorf("kappa %d: makespan %v above theta %v", kappa, plan.Makespan, plan.Theta)
		}
		// Independent check: scan theta upwards from the lower bound in fine steps; the first
		// feasible value must match the bisection's (feasibility is monotone on this instance).
		lo := p.lowerBound()
		first := math.NaN()
		for th := lo; th < 1000; th += 0.01 {
			if _, ok, _ := p.try(kappa, th); ok {
				first = th
				break
			}
		}
		if math.Abs(first-plan.Theta) > 0.011 {
			t.Errorf("kappa %d: bisection theta %v, scan finds %v", kappa, plan.Theta, first)
		}
		if _, ok, _ := p.try(kappa, plan.Theta-0.02); ok && plan.Theta-0.02 >= lo {
			t.Errorf("kappa %d: theta %v is not the least feasible", kappa, plan.Theta)
		}
	}
	// The chosen plan is the best over kappa, and no better than the lower bound.
	plan, err := PlanSJFBCO(c, jobs, nil, BCOPlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := newBCOPlanner(c, jobs, nil, opt)
	if plan.Makespan < p.lowerBound()-1e-9 {
		t.Errorf("makespan %v below the lower bound %v", plan.Makespan, p.lowerBound())
	}
	checkPlan(t, c, plan, len(jobs))
}

// checkPlan verifies that no two planned jobs overlap on a GPU and that every job is planned.
func checkPlan(t *testing.T, c *topology.Cluster, plan *BCOPlan, n int) {
	t.Helper()
	if len(plan.Jobs) != n {
		t.Fatalf("plan has %d jobs, want %d", len(plan.Jobs), n)
	}
	for i, a := range plan.Jobs {
		if len(a.GPUs) != a.Job.GPUs || a.End < a.Start {
			t.Errorf("job %s planned on %v from %v to %v", a.Job.ID, a.GPUs, a.Start, a.End)
		}
		for _, b := range plan.Jobs[:i] {
			if a.Start < b.End-1e-9 && b.Start < a.End-1e-9 {
				for _, g := range a.GPUs {
					if slices.Contains(b.GPUs, g) {
						t.Errorf("jobs %s and %s overlap on GPU %d", a.Job.ID, b.Job.ID, g)
					}
				}
			}
		}
	}
}

func TestSJFBCOPlacementHonoursKappaAndLambda(t *testing.T) {
	c := cluster(t, 8, 8)
	one := bcoJobs([3]float64{4, 1, 10})
	// kappa >= 4: FA-FFP packs the job on one server.
	plan, _ := PlanSJFBCO(c, one, nil, BCOPlanOptions{Kappas: []int{4}})
	if got := c.ServersSpanned(plan.Jobs[0].GPUs); got != 1 {
		t.Errorf("kappa 4: job on %d servers (%v), want 1", got, plan.Jobs[0].GPUs)
	}
	// kappa 0, lambda 0.25: LBSGF takes at most ceil(0.25 x 8) = 2 GPUs per server.
	plan, _ = PlanSJFBCO(c, one, nil, BCOPlanOptions{Kappas: []int{0}, Lambda: 0.25})
	if per := c.PerServer(plan.Jobs[0].GPUs); !slices.Equal(per, []int{2, 2}) {
		t.Errorf("kappa 0, lambda 0.25: per server %v, want [2 2]", per)
	}
	// lambda 1: the least busy server takes the whole job.
	busy := make([]float64, 16)
	for g := range 8 {
		busy[g] = 5 // server 0 is busy until t=5
	}
	plan, _ = PlanSJFBCO(c, one, busy, BCOPlanOptions{Kappas: []int{0}, Lambda: 1})
	if per := c.PerServer(plan.Jobs[0].GPUs); !slices.Equal(per, []int{0, 4}) || plan.Jobs[0].Start != 0 {
		t.Errorf("kappa 0, lambda 1: per server %v from %v, want [0 4] from 0", per, plan.Jobs[0].Start)
	}
	// Smallest demand first: a 1-GPU job is planned before a 4-GPU one that arrived earlier.
	jobs := []BCOJob{{Job: job("wide", 4, 0, 1), Iterations: 5}, {Job: job("thin", 1, 1, 1), Iterations: 5}}
	plan, _ = PlanSJFBCO(c, jobs, nil, BCOPlanOptions{})
	if plan.Jobs[0].Job.ID != "thin" {
		t.Errorf("planning order %s first, want thin", plan.Jobs[0].Job.ID)
	}
}

func TestSJFBCOOnlineStartsOnlyWhatThePlanStartsNow(t *testing.T) {
	c := cluster(t, 4)
	s, _ := newSJFBCO(SJFBCOOptions{})
	wide, thin := job("wide", 4, 0, 1), job("thin", 1, 1, 1)
	v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(wide), waiting(thin)}}
	d := decide(t, s, v)
	if got := runs(d); !slices.Equal(got, []string{"thin"}) {
		t.Errorf("SJF-BCO runs %v, want [thin]: smallest demand first, wide waits for all 4 GPUs", got)
	}
	if s.LastPlan() == nil || len(s.LastPlan().Jobs) != 2 {
		t.Errorf("LastPlan = %+v", s.LastPlan())
	}
	// It never preempts.
	v = gpusched.View{Now: 2, Cluster: c, Running: []gpusched.JobStatus{running(wide, 2, 1, 0, 1, 2, 3)}, Pending: []gpusched.JobStatus{waiting(thin)}}
	if ch := decide(t, s, v).Diff(v); len(ch.Preempt) != 0 {
		t.Errorf("SJF-BCO preempted %v", ch.Preempt)
	}
}

func TestSJFBCOBatchFollowsPlan(t *testing.T) {
	c := cluster(t, 4)
	s, _ := newSJFBCO(SJFBCOOptions{Batch: true, Iterations: func(j *gpusched.Job) float64 { return 10 }})
	a, b, x := job("a", 2, 0, 1), job("b", 2, 0, 1), job("c", 4, 0, 1)
	v := gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{waiting(a), waiting(b), waiting(x)}}
	d := decide(t, s, v)
	if got := runs(d); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("batch runs %v, want [a b] first", got)
	}
	// A job arriving during the batch waits for the next batch even if GPUs are free.
	late := job("late", 1, 5, 1)
	v = gpusched.View{Now: 10, Cluster: c,
		Running: []gpusched.JobStatus{running(a, 10, 0, placement(d, "a")...)},
		Pending: []gpusched.JobStatus{waiting(x), waiting(late)}}
	if got := runs(decide(t, s, v)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("batch at t=10 runs %v, want [a]: c waits for a's GPUs, late for the next batch", got)
	}
}

func TestGADGETRefusesRingThatDoesNotFit(t *testing.T) {
	c := cluster(t, 4, 4, 4)
	g, _ := newGADGET(GADGETOptions{Share: 0.6})
	x, z := job("x", 4, 0, 1), job("z", 4, 0, 1)
	y, small := job("y", 4, 1, 1), job("small", 2, 2, 1)
	v := gpusched.View{Now: 3, Cluster: c,
		Running: []gpusched.JobStatus{running(x, 3, 0, 0, 1, 4, 5), running(z, 3, 0, 8, 9, 10, 11)},
		Pending: []gpusched.JobStatus{waiting(y), waiting(small)}}
	res, _ := g.Residual(&v)
	capacity := serverCapacity(c, 0)
	if want := []float64{0.4 * capacity, 0.4 * capacity, capacity}; math.Abs(res[0]-want[0]) > 1 || math.Abs(res[2]-want[2]) > 1 {
		t.Errorf("residual %v, want %v", res, want)
	}
	d := decide(t, g, v)
	if got := runs(d); !slices.Equal(got, []string{"small", "x", "z"}) {
		t.Errorf("GADGET runs %v; want y refused (its ring would cross servers 0 and 1, whose links have 40%% left of the 60%% it reserves) and small admitted", got)
	}
	// FIFO with backfill, blind to bandwidth, would start y.
	f, _ := newFIFO(Options{Order: Backfill})
	if got := runs(decide(t, f, v)); !slices.Contains(got, "y") {
		t.Errorf("FIFO runs %v, expected y", got)
	}
	// With a smaller reservation the ring fits.
	g2, _ := newGADGET(GADGETOptions{Share: 0.3})
	if got := runs(decide(t, g2, v)); !slices.Contains(got, "y") {
		t.Errorf("GADGET with 30%% reservations runs %v, want y admitted", got)
	}
}

func TestBaselinePlacements(t *testing.T) {
	c := cluster(t, 4, 4)
	// Server 0 has GPUs 2, 3 free; server 1 all four.
	r := job("r", 2, 0, 1)
	v := gpusched.View{Now: 10, Cluster: c, Running: []gpusched.JobStatus{running(r, 10, 0, 0, 1)},
		Pending: []gpusched.JobStatus{waiting(job("p", 2, 1, 1))}}
	ff, _ := newFirstFit(Options{})
	if got := placement(decide(t, ff, v), "p"); !slices.Equal(got, []topology.GPUID{2, 3}) {
		t.Errorf("first-fit placed p on %v, want [2 3] (first server with room)", got)
	}
	pk, _ := newFIFO(Options{})
	if got := placement(decide(t, pk, v), "p"); !slices.Equal(got, []topology.GPUID{2, 3}) {
		t.Errorf("Pack placed p on %v, want [2 3] (best fit)", got)
	}
	// List scheduling: GPUs 4..7 have been busy longer than 2, 3.
	ls, _ := newListScheduling(Options{})
	decide(t, ls, gpusched.View{Now: 0, Cluster: c, Running: []gpusched.JobStatus{running(job("old", 2, 0, 1), 0, 0, 4, 5)}})
	d := decide(t, ls, v)
	if got := placement(d, "p"); !slices.Equal(got, []topology.GPUID{2, 3}) && !slices.Equal(got, []topology.GPUID{6, 7}) {
		t.Errorf("list scheduling placed p on %v, want never-used GPUs", got)
	}
	if ls.Load(4) != 10 || ls.Load(2) != 0 {
		t.Errorf("loads: GPU 4 %v, GPU 2 %v; want 10 and 0", ls.Load(4), ls.Load(2))
	}
	// Random: same seed, same choices; valid placements.
	r1, _ := newRandom(RandomOptions{Seed: 7})
	r2, _ := newRandom(RandomOptions{Seed: 7})
	if a, b := placement(decide(t, r1, v), "p"), placement(decide(t, r2, v), "p"); !slices.Equal(a, b) {
		t.Errorf("random with one seed placed p on %v and %v", a, b)
	}
}

func TestBadInputsAreErrors(t *testing.T) {
	scheds := allSchedulers(t, map[gpusched.JobID]float64{})
	for _, s := range scheds {
		if _, err := s.Schedule(gpusched.View{}); !errors.Is(err, gpusched.ErrInvalidView) {
			t.Errorf("%v without cluster: %v, want ErrInvalidView", s, err)
		}
		// A job with no GPU is rejected alone (TestOneBadJobIsRejectedAlone), not the call.
		v := gpusched.View{Cluster: cluster(t, 4), Pending: []gpusched.JobStatus{{Job: job("zero", 0, 0, 1)}}}
		d, err := s.Schedule(v)
		if err != nil || len(d.Rejected) != 1 || !errors.Is(d.Rejected[0], gpusched.ErrInvalidJob) {
			t.Errorf("%v with a 0-GPU job: %v, rejects %v; want it rejected with ErrInvalidJob", s, err, d.Rejected)
		}
	}
	if _, err := newFIFO(Options{Order: 9}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("unknown order: %v", err)
	}
	if _, err := newSJFBCO(SJFBCOOptions{BCOPlanOptions: BCOPlanOptions{Lambda: 2}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("lambda 2: %v", err)
	}
	if _, err := newGADGET(GADGETOptions{Share: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("share -1: %v", err)
	}
	// A placer that returns a busy GPU is caught.
	bad := func(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
		return gpuRange(0, j.GPUs), true
	}
	f, _ := newFIFO(Options{Placer: bad})
	v := gpusched.View{Now: 1, Cluster: cluster(t, 4), Running: []gpusched.JobStatus{running(job("r", 1, 0, 1), 1, 0, 0)},
		Pending: []gpusched.JobStatus{waiting(job("p", 1, 0, 1))}}
	if _, err := f.Schedule(v); !errors.Is(err, ErrPlacement) {
		t.Errorf("bad placer: %v, want ErrPlacement", err)
	}
}

func TestNames(t *testing.T) {
	want := []string{"fifo", "sjf", "srpt-oracle", "tiresias", "sjf-bco", "sjf-bco", "gadget", "first-fit", "list-scheduling", "random"}
	for i, s := range allSchedulers(t, nil) {
		if got := s.(interface{ String() string }).String(); got != want[i] {
			t.Errorf("scheduler %d is %q, want %q", i, got, want[i])
		}
	}
	f, _ := newFIFO(Options{Name: "fifo-strict"})
	b, _ := newSJFBCO(SJFBCOOptions{Name: "sjf-bco-batch", Batch: true})
	if f.String() != "fifo-strict" || b.String() != "sjf-bco-batch" {
		t.Errorf("named variants report %q and %q", f, b)
	}
}

// allSchedulers builds every policy with its defaults (the oracle and SJF-BCO with true
// iterations from iters).
func allSchedulers(t tb, iters map[gpusched.JobID]float64) []gpusched.Scheduler {
	t.Helper()
	fifo, _ := newFIFO(Options{})
	sjf, _ := newSJF(SJFOptions{})
	orc := oracle(t, iters, OracleOptions{})
	tir, _ := newTiresias(TiresiasOptions{PromoteKnob: 2})
	trueIters := func(j *gpusched.Job) float64 { return iters[j.ID] }
	if iters == nil {
		trueIters = nil
	}
	bco, _ := newSJFBCO(SJFBCOOptions{Iterations: trueIters})
	bcoBatch, _ := newSJFBCO(SJFBCOOptions{Iterations: trueIters, Batch: true})
	gad, _ := newGADGET(GADGETOptions{})
	ff, _ := newFirstFit(Options{})
	ls, _ := newListScheduling(Options{})
	rnd, _ := newRandom(RandomOptions{Seed: 1})
	return []gpusched.Scheduler{fifo, sjf, orc, tir, bco, bcoBatch, gad, ff, ls, rnd}
}

// Jobs known only by their model (no StepTime) are sized with the model-aware cost by default.
func TestModelJobs(t *testing.T) {
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Skip("no resnet50 in the zoo:", err)
	}
	c := cluster(t, 8, 8)
	mk := func(id string, gpus int, arrival float64) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, Arrival: arrival, Model: m,
			Plan: graph.Plan{DP: gpus, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32 * gpus}}
	}
	a, b := mk("a", 4, 0), mk("b", 8, 1)
	v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(a), waiting(b)}}
	for _, s := range allSchedulers(t, map[gpusched.JobID]float64{"a": 100, "b": 200}) {
		d := decide(t, s, v)
		if len(d.Run) == 0 {
			t.Errorf("%v starts nothing on an idle cluster", s)
		}
	}
}

// TestFIFOOrdersAViewOutOfArrivalOrder: a host may list waiting jobs in any order; FIFO sorts
// them by arrival, and jobs that arrived together keep the host's order.
func TestFIFOOrdersAViewOutOfArrivalOrder(t *testing.T) {
	c := cluster(t, 4)
	late, early := job("late", 4, 5, 1), job("early", 4, 1, 1)
	fifo, _ := newFIFO(Options{})
	v := gpusched.View{Now: 5, Cluster: c, Pending: []gpusched.JobStatus{waiting(late), waiting(early)}}
	if got := runs(decide(t, fifo, v)); !slices.Equal(got, []string{"early"}) {
		t.Errorf("FIFO runs %v, want [early]", got)
	}
	// Equal arrivals, listed z before y, behind a later arrival: z, the first listed, starts.
	z, y := job("z", 4, 2, 1), job("y", 4, 2, 1)
	v.Pending = []gpusched.JobStatus{waiting(late), waiting(z), waiting(y)}
	if got := runs(decide(t, fifo, v)); !slices.Equal(got, []string{"z"}) {
		t.Errorf("FIFO runs %v, want [z]: ties keep the view's order", got)
	}
}

// TestSJFBCOChargesPlacementOfMappedJobs: trace mappers give a job both a model and its
// consolidated step time. SJF-BCO's default cost must charge such a job the model's cost on
// each candidate placement (the step time is ignored when a model is present), so that on an
// idle cluster an 8-GPU job is planned on one 8-GPU server, not spread over two. The old
// default used the placement-blind BCOCost{} whenever StepTime > 0 and spread it.
func TestSJFBCOChargesPlacementOfMappedJobs(t *testing.T) {
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, 8, 8, 8, 8)
	var jobs []BCOJob
	for i, g := range []int{8, 16, 8} {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: g, Model: m, StepTime: 0.5,
			Plan: graph.Plan{DP: g, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 16 * g}}
		jobs = append(jobs, BCOJob{Job: j, Iterations: 1000})
	}
	plan, err := PlanSJFBCO(c, jobs, nil, BCOPlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plan.Jobs {
		if got, want := c.ServersSpanned(p.GPUs), p.Job.GPUs/8; got != want {
			t.Errorf("job %s (%d GPUs) planned on %d servers, want %d", p.Job.ID, p.Job.GPUs, got, want)
		}
	}
}

// TestEveryBaselineSurvivesARealCluster: every baseline (1) rejects a job it cannot run (too
// large, a GPU type the cluster lacks) with the job's id while scheduling the others, (2) moves
// or preempts a running job whose GPUs became unavailable, never keeping it there, and (3)
// accepts a cluster that changed between calls.
func TestEveryBaselineSurvivesARealCluster(t *testing.T) {
	c := cluster(t, 4, 4)
	iters := map[gpusched.JobID]float64{"big": 10, "h100": 10, "ok": 10, "r": 100, "p": 5, "q": 7}
	for _, s := range allSchedulers(t, iters) {
		big, h := job("big", 9, 0, 1), job("h100", 1, 0, 1)
		h.GPUType = "h100"
		ok := job("ok", 2, 0, 1)
		v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(big), waiting(h), waiting(ok)}}
		d := decide(t, s, v)
		var rejected []string
		for _, r := range d.Rejected {
			var je *gpusched.JobError
			if !errors.As(r, &je) || !errors.Is(r, gpusched.ErrTooLarge) {
				t.Errorf("%v: rejection %v", s, r)
			}
			rejected = append(rejected, string(je.Job))
		}
		slices.Sort(rejected)
		if !slices.Equal(rejected, []string{"big", "h100"}) || !slices.Equal(runs(d), []string{"ok"}) {
			t.Errorf("%v: rejected %v, runs %v; want [big h100] rejected and ok running", s, rejected, runs(d))
		}
		// Server 0 is drained under a running job.
		r := job("r", 4, 0, 1)
		v = gpusched.View{Now: 2, Cluster: c, Unavailable: topology.SetOf(0, 1, 2, 3),
			Running: []gpusched.JobStatus{running(r, 2, 0, 0, 1, 2, 3)},
			Pending: []gpusched.JobStatus{waiting(job("p", 2, 1, 1)), waiting(job("q", 2, 1.5, 1))}}
		d = decide(t, s, v)
		for _, a := range d.Run {
			if a.Job == "r" && c.ServerOf(a.GPUs[0]) == 0 {
				t.Errorf("%v keeps r on the drained server", s)
			}
		}
		// A new cluster object with one more server.
		bigger := cluster(t, 4, 4, 4)
		v = gpusched.View{Now: 3, Cluster: bigger, Pending: []gpusched.JobStatus{waiting(job("new", 12, 3, 1))}}
		iters["new"] = 5
		d = decide(t, s, v)
		if len(d.Rejected) != 0 {
			t.Errorf("%v rejects a job that fits the grown cluster: %v", s, d.Rejected)
		}
	}
}

// TestWeightedPolicies: SJF and SRPT-oracle order by size over weight, so of two jobs that
// cannot run together a heavier, somewhat longer one goes first; unweighted they would not.
func TestWeightedPolicies(t *testing.T) {
	c := cluster(t, 4)
	light, heavy := job("light", 4, 0, 1), job("heavy", 4, 0, 2)
	heavy.Weight = 4
	iters := map[gpusched.JobID]float64{"light": 100, "heavy": 100}
	sjf, _ := newSJF(SJFOptions{})
	for _, s := range []gpusched.Scheduler{sjf, oracle(t, iters, OracleOptions{})} {
		v := gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(light), waiting(heavy)}}
		if got := runs(decide(t, s, v)); !slices.Equal(got, []string{"heavy"}) {
			t.Errorf("%v runs %v, want [heavy] (size 2x, weight 4x)", s, got)
		}
	}
}

// TestEveryBaselineHonoursGPUTypes: on a cluster of A100 and T4 servers, jobs constrained to one
// type are placed only on it by every baseline (SJF-BCO's planner, List-Scheduling, Random,
// First-Fit and GADGET chose GPUs of any type before).
func TestEveryBaselineHonoursGPUTypes(t *testing.T) {
	var servers []topology.Server
	for i, spec := range []topology.ServerSpec{topology.T4(), topology.A100(), topology.T4(), topology.A100()} {
		spec.GPUs, spec.NICs = 4, min(spec.NICs, 4)
		servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec})
	}
	c, err := topology.New("mixed", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	iters := map[gpusched.JobID]float64{}
	var pending []gpusched.JobStatus
	for i, want := range []string{"a100", "t4", "a100", "", "t4", "a100"} {
		j := job(fmt.Sprint("j", i), 1+i%3, float64(i), 1)
		j.GPUType = want
		iters[j.ID] = float64(10 * (i + 1))
		pending = append(pending, waiting(j))
	}
	for _, s := range allSchedulers(t, iters) {
		// decide validates the decision, which checks every GPU's type.
		d := decide(t, s, gpusched.View{Now: 10, Cluster: c, Pending: pending})
		if len(d.Run) == 0 {
			t.Errorf("%v starts nothing", s)
		}
	}
}

// TestSJFBCOBatchReplansOnANewCluster: in batch mode a plan made for one cluster is dropped when
// the cluster changes. Here c is planned (after b) on GPUs of both servers, server 1 leaves
// while b and c wait, and the old code waited forever for GPUs 6 and 7 of a cluster that no
// longer had them.
func TestSJFBCOBatchReplansOnANewCluster(t *testing.T) {
	iters := map[gpusched.JobID]float64{"a": 1000, "b": 10, "c": 20}
	bco, _ := newSJFBCO(SJFBCOOptions{Batch: true, Iterations: func(j *gpusched.Job) float64 { return iters[j.ID] }})
	big := cluster(t, 4, 4)
	a, b, c := job("a", 4, 0, 1), job("b", 4, 0, 1), job("c", 4, 0, 1)
	d := decide(t, bco, gpusched.View{Now: 1, Cluster: big, Pending: []gpusched.JobStatus{waiting(a), waiting(b), waiting(c)}})
	if got := runs(d); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("runs %v, want [a b]", got)
	}
	for _, pl := range bco.LastPlan().Jobs {
		if pl.Job.ID == "c" && !slices.ContainsFunc(pl.GPUs, func(g topology.GPUID) bool { return big.ServerOf(g) == 1 }) {
			t.Skip("c is not planned on server 1: the scenario does not arise")
		}
	}
	// Server 1 leaves: the host stopped b; a finished. b and c wait on the one-server cluster.
	small := cluster(t, 4)
	d = decide(t, bco, gpusched.View{Now: 3, Cluster: small, Pending: []gpusched.JobStatus{{Job: b, Started: true, Since: 3, Preemptions: 1}, waiting(c)}})
	if len(d.Run) != 1 {
		t.Errorf("after the cluster shrank: runs %v, want one of b and c", runs(d))
	}
}
