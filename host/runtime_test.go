package host_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func cluster(t testing.TB, spec topology.ServerSpec, servers int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(spec, servers)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func job(id string, gpus int) gpusched.Job {
	return gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, StepTime: 1}
}

// chaos makes random valid decisions: it keeps, preempts or migrates running jobs (jobs on
// unavailable GPUs are never kept), starts waiting jobs on random GPUs (the GPUs of jobs it
// moves or stops included, so migrations land on GPUs other jobs, or the job itself, held),
// and sometimes rejects a job.
type chaos struct {
	rng *rand.Rand
	d   gpusched.Decision // the last decision
}

func (s *chaos) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	pool := v.Cluster.AllGPUs()
	pool.RemoveAll(v.Unavailable)
	type move struct {
		id   gpusched.JobID
		gpus int
	}
	var moves []move
	for _, r := range v.Running {
		ok := true
		for _, g := range r.GPUs {
			ok = ok && !v.Unavailable.Contains(g)
		}
		x := s.rng.Float64()
		switch {
		case ok && x < 0.5:
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
			for _, g := range r.GPUs {
				pool.Remove(g)
			}
		case x < 0.8:
			moves = append(moves, move{r.Job.ID, r.Job.GPUs})
		case x < 0.85:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: r.Job.ID, Err: gpusched.ErrNoCost})
		}
	}
	for _, p := range v.Pending {
		switch x := s.rng.Float64(); {
		case x < 0.6:
			moves = append(moves, move{p.Job.ID, p.Job.GPUs})
		case x < 0.65:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: p.Job.ID, Err: fmt.Errorf("%w: test", gpusched.ErrTooLarge)})
		}
	}
	s.rng.Shuffle(len(moves), func(i, j int) { moves[i], moves[j] = moves[j], moves[i] })
	for _, m := range moves {
		free := pool.Slice()
		if len(free) < m.gpus {
			continue
		}
		s.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		g := free[:m.gpus]
		for _, x := range g {
			pool.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: m.id, GPUs: g})
	}
	s.d = d
	return d, nil
}

// checkCall checks one Schedule call: before maps each GPU to the job that held it before the
// call. Every stop comes before every start; replaying the steps on the GPUs never starts a
// job on a GPU another job (or the same job) still holds, never stops a job on a GPU it does
// not hold, and ends in exactly the decision's placements, which the runtime now holds; the
// queue is in submission order; rejected jobs are gone or parked.
func checkCall(rt *host.Runtime, before map[topology.GPUID]gpusched.JobID, d gpusched.Decision, acts *host.Actions, seq map[gpusched.JobID]int) error {
	owner := map[topology.GPUID]gpusched.JobID{}
	for g, id := range before {
		owner[g] = id
	}
	started := false
	for i, a := range acts.Steps {
		switch a.Kind {
		case host.Stop:
			if started {
				return fmt.Errorf("step %d: stop of %s after a start", i, a.Job)
			}
			for _, g := range a.GPUs {
				if owner[g] != a.Job {
					return fmt.Errorf("step %d: stop of %s on GPU %d, held by %q", i, a.Job, g, owner[g])
				}
				delete(owner, g)
			}
		case host.Start:
			started = true
			for _, g := range a.GPUs {
				if o, held := owner[g]; held {
					return fmt.Errorf("step %d: start of %s on GPU %d, still held by %s", i, a.Job, g, o)
				}
				owner[g] = a.Job
			}
		default:
			return fmt.Errorf("step %d: kind %v", i, a.Kind)
		}
	}
	want := map[topology.GPUID]gpusched.JobID{}
	for _, a := range d.Run {
		for _, g := range a.GPUs {
			want[g] = a.Job
		}
		e, ok := rt.Job(a.Job)
		if !ok || !e.Running() || !slices.Equal(e.GPUs(), a.GPUs) {
			return fmt.Errorf("job %s: the runtime does not hold it on %v", a.Job, a.GPUs)
		}
	}
	if !reflect.DeepEqual(owner, want) {
		return fmt.Errorf("after the steps the GPUs are held as %v, the decision says %v", owner, want)
	}
	if rt.NumRunning() != len(d.Run) {
		return fmt.Errorf("%d running jobs, decision runs %d", rt.NumRunning(), len(d.Run))
	}
	for _, je := range d.Rejected {
		if e, ok := rt.Job(je.Job); ok && !e.Parked() {
			return fmt.Errorf("rejected job %s still held", je.Job)
		}
	}
	if len(acts.Rejected) != len(d.Rejected) {
		return fmt.Errorf("%d rejections reported, %d decided", len(acts.Rejected), len(d.Rejected))
	}
	p := rt.Pending()
	for i := 1; i < len(p); i++ {
		if seq[p[i-1].ID()] >= seq[p[i].ID()] {
			return fmt.Errorf("queue out of order at %s", p[i].ID())
		}
	}
	return nil
}

