package asrpt

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func truthOracle(m map[gpusched.JobID]float64) Oracle {
	return func(id gpusched.JobID) (float64, bool) { n, ok := m[id]; return n, ok }
}

func mustNew(t *testing.T, o Options) *Scheduler {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func running(j *gpusched.Job, since float64, done float64, gpus ...topology.GPUID) gpusched.JobStatus {
	return gpusched.JobStatus{Job: j, GPUs: gpus, Since: since, Started: true, Iterations: done, Executed: done * j.StepTime}
}

func runSet(d gpusched.Decision) []gpusched.JobID {
	var ids []gpusched.JobID
	for _, a := range d.Run {
		ids = append(ids, a.Job)
	}
	slices.Sort(ids)
	return ids
}

// A short job arriving at a full cluster preempts the long running one (SRPT), but not before
// MinRunTime, and then asks to be woken when the preemption becomes allowed.
func TestPreemptsForShorterJob(t *testing.T) {
	c := oneServer(4)
	long := &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}
	short := &gpusched.Job{ID: "short", GPUs: 2, StepTime: 1, Arrival: 10}
	oracle := truthOracle(map[gpusched.JobID]float64{"long": 100, "short": 5})
	for _, minRun := range []float64{0, 30} {
		s := mustNew(t, Options{Estimator: oracle, MinRunTime: minRun})
		v0 := gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: long}}}
		d, err := s.Schedule(v0)
		if err != nil || !slices.Equal(runSet(d), []gpusched.JobID{"long"}) {
			t.Fatalf("t=0: %v %v", runSet(d), err)
		}
		v := gpusched.View{Now: 10, Cluster: c,
			Running: []gpusched.JobStatus{running(long, 0, 10, 0, 1, 2, 3)},
			Pending: []gpusched.JobStatus{{Job: short, Since: 10}}}
		d, err = s.Schedule(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Validate(v); err != nil {
			t.Fatal(err)
		}
		if minRun == 0 {
			if !slices.Equal(runSet(d), []gpusched.JobID{"short"}) {
				t.Errorf("MinRunTime 0: run %v, want the short job alone (strict order)", runSet(d))
			}
			continue
		}
		if !slices.Equal(runSet(d), []gpusched.JobID{"long"}) {
			t.Errorf("MinRunTime 30: run %v, want long kept", runSet(d))
		}
		if d.WakeAt != 30 {
			t.Errorf("WakeAt = %v, want 30 (when long may be preempted)", d.WakeAt)
		}
	}
}

func TestNoPreemption(t *testing.T) {
	c := oneServer(4)
	long := &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}
	short := &gpusched.Job{ID: "short", GPUs: 2, StepTime: 1, Arrival: 10}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"long": 100, "short": 5}), NoPreemption: true})
	if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: long}}}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Schedule(gpusched.View{Now: 10, Cluster: c,
		Running: []gpusched.JobStatus{running(long, 0, 10, 0, 1, 2, 3)},
		Pending: []gpusched.JobStatus{{Job: short, Since: 10}}})
	if err != nil || !slices.Equal(runSet(d), []gpusched.JobID{"long"}) {
		t.Errorf("run %v %v, want long kept", runSet(d), err)
	}
}

// Strict order keeps a small job waiting behind a blocked bigger one; Backfill starts it.
func TestStrictVersusBackfill(t *testing.T) {
	c := oneServer(4)
	a := &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}
	big := &gpusched.Job{ID: "big", GPUs: 4, StepTime: 1}
	small := &gpusched.Job{ID: "small", GPUs: 1, StepTime: 1}
	truth := map[gpusched.JobID]float64{"a": 1, "big": 3, "small": 100}
	for _, backfill := range []bool{false, true} {
		s := mustNew(t, Options{Estimator: truthOracle(truth), Backfill: backfill, NoPreemption: true})
		// a (highest priority) already runs on 2 GPUs; big (next) needs 4; small needs 1.
		if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}); err != nil {
			t.Fatal(err)
		}
		v := gpusched.View{Now: 0, Cluster: c,
			Running: []gpusched.JobStatus{running(a, 0, 0, 0, 1)},
			Pending: []gpusched.JobStatus{{Job: big}, {Job: small}}}
		d, err := s.Schedule(v)
		if err != nil {
			t.Fatal(err)
		}
		want := []gpusched.JobID{"a"}
		if backfill {
			want = []gpusched.JobID{"a", "small"}
		}
		if !slices.Equal(runSet(d), want) {
			t.Errorf("backfill=%v: run %v, want %v", backfill, runSet(d), want)
		}
	}
}

