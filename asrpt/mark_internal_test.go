package asrpt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// checkMarks compares the marking walk's lists, built from the previous call's lists, with the
// lists built from scratch from view v: entry i of list w describes entry i of v's
// Pending (w = 0) or Running (w = 1) list with its job's id, description, state and key.
func checkMarks(s *Scheduler, v *gpusched.View) error {
	for w, list := range [2][]gpusched.JobStatus{v.Pending, v.Running} {
		got := s.last[w]
		if len(got) != len(list) {
			return fmt.Errorf("list %d: %d entries, the view has %d", w, len(got), len(list))
		}
		for i := range list {
			js := &list[i]
			want := viewEntry{id: js.Job.ID, job: js.Job, key: -1, done: js.Iterations}
			if st := s.jobs[js.Job.ID]; st != nil {
				want.st, want.key, want.gen = st, int32(st.key), s.marks[st.key].gen
			} else {
				want.done = 0
			}
			if got[i] != want {
				return fmt.Errorf("list %d, entry %d (job %q): %+v, from scratch %+v", w, i, js.Job.ID, got[i], want)
			}
			if want.st == nil {
				continue
			}
			if m := s.marks[want.key]; m.seen != s.epoch || m.running != (w == 1) || int(m.idx) != i {
				return fmt.Errorf("list %d, entry %d (job %q): mark %+v", w, i, js.Job.ID, m)
			}
		}
	}
	return nil
}

// TestPropertyMarks: over views that change at random between calls (jobs that
// arrive anywhere in the waiting list, leave, are cancelled, start and stop as the decisions
// say, swap places, are described anew), the marking walk's lists and marks are those built
// from scratch after every call (checkMarks), for several seeds, with the remaining-work and
// the patient conversion. A list that misses an update, a job's progress kept from the previous
// call (brokenMark), is caught.
func TestPropertyMarks(t *testing.T) {
	run := func(seed uint64, patient, broken bool) error {
		c, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		truth := map[gpusched.JobID]float64{}
		next := 0
		newJob := func(at float64) *gpusched.Job {
			j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", next)), GPUs: []int{1, 1, 2, 4, 8, 64}[rng.IntN(6)], StepTime: 0.1 + rng.Float64(), Arrival: at}
			next++
			truth[j.ID] = float64(10 + rng.IntN(2000))
			return j
		}
		s, err := New(Options{Patient: patient, Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })})
		if err != nil {
			return err
		}
		s.brokenMark = broken
		v := gpusched.View{Cluster: c}
		for range 40 {
			v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob(0)})
		}
		for step := range 300 {
			d, err := s.Schedule(v)
			if err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			if err := checkMarks(s, &v); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			// Apply the decision, then change the view at random.
			d = d.Expand(v)
			place := map[gpusched.JobID][]topology.GPUID{}
			for _, a := range d.Run {
				place[a.Job] = a.GPUs
			}
			v.Now += 1 + rng.Float64()*50
			var run, pend []gpusched.JobStatus
			for _, st := range v.Running {
				if g, ok := place[st.Job.ID]; ok {
					st.GPUs = g
					st.Iterations += rng.Float64() * 20
					run = append(run, st)
				} else {
					st.GPUs, st.Since = nil, v.Now
					pend = append(pend, st)
				}
			}
			for _, st := range v.Pending {
				if g, ok := place[st.Job.ID]; ok {
					st.GPUs, st.Since, st.Started = g, v.Now, true
					run = append(run, st)
				} else {
					pend = append(pend, st)
				}
			}
			// Stopped jobs go back among the waiting ones anywhere; running jobs are listed in
			// any order now and then.
			rng.Shuffle(len(pend), func(i, j int) {
				if rng.IntN(8) == 0 {
					pend[i], pend[j] = pend[j], pend[i]
				}
			})
			if rng.IntN(4) == 0 {
				rng.Shuffle(len(run), func(i, j int) { run[i], run[j] = run[j], run[i] })
			}
			// Some running jobs complete, some jobs are cancelled.
			for i := 0; i < len(run); i++ {
				if rng.IntN(6) == 0 {
					s.JobCompleted(gpusched.Completion{Job: run[i].Job, Time: v.Now, Iterations: run[i].Iterations})
					run = slices.Delete(run, i, i+1)
					i--
				}
			}
			for i := 0; i < len(pend); i++ {
				if rng.IntN(30) == 0 {
					pend = slices.Delete(pend, i, i+1)
					i--
				}
			}
			// Arrivals, anywhere in the waiting list; some jobs described anew.
			for range rng.IntN(6) {
				at := rng.IntN(len(pend) + 1)
				pend = slices.Insert(pend, at, gpusched.JobStatus{Job: newJob(v.Now), Since: v.Now})
			}
			for i := range pend {
				if rng.IntN(40) == 0 {
					j := *pend[i].Job
					pend[i].Job = &j
				}
			}
			v.Running, v.Pending = run, pend
		}
		return nil
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		for _, patient := range []bool{false, true} {
			if err := run(seed, patient, false); err != nil {
				t.Fatalf("seed %d, patient %v: %v", seed, patient, err)
			}
		}
	}
	caught := false
	for _, seed := range []uint64{1, 2, 3} {
		if run(seed, false, true) != nil {
			caught = true
			break
		}
	}
	if !caught {
		t.Errorf("brokenMark was not caught")
	}
}

// TestMarkKeyReuse: a job that completed (its key freed at once, the virtual machine having
// finished it) and is listed again after a new job took its key is not taken for the state the
// key now holds: the marking walk checks the key's gen. A walk that misses the gen's update
// (brokenGen) takes the new job's key for the old job's and fails on a job listed twice.
func TestMarkKeyReuse(t *testing.T) {
	for _, broken := range []bool{false, true} {
		c, err := topology.Uniform(topology.A100(), 1)
		if err != nil {
			t.Fatal(err)
		}
		truth := map[gpusched.JobID]float64{"a": 10, "b": 10}
		s, err := New(Options{Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })})
		if err != nil {
			t.Fatal(err)
		}
		s.brokenGen = broken
		a := &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}
		b := &gpusched.Job{ID: "b", GPUs: 1, StepTime: 1, Arrival: 101}
		v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}
		if _, err := s.Schedule(v); err != nil {
			t.Fatal(err)
		}
		v.Now = 100
		if _, err := s.Schedule(v); err != nil {
			t.Fatal(err)
		}
		if st := s.jobs["a"]; st == nil || !st.vdone {
			t.Fatalf("job a not finished by the virtual machine at t=100")
		}
		s.JobCompleted(gpusched.Completion{Job: a, Time: 100, Iterations: 10})
		v.Now = 101
		v.Pending = []gpusched.JobStatus{{Job: b}, {Job: a}}
		_, err = s.Schedule(v)
		if broken {
			t.Logf("brokenGen: %v", err)
			if err == nil {
				t.Error("brokenGen was not caught")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMarks(s, &v); err != nil {
			t.Fatal(err)
		}
		if sa, sb := s.jobs["a"], s.jobs["b"]; sa == nil || sb == nil || sa.key == sb.key {
			t.Fatalf("jobs a and b: states %p and %p", sa, sb)
		}
	}
}
