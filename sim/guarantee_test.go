package sim_test

import (
	"math"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// spread places every waiting job with one GPU per server, servers in order, and never
// preempts: the worst placement for a data-parallel job's all-reduce.
type spread struct{}

func (spread) String() string { return "spread" }

func (spread) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	for _, r := range v.Running {
		d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
	}
	free := v.Free()
	for _, p := range v.Pending {
		var g []topology.GPUID
		for s := 0; s < v.Cluster.NumServers() && len(g) < p.Job.GPUs; s++ {
			first, m := v.Cluster.GPUsOf(s)
			for x := first; x < first+topology.GPUID(m); x++ {
				if free.Contains(x) {
					g = append(g, x)
					free.Remove(x)
					break
				}
			}
		}
		if len(g) < p.Job.GPUs {
			break
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: g})
	}
	return d, nil
}

// TestGuaranteeFixedStep checks the guarantee metric on jobs of fixed step time, where the
// target speed is 1/StepTime wherever they run: unpreempted jobs meet it exactly; jobs that
// a preemptive scheduler stops pay restores, train slower than that while holding GPUs, and
// their ratio is Iterations x StepTime / RunTime.
func TestGuaranteeFixedStep(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	g := func(r trace.Record) trace.Record { r.Job.Guaranteed = true; return r }
	jobs := []trace.Record{g(rec("a", 0, 2, 1, 50)), g(rec("b", 1, 2, 2, 30)), rec("c", 2, 4, 1, 20)}
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Guaranteed != 2 || s.GuaranteeAttainment != 1 || math.Abs(s.AvgGuaranteeRatio-1) > 1e-12 {
		t.Errorf("fifo: %d guaranteed, attainment %v, mean ratio %v; want 2, 1, 1", s.Guaranteed, s.GuaranteeAttainment, s.AvgGuaranteeRatio)
	}
	if r := byID(t, res)["c"]; r.Guaranteed || r.GuaranteeRatio != 0 {
		t.Errorf("best-effort job c: guaranteed %v, ratio %v", r.Guaranteed, r.GuaranteeRatio)
	}

	// LAS with a 3 s quantum and a 2 s restore: the jobs take turns and pay restores.
	res, err = sim.Run(sim.Config{Cluster: c, Scheduler: las{quantum: 3}, Jobs: jobs, RestoreTime: 2})
	if err != nil {
		t.Fatal(err)
	}
	met, sum, n := 0, 0.0, 0
	paid := false
	for _, r := range res.Jobs {
		if !r.Guaranteed {
			continue
		}
		step := map[gpusched.JobID]float64{"a": 1, "b": 2}[r.ID]
		want := r.Iterations * step / r.RunTime
		if math.Abs(r.GuaranteeRatio-want) > 1e-9 {
			t.Errorf("las: job %s: ratio %v, want iterations x step / run time = %v", r.ID, r.GuaranteeRatio, want)
		}
		if r.Preemptions+r.Migrations > 0 {
			paid = true
			if !(r.GuaranteeRatio < 1-sim.GuaranteeTolerance) {
				t.Errorf("las: job %s was stopped %d times but its ratio is %v", r.ID, r.Preemptions+r.Migrations, r.GuaranteeRatio)
			}
		}
		n++
		sum += want
		if want >= 1-sim.GuaranteeTolerance {
			met++
		}
	}
	if !paid {
		t.Fatal("las stopped no guaranteed job: the test shows nothing")
	}
	s = res.Summary
	if s.Guaranteed != n || s.GuaranteeAttainment != float64(met)/float64(n) || math.Abs(s.AvgGuaranteeRatio-sum/float64(n)) > 1e-12 {
		t.Errorf("las: summary %d guaranteed, attainment %v, mean %v; want %d, %v, %v",
			s.Guaranteed, s.GuaranteeAttainment, s.AvgGuaranteeRatio, n, float64(met)/float64(n), sum/float64(n))
	}
}

// TestGuaranteeTargetIsConsolidated checks that a guaranteed job's target is its own plan on
// a consolidated placement: run there (fifo packs) it meets it; spread one GPU per server
// its all-reduce crosses the network and it falls short by the ratio of the two step times,
// which the cost model gives independently.
func TestGuaranteeTargetIsConsolidated(t *testing.T) {
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, topology.A100(), 4)
	plan := graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 64}
	j := gpusched.Job{ID: "g", GPUs: 4, Model: m, Plan: plan, Guaranteed: true}
	jobs := []trace.Record{{Job: j, Iterations: 200}}
	cost := gpusched.DefaultCost()
	step := func(gpus []topology.GPUID) float64 {
		sc, err := cost.StepCost(&j, c, gpus, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc.Time
	}
	packed, spreadOut := step([]topology.GPUID{0, 1, 2, 3}), step([]topology.GPUID{0, 8, 16, 24})
	if !(spreadOut > packed*1.05) {
		t.Fatalf("spreading the job costs nothing (%v vs %v s per iteration): the test shows nothing", spreadOut, packed)
	}
	for _, tc := range []struct {
		s    gpusched.Scheduler
		want float64
	}{{fifo{}, 1}, {spread{}, packed / spreadOut}} {
		res, err := sim.Run(sim.Config{Cluster: c, Scheduler: tc.s, Jobs: jobs, Cost: gpusched.DefaultCost()})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Jobs[0]
		if math.Abs(r.GuaranteeRatio-tc.want) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", tc.s, r.GuaranteeRatio, tc.want)
		}
		wantMet := 0.0
		if tc.want >= 1-sim.GuaranteeTolerance {
			wantMet = 1
		}
		if res.Summary.GuaranteeAttainment != wantMet {
			t.Errorf("%s: attainment %v, want %v", tc.s, res.Summary.GuaranteeAttainment, wantMet)
		}
	}
}
