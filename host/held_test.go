package host_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// freeCheck compares every view's Free, which uses the host's record of held GPUs
// (View.SetHeld), with the free set computed from the view's own running jobs.
type freeCheck struct {
	inner gpusched.Scheduler
	err   error
}

func (f *freeCheck) Schedule(v gpusched.View) (gpusched.Decision, error) {
	slow := v
	slow.Running = slices.Clone(v.Running) // another slice: the record does not hold for it
	if got, want := v.Free(), slow.Free(); got.String() != want.String() {
		f.err = fmt.Errorf("t=%v: Free with the host's record is %v, from the running jobs %v", v.Now, got, want)
		return gpusched.Decision{}, f.err
	}
	return f.inner.Schedule(v)
}

// heldProperty: under random submissions, finishes, cancellations, interruptions, failures,
// drains and returns, cluster changes and random decisions (starts, preemptions, migrations,
// rejections), every view's Free equals the free set computed from its running jobs.
func heldProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		servers := func(label string) *topology.Cluster {
			c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, label))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c := servers("servers")
		fc := &freeCheck{inner: &chaos{rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}}
		rt, err := host.New(host.Options{Cluster: c, Scheduler: fc, Rejected: host.RejectPolicy(rapid.IntRange(0, 1).Draw(t, "policy"))})
		if err != nil {
			t.Fatal(err)
		}
		if broken != "" {
			host.Break(rt, broken)
		}
		n := 0
		for call := range rapid.IntRange(1, 15).Draw(t, "calls") {
			now := float64(10 * (call + 1))
			for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
				if _, err := rt.Submit(job(fmt.Sprintf("j%d", n), rapid.IntRange(1, 4).Draw(t, "gpus")), 0); err != nil {
					t.Fatal(err)
				}
				n++
			}
			for _, e := range slices.Clone(rt.Running()) {
				switch rapid.IntRange(0, 9).Draw(t, "fate") {
				case 0:
					if err := rt.Finish(e.ID(), now, 0, false); err != nil {
						t.Fatal(err)
					}
				case 1:
					if err := rt.Cancel(e.ID(), now); err != nil {
						t.Fatal(err)
					}
				case 2:
					if err := rt.Interrupt(e.ID(), now); err != nil {
						t.Fatal(err)
					}
				}
			}
			ng := rt.Cluster().NumGPUs()
			switch rapid.IntRange(0, 5).Draw(t, "event") {
			case 0:
				if _, err := rt.SetCluster(servers("resize"), now); err != nil {
					t.Fatal(err)
				}
			case 1:
				if _, err := rt.Fail(now, topology.GPUID(rapid.IntRange(0, ng-1).Draw(t, "failed"))); err != nil {
					t.Fatal(err)
				}
			case 2:
				if err := rt.Drain(topology.GPUID(rapid.IntRange(0, ng-1).Draw(t, "drained"))); err != nil {
					t.Fatal(err)
				}
			case 3:
				if u := rt.Unavailable().Slice(); len(u) > 0 {
					if err := rt.Return(u[0]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := rt.Schedule(now); err != nil {
				t.Fatalf("t=%v: %v", now, err)
			}
		}
	}
}

// TestPropertyHeld: the free set of every view, taken from the runtime's record of held
// GPUs, is the one its running jobs leave.
func TestPropertyHeld(t *testing.T) {
	rapid.Check(t, heldProperty(""))
}

// TestHeldCatchesAStaleRecord: a runtime that forgets to release the GPUs of a job that
// stops is caught.
func TestHeldCatchesAStaleRecord(t *testing.T) {
	if !teeth.Fails(heldProperty("held")) {
		t.Fatal("the held property does not catch a record that keeps stopped jobs' GPUs")
	}
}
