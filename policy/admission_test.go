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

// everyPolicy is every scheduler of the package, built with its defaults (the oracle with
// true iterations from iters).
func everyPolicy(t *testing.T, iters map[gpusched.JobID]float64) []gpusched.Scheduler {
	t.Helper()
	rub, err := newRubick(RubickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	smd, err := newSMD(SMDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	psl, err := newPSLocality(PSLocalityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return append(allSchedulers(t, iters), rub, smd, psl)
}

// TestOneBadJobIsRejectedAlone: a job that cannot run as described (no GPU, a negative GPU
// count, a NaN or infinite feature, no cost) is listed in Decision.Rejected with a
// *gpusched.JobError naming it, by every policy, and the other jobs are scheduled: the call
// does not fail (FIFO, SJF, the oracle, Tiresias and SJF-BCO failed the whole call for a job
// with no GPU; Rubick ran it on no GPU).
func TestOneBadJobIsRejectedAlone(t *testing.T) {
	c := cluster(t, 8, 8)
	bad := []*gpusched.Job{
		{ID: "zero", GPUs: 0, StepTime: 1},
		{ID: "negative", GPUs: -2, StepTime: 1},
		{ID: "nan-lr", GPUs: 1, StepTime: 1, Features: gpusched.Features{LearningRate: math.NaN()}},
		{ID: "inf-numeric", GPUs: 1, StepTime: 1, Features: gpusched.Features{Numeric: map[string]float64{"x": math.Inf(1)}}},
		{ID: "no-cost", GPUs: 1},
	}
	good := job("good", 2, 0, 1)
	iters := map[gpusched.JobID]float64{"good": 100}
	for _, b := range bad {
		iters[b.ID] = 100
	}
	for _, s := range everyPolicy(t, iters) {
		pending := []gpusched.JobStatus{waiting(good)}
		for _, b := range bad {
			pending = append(pending, waiting(b))
		}
		v := gpusched.View{Now: 1, Cluster: c, Pending: pending}
		d, err := s.Schedule(v)
		if err != nil {
			t.Errorf("%v: the call failed: %v", s, err)
			continue
		}
		if err := d.Validate(v); err != nil {
			t.Errorf("%v: invalid decision: %v", s, err)
		}
		if got := runs(d); !slices.Equal(got, []string{"good"}) {
			t.Errorf("%v runs %v, want [good]", s, got)
		}
		var rejected []gpusched.JobID
		for _, je := range d.Rejected {
			var e *gpusched.JobError
			if !errors.As(je, &e) || e.Job != je.Job || e.Err == nil {
				t.Errorf("%v: rejection %v is not a *JobError for its job", s, je)
			}
			rejected = append(rejected, je.Job)
		}
		for _, b := range bad {
			if !slices.Contains(rejected, b.ID) {
				t.Errorf("%v does not reject job %q (rejects %v)", s, b.ID, rejected)
			}
		}
	}
}

// TestOracleOnAMixedCluster: a job whose plan fits only the 80 GB GPUs of a cluster that also
// has T4s is sized on those; the oracle packed it on any GPUs, found it out of memory on the
// T4s and failed every call; Rubick timed it there too and rejected it. (SMD, a policy of
// GPU counts, times a job on the cluster's first GPUs and still rejects it: not fixed.)
func TestOracleOnAMixedCluster(t *testing.T) {
	var servers []topology.Server
	for i, spec := range []topology.ServerSpec{topology.T4(), topology.A100()} {
		servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec})
	}
	c, err := topology.New("mixed", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("gpt2-1.5b")
	if err != nil {
		t.Skip("no gpt2-1.5b in the zoo:", err)
	}
	big := &gpusched.Job{ID: "big", GPUs: 4, Model: m, Plan: graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 4}}
	if err := gpusched.Admit(big, c, nil); err != nil {
		t.Fatalf("test bug: %v", err)
	}
	small := job("small", 2, 0, 1)
	iters := map[gpusched.JobID]float64{"big": 100, "small": 50}
	rub, err := newRubick(RubickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(allSchedulers(t, iters), rub) {
		d := decide(t, s, gpusched.View{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(big), waiting(small)}})
		if got := runs(d); !slices.Equal(got, []string{"big", "small"}) {
			t.Errorf("%v runs %v (rejects %v), want both", s, got, d.Rejected)
		}
	}
}

// TestZeroAndNilPolicies: the zero value of every scheduler type works as its constructor's
// default (or, for the oracle, which needs Iterations, returns the constructor's error), a nil
// pointer returns an error, and views without a cluster or with a status without a job are
// errors: never a panic.
func TestZeroAndNilPolicies(t *testing.T) {
	c := cluster(t, 8)
	views := []gpusched.View{
		{},
		{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{waiting(job("a", 2, 0, 1))}},
		{Now: 1, Cluster: c, Pending: []gpusched.JobStatus{{}}},
		{Now: 1, Cluster: c, Running: []gpusched.JobStatus{{GPUs: []topology.GPUID{0}}}},
		{Now: math.NaN(), Cluster: c},
	}
	type sched interface {
		gpusched.Scheduler
	}
	zeros := []sched{&fifoPolicy{}, &firstFitPolicy{}, &listPolicy{}, &gadgetPolicy{}, &randomPolicy{}, &sjfPolicy{}, &oraclePolicy{},
		&tiresiasPolicy{}, &sjfbcoPolicy{}, &rubickPolicy{}, &smdPolicy{}, &psLocalityPolicy{}}
	nils := []sched{(*fifoPolicy)(nil), (*firstFitPolicy)(nil), (*listPolicy)(nil), (*gadgetPolicy)(nil), (*randomPolicy)(nil), (*sjfPolicy)(nil),
		(*oraclePolicy)(nil), (*tiresiasPolicy)(nil), (*sjfbcoPolicy)(nil), (*rubickPolicy)(nil), (*smdPolicy)(nil), (*psLocalityPolicy)(nil)}
	call := func(name string, f func() error) (err error) {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s: panic: %v", name, p)
			}
		}()
		return f()
	}
	for i, s := range zeros {
		for k, v := range views {
			var d gpusched.Decision
			err := call(fmt.Sprintf("zero %T view %d", s, k), func() (err error) { d, err = s.Schedule(v); return })
			switch _, oracle := s.(*oraclePolicy); {
			case oracle && !errors.Is(err, ErrInvalidOptions):
				t.Errorf("zero oracle, view %d: error %v, want ErrInvalidOptions", k, err)
			case k == 1 && !oracle && err != nil:
				t.Errorf("zero %T: %v", s, err)
			case k == 1 && !oracle && len(d.Run) != 1:
				t.Errorf("zero %T runs %v", s, d.Run)
			case k != 1 && err == nil:
				t.Errorf("zero %T accepts view %d", s, k)
			}
		}
		if st, ok := s.(gpusched.Stateful); ok {
			_ = call(fmt.Sprintf("zero %T SaveState", s), func() error { return st.SaveState(&discard{}) })
		}
		if o, ok := s.(gpusched.CompletionObserver); ok {
			_ = call(fmt.Sprintf("zero %T JobCompleted", s), func() error { o.JobCompleted(gpusched.Completion{}); return nil })
		}
		n := nils[i]
		if err := call(fmt.Sprintf("nil %T", n), func() error { _, err := n.Schedule(views[1]); return err }); err == nil {
			t.Errorf("nil %T: no error", n)
		}
		if st, ok := n.(gpusched.Stateful); ok {
			if err := call(fmt.Sprintf("nil %T SaveState", n), func() error { return st.SaveState(&discard{}) }); err == nil {
				t.Errorf("nil %T SaveState: no error", n)
			}
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestOracleRejectsAJobWithBadTruthAlone: a job for which Iterations answers NaN or a negative
// number is rejected alone (ErrInvalidJob, naming it), and the other jobs run; the call
// failed before.
func TestOracleRejectsAJobWithBadTruthAlone(t *testing.T) {
	iters := map[gpusched.JobID]float64{"good": 10, "nan": math.NaN(), "negative": -1}
	o := oracle(t, iters, OracleOptions{})
	v := gpusched.View{Now: 1, Cluster: cluster(t, 8), Pending: []gpusched.JobStatus{
		waiting(job("nan", 1, 0, 1)), waiting(job("good", 2, 0, 1)), waiting(job("negative", 1, 0, 1))}}
	d := decide(t, o, v)
	if got := runs(d); !slices.Equal(got, []string{"good"}) {
		t.Errorf("runs %v, want [good]", got)
	}
	rejected := map[gpusched.JobID]bool{}
	for _, je := range d.Rejected {
		if !errors.Is(je, gpusched.ErrInvalidJob) {
			t.Errorf("rejection %v does not wrap ErrInvalidJob", je)
		}
		rejected[je.Job] = true
	}
	if !rejected["nan"] || !rejected["negative"] || len(rejected) != 2 {
		t.Errorf("rejects %v, want nan and negative", d.Rejected)
	}
}

// TestBadEstimatesAreRejectedAlone: a job whose size (SJF) or estimate (SJF-BCO) is NaN is
// rejected alone, naming it, and the other jobs run; the call failed before.
func TestBadEstimatesAreRejectedAlone(t *testing.T) {
	bad := func(j *gpusched.Job) float64 {
		if j.ID == "bad" {
			return math.NaN()
		}
		return 10
	}
	sjf, err := newSJF(SJFOptions{Size: bad})
	if err != nil {
		t.Fatal(err)
	}
	bco, err := newSJFBCO(SJFBCOOptions{Iterations: bad})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []gpusched.Scheduler{sjf, bco} {
		v := gpusched.View{Now: 1, Cluster: cluster(t, 8), Pending: []gpusched.JobStatus{
			waiting(job("bad", 1, 0, 1)), waiting(job("good", 2, 0, 1))}}
		d := decide(t, s, v)
		if got := runs(d); !slices.Equal(got, []string{"good"}) {
			t.Errorf("%v runs %v, want [good]", s, got)
		}
		if len(d.Rejected) != 1 || d.Rejected[0].Job != "bad" || !errors.Is(d.Rejected[0], gpusched.ErrInvalidJob) {
			t.Errorf("%v rejects %v, want bad with ErrInvalidJob", s, d.Rejected)
		}
	}
}
