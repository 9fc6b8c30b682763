package host_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// planChaos is a random scheduler that also changes reconfigurable jobs' plan choices: each
// running job is kept, moved (perhaps under another plan), rejected or stopped, each waiting
// job started under a random plan where GPUs are free; half its decisions are deltas.
type planChaos struct{ rng *rand.Rand }

func (s *planChaos) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	pool := v.Cluster.AllGPUs()
	pool.RemoveAll(v.Unavailable)
	type want struct {
		j    *gpusched.Job
		plan int
	}
	var moves []want
	plan := func(j *gpusched.Job) int { return s.rng.IntN(len(j.Plans) + 1) }
	for _, r := range v.Running {
		ok := true
		for _, g := range r.GPUs {
			ok = ok && !v.Unavailable.Contains(g)
		}
		switch x := s.rng.Float64(); {
		case ok && x < 0.6:
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs, PlanChoice: r.PlanChoice})
			for _, g := range r.GPUs {
				pool.Remove(g)
			}
		case x < 0.8:
			moves = append(moves, want{r.Job, plan(r.Job)})
		case x < 0.83:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: r.Job.ID, Err: gpusched.ErrNoCost})
		}
	}
	for _, p := range v.Pending {
		if s.rng.Float64() < 0.5 {
			moves = append(moves, want{p.Job, plan(p.Job)})
		}
	}
	for _, m := range moves {
		free := pool.Slice()
		n := m.j.GPUsFor(m.plan)
		if len(free) < n {
			continue
		}
		s.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		g := free[:n]
		for _, x := range g {
			pool.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: m.j.ID, GPUs: g, PlanChoice: m.plan})
	}
	if s.rng.IntN(2) == 0 {
		return toDelta(&v, d, s.rng), nil
	}
	return d, nil
}

