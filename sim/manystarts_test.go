package sim_test

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// TestManyStartsAtOnce: a decision that starts more than 64 jobs at once while few run gives
// every one of them a rate (the runtime's dirty list once dropped jobs being placed when it
// trimmed itself, and they never finished).
func TestManyStartsAtOnce(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 32)
	if err != nil {
		t.Fatal(err)
	}
	var recs []trace.Record
	for i := range 200 {
		recs = append(recs, trace.Record{Job: gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: 1, StepTime: 1}, Iterations: 10})
	}
	fifo, _ := policy.New("fifo", policy.Config{})
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: fifo, MaxTime: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Jobs {
		if r.JCT != 10 {
			t.Fatalf("job %s took %g s, want 10", r.ID, r.JCT)
		}
	}
}
