package asrpt_test

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// compactSetup is two A100 servers, each with four GPUs held by a running one-GPU job, and an
// eight-GPU job that arrives with the highest priority: the free GPUs would hold it only
// split 4 + 4 across the servers.
func compactSetup(t *testing.T) (*topology.Cluster, gpusched.View, map[gpusched.JobID]float64) {
	t.Helper()
	c, err := topology.Uniform(topology.A100(), 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	big := &gpusched.Job{ID: "big", GPUs: 8, Model: m, Plan: graph.Plan{DP: 1, TP: 8, PP: 1, MicroBatches: 8, GlobalBatch: 16}, Arrival: 100}
	truth := map[gpusched.JobID]float64{"big": 10}
	v := gpusched.View{Now: 100, Cluster: c, Pending: []gpusched.JobStatus{{Job: big}}}
	for s := range 2 {
		for k := range 4 {
			id := gpusched.JobID(fmt.Sprintf("small-%d-%d", s, k))
			truth[id] = 1e6 // long: lower priority than big
			v.Running = append(v.Running, gpusched.JobStatus{Job: &gpusched.Job{ID: id, GPUs: 1, StepTime: 1},
				GPUs: []topology.GPUID{topology.GPUID(8*s + k)}, Since: 0, Iterations: 10, Executed: 10})
		}
	}
	return c, v, truth
}

// schedulerAt returns an A-SRPT that has admitted the view's running jobs at time 0.
func schedulerAt(t *testing.T, c *topology.Cluster, v gpusched.View, truth map[gpusched.JobID]float64, opt asrpt.Options) *asrpt.Scheduler {
	t.Helper()
	opt.Estimator = asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })
	s, err := asrpt.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	first := gpusched.View{Now: 0, Cluster: c}
	for _, r := range v.Running {
		first.Pending = append(first.Pending, gpusched.JobStatus{Job: r.Job})
	}
	if _, err := s.Schedule(first); err != nil {
		t.Fatal(err)
	}
	return s
}