// hotProperty drives a runtime (of variant broken, "" for the real one) with random
// operations: submissions (some reconfigurable), decisions (full and delta, moves and plan
// changes included), rates, reports, checkpoints, interruptions, failures, drains, finishes,
// cancellations, cluster changes, resumed jobs and restarts from saved state. After each, the
// dense array of the running jobs' hot fields must equal a rebuild from their entries, and the
// view's running statuses the entries' own (Entry.Status). It returns the first difference.
func hotProperty(seed uint64, broken string) error {
	rng := rand.New(rand.NewPCG(seed, 33))
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		return err
	}
	p := func(dp int) graph.Plan { return graph.Plan{DP: dp, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32} }
	var clusters []*topology.Cluster
	for _, n := range []int{1, 2, 3} {
		c, err := topology.Uniform(topology.A100(), n)
		if err != nil {
			return err
		}
		clusters = append(clusters, c)
	}
	opt := host.Options{Cluster: clusters[1], RestoreTime: 1, ReconfigureTime: 2, CheckpointEvery: 3, Rejected: host.RejectPark}
	opt.Scheduler = &planChaos{rng: rand.New(rand.NewPCG(seed, 7))}
	rt, err := host.New(opt)
	if err != nil {
		return err
	}
	if broken != "" {
		host.Break(rt, broken)
	}
	now, next := 0.0, 0
	var ids []gpusched.JobID
	pick := func() (*host.Entry, bool) {
		ids = slices.DeleteFunc(ids, func(id gpusched.JobID) bool { _, ok := rt.Job(id); return !ok })
		if len(ids) == 0 {
			return nil, false
		}
		e, _ := rt.Job(ids[rng.IntN(len(ids))])
		return e, true
	}
	newJob := func() gpusched.Job {
		next++
		j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", next)), Arrival: now, GPUs: 1 + rng.IntN(6), StepTime: 1}
		if rng.IntN(3) == 0 {
			j.GPUs, j.Model, j.Plan = 2, m, p(2)
			j.Plans = []gpusched.PlanOption{{Plan: p(4)}, {Plan: p(1)}}
		}
		return j
	}
	for op := range 300 {
		now += float64(rng.IntN(3))
		what := ""
		switch k := rng.IntN(16); k {
		case 0, 1, 2:
			what = "submit"
			j := newJob()
			if _, err := rt.Submit(j, float64(5+rng.IntN(50))); err == nil {
				ids = append(ids, j.ID)
			}
		case 3, 4, 5:
			what = "schedule"
			if _, err := rt.Schedule(now); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
		case 6, 7:
			what = "set rates"
			for _, e := range rt.TakeDirty() {
				_ = rt.SetRate(e, now, gpusched.StepCost{Time: 0.5 + rng.Float64(), CrossServerBytes: rng.Float64()})
			}
		case 8:
			what = "report"
			if e, ok := pick(); ok {
				// Below every job's limit: a report above it makes the next settle count
				// negative bytes, which a restart then refuses (a separate issue).
				_ = rt.Report(e.ID(), now, float64(rng.IntN(5)))
			}
		case 9:
			what = "checkpoint"
			if e, ok := pick(); ok && e.Running() {
				_ = rt.Checkpoint(e.ID(), now)
			}
		case 10:
			what = "interrupt"
			if e, ok := pick(); ok && e.Running() {
				_ = rt.Interrupt(e.ID(), now)
			}
		case 11:
			what = "fail"
			_, _ = rt.Fail(now, topology.GPUID(rng.IntN(rt.Cluster().NumGPUs())))
			if rng.IntN(2) == 0 {
				_ = rt.Return(rt.Cluster().AllGPUs().Slice()...)
			}
		case 12:
			what = "finish"
			if e, ok := pick(); ok {
				_ = rt.Finish(e.ID(), now, 0, rng.IntN(3) == 0)
			}
		case 13:
			what = "resize"
			if _, err := rt.SetCluster(clusters[rng.IntN(len(clusters))], now); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
		case 14:
			what = "resume"
			j := newJob()
			res := host.Resumption{At: now, Status: gpusched.JobStatus{Iterations: 1, Executed: 2, Attained: 4, Started: true, Preemptions: 1}}
			if free := rt.Cluster().AllGPUs(); rng.IntN(2) == 0 {
				for _, e := range rt.Running() {
					for _, g := range e.GPUs() {
						free.Remove(g)
					}
				}
				if g := free.Slice(); len(g) >= j.GPUs {
					res.Status.GPUs = g[:j.GPUs]
				}
			}
			if _, err := rt.Resume(j, res); err == nil {
				ids = append(ids, j.ID)
			}
		case 15:
			what = "restart"
			var buf bytes.Buffer
			if err := rt.SaveState(&buf); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
			o := opt
			o.Cluster = nil
			if rt, err = host.Restore(o, &buf); err != nil {
				return fmt.Errorf("op %d: %v", op, err)
			}
			if broken != "" {
				host.Break(rt, broken)
			}
		}
		if msg := host.CheckHot(rt); msg != "" {
			return fmt.Errorf("op %d (%s): %s", op, what, msg)
		}
		v, err := rt.View(now)
		if err != nil {
			return fmt.Errorf("op %d: %v", op, err)
		}
		run := rt.Running()
		if len(v.Running) != len(run) {
			return fmt.Errorf("op %d (%s): %d running in the view, %d held", op, what, len(v.Running), len(run))
		}
		for i, e := range run {
			want, got := e.Status(now), v.Running[i]
			if got.Job != want.Job || !slices.Equal(got.GPUs, want.GPUs) || got.Iterations != want.Iterations ||
				got.Executed != want.Executed || got.Attained != want.Attained || got.Started != want.Started ||
				got.FirstStart != want.FirstStart || got.Since != want.Since || got.Preemptions != want.Preemptions ||
				got.PlanChoice != want.PlanChoice {
				return fmt.Errorf("op %d (%s): job %s: view status %+v, entry's %+v", op, what, e.ID(), got, want)
			}
		}
	}
	return nil
}

// TestPropertyHotInStep: after random runtime operations the dense array of the running jobs'
// hot fields equals a rebuild from the entries, and the view equals the entries' statuses.
func TestPropertyHotInStep(t *testing.T) {
	for seed := range uint64(40) {
		if err := hotProperty(seed, ""); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestHotCatchesAMissedWrite: a runtime that does not copy a migrated job's fields into the
// dense array (one missed write) is caught.
func TestHotCatchesAMissedWrite(t *testing.T) {
	for seed := range uint64(40) {
		if err := hotProperty(seed, "hot"); err != nil {
			t.Logf("seed %d: caught: %v", seed, err)
			return
		}
	}
	t.Fatal("a missed write of a migrated job's hot fields was not caught")
}
