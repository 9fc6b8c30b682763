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
	jobs   map[gpusched.JobID]bool // in the view: running?
	// done is each waiting job's progress as the views' deltas leave it: a waiting job's
	// progress must not change under a delta that says Transitions. reported says that the
	// test moved a waiting job's progress (host.Runtime.Report) since the last call: only then
	// may a delta say Transitions false.
	done     map[gpusched.JobID]float64
	reported bool
	err      error
}

// statusIn reports whether st is an element of l.
func statusIn(st *gpusched.JobStatus, l []gpusched.JobStatus) bool {
	for i := range l {
		if &l[i] == st {
			return true
		}
	}
	return false
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
	if !d.Transitions && !m.reported {
		m.err = fmt.Errorf("call %d: the runtime's delta does not say Transitions", d.Seq)
	}
	if !d.Transitions {
		// Started and Stopped say nothing: take who runs from the view, as a scheduler does.
		for i := range v.Pending {
			if _, ok := m.jobs[v.Pending[i].Job.ID]; ok {
				m.jobs[v.Pending[i].Job.ID] = false
			}
		}
		for i := range v.Running {
			if _, ok := m.jobs[v.Running[i].Job.ID]; ok {
				m.jobs[v.Running[i].Job.ID] = true
			}
		}
	}
	m.reported = false
	for _, id := range d.Left {
		if _, ok := m.jobs[id]; !ok {
			m.err = fmt.Errorf("call %d: job %q left but was not in the view", d.Seq, id)
		}
		delete(m.jobs, id)
	}
	for _, st := range d.Arrived {
		inView := statusIn(st, v.Pending) || statusIn(st, v.Running)
		if _, was := m.jobs[st.Job.ID]; !inView || was {
			m.err = fmt.Errorf("call %d: arrived job %q is not a status of the view, or was there already", d.Seq, st.Job.ID)
		}
		m.jobs[st.Job.ID] = st.GPUs != nil
	}
	for _, st := range d.Started {
		if run, was := m.jobs[st.Job.ID]; !statusIn(st, v.Running) || !was || run {
			m.err = fmt.Errorf("call %d: started job %q is not running in the view, or did not wait in the last", d.Seq, st.Job.ID)
		}
		m.jobs[st.Job.ID] = true
	}
	for _, st := range d.Stopped {
		if run, was := m.jobs[st.Job.ID]; !statusIn(st, v.Pending) || !was || !run {
			m.err = fmt.Errorf("call %d: stopped job %q is not waiting in the view, or did not run in the last", d.Seq, st.Job.ID)
		}
		m.jobs[st.Job.ID] = false
	}
	n := 0
	for k, l := range [][]gpusched.JobStatus{v.Pending, v.Running} {
		for i := range l {
			n++
			if run, ok := m.jobs[l[i].Job.ID]; !ok || run != (k == 1) {
				m.err = fmt.Errorf("call %d: job %q in the view (running: %v), not so in the mirror", d.Seq, l[i].Job.ID, k == 1)
			}
		}
	}
	fresh := map[gpusched.JobID]bool{}
	for _, l := range [][]*gpusched.JobStatus{d.Arrived, d.Stopped} {
		for _, st := range l {
			fresh[st.Job.ID] = true
		}
	}
	for i := range v.Pending {
		st := &v.Pending[i]
		if was, ok := m.done[st.Job.ID]; ok && d.Transitions && !fresh[st.Job.ID] && was != st.Iterations && m.err == nil {
			m.err = fmt.Errorf("call %d: waiting job %q moved from %v to %v iterations under a delta that says Transitions", d.Seq, st.Job.ID, was, st.Iterations)
		}
	}
	clear(m.done)
	for i := range v.Pending {
		m.done[v.Pending[i].Job.ID] = v.Pending[i].Iterations
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
// cancellations, interruptions, random decisions with rejections (removed or parked) and
// cluster changes (parked jobs come back), the set of jobs kept from the deltas, and which of
// them run, equal every view's.
func deltaProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
		if err != nil {
			t.Fatal(err)
		}
		m := &mirror{inner: &chaos{rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}, jobs: map[gpusched.JobID]bool{}, done: map[gpusched.JobID]float64{}}
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
				case 2:
					if e.Running() {
						if err := rt.Interrupt(e.ID(), now); err != nil {
							t.Fatal(err)
						}
					}
				case 3:
					// a late progress report (or a restore from an older checkpoint) of a
					// waiting job: no list of the delta carries it
					if !e.Running() {
						if err := rt.Report(e.ID(), now, float64(rapid.IntRange(0, 50).Draw(t, "progress"))); err != nil {
							t.Fatal(err)
						}
						m.reported = true
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

// TestDeltaCatchesForgottenStops: a runtime whose delta omits jobs that stopped running is
// caught.
func TestDeltaCatchesForgottenStops(t *testing.T) {
	if !teeth.Fails(deltaProperty("transitions")) {
		t.Fatal("the delta property does not catch a delta that forgets jobs that stopped")
	}
}

// TestDeltaCatchesWaitingProgress: a runtime whose delta says Transitions after a report moved
// a waiting job's progress (which no list of the delta carries) is caught.
func TestDeltaCatchesWaitingProgress(t *testing.T) {
	if !teeth.Fails(deltaProperty("waitmoved")) {
		t.Fatal("the delta property does not catch a delta that hides a waiting job's new progress")
	}
}

// TestDeltaCatchesForgottenLeaves: a runtime whose delta omits jobs that left while waiting
// is caught.
func TestDeltaCatchesForgottenLeaves(t *testing.T) {
	if !teeth.Fails(deltaProperty("delta")) {
		t.Fatal("the delta property does not catch a delta that forgets jobs that left")
	}
}
