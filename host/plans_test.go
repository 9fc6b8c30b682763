package host_test

import (
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// TestReconfiguration: a reconfigurable job started under its own plan on 2 GPUs and moved to
// its 4-GPU plan pays ReconfigureTime (not RestoreTime), counts 4 GPUs from then on (busy GPUs,
// attained service), shows its plan choice in the view, and is timed as WithPlan(1); a
// decision over a server's CPU cores is refused.
func TestReconfiguration(t *testing.T) {
	spec := topology.A800()
	spec.CPUs = 8
	c := cluster(t, spec, 1)
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	p := func(dp int) graph.Plan { return graph.Plan{DP: dp, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32} }
	j := gpusched.Job{ID: "r", GPUs: 2, Model: m, Plan: p(2), CPUs: 1,
		Plans: []gpusched.PlanOption{{Plan: p(4), CPUs: 2}, {Plan: p(8), CPUs: 2}}}
	choice := 0
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		n := j.GPUsFor(choice)
		g := make([]topology.GPUID, n)
		for i := range g {
			g[i] = topology.GPUID(i)
		}
		return gpusched.Decision{Run: []gpusched.Assignment{{Job: "r", GPUs: g, PlanChoice: choice}}}, nil
	})
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 30, ReconfigureTime: 260, Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := rt.Submit(j, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	if e.Current() != e.Job() || rt.Busy() != 2 {
		t.Fatalf("plan 0: current job %p (job %p), busy %d", e.Current(), e.Job(), rt.Busy())
	}
	choice = 1
	if _, err := rt.Schedule(100); err != nil {
		t.Fatal(err)
	}
	if e.RestoreEnd() != 360 || e.Status(rt.Now()).PlanChoice != 1 || rt.Busy() != 4 || e.Current().GPUs != 4 || e.Current().Plan.DP != 4 {
		t.Errorf("after the change: restore end %v (want 360), plan %d, busy %d, current %v",
			e.RestoreEnd(), e.Status(rt.Now()).PlanChoice, rt.Busy(), e.Current().Plan)
	}
	v, _ := rt.View(200)
	if v.Running[0].PlanChoice != 1 {
		t.Errorf("view plan choice %d, want 1", v.Running[0].PlanChoice)
	}
	// Attained: 2 GPUs x 100 s, then 4 GPUs x 100 s.
	if _, _, att, _ := e.Progress(200); att != 600 {
		t.Errorf("attained %v GPU-s, want 600", att)
	}
	// Same GPUs, same plan: kept, no new restore.
	if _, err := rt.Schedule(400); err != nil {
		t.Fatal(err)
	}
	if e.RestoreEnd() != 360 {
		t.Errorf("kept job restored again: %v", e.RestoreEnd())
	}

	// 8 workers x 2 cores = 16 > 8 cores: refused, nothing changes.
	choice = 2
	if _, err := rt.Schedule(500); err == nil || e.Status(rt.Now()).PlanChoice != 1 {
		t.Errorf("over the server's CPU cores: err %v, plan %d", err, e.Status(rt.Now()).PlanChoice)
	}
	// The record settled at the end counts the GPUs of the chosen plan: 2 x 100 + 4 x 500.
	if err := rt.Finish("r", 600, 0, false); err != nil {
		t.Fatal(err)
	}
	if att := e.Stats().Attained; att != 2200 {
		t.Errorf("finished: attained %v GPU-s, want 2200", att)
	}
}
