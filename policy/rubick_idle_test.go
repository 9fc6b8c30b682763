package policy

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// rubickTwin runs Rubick (with the variant under test) and Rubick without the idle path on
// every view of a simulation and records the first call where their decisions differ; the
// simulation follows the first.
type rubickTwin struct {
	fast, full  *rubickPolicy
	calls, idle int
	diff        error
}

func (w *rubickTwin) Schedule(v gpusched.View) (gpusched.Decision, error) {
	w.calls++
	if w.fast.idle(&v, v.Free()) {
		w.idle++
	}
	d1, e1 := w.fast.Schedule(v)
	d2, e2 := w.full.Schedule(v)
	if w.diff == nil {
		switch {
		case (e1 == nil) != (e2 == nil):
			w.diff = fmt.Errorf("call %d at %v: errors %v and %v", w.calls, v.Now, e1, e2)
		case !sameRubickDecision(d1, d2):
			w.diff = fmt.Errorf("call %d at %v: decision %+v, without the idle path %+v", w.calls, v.Now, d1, d2)
		}
	}
	return d1, e1
}

func (w *rubickTwin) JobCompleted(c gpusched.Completion) {
	w.fast.JobCompleted(c)
	w.full.JobCompleted(c)
}

// sameRubickDecision compares two decisions field by field, the rejections by job and message.
func sameRubickDecision(a, b gpusched.Decision) bool {
	if len(a.Rejected) != len(b.Rejected) {
		return false
	}
	for i := range a.Rejected {
		var x, y *gpusched.JobError
		if !errors.As(a.Rejected[i], &x) || !errors.As(b.Rejected[i], &y) || x.Job != y.Job || x.Error() != y.Error() {
			return false
		}
	}
	a.Rejected, b.Rejected = nil, nil
	return reflect.DeepEqual(a, b)
}

// rubickIdleProp: on a saturated cluster (reconfigurable and fixed jobs, guaranteed and
// best-effort ones, some that cannot run), Rubick's decisions with the idle path equal those of
// the full path at every call of a simulation, and some calls take the idle path.
func rubickIdleProp(tmpl []rubickTemplate, broken rubickBroken) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.A800(), rapid.IntRange(1, 2).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(4, 24).Draw(t, "jobs")
		var recs []trace.Record
		at := 0.0
		for i := range n {
			tp := tmpl[rapid.IntRange(0, len(tmpl)-1).Draw(t, "model")]
			j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%02d", i)), Arrival: at, Model: tp.model, Plan: tp.own,
				GPUs: tp.own.Workers(), Guaranteed: rapid.IntRange(0, 3).Draw(t, "guaranteed") == 0}
			if rapid.IntRange(0, 2).Draw(t, "reconfigurable") > 0 {
				for _, p := range tp.plans {
					j.Plans = append(j.Plans, gpusched.PlanOption{Plan: p})
				}
			}
			recs = append(recs, trace.Record{Job: *j, Iterations: float64(rapid.IntRange(50, 3000).Draw(t, "iterations"))})
			at += float64(rapid.IntRange(0, 120).Draw(t, "gap"))
		}
		mk := func(b rubickBroken) *rubickPolicy {
			r, err := newRubick(RubickOptions{MaxReconfigurations: rapid.IntRange(-1, 3).Draw(t, "max reconfigurations")})
			if err != nil {
				t.Fatal(err)
			}
			r.broken = b
			return r
		}
		w := &rubickTwin{fast: mk(broken), full: mk(rubickFullPath)}
		w.full.opt = w.fast.opt
		if _, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: w, MaxEvents: 100*n + 100}); err != nil {
			t.Fatal(err)
		}
		if w.diff != nil {
			t.Fatal(w.diff)
		}
	}
}

// TestRubickIdleMatchesFull: the idle path changes no decision.
func TestRubickIdleMatchesFull(t *testing.T) {
	tmpl := rubickTemplates(t)
	rapid.Check(t, rubickIdleProp(tmpl, rubickSound))
}

// TestRubickIdleTaken: on a cluster kept full by jobs that cannot be shrunk, behind a queue of
// best-effort jobs, most calls take the idle path (so the property above tests it).
func TestRubickIdleTaken(t *testing.T) {
	tmpl := rubickTemplates(t)
	c, err := topology.Uniform(topology.A800(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var recs []trace.Record
	for i := range 20 {
		tp := tmpl[i%len(tmpl)]
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%02d", i)), Arrival: float64(i), Model: tp.model, Plan: tp.own, GPUs: tp.own.Workers()}
		recs = append(recs, trace.Record{Job: *j, Iterations: float64(100 + 37*i)})
	}
	fast, err := newRubick(RubickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := newRubick(RubickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full.broken = rubickFullPath
	w := &rubickTwin{fast: fast, full: full}
	if _, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: w}); err != nil {
		t.Fatal(err)
	}
	if w.diff != nil {
		t.Fatal(w.diff)
	}
	if w.idle == 0 {
		t.Fatalf("no idle call in %d calls", w.calls)
	}
	t.Logf("%d of %d calls idle", w.idle, w.calls)
}

// TestRubickIdleHasTeeth: the property catches an idle test that forgets a running job that
// may shrink, or free GPUs.
func TestRubickIdleHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("teeth: slow")
	}
	tmpl := rubickTemplates(t)
	for _, b := range []rubickBroken{rubickIdleIgnoresShrink, rubickIdleIgnoresFree} {
		if !teeth.Fails(rubickIdleProp(tmpl, b)) {
			t.Errorf("the idle property does not catch broken variant %d", b)
		}
	}
}
