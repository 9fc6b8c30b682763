package host_test

import (
	"errors"
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

// mutant spoils some of chaos' valid decisions in one of the ways a wrong scheduler would:
// a GPU given to two jobs (a kept one among them, in either order), a GPU out of the cluster
// or unavailable, a placement of the wrong size, a job listed twice (at the end, or first on a
// copy of its GPUs); half the time it shuffles
// the list, otherwise the jobs kept stay first in the view's order (the runtime's fast path).
// Half of its decisions (spoiled or not) it returns as deltas (toDelta), now and then spoiled
// further with a Stop of a waiting, unknown, already stopped or run job.
type mutant struct {
	chaos
	spoiled int
}

func (m *mutant) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := m.spoil(v)
	if err != nil || m.rng.IntN(2) == 0 {
		return d, err
	}
	// Half the time, the same decision as a delta (gpusched.Decision.KeepOthers), spoiled
	// further now and then in the ways only a delta can be.
	d = toDelta(&v, d, m.rng)
	switch m.rng.IntN(8) {
	case 0:
		if len(v.Pending) > 0 {
			d.Stop = append(d.Stop, v.Pending[m.rng.IntN(len(v.Pending))].Job.ID)
		}
	case 1:
		d.Stop = append(d.Stop, "nobody")
	case 2:
		if len(d.Stop) > 0 {
			d.Stop = append(d.Stop, d.Stop[0])
		}
	case 3:
		if len(d.Run) > 0 {
			d.Stop = append(d.Stop, d.Run[0].Job)
		}
	}
	m.d = d
	return d, nil
}

// spoil returns chaos' decision, spoiled half the time.
func (m *mutant) spoil(v gpusched.View) (gpusched.Decision, error) {
	d, err := m.chaos.Schedule(v)
	if err != nil || len(d.Run) == 0 || m.rng.IntN(2) == 0 {
		return d, err
	}
	m.spoiled++
	run := slices.Clone(d.Run)
	i, j := m.rng.IntN(len(run)), m.rng.IntN(len(run))
	a := &run[i]
	gpus := slices.Clone(a.GPUs)
	switch k := m.rng.IntN(6); {
	case k == 4: // a job listed twice, first on a copy of its GPUs (the order of the rest kept)
		run = slices.Insert(run, 0, gpusched.Assignment{Job: run[j].Job, GPUs: slices.Clone(run[j].GPUs), PlanChoice: run[j].PlanChoice})
		if j == i {
			a = &run[i+1]
		}
	case k == 0 && i != j: // one GPU of job j's placement given to job i as well
		gpus[m.rng.IntN(len(gpus))] = run[j].GPUs[m.rng.IntN(len(run[j].GPUs))]
	case k == 1:
		gpus[m.rng.IntN(len(gpus))] = topology.GPUID(v.Cluster.NumGPUs() + m.rng.IntN(3))
	case k == 2 && v.Unavailable.Len() > 0:
		gpus[m.rng.IntN(len(gpus))] = v.Unavailable.Slice()[0]
	case k == 3:
		gpus = gpus[:len(gpus)-1]
	default:
		run = append(run, run[j])
	}
	a.GPUs = gpus
	if m.rng.IntN(2) == 0 { // else the kept jobs stay first, in the view's order
		m.rng.Shuffle(len(run), func(x, y int) { run[x], run[y] = run[y], run[x] })
	}
	d.Run = run
	m.d = d
	return d, nil
}