// A job that runs past its prediction is re-estimated: its priority falls below a waiting job
// it used to beat, which then preempts it.
func TestReestimationLowersPriority(t *testing.T) {
	c := oneServer(2)
	a := &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 2, StepTime: 1, Arrival: 1}
	calls := 0
	est := estimatorFunc(func(j *gpusched.Job, done float64) (float64, error) {
		switch {
		case j.ID == "b":
			return 20, nil
		case done == 0:
			return 10, nil // a is predicted short...
		default:
			calls++
			return done + 100, nil // ...but turns out long
		}
	})
	s := mustNew(t, Options{Estimator: est})
	if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}); err != nil {
		t.Fatal(err)
	}
	v := gpusched.View{Now: 1, Cluster: c, Running: []gpusched.JobStatus{running(a, 0, 1, 0, 1)},
		Pending: []gpusched.JobStatus{{Job: b, Since: 1}}}
	d, err := s.Schedule(v)
	if err != nil || !slices.Equal(runSet(d), []gpusched.JobID{"a"}) {
		t.Fatalf("t=1: %v %v: a is predicted shorter and keeps running", runSet(d), err)
	}
	if d.WakeAt != 10 {
		t.Errorf("WakeAt = %v, want 10 (when a reaches its predicted 10 iterations)", d.WakeAt)
	}
	v = gpusched.View{Now: 10, Cluster: c, Running: []gpusched.JobStatus{running(a, 0, 10, 0, 1)},
		Pending: []gpusched.JobStatus{{Job: b, Since: 1}}}
	d, err = s.Schedule(v)
	if err != nil || !slices.Equal(runSet(d), []gpusched.JobID{"b"}) {
		t.Fatalf("t=10: %v %v: a overran and should yield to b", runSet(d), err)
	}
	if calls != 1 {
		t.Errorf("conditional estimate called %d times, want 1", calls)
	}
	if n, _, _ := s.Predicted("a"); n != 110 {
		t.Errorf("revised prediction %v, want 110", n)
	}
	// With NoReestimate the overrunning job keeps the top priority.
	s = mustNew(t, Options{Estimator: est, NoReestimate: true})
	_, _ = s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}})
	d, _ = s.Schedule(v)
	if !slices.Equal(runSet(d), []gpusched.JobID{"a"}) {
		t.Errorf("NoReestimate: run %v, want a", runSet(d))
	}
}