// The compact conversion preempts lower-priority jobs for a whole server rather than start a
// job split across servers; the conversion without it splits the job.
func TestCompactPreemptsForAWholeServer(t *testing.T) {
	c, v, truth := compactSetup(t)
	for _, tc := range []struct {
		name    string
		opt     asrpt.Options
		spanned int
	}{{"compact", asrpt.Options{}, 1}, {"no-compact", asrpt.Options{NoCompact: true}, 2}} {
		s := schedulerAt(t, c, v, truth, tc.opt)
		d, err := s.Schedule(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Validate(v); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var big []topology.GPUID
		for _, a := range d.Run {
			if a.Job == "big" {
				big = a.GPUs
			}
		}
		if got := c.ServersSpanned(big); len(big) != 8 || got != tc.spanned {
			t.Errorf("%s: big placed on %v (%d servers), want 8 GPUs on %d", tc.name, big, got, tc.spanned)
		}
	}
}

// Where no lower-priority job can make room, the compact conversion keeps the job waiting
// for a compact placement, but never longer than the slower placement would cost it over its
// predicted iterations (the ski-rental rule); then it starts split.
func TestCompactWaitIsBounded(t *testing.T) {
	c, v, truth := compactSetup(t)
	for id := range truth {
		if id != "big" {
			truth[id] = 11 // the small jobs now rank above big: nothing may be preempted for it
		}
	}
	for i := range v.Running {
		v.Running[i].Iterations = 1
		v.Running[i].Executed = 1
	}
	truth["big"] = 1e5
	s := schedulerAt(t, c, v, truth, asrpt.Options{})
	d, err := s.Schedule(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.Run {
		if a.Job == "big" {
			t.Fatalf("big started split at once on %v", a.GPUs)
		}
	}
	// Its best time per iteration and its time split 4 + 4 bound the wait.
	_, tau, _ := s.Predicted("big")
	split := []topology.GPUID{0, 1, 2, 3, 8, 9, 10, 11}
	sc, err := gpusched.DefaultCost().StepCost(v.Pending[0].Job, c, split, nil)
	if err != nil || !(sc.Time > tau*1.1) {
		t.Fatalf("split time %v (best %v): %v", sc.Time, tau, err)
	}
	limit := (sc.Time/tau - 1) * truth["big"] * tau
	later := v
	later.Now = v.Now + limit*0.9
	if d, err = s.Schedule(later); err != nil {
		t.Fatal(err)
	}
	for _, a := range d.Run {
		if a.Job == "big" {
			t.Fatalf("big started split before its wait ran out (%v of %v s)", limit*0.9, limit)
		}
	}
	later.Now = v.Now + limit*1.01
	if d, err = s.Schedule(later); err != nil {
		t.Fatal(err)
	}
	started := false
	for _, a := range d.Run {
		started = started || a.Job == "big"
	}
	if !started {
		t.Fatalf("big still waits after its wait ran out (%v s)", limit)
	}
}

// migrationWatch fails the run when a decision moves a running job to other GPUs.
type migrationWatch struct{ err error }

func (w *migrationWatch) observe(v *gpusched.View, d gpusched.Decision) {
	if w.err != nil {
		return
	}
	held := map[gpusched.JobID][]topology.GPUID{}
	for _, r := range v.Running {
		held[r.Job.ID] = r.GPUs
	}
	for _, a := range d.Run {
		if g, ok := held[a.Job]; ok && fmt.Sprint(g) != fmt.Sprint(a.GPUs) {
			w.err = fmt.Errorf("t=%g s: job %q moved from %v to %v", v.Now, a.Job, g, a.GPUs)
		}
	}
}

// With NoMigrate A-SRPT never moves a running job, whatever the workload, the cluster's
// failures or the consolidation option say; the same runs with migrations allowed do move
// jobs (the property can fail).
func TestPropertyNoMigrate(t *testing.T) {
	moved := 0
	rapid.Check(t, func(rt *rapid.T) {
		c, err := topology.Uniform(topology.A100(), rapid.IntRange(2, 4).Draw(rt, "servers"))
		if err != nil {
			rt.Fatal(err)
		}
		cfg := trace.DefaultPhillyConfig(rapid.IntRange(20, 80).Draw(rt, "jobs"), rapid.Uint64Range(1, 1<<20).Draw(rt, "seed"))
		cfg.Cluster = c
		cfg.ArrivalRate = trace.RateForLoad(rapid.Float64Range(0.8, 3).Draw(rt, "load"), c.NumGPUs())
		jobs, err := trace.GeneratePhilly(cfg)
		if errors.Is(err, gpusched.ErrInvalidJob) {
			rt.Skip(err) // a rare 24- or 32-GPU job drawn for a cluster of 16 or 24 GPUs
		}
		if err != nil {
			rt.Fatal(err)
		}
		truth := map[gpusched.JobID]float64{}
		for _, r := range jobs {
			truth[r.Job.ID] = r.Iterations
		}
		var fail sim.Failures
		if rapid.Bool().Draw(rt, "failures") {
			fail = sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: 7}
		}
		for _, noMigrate := range []bool{true, false} {
			s, err := asrpt.New(asrpt.Options{NoMigrate: noMigrate, Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
				n, ok := truth[id]
				return n, ok
			})})
			if err != nil {
				rt.Fatal(err)
			}
			var w migrationWatch
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, Failures: fail, Checkpoint: 600,
				Observer: sim.Observer{Scheduled: w.observe}})
			if err != nil {
				rt.Fatal(err)
			}
			switch {
			case noMigrate && (w.err != nil || res.Summary.MigrationsPerJob != 0):
				rt.Fatalf("NoMigrate: %v (%.3g migrations per job)", w.err, res.Summary.MigrationsPerJob)
			case !noMigrate && w.err != nil:
				moved++
			}
		}
	})
	if moved > 0 {
		return
	}
	// The property can fail: on a busy workload A-SRPT with migrations moves jobs.
	c, jobs := busyPhilly(t, 600)
	s, err := asrpt.New(asrpt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var w migrationWatch
	if _, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: s, Observer: sim.Observer{Scheduled: w.observe}}); err != nil {
		t.Fatal(err)
	}
	if w.err == nil {
		t.Errorf("no run with migrations allowed moved a job: the property cannot fail")
	}
}

// busyPhilly is n Philly-like jobs on eight A100 servers at twice their capacity.
// recordOracle is the asrpt.Oracle that knows the true iterations of the records' jobs.
func recordOracle(jobs []trace.Record) asrpt.Oracle {
	truth := make(map[gpusched.JobID]float64, len(jobs))
	for _, r := range jobs {
		truth[r.Job.ID] = r.Iterations
	}
	return func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok }
}

func busyPhilly(t *testing.T, n int) (*topology.Cluster, []trace.Record) {
	t.Helper()
	c, err := topology.Uniform(topology.A100(), 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(n, 1)
	cfg.Cluster = c
	cfg.ArrivalRate = trace.RateForLoad(2, c.NumGPUs())
	jobs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, jobs
}
