package sim_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// ownCost is a cost model the simulator does not know: it times every job at 10 s per
// iteration, whatever its StepTime, so a job's length is unknown before it runs (the tests
// give jobs a negligible StepTime, 1e-300 s, so that nothing is caught up front).
type ownCost struct{}

func (ownCost) StepCost(*gpusched.Job, *topology.Cluster, []topology.GPUID, topology.LinkLoad) (gpusched.StepCost, error) {
	return gpusched.StepCost{Time: 10}, nil
}

// wakeFar asks to be woken at a time far past the horizon and runs nothing.
type wakeFar struct{}

func (wakeFar) String() string { return "wakefar" }

func (wakeFar) Schedule(v gpusched.View) (gpusched.Decision, error) {
	return gpusched.Decision{WakeAt: 1e300}, nil
}

// TestHorizon: inputs whose times overflow, or pass the simulator's horizon, are errors
// naming the job, never a panic. Before the fix, a job of 1e308 iterations of 10 s (length
// +Inf) ended in "panic: sim: no event to come, no job waiting, but jobs unfinished", and
// jobs at t = 1e15 s ran at a clock that 0.1 s steps no longer move.
func TestHorizon(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	cases := []struct {
		name string
		cfg  sim.Config
		want error
		msg  []string
	}{
		{"length overflows", sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 1, 10, 1e308)}},
			sim.ErrInvalidConfig, []string{`job "a"`, "+Inf", "horizon"}},
		{"length past horizon", sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 1, 1, 1), rec("b", 100, 1, 1, sim.Horizon)}},
			sim.ErrInvalidConfig, []string{`job "b"`, "horizon"}},
		{"arrival past horizon", sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 1e15, 1, 0.1, 10), rec("b", 1e15, 1, 0.1, 10)}},
			sim.ErrInvalidConfig, []string{`job "a"`, "arrival 1e+15 s", "horizon"}},
		{"completion overflows at run time", sim.Config{Cluster: c, Scheduler: fifo{}, Cost: ownCost{}, Jobs: []trace.Record{rec("x", 0, 1, 1e-300, 1e308)}},
			sim.ErrLimit, []string{`job "x"`, "t=+Inf", "horizon", "fifo"}},
		{"completion past horizon after queueing", sim.Config{Cluster: c, Scheduler: fifo{}, Cost: ownCost{},
			Jobs: []trace.Record{rec("x", 0, 8, 1e-300, sim.Horizon/19), rec("y", 0, 8, 1e-300, sim.Horizon/19)}},
			sim.ErrLimit, []string{`job "y"`, "horizon"}},
		{"wake-up past horizon", sim.Config{Cluster: c, Scheduler: wakeFar{}, Jobs: []trace.Record{rec("a", 0, 1, 1, 1)}},
			sim.ErrLimit, []string{"wakefar", "woken at t=1e+300 s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sim.Run(tc.cfg)
			if !errors.Is(err, tc.want) || res != nil {
				t.Fatalf("got %v, %v; want %v", res, err, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%v does not say %q", err, m)
				}
			}
		})
	}
	// Just below the horizon, the run completes and keeps its resolution: a job of 0.1 s
	// steps arriving at 2^32 - 1000 s finishes 1 s later, to within a microsecond.
	at := float64(sim.Horizon) - 1000
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", at, 1, 0.1, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	if jct := res.Jobs[0].JCT; math.Abs(jct-1) > 1e-6 {
		t.Errorf("JCT %v s, want 1 s", jct)
	}
}