// safeOrder is the property: over random jobs, random decisions (with migrations onto GPUs
// other jobs free in the same decision) and random drains, every call's steps are in a safe
// order and carry out exactly the decision.
func safeOrder(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		s := &chaos{rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}
		policy := host.RejectPolicy(rapid.IntRange(0, 1).Draw(t, "policy"))
		rt, err := host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 5, Rejected: policy, Validate: true})
		if err != nil {
			t.Fatal(err)
		}
		if broken != "" {
			host.Break(rt, broken)
		}
		seq := map[gpusched.JobID]int{}
		n := 0
		for call := range rapid.IntRange(1, 12).Draw(t, "calls") {
			now := float64(10 * call)
			for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
				id := gpusched.JobID(fmt.Sprintf("j%d", n))
				j := job(string(id), rapid.IntRange(1, 4).Draw(t, "gpus"))
				j.Arrival = now
				seq[id] = n
				n++
				if _, err := rt.Submit(j, 0); err != nil {
					t.Fatal(err)
				}
			}
			if rapid.Bool().Draw(t, "drain") {
				g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "drained"))
				if rapid.Bool().Draw(t, "return") {
					_ = rt.Return(g)
				} else {
					_ = rt.Drain(g)
				}
			}
			before := map[topology.GPUID]gpusched.JobID{}
			for _, e := range rt.Running() {
				for _, g := range e.GPUs() {
					before[g] = e.ID()
				}
			}
			acts, err := rt.Schedule(now)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkCall(rt, before, s.d, acts, seq); err != nil {
				t.Fatalf("t=%v: %v", now, err)
			}
		}
	}
}

func TestPropertySafeOrder(t *testing.T) {
	rapid.Check(t, safeOrder(""))
}

// TestSafeOrderCatchesPerJobOrder: a runtime that carries out a migration as a stop followed
// at once by a start (job by job, in decision order) starts jobs on GPUs still held, and the
// property finds it.
func TestSafeOrderCatchesPerJobOrder(t *testing.T) {
	if !teeth.Fails(safeOrder("order")) {
		t.Fatal("the safe-order property does not catch a runtime that migrates job by job")
	}
}

// TestMigrationOntoOwnGPUs: a job migrating onto GPUs it partly holds stops on all its old
// GPUs before it starts on its new ones, and a second job moving onto its freed GPU starts
// after the stops.
func TestMigrationOntoOwnGPUs(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	plan := map[float64][]gpusched.Assignment{
		0: {{Job: "a", GPUs: []topology.GPUID{0, 1}}, {Job: "b", GPUs: []topology.GPUID{2}}},
		1: {{Job: "a", GPUs: []topology.GPUID{1, 2}}, {Job: "b", GPUs: []topology.GPUID{0}}},
	}
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		return gpusched.Decision{Run: plan[v.Now]}, nil
	})
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []gpusched.Job{job("a", 2), job("b", 1)} {
		if _, err := rt.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	acts, err := rt.Schedule(1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range acts.Steps {
		got = append(got, fmt.Sprintf("%s %s %v migration=%v", a.Kind, a.Job, a.GPUs, a.Migration))
	}
	want := []string{
		"stop a [0 1] migration=true", "stop b [2] migration=true",
		"start a [1 2] migration=true", "start b [0] migration=true",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	a, _ := rt.Job("a")
	if st := a.Stats(); st.Migrations != 1 || a.RestoreEnd() != 1 {
		t.Errorf("a: %+v, restore ends %v", st, a.RestoreEnd())
	}
}

// recorder is a scheduler that runs whatever fits, in view order, and records completions.
type recorder struct {
	log    []string
	reject map[gpusched.JobID]error
}

func (s *recorder) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var ids []string
	for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
		for _, st := range l {
			ids = append(ids, string(st.Job.ID))
		}
	}
	s.log = append(s.log, fmt.Sprintf("schedule@%g %v", v.Now, ids))
	var d gpusched.Decision
	free := v.Free()
	for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
		for _, st := range l {
			if err := s.reject[st.Job.ID]; err != nil {
				d.Rejected = append(d.Rejected, gpusched.Reject(st.Job.ID, err))
				continue
			}
			if st.GPUs != nil {
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: st.GPUs})
				continue
			}
			if g, ok := gpusched.Pack(v.Cluster, free, st.Job); ok {
				for _, x := range g {
					free.Remove(x)
				}
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: g})
			}
		}
	}
	return d, nil
}