// Jobs that leave (completed or cancelled) are forgotten by the real schedule but stay in the
// virtual one until they complete there.
func TestCompletionAndCancellation(t *testing.T) {
	c := oneServer(4)
	a := &gpusched.Job{ID: "a", GPUs: 4, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 4, StepTime: 1}
	learned := 0
	est := &learningEst{observe: func(j *gpusched.Job, n float64) { learned++ }}
	s := mustNew(t, Options{Estimator: est})
	_, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}})
	if err != nil {
		t.Fatal(err)
	}
	s.JobCompleted(gpusched.Completion{Job: a, Time: 2, Iterations: 2})
	s.JobCompleted(gpusched.Completion{Job: a, Time: 2, Iterations: 2}) // twice: harmless
	if learned != 2 {
		t.Errorf("learner called %d times", learned)
	}
	if _, ok := s.VirtualCompletion("a"); ok {
		t.Error("a should be forgotten after completing")
	}
	// b vanishes from the view without a report: forgotten too.
	if _, err := s.Schedule(gpusched.View{Now: 3, Cluster: c}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.Predicted("b"); ok {
		t.Error("b should be forgotten after leaving the view")
	}
	// The ghosts drain from the virtual queue; a new job still gets scheduled.
	x := &gpusched.Job{ID: "x", GPUs: 1, StepTime: 1, Arrival: 100}
	d, err := s.Schedule(gpusched.View{Now: 100, Cluster: c, Pending: []gpusched.JobStatus{{Job: x}}})
	if err != nil || !slices.Equal(runSet(d), []gpusched.JobID{"x"}) {
		t.Errorf("after ghosts: %v %v", runSet(d), err)
	}
	if s.queue.Len() != 1 {
		t.Errorf("virtual queue holds %d jobs, want 1 (ghosts completed)", s.queue.Len())
	}
	if got := fmt.Sprint(s); got != "asrpt" {
		t.Errorf("String = %q", got)
	}
}

type learningEst struct{ observe func(*gpusched.Job, float64) }

func (l *learningEst) Estimate(j *gpusched.Job, done float64) (float64, error) { return done + 10, nil }
func (l *learningEst) Observe(j *gpusched.Job, n float64) error                { l.observe(j, n); return nil }

func TestErrors(t *testing.T) {
	if s, err := New(Options{}); err != nil {
		t.Errorf("New with defaults: %v", err)
	} else if _, ok := s.opt.Estimator.(Forest); !ok {
		t.Errorf("default estimator is %T, want Forest", s.opt.Estimator)
	}
	if _, err := New(Options{Estimator: Oracle(nil), MinRunTime: math.NaN()}); err == nil {
		t.Error("NaN MinRunTime should fail")
	}
	c := oneServer(4)
	// Jobs that cannot be admitted are rejected one by one, with their id and reason, and the
	// others are scheduled.
	good := &gpusched.Job{ID: "ok", GPUs: 1, StepTime: 1}
	rejections := []struct {
		job  *gpusched.Job
		want error
		msg  string
	}{
		{&gpusched.Job{ID: "zz", GPUs: 1, StepTime: 1}, nil, "oracle has no iteration count"},
		{&gpusched.Job{ID: "a", GPUs: 5, StepTime: 1}, gpusched.ErrTooLarge, "needs 5 GPUs"},
		{&gpusched.Job{ID: "a", GPUs: 1}, gpusched.ErrNoCost, "neither a model nor a step time"},
		{&gpusched.Job{ID: "a", GPUs: 1, StepTime: 1, GPUType: "h100"}, gpusched.ErrTooLarge, `type "h100"`},
	}
	for _, tc := range rejections {
		s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 3, "ok": 3})})
		v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: tc.job}, {Job: good}}}
		for call := 0; call < 2; call++ { // a rejected job stays rejected while it is in the view
			d, err := s.Schedule(v)
			if err != nil {
				t.Fatalf("job %q: the call failed: %v", tc.job.ID, err)
			}
			if err := d.Validate(v); err != nil {
				t.Fatal(err)
			}
			var je *gpusched.JobError
			if len(d.Rejected) != 1 || !errors.As(d.Rejected[0], &je) || je.Job != tc.job.ID ||
				(tc.want != nil && !errors.Is(je, tc.want)) || !strings.Contains(je.Error(), tc.msg) {
				t.Errorf("job %q, call %d: rejected %v, want %v mentioning %q", tc.job.ID, call, d.Rejected, tc.want, tc.msg)
			}
			if len(d.Run) != 1 || d.Run[0].Job != "ok" {
				t.Errorf("job %q: the good job did not run: %+v", tc.job.ID, d.Run)
			}
			v.Now++
			v.Running = []gpusched.JobStatus{{Job: good, GPUs: d.Run[0].GPUs, Started: true}}
			v.Pending = v.Pending[:1]
		}
	}
	bad := func(c *topology.Cluster, free topology.GPUSet, j *gpusched.Job) ([]topology.GPUID, bool) {
		return []topology.GPUID{0}, true
	}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 3, "b": 3}), Placer: bad})
	_, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{
		{Job: &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}}, {Job: &gpusched.Job{ID: "b", GPUs: 1, StepTime: 1}}}})
	if err == nil || !strings.Contains(err.Error(), "not free") {
		t.Errorf("placer returning a busy GPU: %v", err)
	}
	if _, err := s.Schedule(gpusched.View{}); err == nil {
		t.Error("view without cluster")
	}
	if _, err := s.Schedule(gpusched.View{Cluster: oneServer(8)}); err != nil {
		t.Errorf("a cluster that changed between calls: %v", err)
	}
	if _, err := s.Schedule(gpusched.View{Cluster: oneServer(8), Now: -1}); err == nil {
		t.Error("time going backwards")
	}
}

