package consolidate

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// scene draws a cluster with running jobs scattered at random and a decision that keeps some
// of them and preempts the others.
func scene(t *rapid.T) (*gpusched.View, gpusched.Decision) {
	c, err := topology.Uniform(topology.A100(), rapid.IntRange(1, 6).Draw(t, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	free := c.AllGPUs()
	v := &gpusched.View{Cluster: c}
	var d gpusched.Decision
	for n := rapid.IntRange(0, 12).Draw(t, "jobs"); n > 0 && free.Len() > 0; n-- {
		g := rapid.IntRange(1, min(16, free.Len())).Draw(t, "gpus")
		pool := free.Slice()
		var place []topology.GPUID
		for range g {
			i := rapid.IntRange(0, len(pool)-1).Draw(t, "gpu")
			place = append(place, pool[i])
			pool = slices.Delete(pool, i, i+1)
		}
		for _, x := range place {
			free.Remove(x)
		}
		done := rapid.Float64Range(0, 500).Draw(t, "done")
		st := running(fmt.Sprintf("j%d", len(v.Running)), g, done, place...)
		v.Running = append(v.Running, st)
		if rapid.IntRange(0, 3).Draw(t, "keep") > 0 {
			d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: slices.Clone(place)})
		}
	}
	// Some GPUs that no kept job holds are unavailable (drained): nothing may move onto them.
	if rapid.Bool().Draw(t, "drain") {
		free.Range(func(g topology.GPUID) bool {
			if rapid.IntRange(0, 2).Draw(t, "drained") == 0 {
				v.Unavailable.Add(g)
			}
			return true
		})
	}
	return v, d
}

type applyFunc func(v *gpusched.View, d *gpusched.Decision, opt Options) ([]Move, error)

// consolidationHolds states what Apply guarantees: the decision stays valid; only jobs the
// decision kept in place move; each move lowers the servers spanned, is faster and repays
// the restore cost Payback times over; nothing else changes.
func consolidationHolds(apply applyFunc) func(*rapid.T) {
	return func(t *rapid.T) {
		v, d := scene(t)
		before := slices.Clone(d.Run)
		opt := Options{Cost: spreadCost{}}
		moves, err := apply(v, &d, opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Validate(*v); err != nil {
			t.Fatalf("decision invalid after Apply: %v", err)
		}
		moved := map[gpusched.JobID]Move{}
		for _, m := range moves {
			moved[m.Job] = m
		}
		if len(d.Run) != len(before) {
			t.Fatalf("Apply changed the number of assignments: %d -> %d", len(before), len(d.Run))
		}
		for i, a := range d.Run {
			if a.Job != before[i].Job {
				t.Fatalf("assignment %d is now job %s, was %s", i, a.Job, before[i].Job)
			}
			m, ok := moved[a.Job]
			if !ok {
				if !slices.Equal(a.GPUs, before[i].GPUs) {
					t.Fatalf("job %s changed GPUs without a move", a.Job)
				}
				continue
			}
			if !slices.Equal(a.GPUs, m.To) || !slices.Equal(before[i].GPUs, m.From) {
				t.Fatalf("move %+v does not match the decision", m)
			}
			st := v.Running[slices.IndexFunc(v.Running, func(s gpusched.JobStatus) bool { return s.Job.ID == a.Job })]
			if v.Cluster.ServersSpanned(m.To) >= v.Cluster.ServersSpanned(m.From) {
				t.Fatalf("job %s moved from %d to %d servers", a.Job, v.Cluster.ServersSpanned(m.From), v.Cluster.ServersSpanned(m.To))
			}
			if !(m.NewTime < m.OldTime) || st.Iterations*(m.OldTime-m.NewTime) < defaultPayback*DefaultRestoreTime {
				t.Fatalf("job %s moved without paying back: %v iterations, %v -> %v", a.Job, st.Iterations, m.OldTime, m.NewTime)
			}
		}
	}
}

func TestConsolidationProperty(t *testing.T) {
	rapid.Check(t, consolidationHolds(Apply))
}

// fewestIsPack states that the pruning bound is exact: the fewest servers that the free GPUs
// plus a kept job's own can hold the job on is what Pack achieves on that pool.
func fewestIsPack(fewest func(s *state, c *topology.Cluster, gpus []topology.GPUID) int) func(*rapid.T) {
	return func(t *rapid.T) {
		v, d := scene(t)
		if len(d.Run) == 0 {
			return
		}
		c := v.Cluster
		free := c.AllGPUs()
		for _, a := range d.Run {
			for _, g := range a.GPUs {
				free.Remove(g)
			}
		}
		var s state
		s.prepare(c)
		s.count(c, free)
		st := d.Run[rapid.IntRange(0, len(d.Run)-1).Draw(t, "job")] // a kept job: its GPUs are not free
		pool := free.Clone()
		for _, g := range st.GPUs {
			pool.Add(g)
		}
		want, _ := c.Pack(pool, len(st.GPUs))
		if got := fewest(&s, c, st.GPUs); got != c.ServersSpanned(want) {
			t.Fatalf("fewest = %d, Pack places on %d servers (%v)", got, c.ServersSpanned(want), want)
		}
	}
}

func TestFewestMatchesPack(t *testing.T) {
	rapid.Check(t, fewestIsPack((*state).fewest))
}

// TestPropertiesHaveTeeth runs the properties against deliberately wrong variants.
func TestPropertiesHaveTeeth(t *testing.T) {
	// Moves jobs onto any GPU but their own, ignoring the other jobs: double-booking.
	careless := func(v *gpusched.View, d *gpusched.Decision, opt Options) ([]Move, error) {
		var moves []Move
		for i, a := range d.Run {
			pool := v.Cluster.AllGPUs()
			to, ok := v.Cluster.Pack(pool, len(a.GPUs))
			if ok && v.Cluster.ServersSpanned(to) < v.Cluster.ServersSpanned(a.GPUs) {
				moves = append(moves, Move{Job: a.Job, From: a.GPUs, To: to, OldTime: 2, NewTime: 1})
				d.Run[i].GPUs = to
			}
		}
		return moves, nil
	}
	if !teeth.Fails(consolidationHolds(careless)) {
		t.Error("the consolidation property did not catch a variant that double-books GPUs")
	}
	// Ignores the payback rule (a zero restore cost stands for it).
	eager := func(v *gpusched.View, d *gpusched.Decision, opt Options) ([]Move, error) {
		opt.RestoreTime = -1
		return apply(v, d, opt)
	}
	if !teeth.Fails(consolidationHolds(eager)) {
		t.Error("the consolidation property did not catch a variant that ignores the payback rule")
	}
	// Counts only the free GPUs, not the job's own.
	freeOnly := func(s *state, c *topology.Cluster, gpus []topology.GPUID) int {
		need, used := len(gpus), 0
		for _, sv := range s.order {
			if need <= 0 || s.freeOn[sv] == 0 {
				break
			}
			need -= s.freeOn[sv]
			used++
		}
		if need > 0 {
			return c.ServersSpanned(gpus)
		}
		return used
	}
	if !teeth.Fails(fewestIsPack(freeOnly)) {
		t.Error("the pruning property did not catch a bound that ignores the job's own GPUs")
	}
}
