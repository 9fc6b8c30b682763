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

// toDelta returns the delta form (gpusched.Decision.KeepOthers) of the full decision d for
// view v: the assignments that change something (and, when rng says so, some that keep a job
// where it runs), and the running jobs d leaves out as Stop, in the view's order.
func toDelta(v *gpusched.View, d gpusched.Decision, rng *rand.Rand) gpusched.Decision {
	out := gpusched.Decision{KeepOthers: true, WakeAt: d.WakeAt, Rejected: d.Rejected}
	running := map[gpusched.JobID]*gpusched.JobStatus{}
	for i := range v.Running {
		running[v.Running[i].Job.ID] = &v.Running[i]
	}
	listed := map[gpusched.JobID]bool{}
	for _, a := range d.Run {
		listed[a.Job] = true
		if st, ok := running[a.Job]; ok && slices.Equal(st.GPUs, a.GPUs) && st.PlanChoice == a.PlanChoice && (rng == nil || rng.IntN(4) != 0) {
			continue
		}
		out.Run = append(out.Run, a)
	}
	for _, r := range d.Rejected {
		if r != nil {
			listed[r.Job] = true
		}
	}
	for i := range v.Running {
		if id := v.Running[i].Job.ID; !listed[id] {
			out.Stop = append(out.Stop, id)
		}
	}
	return out
}

// deltaChaos is chaos answering in the delta form; its own rng chooses the kept jobs it lists
// anyway, so that chaos makes the decisions it makes for a runtime given the full form.
type deltaChaos struct {
	chaos
	list *rand.Rand
}

func (s *deltaChaos) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := s.chaos.Schedule(v)
	if err != nil {
		return d, err
	}
	return toDelta(&v, d, s.list), nil
}

// actionsString writes a call's actions.
func actionsString(a *host.Actions) string {
	return fmt.Sprintf("%+v rejected %v wake %v", a.Steps, a.Rejected, a.WakeAt)
}

// stateString writes the runtime's running jobs with their GPUs and its queue, in order.
func stateString(rt *host.Runtime) string {
	var s string
	for _, e := range rt.Running() {
		s += fmt.Sprintf("%s%v ", e.ID(), e.GPUs())
	}
	s += "| "
	for _, e := range rt.Pending() {
		s += fmt.Sprintf("%s:%d ", e.ID(), e.Stats().Preemptions)
	}
	return s
}

// keepOthersProperty: two runtimes driven alike (arrivals, drains, completions) whose
// schedulers make the same random decisions, one in the full form and one as deltas, return
// the same actions, in the same order, at every call, and hold the same jobs in the same
// places and order. Options.Validate cross-checks the runtime's validation of every delta
// with Decision.Validate.
func keepOthersProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		seed := rapid.Uint64().Draw(t, "seed")
		policy := host.RejectPolicy(rapid.IntRange(0, 1).Draw(t, "policy"))
		full := &chaos{rng: rand.New(rand.NewPCG(seed, 1))}
		delta := &deltaChaos{chaos{rng: rand.New(rand.NewPCG(seed, 1))}, rand.New(rand.NewPCG(seed, 2))}
		var rts [2]*host.Runtime
		for k, s := range []gpusched.Scheduler{full, delta} {
			if rts[k], err = host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 5, Rejected: policy, Validate: true}); err != nil {
				t.Fatal(err)
			}
		}
		if broken != "" {
			host.Break(rts[1], broken)
		}
		n := 0
		for call := range rapid.IntRange(1, 12).Draw(t, "calls") {
			now := float64(10 * (call + 1))
			arrivals := rapid.IntRange(0, 4).Draw(t, "arrivals")
			gpus := make([]int, arrivals)
			for i := range gpus {
				gpus[i] = rapid.IntRange(1, 4).Draw(t, "gpus")
			}
			drain := rapid.IntRange(0, 3).Draw(t, "drain")
			g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "gpu"))
			finish := rapid.IntRange(0, 2).Draw(t, "finish")
			var got [2]string
			for k, rt := range rts {
				for i := range gpus {
					j := job(fmt.Sprintf("j%d", n+i), gpus[i])
					j.Arrival = now
					if _, err := rt.Submit(j, 0); err != nil {
						t.Fatal(err)
					}
				}
				switch drain {
				case 0:
					_ = rt.Drain(g)
				case 1:
					_ = rt.Return(rt.Unavailable().Slice()...)
				}
				if run := rt.Running(); finish == 0 && len(run) > 0 {
					if err := rt.Finish(run[0].ID(), now, 1, false); err != nil {
						t.Fatal(err)
					}
				}
				acts, err := rt.Schedule(now)
				if err != nil {
					t.Fatalf("t=%v (delta %v): %v", now, k == 1, err)
				}
				got[k] = actionsString(acts) + " => " + stateString(rt)
			}
			n += arrivals
			if got[0] != got[1] {
				t.Fatalf("t=%v: full form:\n%s\ndelta:\n%s", now, got[0], got[1])
			}
		}
	}
}

// TestPropertyKeepOthers runs keepOthersProperty.
func TestPropertyKeepOthers(t *testing.T) {
	rapid.Check(t, keepOthersProperty(""))
}

// TestKeepOthersCatchesUnorderedStops: a runtime that carries out a delta's stops in the
// order the delta lists them, not in the order of the running jobs (the full form's), is
// caught.
func TestKeepOthersCatchesUnorderedStops(t *testing.T) {
	if !teeth.Fails(keepOthersProperty("stoporder")) {
		t.Fatal("the keep-others property does not catch stops taken in the delta's order")
	}
}

// TestKeepOthersCatchesMissingOwnerTest: the check property, whose decisions are deltas half
// the time, catches a validator that lets a start take the GPU of a job a delta keeps without
// listing it.
func TestKeepOthersCatchesMissingOwnerTest(t *testing.T) {
	if !teeth.Fails(checkProperty("implicitowner")) {
		t.Fatal("the check property does not catch a validator that forgets the jobs a delta keeps")
	}
}