// TestInvariantsAllOptions runs every option combination, with re-estimation and noisy
// predictions, through the host: every decision validates (the host checks), no GPU is
// double-booked, and every job completes.
func TestInvariantsAllOptions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInstance(t, 8, 10, 20, 20)
		servers := rapid.IntRange(1, 3).Draw(t, "servers")
		c, err := topology.Uniform(topology.T4(), servers)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.jobs {
			in.jobs[i].job.GPUs = min(in.jobs[i].job.GPUs, c.NumGPUs())
		}
		base := in.estimator()
		est := estimatorFunc(func(j *gpusched.Job, done float64) (float64, error) {
			n, _ := base.Estimate(j, 0)
			if done >= n {
				return done * 1.5, nil // a crude conditional estimate
			}
			return n, nil
		})
		s, err := New(Options{
			Estimator:    est,
			Backfill:     rapid.Bool().Draw(t, "backfill"),
			NoPreemption: rapid.Bool().Draw(t, "no preemption"),
			MinRunTime:   float64(rapid.IntRange(0, 5).Draw(t, "min run")),
			NoReestimate: rapid.Bool().Draw(t, "no reestimate"),
		})
		if err != nil {
			t.Fatal(err)
		}
		checked := checkedScheduler{s}
		done, err := runHost(c, in.jobs, checked)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range in.jobs {
			if f, ok := done[j.job.ID]; !ok || f < j.job.Arrival+j.iters*j.job.StepTime-1e-9 {
				t.Fatalf("job %s: completion %v (arrival %v, needs %v)", j.job.ID, f, j.job.Arrival, j.iters)
			}
		}
	})
}

func TestRatio(t *testing.T) {
	if PatientRatio(8, 1, 1, DefaultPatience) != 10 || PatientRatio(4, 2, 2, 0.5) != 2+4*4.0/3 || !math.IsNaN(PatientRatio(8, 1, 1, -1)) {
		t.Errorf("PatientRatio: %v %v %v", PatientRatio(8, 1, 1, 2), PatientRatio(4, 2, 2, 0.5), PatientRatio(8, 1, 1, -1))
	}
	if Ratio(8, 1, 1) != 2 || Ratio(8, 8, 1) != 9 || Ratio(4, 2, 2) != 1+4*4.0/3 {
		t.Errorf("Ratio: %v %v %v", Ratio(8, 1, 1), Ratio(8, 8, 1), Ratio(4, 2, 2))
	}
	for _, r := range []float64{Ratio(0, 1, 1), Ratio(4, 5, 1), Ratio(4, 1, 0.5), Beta(4, 0)} {
		if !math.IsNaN(r) {
			t.Errorf("bad arguments should give NaN, got %v", r)
		}
	}
}