// checkProperty: over random jobs, drains and decisions, half of them spoiled, the runtime's
// own validator (which does not walk the GPUs of kept jobs) accepts exactly the decisions
// Decision.Validate accepts (Options.Validate cross-checks them at every call), and a refused
// decision leaves the runtime as it was and names a job of the decision.
func checkProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		m := &mutant{chaos: chaos{rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}}
		rt, err := host.New(host.Options{Cluster: c, Scheduler: m, Validate: true})
		if err != nil {
			t.Fatal(err)
		}
		if broken != "" {
			host.Break(rt, broken)
		}
		n := 0
		for call := range rapid.IntRange(1, 12).Draw(t, "calls") {
			now := float64(10 * (call + 1))
			for range rapid.IntRange(0, 4).Draw(t, "arrivals") {
				if _, err := rt.Submit(job(fmt.Sprintf("j%d", n), rapid.IntRange(1, 3).Draw(t, "gpus")), 0); err != nil {
					t.Fatal(err)
				}
				n++
			}
			switch rapid.IntRange(0, 3).Draw(t, "drain") {
			case 0:
				if err := rt.Drain(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "drained"))); err != nil {
					t.Fatal(err)
				}
			case 1: // all back: calls without unavailable GPUs take the runtime's fast path
				if err := rt.Return(rt.Unavailable().Slice()...); err != nil {
					t.Fatal(err)
				}
			}
			before := placements(rt)
			_, err := rt.Schedule(now)
			var se *host.ScheduleError
			switch {
			case err == nil:
			case errors.As(err, &se) && se.Invalid:
				if !slices.ContainsFunc(m.d.Run, func(a gpusched.Assignment) bool { return a.Job == se.Job }) && !slices.Contains(m.d.Stop, se.Job) &&
					!(m.d.KeepOthers && before[se.Job] != "") {
					t.Fatalf("t=%v: refusal names %q, not a job of the decision %+v: %v", now, se.Job, m.d, err)
				}
				if after := placements(rt); !maps2Equal(before, after) {
					t.Fatalf("t=%v: a refused decision changed the placements: %v -> %v", now, before, after)
				}
			default:
				t.Fatalf("t=%v: %v", now, err)
			}
		}
	}
}

// placements returns every running job's GPUs.
func placements(rt *host.Runtime) map[gpusched.JobID]string {
	out := map[gpusched.JobID]string{}
	for _, e := range rt.Running() {
		out[e.ID()] = fmt.Sprint(e.GPUs())
	}
	return out
}

func maps2Equal(a, b map[gpusched.JobID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPropertyCheck runs checkProperty.
func TestPropertyCheck(t *testing.T) {
	rapid.Check(t, checkProperty(""))
}

// TestCheckCatchesAMissingOwnerTest: a validator that lets a start take a kept job's GPU is
// caught.
func TestCheckCatchesAMissingOwnerTest(t *testing.T) {
	if !teeth.Fails(checkProperty("owner")) {
		t.Fatal("the check property does not catch a validator without the owner test")
	}
}

// TestCheckCatchesAMissingPositionOwnerTest: a validator that lets a start take the GPU of a
// job kept by position (the first assignments, in the view's order) is caught.
func TestCheckCatchesAMissingPositionOwnerTest(t *testing.T) {
	if !teeth.Fails(checkProperty("bypos")) {
		t.Fatal("the check property does not catch a validator that forgets jobs kept by position")
	}
}

// TestCheckCatchesARelistedPositionKeep: a validator that keeps a job by position after it
// was listed through the lookup is caught.
func TestCheckCatchesARelistedPositionKeep(t *testing.T) {
	if !teeth.Fails(checkProperty("relisted")) {
		t.Fatal("the check property does not catch a validator that lets a job kept by position be listed before")
	}
}

// TestCheckNamesThePlainOrder: a start listed before the kept job whose GPU it takes is
// refused naming the kept job, as a validator that walks every GPU in list order does.
func TestCheckNamesThePlainOrder(t *testing.T) {
	c, err := topology.Uniform(topology.T4(), 1)
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := rt.Submit(job(id, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	s.next = gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{0}}}}
	if _, err := rt.Schedule(0); err != nil {
		t.Fatal(err)
	}
	s.next = gpusched.Decision{Run: []gpusched.Assignment{{Job: "b", GPUs: []topology.GPUID{0}}, {Job: "a", GPUs: []topology.GPUID{0}}}}
	_, err = rt.Schedule(1)
	var se *host.ScheduleError
	if !errors.As(err, &se) || se.Job != "a" || !errors.Is(err, gpusched.ErrDoubleBooked) {
		t.Fatalf("got %v, want job a refused for a double-booked GPU", err)
	}
}

// scripted returns the decision it is given.
type scripted struct{ next gpusched.Decision }

func (s *scripted) Schedule(gpusched.View) (gpusched.Decision, error) { return s.next, nil }