func (s *recorder) JobCompleted(c gpusched.Completion) {
	s.log = append(s.log, fmt.Sprintf("completed %s@%g it=%g killed=%v", c.Job.ID, c.Time, c.Iterations, c.Killed))
}

// forgetful counts the jobs a cost model is told have left.
type forgetful struct {
	gpusched.FixedCost
	forgot []gpusched.JobID
}

func (f *forgetful) Forget(j *gpusched.Job) { f.forgot = append(f.forgot, j.ID) }

// TestRejectedRemoved: a rejected job, running or waiting, is stopped, removed, reported with
// its reason, told to the scheduler as killed and forgotten by the cost model, while the
// other jobs run.
func TestRejectedRemoved(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	s := &recorder{reject: map[gpusched.JobID]error{}}
	cost := &forgetful{}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []gpusched.Job{job("a", 2), job("b", 1), job("c", 1)} {
		if _, err := rt.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	// a runs and is rejected; c runs too; a new job d waits and is rejected.
	s.reject["a"] = fmt.Errorf("%w: job %q: no plan fits", gpusched.ErrDoesNotFit, "a")
	s.reject["d"] = gpusched.ErrNoCost
	if _, err := rt.Submit(gpusched.Job{ID: "d", GPUs: 1, StepTime: 1, Arrival: 5}, 0); err != nil {
		t.Fatal(err)
	}
	acts, err := rt.Schedule(5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range acts.Steps {
		got = append(got, fmt.Sprintf("%s %s rejected=%v", a.Kind, a.Job, a.Rejected))
	}
	if want := []string{"stop a rejected=true"}; !reflect.DeepEqual(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if len(acts.Rejected) != 2 || acts.Rejected[0].Job != "a" || !errors.Is(acts.Rejected[0], gpusched.ErrDoesNotFit) ||
		acts.Rejected[1].Job != "d" || !errors.Is(acts.Rejected[1], gpusched.ErrNoCost) {
		t.Errorf("rejections %v", acts.Rejected)
	}
	for _, id := range []gpusched.JobID{"a", "d"} {
		if _, ok := rt.Job(id); ok {
			t.Errorf("rejected job %s still held", id)
		}
	}
	if rt.NumRunning() != 2 || rt.Busy() != 2 || rt.Len() != 2 {
		t.Errorf("%d running on %d GPUs, %d held", rt.NumRunning(), rt.Busy(), rt.Len())
	}
	if _, err := rt.Schedule(6); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"schedule@0 [a b c]",
		"schedule@5 [a b c d]",
		"completed a@5 it=0 killed=true", "completed d@5 it=0 killed=true",
		"schedule@6 [b c]",
	}
	if !reflect.DeepEqual(s.log, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(s.log, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(cost.forgot, []gpusched.JobID{"a", "d"}) {
		t.Errorf("cost model forgot %v", cost.forgot)
	}
}

// TestRejectedParked: with RejectPark, a job rejected as too large waits out of the view with
// its progress until the cluster changes, then waits again; other rejections are removed.
func TestRejectedParked(t *testing.T) {
	small, big := cluster(t, topology.T4(), 1), cluster(t, topology.T4(), 2)
	s := &recorder{reject: map[gpusched.JobID]error{}}
	rt, err := host.New(host.Options{Cluster: small, Scheduler: s, Rejected: host.RejectPark})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []gpusched.Job{job("a", 2), job("big", 6), job("bad", 1)} {
		if _, err := rt.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Report("big", 0, 42); err != nil {
		t.Fatal(err)
	}
	s.reject["big"] = gpusched.Fits(&gpusched.Job{ID: "big", GPUs: 6}, small)
	s.reject["bad"] = gpusched.ErrNoCost
	acts, err := rt.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts.Rejected) != 2 {
		t.Fatalf("rejections %v", acts.Rejected)
	}
	big0, ok := rt.Job("big")
	if !ok || !big0.Parked() || len(rt.Parked()) != 1 {
		t.Fatalf("big not parked")
	}
	if _, ok := rt.Job("bad"); ok {
		t.Error("bad is held")
	}
	if _, err := rt.Schedule(1); err != nil {
		t.Fatal(err)
	}
	delete(s.reject, "big")
	if _, err := rt.SetCluster(big, 2); err != nil {
		t.Fatal(err)
	}
	if !big0.Pending() || big0.Status(2).Iterations != 42 || len(rt.Parked()) != 0 {
		t.Fatalf("big after the cluster grew: pending %v, %g iterations", big0.Pending(), big0.Status(2).Iterations)
	}
	if _, err := rt.Schedule(2); err != nil {
		t.Fatal(err)
	}
	if !big0.Running() {
		t.Error("big does not run on the larger cluster")
	}
	want := []string{"schedule@0 [a big bad]", "completed bad@0 it=0 killed=true", "schedule@1 [a]", "schedule@2 [a big]"}
	if !reflect.DeepEqual(s.log, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(s.log, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompletionsBeforeNextCall and deferred: by default a finished job is told to the
// scheduler before the next call; with DeferCompletions only when the host calls Deliver,
// after the actions, and the job is already absent from the view.
func TestCompletionsDelivery(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		c := cluster(t, topology.T4(), 1)
		s := &recorder{}
		rt, err := host.New(host.Options{Cluster: c, Scheduler: s, DeferCompletions: deferred})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range []gpusched.Job{job("a", 2), job("b", 2)} {
			if _, err := rt.Submit(j, 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rt.Schedule(0); err != nil {
			t.Fatal(err)
		}
		if err := rt.Finish("a", 10, 10, false); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Schedule(10); err != nil {
			t.Fatal(err)
		}
		rt.Deliver()
		want := []string{"schedule@0 [a b]", "completed a@10 it=10 killed=false", "schedule@10 [b]"}
		if deferred {
			want = []string{"schedule@0 [a b]", "schedule@10 [b]", "completed a@10 it=10 killed=false"}
		}
		if !reflect.DeepEqual(s.log, want) {
			t.Errorf("deferred=%v: log\n%s\nwant\n%s", deferred, strings.Join(s.log, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestMemoryBounded: the runtime's memory follows the jobs it holds, not all it ever held: it
// keeps no reference to the entries of jobs that left (the garbage collector reclaims their
// blocks), and the cost model forgets every job.
func TestMemoryBounded(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	cost := &forgetful{}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: &recorder{}, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	var refs []weak.Pointer[host.Entry]
	for i := range 2000 {
		now := float64(i)
		e, err := rt.Submit(gpusched.Job{ID: gpusched.JobID(fmt.Sprint(i)), GPUs: 1, StepTime: 1, Arrival: now}, 0)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, weak.Make(e))
		if _, err := rt.Schedule(now); err != nil {
			t.Fatal(err)
		}
		if i >= 3 {
			if err := rt.Finish(gpusched.JobID(fmt.Sprint(i-3)), now, 1, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	rt.Deliver()
	rt.TakeDirty()
	runtime.GC()
	alive := 0
	for _, p := range refs {
		if p.Value() != nil {
			alive++
		}
	}
	// The blocks of the jobs held and of at most the job that finished after the last call
	// (whose status the last view still shows until the next call), and the block being
	// handed out: 2,000 entries allocated, a few blocks alive.
	if alive > 5*host.EntryBlock || rt.Len() != 3 || len(cost.forgot) != 1997 {
		t.Errorf("%d entries alive for 3 jobs held (%d), %d forgotten", alive, rt.Len(), len(cost.forgot))
	}
}

// TestErrors: bad calls are errors naming the job, never a panic, and a refused decision
// changes nothing.
func TestErrors(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	bad := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		if v.Now == 1 {
			return gpusched.Decision{}, errors.New("boom")
		}
		return gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{0, 9}}}}, nil
	})
	if _, err := host.New(host.Options{Scheduler: bad}); !errors.Is(err, host.ErrInvalidOptions) {
		t.Errorf("no cluster: %v", err)
	}
	if _, err := host.New(host.Options{Cluster: c, Scheduler: bad, CheckpointEvery: math.NaN()}); !errors.Is(err, host.ErrInvalidOptions) {
		t.Errorf("NaN checkpoint: %v", err)
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: bad})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Submit(gpusched.Job{ID: "n", GPUs: 1}, 0); !errors.Is(err, gpusched.ErrNoCost) {
		t.Errorf("no cost: %v", err)
	}
	if _, err := rt.Submit(job("a", 2), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Submit(job("a", 1), 0); !errors.Is(err, host.ErrDuplicateJob) {
		t.Errorf("duplicate: %v", err)
	}
	_, err = rt.Schedule(0)
	var se *host.ScheduleError
	if !errors.As(err, &se) || !se.Invalid || se.Job != "a" || !errors.Is(err, host.ErrInvalidDecision) || !errors.Is(err, gpusched.ErrNoSuchGPU) {
		t.Errorf("invalid decision: %v", err)
	}
	if rt.NumRunning() != 0 || rt.NumPending() != 1 {
		t.Error("a refused decision changed the state")
	}
	if _, err := rt.Schedule(1); !errors.Is(err, host.ErrScheduler) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("scheduler failure: %v", err)
	}
	for name, err := range map[string]error{
		"time backwards":   rt.Report("a", 0.5, 1),
		"NaN time":         rt.Report("a", math.NaN(), 1),
		"NaN iterations":   rt.Report("a", 2, math.NaN()),
		"unknown job":      rt.Finish("zz", 2, 1, false),
		"interrupt waiter": rt.Interrupt("a", 2),
		"no such GPU":      rt.Drain(99),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := rt.Schedule(0.5); !errors.Is(err, host.ErrTime) {
		t.Errorf("schedule in the past: %v", err)
	}
}

// TestSetCluster: a server that leaves interrupts the jobs on it; jobs on servers that remain
// keep their GPUs under the new cluster's ids; unavailable GPUs of remaining servers stay so.
func TestSetCluster(t *testing.T) {
	spec := topology.T4()
	three, err := topology.New("three", []topology.Server{{ID: "x", ServerSpec: spec}, {ID: "y", ServerSpec: spec}, {ID: "z", ServerSpec: spec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := topology.New("two", []topology.Server{{ID: "z", ServerSpec: spec}, {ID: "x", ServerSpec: spec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	place := map[gpusched.JobID][]topology.GPUID{"a": {0, 1}, "b": {4, 5}, "c": {8, 9}}
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		for _, r := range v.Running {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		}
		if v.Now == 0 {
			for _, p := range v.Pending {
				d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: place[p.Job.ID]})
			}
		}
		return d, nil
	})
	var segs []host.Segment
	rt, err := host.New(host.Options{Cluster: three, Scheduler: s, OnSegment: func(g host.Segment) { segs = append(segs, g) },
		RecordSegments: true}) // deprecated, and must match OnSegment's record

	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := rt.Submit(job(id, 2), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	if err := rt.Drain(10); err != nil { // on z
		t.Fatal(err)
	}
	stops, err := rt.SetCluster(two, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(stops) != 1 || stops[0].Job != "b" || !stops[0].Interrupted {
		t.Fatalf("stops %+v", stops)
	}
	a, _ := rt.Job("a")
	cj, _ := rt.Job("c")
	b, _ := rt.Job("b")
	if !slices.Equal(a.GPUs(), []topology.GPUID{4, 5}) || !slices.Equal(cj.GPUs(), []topology.GPUID{0, 1}) || !b.Pending() {
		t.Errorf("a on %v, c on %v, b pending %v", a.GPUs(), cj.GPUs(), b.Pending())
	}
	if u := rt.Unavailable(); u.Len() != 1 || !u.Contains(2) {
		t.Errorf("unavailable %v", u)
	}
	if _, err := rt.Schedule(5); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Interruptions != 1 || b.Status(5).Preemptions != 1 {
		t.Errorf("b: %+v", st)
	}
	// The cluster change ended every placement at t=5: b's interrupted, a's and c's
	// renumbered; the deprecated record holds the same.
	var ended []string
	for _, g := range segs {
		if g.End == 5 {
			ended = append(ended, fmt.Sprintf("%s %v", g.Job, g.Interrupted))
		}
	}
	slices.Sort(ended)
	if want := []string{"a false", "b true", "c false"}; !slices.Equal(ended, want) {
		t.Errorf("segments ending at t=5: %v, want %v (all: %+v)", ended, want, segs)
	}
	if old := rt.Segments(); !reflect.DeepEqual(old, segs) {
		t.Errorf("Segments() %+v, OnSegment %+v", old, segs)
	}
}

// progressModel computes a job's iterations at time x independently: rate pieces (from,
// seconds per iteration) over a placement starting at s that restores until s+r.
func progressModel(x, s, r float64, pieces [][2]float64) float64 {
	done := 0.0
	for i, p := range pieces {
		a := max(p[0], s+r)
		b := x
		if i+1 < len(pieces) {
			b = min(b, pieces[i+1][0])
		}
		if b > a {
			done += (b - a) / p[1]
		}
	}
	return done
}

// rollback is the property: a job runs in placements that end in interruptions, its rate
// changing within a placement; at every interruption it goes back to its progress at the
// last checkpoint (every ck seconds of the placement, or the placement's start), and the lost
// iterations and GPU-seconds are exactly what the model says was thrown away.
func rollback(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), 1)
		if err != nil {
			t.Fatal(err)
		}
		start := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
			var d gpusched.Decision
			for _, st := range v.Running {
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: st.GPUs})
			}
			for _, st := range v.Pending {
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: []topology.GPUID{0, 1}})
			}
			return d, nil
		})
		ck := rapid.SampledFrom([]float64{0, 7, 30}).Draw(t, "checkpoint")
		restore := rapid.SampledFrom([]float64{0, 3}).Draw(t, "restore")
		rt, err := host.New(host.Options{Cluster: c, Scheduler: start, CheckpointEvery: ck, RestoreTime: restore})
		if err != nil {
			t.Fatal(err)
		}
		if broken != "" {
			host.Break(rt, broken)
		}
		e, err := rt.Submit(job("j", 2), 0)
		if err != nil {
			t.Fatal(err)
		}
		now, kept, lost, lostGPU := 0.0, 0.0, 0.0, 0.0
		for k := range rapid.IntRange(1, 4).Draw(t, "placements") {
			if _, err := rt.Schedule(now); err != nil {
				t.Fatal(err)
			}
			s, r := now, restore
			if k == 0 {
				r = 0
			}
			pieces := [][2]float64{{s, rapid.Float64Range(0.5, 2).Draw(t, "step")}}
			var dirty []*host.Entry
			dirty = append(dirty, rt.TakeDirty()...)
			if len(dirty) != 1 || dirty[0] != e {
				t.Fatalf("dirty %v", dirty)
			}
			if err := rt.SetRate(e, now, gpusched.StepCost{Time: pieces[0][1]}); err != nil {
				t.Fatal(err)
			}
			for range rapid.IntRange(0, 3).Draw(t, "changes") {
				now += rapid.Float64Range(0, 40).Draw(t, "gap")
				pieces = append(pieces, [2]float64{now, rapid.Float64Range(0.5, 2).Draw(t, "step")})
				if err := rt.SetRate(e, now, gpusched.StepCost{Time: pieces[len(pieces)-1][1]}); err != nil {
					t.Fatal(err)
				}
			}
			now += rapid.Float64Range(0, 60).Draw(t, "gap")
			c := s
			if ck > 0 {
				c = s + math.Floor((now-s)/ck)*ck
			}
			at, atCk := progressModel(now, s, r, pieces), progressModel(c, s, r, pieces)
			lost += at - atCk
			lostGPU += 2 * (max(now, s+r) - max(c, s+r))
			kept += atCk
			if err := rt.Interrupt("j", now); err != nil {
				t.Fatal(err)
			}
			st := e.Stats()
			if math.Abs(st.Iterations-kept) > 1e-6 || math.Abs(st.LostIterations-lost) > 1e-6 || math.Abs(st.LostGPUTime-lostGPU) > 1e-6 {
				t.Fatalf("after interruption %d at t=%v: %v iterations, %v lost, %v GPU-s lost; want %v, %v, %v",
					k, now, st.Iterations, st.LostIterations, st.LostGPUTime, kept, lost, lostGPU)
			}
			if st.Interruptions != k+1 || !e.Pending() {
				t.Fatalf("interruptions %d, pending %v", st.Interruptions, e.Pending())
			}
		}
	}
}

func TestPropertyRollback(t *testing.T) {
	rapid.Check(t, rollback(""))
}

// TestRollbackCatchesNoRollback: a runtime that keeps the progress an interruption should
// throw away is caught.
func TestRollbackCatchesNoRollback(t *testing.T) {
	if !teeth.Fails(rollback("norollback")) {
		t.Fatal("the rollback property does not catch a runtime that keeps lost progress")
	}
}

// TestFail: failed GPUs are unavailable; the jobs on them stop at once; a decision that
// keeps a job on an unavailable GPU is refused.
func TestFail(t *testing.T) {
	c := cluster(t, topology.T4(), 2)
	keep := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		for _, r := range v.Running {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		}
		free := v.Free()
		for _, p := range v.Pending {
			if g, ok := gpusched.Pack(v.Cluster, free, p.Job); ok {
				for _, x := range g {
					free.Remove(x)
				}
				d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: g})
			}
		}
		return d, nil
	})
	rt, err := host.New(host.Options{Cluster: c, Scheduler: keep, Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []gpusched.Job{job("a", 4), job("b", 4)} {
		if _, err := rt.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	stops, err := rt.Fail(10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(stops) != 1 || stops[0].Job != "b" || !slices.Equal(stops[0].GPUs, []topology.GPUID{4, 5, 6, 7}) {
		t.Fatalf("stops %+v", stops)
	}
	if _, err := rt.Schedule(10); err != nil { // b cannot start: 3 healthy GPUs on t4-1
		t.Fatal(err)
	}
	if b, _ := rt.Job("b"); !b.Pending() {
		t.Error("b runs on a server with a failed GPU")
	}
	if err := rt.Drain(0); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Schedule(11); !errors.Is(err, gpusched.ErrUnavailableGPU) {
		t.Errorf("keeping a job on a drained GPU: %v", err)
	}
}

// TestPropertyResume: a host that restarts and resumes every job it held, in submission
// order, from what it knew of them (statuses, restore ends, drained GPUs), shows its scheduler
// the same views as the runtime it replaces, and goes on the same.
func TestPropertyResume(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		seed := rapid.Uint64().Draw(t, "seed")
		opt := host.Options{Cluster: c, Scheduler: &chaos{rng: rand.New(rand.NewPCG(seed, 1))}, RestoreTime: 5}
		rt, err := host.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		var order []gpusched.Job
		now := 0.0
		for call := range rapid.IntRange(1, 8).Draw(t, "calls") {
			now = float64(10 * call)
			for range rapid.IntRange(0, 3).Draw(t, "arrivals") {
				j := job(fmt.Sprintf("j%d", len(order)), rapid.IntRange(1, 4).Draw(t, "gpus"))
				j.Arrival = now
				order = append(order, j)
				if _, err := rt.Submit(j, 0); err != nil {
					t.Fatal(err)
				}
			}
			if rapid.Bool().Draw(t, "drain") {
				_ = rt.Drain(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "drained")))
			}
			if _, err := rt.Schedule(now); err != nil {
				t.Fatal(err)
			}
			for _, e := range rt.TakeDirty() {
				if err := rt.SetRate(e, now, gpusched.StepCost{Time: 0.5 + float64(len(e.ID()))/4}); err != nil {
					t.Fatal(err)
				}
			}
		}
		at := now + rapid.Float64Range(0, 9).Draw(t, "crash")
		opt.Scheduler = &chaos{rng: rand.New(rand.NewPCG(seed, 1))}
		fresh, err := host.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range order {
			e, ok := rt.Job(j.ID)
			if !ok || e.Parked() {
				continue
			}
			f, err := fresh.Resume(j, host.Resumption{Status: e.Status(at), At: at, RestoreEnd: e.RestoreEnd()})
			if err != nil {
				t.Fatal(err)
			}
			if e.Running() {
				if err := fresh.SetRate(f, at, gpusched.StepCost{Time: e.Step()}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := fresh.Drain(rt.Unavailable().Slice()...); err != nil {
			t.Fatal(err)
		}
		later := at + rapid.Float64Range(0, 50).Draw(t, "later")
		a, _ := rt.View(later)
		b, _ := fresh.View(later)
		if err := sameView(a, b); err != nil {
			t.Fatal(err)
		}
	})
}

// sameView compares two views field by field (progress to rounding).
func sameView(a, b *gpusched.View) error {
	if a.Now != b.Now || a.Unavailable.String() != b.Unavailable.String() {
		return fmt.Errorf("views at %v and %v, unavailable %v and %v", a.Now, b.Now, a.Unavailable, b.Unavailable)
	}
	for k, pair := range [][2][]gpusched.JobStatus{{a.Pending, b.Pending}, {a.Running, b.Running}} {
		x, y := pair[0], pair[1]
		if len(x) != len(y) {
			return fmt.Errorf("list %d: %d and %d jobs", k, len(x), len(y))
		}
		for i := range x {
			p, q := x[i], y[i]
			near := func(u, v float64) bool { return math.Abs(u-v) <= 1e-9*max(1, math.Abs(u)) }
			if p.Job.ID != q.Job.ID || !slices.Equal(p.GPUs, q.GPUs) || !near(p.Iterations, q.Iterations) ||
				!near(p.Executed, q.Executed) || !near(p.Attained, q.Attained) || p.Started != q.Started ||
				p.FirstStart != q.FirstStart || p.Since != q.Since || p.Preemptions != q.Preemptions {
				return fmt.Errorf("list %d entry %d:\n%+v\n%+v", k, i, p, q)
			}
		}
	}
	return nil
}

// TestResumeErrors: a resumed job on GPUs that do not exist, twice, in the wrong number, or
// held by another job is refused.
func TestResumeErrors(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	rt, err := host.New(host.Options{Cluster: c, Scheduler: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Resume(job("a", 2), host.Resumption{Status: gpusched.JobStatus{GPUs: []topology.GPUID{0, 1}, Started: true}}); err != nil {
		t.Fatal(err)
	}
	for name, gpus := range map[string][]topology.GPUID{
		"held": {1, 2}, "twice": {2, 2}, "count": {3}, "missing": {2, 9},
	} {
		if _, err := rt.Resume(job("b", 2), host.Resumption{Status: gpusched.JobStatus{GPUs: gpus}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := rt.Resume(job("c", 1), host.Resumption{Status: gpusched.JobStatus{Iterations: math.NaN()}}); err == nil {
		t.Error("NaN progress accepted")
	}
	if rt.Len() != 1 || rt.Busy() != 2 {
		t.Errorf("%d jobs on %d GPUs", rt.Len(), rt.Busy())
	}
}

// TestSubmitRefusalsAreJobErrors: every refusal of Submit is a *gpusched.JobError naming the
// job, and still wraps its reason.
func TestSubmitRefusalsAreJobErrors(t *testing.T) {
	rt, err := host.New(host.Options{Cluster: cluster(t, topology.A100(), 1), Scheduler: &chaos{rng: rand.New(rand.NewPCG(1, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Submit(job("dup", 1), 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		j     gpusched.Job
		limit float64
		want  error
	}{
		{job("zero", 0), 0, gpusched.ErrInvalidJob},
		{gpusched.Job{ID: "no-cost", GPUs: 1}, 0, gpusched.ErrNoCost},
		{gpusched.Job{ID: "nan", GPUs: 1, StepTime: 1, Features: gpusched.Features{LearningRate: math.NaN()}}, 0, gpusched.ErrInvalidJob},
		{job("nan-limit", 1), math.NaN(), gpusched.ErrInvalidJob},
		{job("dup", 1), 0, host.ErrDuplicateJob},
	} {
		_, err := rt.Submit(c.j, c.limit)
		var je *gpusched.JobError
		if !errors.As(err, &je) || je.Job != c.j.ID || !errors.Is(err, c.want) {
			t.Errorf("Submit(%q) = %v (%T), want a *JobError for it wrapping %v", c.j.ID, err, err, c.want)
		}
	}
	if rt.Len() != 1 {
		t.Errorf("the runtime holds %d jobs, want 1", rt.Len())
	}
}