// The default scheduler learns: after jobs of a recurring group finish, a new run of the group
// is predicted near their length rather than at the prior.
func TestForestLearns(t *testing.T) {
	c := oneServer(4)
	s := mustNew(t, Options{})
	f := s.opt.Estimator.(Forest)
	for i := 0; i < 5; i++ {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("old", i)), GPUs: 1, StepTime: 1, Features: gpusched.Features{Group: "g", Family: "resnet50"}}
		if _, err := s.Schedule(gpusched.View{Now: float64(i), Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}}); err != nil {
			t.Fatal(err)
		}
		s.JobCompleted(gpusched.Completion{Job: j, Time: float64(i), Iterations: 777})
	}
	j := &gpusched.Job{ID: "new", GPUs: 1, StepTime: 1, Features: gpusched.Features{Group: "g", Family: "resnet50"}}
	n, err := f.Estimate(j, 0)
	if err != nil || math.Abs(n-777) > 1 {
		t.Errorf("prediction for a recurring job: %v %v, want about 777", n, err)
	}
	if m, err := f.Estimate(j, 1000); err != nil || !(m > 1000) {
		t.Errorf("conditional estimate past the prediction: %v %v", m, err)
	}
}

// With models, the default placer keeps a tensor-parallel job's groups whole and its traffic
// inside as few servers as possible, where plain consolidation would not care.
func TestPartitionedPlacer(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	plan := graph.Plan{DP: 1, TP: 4, PP: 2, MicroBatches: 4, GlobalBatch: 16}
	j := &gpusched.Job{ID: "llama", GPUs: 8, Model: m, Plan: plan}
	p := NewPartitioned(partition.PlaceOptions{})
	free := c.AllGPUs()
	for _, g := range []topology.GPUID{0, 1, 8, 9, 16, 17, 18, 19} { // 6, 6 and 4 free
		free.Remove(g)
	}
	gpus, ok := p.Place(c, free, j)
	if !ok || len(gpus) != 8 {
		t.Fatalf("Place: %v %v", gpus, ok)
	}
	for _, grp := range plan.TPGroups() {
		for _, r := range grp {
			if c.ServerOf(gpus[r]) != c.ServerOf(gpus[grp[0]]) {
				t.Fatalf("TP group %v split: %v", grp, gpus)
			}
		}
	}
	p.Forget(j)
	// A job without a model is consolidated.
	if g, ok := p.Place(c, free, &gpusched.Job{ID: "x", GPUs: 4, StepTime: 1}); !ok || c.ServersSpanned(g) != 1 {
		t.Errorf("plain job: %v %v", g, ok)
	}
	// Through the scheduler, with the model-aware cost.
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"llama": 100})})
	d, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}})
	if err != nil || len(d.Run) != 1 || c.ServersSpanned(d.Run[0].GPUs) != 1 {
		t.Errorf("scheduler placement: %+v %v", d.Run, err)
	}
}

// checkedScheduler checks after every call that the live list mirrors the virtual queue's order
// without its ghosts.
type checkedScheduler struct{ *Scheduler }

func (c checkedScheduler) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := c.Scheduler.Schedule(v)
	if err == nil {
		err = c.checkMirror()
	}
	return d, err
}

func (c checkedScheduler) JobCompleted(x gpusched.Completion) {
	c.Scheduler.JobCompleted(x)
}

