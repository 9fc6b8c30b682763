package policy

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// instance is a generated workload on a generated cluster.
type instance struct {
	c     *topology.Cluster
	jobs  []hostJob
	iters map[gpusched.JobID]float64
}

func genInstance(t *rapid.T, maxJobs int) instance {
	servers := rapid.SliceOfN(rapid.SampledFrom([]int{2, 4, 8}), 1, 3).Draw(t, "servers")
	c := cluster(t, servers...)
	n := rapid.IntRange(1, maxJobs).Draw(t, "jobs")
	in := instance{c: c, iters: map[gpusched.JobID]float64{}}
	at := 0.0
	for i := range n {
		at += rapid.SampledFrom([]float64{0, 0, 1, 5, 30, 200}).Draw(t, "gap")
		id := gpusched.JobID(fmt.Sprintf("j%02d", i))
		g := rapid.IntRange(1, c.NumGPUs()).Draw(t, "gpus")
		j := gpusched.Job{ID: id, Arrival: at, GPUs: g, StepTime: rapid.SampledFrom([]float64{0.1, 0.5, 1, 2}).Draw(t, "step")}
		if rapid.Bool().Draw(t, "comm") {
			j.Features.Numeric = map[string]float64{ModelBytesFeature: 1e8}
		}
		iters := float64(rapid.IntRange(1, 400).Draw(t, "iters"))
		in.jobs = append(in.jobs, hostJob{job: j, iters: iters})
		in.iters[id] = iters
	}
	return in
}

// preemptive reports whether a policy may preempt.
func preemptive(s gpusched.Scheduler) bool {
	switch s.(type) {
	case *oraclePolicy, *tiresiasPolicy:
		return true
	}
	return false
}

// checkRun states the invariants of one host run: no error (every decision validated, so no
// GPU was double-booked; no stall; bounded calls), every job finished, no migration, and no
// preemption by a non-preemptive policy.
func checkRun(s gpusched.Scheduler, jobs int, st hostStats, err error, nonPreemptive bool) error {
	if err != nil {
		return err
	}
	if len(st.finish) != jobs {
		return fmt.Errorf("%v: %d of %d jobs finished", s, len(st.finish), jobs)
	}
	if st.migrations != 0 {
		return fmt.Errorf("%v: %d migrations", s, st.migrations)
	}
	if nonPreemptive && st.preemptions != 0 {
		return fmt.Errorf("%v: a non-preemptive policy preempted %d times", s, st.preemptions)
	}
	return nil
}

func TestPropertyHostInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance(t, 12)
		scheds := allSchedulers(t, in.iters)
		leased, _ := newSRPTOracle(OracleOptions{MinRunTime: 50, Iterations: func(id gpusched.JobID) float64 { return in.iters[id] }})
		tirLease, _ := newTiresias(TiresiasOptions{MinRunTime: 50, Thresholds: []float64{100, 400}})
		strictTir, _ := newTiresias(TiresiasOptions{Options: Options{Order: Strict}, Thresholds: []float64{50}, PromoteKnob: 1})
		bcoStrict, _ := newSJFBCO(SJFBCOOptions{Order: Strict, Window: 3})
		scheds = append(scheds, leased, tirLease, strictTir, bcoStrict)
		for _, s := range scheds {
			st, err := runHost(in.c, in.jobs, s, 100*len(in.jobs)+100)
			if err := checkRun(s, len(in.jobs), st, err, !preemptive(s)); err != nil {
				t.Fatal(err)
			}
			if (s == leased || s == tirLease) && st.preemptions > 0 && st.minRun < 50-1e-9 {
				t.Fatalf("%v preempted a job after %v s, within its 50 s lease", s, st.minRun)
			}
		}
	})
}

// The invariants catch deliberately wrong variants.
func TestHostCatchesWrongVariants(t *testing.T) {
	c := cluster(t, 4)
	jobs := []hostJob{
		{job: gpusched.Job{ID: "a", GPUs: 2, StepTime: 1}, iters: 10},
		{job: gpusched.Job{ID: "b", GPUs: 2, Arrival: 1, StepTime: 1}, iters: 10},
		{job: gpusched.Job{ID: "c", GPUs: 4, Arrival: 2, StepTime: 1}, iters: 10},
	}
	fifo, _ := newFIFO(Options{})
	// Forgets to list the running jobs it keeps: every call preempts them.
	forgetful := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		d, err := fifo.Schedule(v)
		if err != nil {
			return d, err
		}
		d.Run = slices.DeleteFunc(d.Run, func(a gpusched.Assignment) bool {
			for i := range v.Running {
				if v.Running[i].Job.ID == a.Job {
					return true
				}
			}
			return false
		})
		return d, nil
	})
	// Places every job on GPU 0 upwards, busy or not.
	greedy := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		d := gpusched.Decision{Run: keepAll(&v)}
		for i := range v.Pending {
			d.Run = append(d.Run, gpusched.Assignment{Job: v.Pending[i].Job.ID, GPUs: gpuRange(0, v.Pending[i].Job.GPUs)})
		}
		return d, nil
	})
	// Never starts the widest job.
	picky := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		d, err := fifo.Schedule(v)
		d.Run = slices.DeleteFunc(d.Run, func(a gpusched.Assignment) bool { return a.Job == "c" })
		return d, err
	})
	st, err := runHost(c, jobs, forgetful, 1000)
	if checkRun(forgetful, len(jobs), st, err, true) == nil {
		t.Error("a non-preemptive policy that drops its running jobs passed")
	}
	if _, err := runHost(c, jobs, greedy, 1000); !errors.Is(err, errHostInvalid) {
		t.Errorf("double-booking scheduler: %v, want errHostInvalid", err)
	}
	if _, err := runHost(c, jobs, picky, 1000); !errors.Is(err, errHostStall) {
		t.Errorf("starving scheduler: %v, want errHostStall", err)
	}
	st, err = runHost(c, jobs, fifo, 1000)
	if err := checkRun(fifo, len(jobs), st, err, true); err != nil {
		t.Errorf("FIFO itself fails: %v", err)
	}
}

// Every policy passes the simulator's own checks (decision validation, view validation, stall
// detection) on generated workloads, with the BCO contention model as the cost.
func TestPropertySimInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance(t, 15)
		recs := make([]trace.Record, len(in.jobs))
		for i, hj := range in.jobs {
			recs[i] = trace.Record{Job: hj.job, Iterations: hj.iters}
		}
		cost := BCOCost{Alpha: 0.3, Overhead: 0.05}
		restore := rapid.SampledFrom([]float64{-1, 0, 5}).Draw(t, "restore")
		for _, s := range allSchedulers(t, in.iters) {
			res, err := sim.Run(sim.Config{Cluster: in.c, Jobs: recs, Scheduler: s, Cost: cost,
				RestoreTime: restore, ValidateViews: true, MaxEvents: 100*len(recs) + 100})
			if err != nil {
				t.Fatalf("%v: %v", s, err)
			}
			if res.Summary.Jobs != len(recs) {
				t.Fatalf("%v: %d of %d jobs", s, res.Summary.Jobs, len(recs))
			}
			if !preemptive(s) && (res.Summary.PreemptionsPerJob != 0 || res.Summary.MigrationsPerJob != 0) {
				t.Fatalf("%v preempted or migrated: %+v", s, res.Summary)
			}
		}
	})
}
