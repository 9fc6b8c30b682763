package asrpt_test

import (
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// TestReportedWaitingProgress: a host that reports a new progress for a waiting job (a late
// report, or a restore from an older checkpoint: host.Runtime.Report) gets decisions made on
// that progress, though A-SRPT otherwise keeps waiting jobs' progress from the views' deltas.
// B waits behind A; then B is reported nearly done, and A-SRPT, reading it, preempts A for B.
func TestReportedWaitingProgress(t *testing.T) {
	c, err := topology.Uniform(topology.T4(), 1)
	if err != nil {
		t.Fatal(err)
	}
	g := c.NumGPUs()
	size := map[gpusched.JobID]float64{"a": 100, "b": 1000}
	s, err := asrpt.New(asrpt.Options{Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
		n, ok := size[id]
		return n, ok
	}), NoConsolidate: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(id string, at float64) {
		if _, err := rt.Submit(gpusched.Job{ID: gpusched.JobID(id), GPUs: g, StepTime: 1, Arrival: at}, 0); err != nil {
			t.Fatal(err)
		}
	}
	running := func(id string) bool {
		e, ok := rt.Job(gpusched.JobID(id))
		return ok && e.Running()
	}
	submit("a", 0)
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	submit("b", 1)
	for _, at := range []float64{1, 2} { // two views of b waiting: the second follows the first's delta
		if _, err := rt.Schedule(at); err != nil {
			t.Fatal(err)
		}
	}
	if !running("a") || running("b") {
		t.Fatalf("before the report: a running %v, b running %v; want a alone", running("a"), running("b"))
	}
	if err := rt.Report("b", 3, 995); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Schedule(3); err != nil {
		t.Fatal(err)
	}
	if !running("b") || running("a") {
		t.Errorf("after b was reported at 995 of 1000 iterations: a running %v, b running %v; want b alone", running("a"), running("b"))
	}
}