func (s *Scheduler) checkMirror() error {
	var want []int
	for _, k := range s.queue.Order(nil) {
		if st := s.byKey[k]; st != nil && !st.gone {
			want = append(want, k)
		}
	}
	var got []int
	for _, st := range s.live {
		got = append(got, st.key)
		if rem, ok := s.queue.Remaining(st.key); !ok || (rem != st.rem && st.key != s.headKey()) {
			return fmt.Errorf("live job %d: mirror remaining %v, queue %v", st.key, st.rem, rem)
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("live mirror %v, queue order without ghosts %v", got, want)
	}
	gone := 0
	for _, st := range s.vdone {
		if st.gone {
			gone++
		}
	}
	if gone != s.vdoneGone {
		return fmt.Errorf("%d virtually finished jobs have left, counted %d", gone, s.vdoneGone)
	}
	for id, st := range s.jobs {
		if st.gpus != st.job.GPUs {
			return fmt.Errorf("job %q: %d GPUs kept, its description says %d", id, st.gpus, st.job.GPUs)
		}
	}
	return nil
}

func (s *Scheduler) headKey() int {
	k, _, _ := s.queue.Head()
	return k
}

// TestMirrorHasTeeth: a mirror that is not repositioned after the queue advances is caught.
func TestMirrorHasTeeth(t *testing.T) {
	c := oneServer(2)
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 10, "b": 12, "c": 11})})
	a := &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 2, StepTime: 1}
	if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.checkMirror(); err != nil {
		t.Fatal(err)
	}
	s.live[0], s.live[1] = s.live[1], s.live[0] // corrupt the order
	if s.checkMirror() == nil {
		t.Fatal("a corrupted mirror passed the check")
	}
}

// A job that now runs slower than its average pace approaches its prediction in wake-ups
// that shrink geometrically; they must not shrink below MinWake, or a simulator never gets
// past the limit point (found on a Rubick workload with 260 s restores: 100,000 events within
// a nanosecond of simulated time).
func TestWakeUpsDoNotShrink(t *testing.T) {
	c := oneServer(2)
	a := &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 100})})
	if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}); err != nil {
		t.Fatal(err)
	}
	// Since t = 100 the job runs at half its average pace: 1 iteration per 2 s.
	now, done := 100.0, 90.0
	for range 60 {
		st := running(a, 0, done, 0)
		st.Executed = now
		d, err := s.Schedule(gpusched.View{Now: now, Cluster: c, Running: []gpusched.JobStatus{st}})
		if err != nil {
			t.Fatal(err)
		}
		if d.WakeAt < now+MinWake {
			t.Fatalf("t=%v, %v iterations done: woken at %v, less than MinWake later", now, done, d.WakeAt)
		}
		done = min(done+(d.WakeAt-now)/2, 100)
		now = d.WakeAt
		if done >= 100 {
			return
		}
	}
	t.Fatalf("after 60 wake-ups the job has done %v of its 100 predicted iterations", done)
}

// TestStaleEntriesAreNotReused: Schedule matches a view's entries against the previous view's
// by Job pointer and reuses their state. A job reported completed but listed again (same
// pointer) is a new job; a completed job's key, reused by a newly admitted job in the same call,
// is not mistaken for the old job's; and a job whose Job object the host rebuilt is matched by
// ID. Each case would break a fast path that trusted the previous view's state.
func TestStaleEntriesAreNotReused(t *testing.T) {
	c := oneServer(8)
	iters := map[gpusched.JobID]float64{"a": 5, "b": 50, "n": 7, "n2": 9}
	s := mustNew(t, Options{Estimator: truthOracle(iters)})
	a := &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 1, StepTime: 1}
	check := func(v gpusched.View, want ...gpusched.JobID) {
		t.Helper()
		d, err := s.Schedule(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Validate(v); err != nil {
			t.Fatal(err)
		}
		if got := runSet(d); !slices.Equal(got, want) {
			t.Fatalf("t=%v: runs %v, want %v", v.Now, got, want)
		}
	}
	check(gpusched.View{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}}, "a", "b")
	// a completes on the virtual machine (5 s of work at full speed) and for real; the host
	// still lists it, with the same pointer, next to a new job that takes a freed key.
	s.JobCompleted(gpusched.Completion{Job: a, Time: 20, Iterations: 5})
	n := &gpusched.Job{ID: "n", GPUs: 1, StepTime: 1, Arrival: 20}
	check(gpusched.View{Now: 20, Cluster: c,
		Running: []gpusched.JobStatus{running(b, 0, 20, 1)},
		Pending: []gpusched.JobStatus{{Job: n}, {Job: a}}}, "a", "b", "n")
	if p, _, ok := s.Predicted("a"); !ok || p != 5 {
		t.Fatalf("a listed again: predicted %v %v, want re-admitted with 5", p, ok)
	}
	if p, _, ok := s.Predicted("n"); !ok || p != 7 {
		t.Fatalf("n: predicted %v %v, want 7", p, ok)
	}
	// The host rebuilds b's Job (same ID, new pointer): still the same job, not a duplicate.
	b2 := *b
	n2 := &gpusched.Job{ID: "n2", GPUs: 1, StepTime: 1, Arrival: 21}
	check(gpusched.View{Now: 21, Cluster: c,
		Running: []gpusched.JobStatus{running(&b2, 0, 21, 1)},
		Pending: []gpusched.JobStatus{{Job: n}, {Job: a}, {Job: n2}}}, "a", "b", "n", "n2")
	for _, id := range []gpusched.JobID{"a", "b", "n", "n2"} {
		if p, _, ok := s.Predicted(id); !ok || p != iters[id] {
			t.Fatalf("%s: predicted %v %v, want %v", id, p, ok, iters[id])
		}
	}
	// Listing b twice is an error, whichever entry the fast path matches.
	if _, err := s.Schedule(gpusched.View{Now: 22, Cluster: c,
		Running: []gpusched.JobStatus{running(&b2, 0, 22, 1)},
		Pending: []gpusched.JobStatus{{Job: n}, {Job: a}, {Job: n2}, {Job: b}}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("b listed twice: err %v", err)
	}
}

