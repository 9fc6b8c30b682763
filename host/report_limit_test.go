package host_test

import (
	"bytes"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// A job may run past the iteration limit it was submitted with (the limit is a host's
// estimate; a real job reports what it did): progress reported above the limit stands, later
// extrapolation neither lowers it nor counts negative cross-server bytes, and the state saves
// and restores. Before the fix, the next settle took done back to the limit, recorded
// negative bytes, and Restore refused the saved state.
func TestReportPastLimit(t *testing.T) {
	c := cluster(t, topology.T4(), 2)
	rt, err := host.New(host.Options{Cluster: c, Scheduler: fifo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Submit(gpusched.Job{ID: "a", GPUs: 8, StepTime: 1}, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	e, ok := rt.Job("a")
	if !ok || !e.Running() {
		t.Fatal("a is not running")
	}
	if err := rt.SetRate(e, 0, gpusched.StepCost{Time: 1, CrossServerBytes: 1e6}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Report("a", 50, 150); err != nil {
		t.Fatal(err)
	}
	for _, at := range []float64{60, 80} {
		if st := e.Status(at); st.Iterations < 150 {
			t.Fatalf("at %v: %v iterations after 150 were reported", at, st.Iterations)
		}
		if _, err := rt.Schedule(at); err != nil {
			t.Fatal(err)
		}
		if st := e.Stats(); st.Iterations < 150 || st.CrossServerBytes < 0 {
			t.Fatalf("at %v after a call: %v iterations, %v cross-server bytes", at, st.Iterations, st.CrossServerBytes)
		}
	}
	var buf bytes.Buffer
	if err := rt.SaveState(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Restore(host.Options{Cluster: c, Scheduler: fifo}, &buf); err != nil {
		t.Fatalf("restoring the saved state: %v", err)
	}
}
