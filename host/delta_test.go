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

// mirror keeps the set of jobs in the view from the views' deltas alone and checks it against
// each whole view: the delta must account for every job that came and went.
type mirror struct {
	inner  gpusched.Scheduler
	source any
	seq    uint64
	jobs   map[gpusched.JobID]bool
	err    error
}

func (m *mirror) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d := v.Delta
	switch {
	case d == nil:
		m.err = fmt.Errorf("no delta")
	case d.Source != m.source && m.source != nil, d.Seq != m.seq+1:
		m.err = fmt.Errorf("delta %v from %p after %d from %p", d.Seq, d.Source, m.seq, m.source)
	}
	if m.err != nil {
		return gpusched.Decision{}, m.err
	}
	m.source, m.seq = d.Source, d.Seq
	for _, id := range d.Left {
		if !m.jobs[id] {
			m.err = fmt.Errorf("call %d: job %q left but was not in the view", d.Seq, id)
		}
		delete(m.jobs, id)
	}
	for _, st := range d.Arrived {
		inView := false
		for _, l := range [][]gpusched.JobStatus{v.Pending, v.Running} {
			for i := range l {
				inView = inView || &l[i] == st
			}
		}
		if !inView || m.jobs[st.Job.ID] {
			m.err = fmt.Errorf("call %d: arrived job %q is not a status of the view, or was there already", d.Seq, st.Job.ID)
		}
		m.jobs[st.Job.ID] = true
	}
	n := 0
	for _, l := range [][]gpusched.JobStatus{v.Pending, v.Running} {
		for i := range l {
			n++
			if !m.jobs[l[i].Job.ID] {
				m.err = fmt.Errorf("call %d: job %q in the view, not in the mirror", d.Seq, l[i].Job.ID)
			}
		}
	}
	if n != len(m.jobs) && m.err == nil {
		m.err = fmt.Errorf("call %d: the mirror holds %d jobs, the view %d", d.Seq, len(m.jobs), n)
	}
	if d.ArrivalOrder && !slices.IsSortedFunc(v.Pending, func(a, b gpusched.JobStatus) int {
		return int(a.Job.Arrival - b.Job.Arrival)
	}) {
		m.err = fmt.Errorf("call %d: ArrivalOrder but the queue is not in arrival order", d.Seq)
	}
	if m.err != nil {
		return gpusched.Decision{}, m.err
	}
	return m.inner.Schedule(v)
}

// deltaProperty: under random submissions (sometimes out of arrival order), finishes,
// cancellations, random decisions with rejections (removed or parked) and cluster changes
// (parked jobs come back), the set of jobs kept from the deltas equals every view's.
func deltaProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		m := &mirror{inner: &chaos{rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}, jobs: map[gpusched.JobID]bool{}}
		policy := host.RejectPolicy(rapid.IntRange(0, 1).Draw(t, "policy"))
		rt, err := host.New(host.Options{Cluster: c, Scheduler: m, Rejected: policy})
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
				j := job(fmt.Sprintf("j%d", n), rapid.IntRange(1, 4).Draw(t, "gpus"))
				j.Arrival = now - float64(rapid.IntRange(0, 1).Draw(t, "late"))
				n++
				if _, err := rt.Submit(j, 0); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range slices.Clone(append(slices.Clone(rt.Pending()), rt.Running()...)) {
				switch x := rapid.IntRange(0, 9).Draw(t, "fate"); x {
				case 0:
					if err := rt.Finish(e.ID(), now, 0, false); err != nil {
						t.Fatal(err)
					}
				case 1:
					if err := rt.Cancel(e.ID(), now); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rapid.IntRange(0, 4).Draw(t, "resize") == 0 {
				nc, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := rt.SetCluster(nc, now); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := rt.Schedule(now); err != nil {
				t.Fatalf("t=%v: %v", now, err)
			}
		}
	}
}

func TestPropertyDelta(t *testing.T) {
	rapid.Check(t, deltaProperty(""))
}

// TestDeltaCatchesForgottenLeaves: a runtime whose delta omits jobs that left while waiting
// is caught.
func TestDeltaCatchesForgottenLeaves(t *testing.T) {
	if !teeth.Fails(deltaProperty("delta")) {
		t.Fatal("the delta property does not catch a delta that forgets jobs that left")
	}
}