// A job whose progress is a few ULPs below its prediction has reached it: a host's progress
// after a restart, computed in another order, must not flip a re-estimation and with it every
// later decision (issue #31).
func TestReestimationToleratesRounding(t *testing.T) {
	c := oneServer(2)
	a := &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}
	est := estimatorFunc(func(j *gpusched.Job, done float64) (float64, error) {
		if done == 0 {
			return 10, nil
		}
		return done + 100, nil
	})
	for _, done := range []float64{10, math.Nextafter(10, 0), 10 * (1 - 1e-12)} {
		s := mustNew(t, Options{Estimator: est})
		if _, err := s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}); err != nil {
			t.Fatal(err)
		}
		v := gpusched.View{Now: 10, Cluster: c, Running: []gpusched.JobStatus{running(a, 0, done, 0, 1)}}
		if _, err := s.Schedule(v); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Predicted("a"); n != done+100 {
			t.Errorf("progress %v (prediction 10): prediction %v, want %v (re-estimated)", done, n, done+100)
		}
	}
	// Progress clearly below the prediction is not re-estimated.
	s := mustNew(t, Options{Estimator: est})
	_, _ = s.Schedule(gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}})
	if _, err := s.Schedule(gpusched.View{Now: 9, Cluster: c, Running: []gpusched.JobStatus{running(a, 0, 9.99, 0, 1)}}); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.Predicted("a"); n != 10 {
		t.Errorf("progress 9.99: prediction %v, want 10", n)
	}
}

// TestZeroAndNilPlanChoice: a PlanChoice not built by NewPlanChoice (the zero value or a nil
// pointer) answers every method with an error or nothing, never a panic (issue #34).
func TestZeroAndNilPlanChoice(t *testing.T) {
	c := oneServer(4)
	v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "j", GPUs: 1, StepTime: 1}}}}
	for name, p := range map[string]*PlanChoice{"zero": {}, "nil": nil} {
		if _, err := p.Schedule(v); err == nil {
			t.Errorf("%s: Schedule accepted", name)
		}
		if err := p.SaveState(io.Discard); err == nil {
			t.Errorf("%s: SaveState accepted", name)
		}
		if err := p.RestoreState(strings.NewReader("{}")); err == nil {
			t.Errorf("%s: RestoreState accepted", name)
		}
		p.JobCompleted(gpusched.Completion{Job: v.Pending[0].Job})
		if _, ok := p.Choice("j"); ok {
			t.Errorf("%s: Choice found a job", name)
		}
		_ = p.String()
		_ = p.Inner()
	}
}
