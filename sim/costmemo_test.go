package sim_test

import (
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// gpuCost times a job by where it runs and under which plan: 1 + its first GPU's index
// seconds per iteration, doubled under a tensor-parallel plan. It counts its calls.
type gpuCost struct{ calls *int }

func (g gpuCost) StepCost(j *gpusched.Job, _ *topology.Cluster, gpus []topology.GPUID, _ topology.LinkLoad) (gpusched.StepCost, error) {
	*g.calls++
	t := 1 + float64(gpus[0])
	if j.Plan.TP > 1 {
		t *= 2
	}
	return gpusched.StepCost{Time: t}, nil
}

// TestStepCostAskedAgainOnChange checks that the simulator asks the cost model again when a
// job's placement or plan choice changes although its link loads do not (a single-GPU job,
// and a job that keeps its GPUs under another plan, both with idle links): a step cost kept
// from the last placement would give other finish times.
func TestStepCostAskedAgainOnChange(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	p := func(dp, tp int) graph.Plan {
		return graph.Plan{DP: dp, TP: tp, PP: 1, MicroBatches: 1, GlobalBatch: 8}
	}
	// a: one GPU, on GPU 7 (8 s a step) until b arrives at t = 80, then on GPU 0 (1 s).
	// m: two GPUs 2-3 under its own data-parallel plan (3 s), from t = 80 under the
	// tensor-parallel one on the same GPUs (6 s).
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		late := v.Now >= 80
		var d gpusched.Decision
		for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
			for _, st := range l {
				switch st.Job.ID {
				case "a":
					g := topology.GPUID(7)
					if late {
						g = 0
					}
					d.Run = append(d.Run, gpusched.Assignment{Job: "a", GPUs: []topology.GPUID{g}})
				case "m":
					k := 0
					if late {
						k = 1
					}
					d.Run = append(d.Run, gpusched.Assignment{Job: "m", GPUs: []topology.GPUID{2, 3}, PlanChoice: k})
				case "b":
					d.Run = append(d.Run, gpusched.Assignment{Job: "b", GPUs: []topology.GPUID{5}})
				}
			}
		}
		return d, nil
	})
	bert, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	m := rec("m", 0, 2, 1, 100)
	m.Job.Model, m.Job.Plan = bert, p(2, 1)
	m.Job.Plans = []gpusched.PlanOption{{Plan: p(1, 2)}}
	calls := 0
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Cost: gpuCost{&calls}, RestoreTime: 1,
		Jobs: []trace.Record{rec("a", 0, 1, 1, 100), m, rec("b", 80, 1, 1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(t, res)
	// a: 10 steps by t = 80, a restore of 1 s, then 90 steps of 1 s.
	if want := 80 + 1 + 90.0; !near(got["a"].Finish, want) {
		t.Errorf("a finishes at %v, want %v (its step cost on GPU 7 kept after it moved to GPU 0?)", got["a"].Finish, want)
	}
	// m: 80/3 steps by t = 80, a restore of 1 s, then the rest at 6 s a step.
	if want := 80 + 1 + (100-80.0/3)*6; !near(got["m"].Finish, want) {
		t.Errorf("m finishes at %v, want %v (its step cost under its own plan kept under the other?)", got["m"].Finish, want)
	}
	if calls == 0 {
		t.Error("the cost model was never asked")
	}
}
