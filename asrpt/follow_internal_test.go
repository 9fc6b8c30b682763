package asrpt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// followState is what a scheduler keeps of the jobs between calls, in a form that two
// schedulers fed the same views can compare: every present job's key and whether it is marked
// running, and the waiting, live and virtually finished jobs in their orders.
func followState(s *Scheduler, v *gpusched.View) string {
	out := ""
	for _, list := range [][]gpusched.JobStatus{v.Running, v.Pending} {
		for i := range list {
			id := list[i].Job.ID
			st := s.jobs[id]
			if st == nil {
				_, rej := s.rejected[id]
				out += fmt.Sprintf("%s:rejected=%v ", id, rej)
				continue
			}
			m := s.marks[st.key]
			var at any = m.idx // a running job's position in Running
			if !m.running {
				at = s.waitDone[st.key] // a waiting job's progress
			}
			out += fmt.Sprintf("%s:%d,%v,%v,%v,%v ", id, st.key, m.running, at, st.gone, st.unfit)
		}
	}
	out += fmt.Sprintf("| jobs %d |", len(s.jobs))
	for _, l := range [][]*jobState{s.wait, s.live, s.vdone} {
		for _, st := range l {
			if !st.gone {
				out += fmt.Sprintf(" %d/%v/%v", st.key, st.wr, st.wdone)
			}
		}
		out += " |"
	}
	return out
}

// TestPropertyFollowDelta: a scheduler that follows the views' deltas (gpusched.ViewDelta:
// arrivals, departures, starts and stops; Pending walked only when a delta is missing, out of
// sequence or a job is rejected) keeps the same state (followState) and makes the same
// decisions as one that walks every view whole (the same views without their deltas), over
// views changed at random between calls: arrivals anywhere in the waiting list, departures,
// cancellations, starts and stops as decided, jobs the host interrupts, jobs too large for the cluster (rejected),
// deltas dropped or out of sequence now and then; six seeds, both conversions. A scheduler
// that misses an update (brokenDelta: the jobs that stopped) is caught.
func TestPropertyFollowDelta(t *testing.T) {
	run := func(seed uint64, patient, broken bool) error {
		c, err := topology.Uniform(topology.A100(), 4)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		truth := map[gpusched.JobID]float64{}
		next := 0
		newJob := func(at float64) *gpusched.Job {
			j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", next)), GPUs: []int{1, 1, 2, 4, 8, 8, 64}[rng.IntN(7)], StepTime: 0.1 + rng.Float64(), Arrival: at}
			next++
			truth[j.ID] = float64(10 + rng.IntN(2000))
			return j
		}
		var sch [2]*Scheduler // 0 follows the deltas, 1 walks every view
		for k := range sch {
			if sch[k], err = New(Options{Patient: patient, Estimator: Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok })}); err != nil {
				return err
			}
		}
		sch[0].brokenDelta = broken
		source := new(int)
		seq := uint64(0)
		v := gpusched.View{Cluster: c, AcceptsKeepOthers: true}
		for range 40 {
			v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob(0)})
		}
		prevRun := map[gpusched.JobID]bool{} // the last view's jobs: running or not
		var delta *gpusched.ViewDelta
		stopped := 0
		for step := range 300 {
			seq++
			v.Delta = delta
			var ds [2]gpusched.Decision
			for k := range sch {
				w := v
				if k == 1 {
					w.Delta = nil
				}
				d, err := sch[k].Schedule(w)
				if err != nil {
					return fmt.Errorf("step %d, scheduler %d: %w", step, k, err)
				}
				ds[k] = d.Expand(w)
			}
			if a, b := followState(sch[0], &v), followState(sch[1], &v); a != b {
				return fmt.Errorf("step %d: the state following deltas\n%s\ndiffers from the walk's\n%s", step, a, b)
			}
			if fmt.Sprint(ds[0]) != fmt.Sprint(ds[1]) {
				return fmt.Errorf("step %d: decision %v following deltas, %v walking", step, ds[0], ds[1])
			}
			// Apply the decision, then change the view at random.
			place := map[gpusched.JobID][]topology.GPUID{}
			for _, a := range ds[1].Run {
				place[a.Job] = a.GPUs
			}
			// The host sets rejected jobs aside.
			rejected := map[gpusched.JobID]bool{}
			for _, e := range ds[1].Rejected {
				rejected[e.Job] = true
			}
			v.Pending = slices.DeleteFunc(v.Pending, func(js gpusched.JobStatus) bool { return rejected[js.Job.ID] })
			v.Now += 1 + rng.Float64()*50
			var run, pend []gpusched.JobStatus
			for _, st := range v.Running {
				// The host interrupts a running job now and then (a failure).
				if g, ok := place[st.Job.ID]; ok && rng.IntN(12) > 0 {
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
			rng.Shuffle(len(pend), func(i, j int) {
				if rng.IntN(8) == 0 {
					pend[i], pend[j] = pend[j], pend[i]
				}
			})
			if rng.IntN(4) == 0 {
				rng.Shuffle(len(run), func(i, j int) { run[i], run[j] = run[j], run[i] })
			}
			for i := 0; i < len(run); i++ {
				if rng.IntN(6) == 0 {
					for _, s := range sch {
						s.JobCompleted(gpusched.Completion{Job: run[i].Job, Time: v.Now, Iterations: run[i].Iterations})
					}
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
			for range rng.IntN(6) {
				at := rng.IntN(len(pend) + 1)
				pend = slices.Insert(pend, at, gpusched.JobStatus{Job: newJob(v.Now), Since: v.Now})
			}
			v.Running, v.Pending = run, pend
			stops := 0
			// The delta of the new view against the last one, as a host keeps it.
			delta = &gpusched.ViewDelta{Source: source, Seq: seq + 1, Transitions: true}
			now := map[gpusched.JobID]bool{}
			for k, list := range [][]gpusched.JobStatus{v.Running, v.Pending} {
				for i := range list {
					js := &list[i]
					now[js.Job.ID] = k == 0
					was, ok := prevRun[js.Job.ID]
					switch {
					case !ok:
						delta.Arrived = append(delta.Arrived, js)
					case k == 0 && !was:
						delta.Started = append(delta.Started, js)
					case k == 1 && was:
						delta.Stopped = append(delta.Stopped, js)
						stops++
					}
				}
			}
			for id := range prevRun {
				if _, ok := now[id]; !ok {
					delta.Left = append(delta.Left, id)
				}
			}
			slices.Sort(delta.Left)
			rng.Shuffle(len(delta.Arrived), func(i, j int) { delta.Arrived[i], delta.Arrived[j] = delta.Arrived[j], delta.Arrived[i] })
			prevRun = now
			stopped += stops
			switch rng.IntN(20) {
			case 0:
				delta = nil // a host that does not know
			case 1:
				delta.Seq++ // a view missed
			}
		}
		if follows := sch[0].followed; follows < 100 || stopped < 50 {
			return fmt.Errorf("test bug: only %d of 300 calls followed a delta, %d jobs stopped", follows, stopped)
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
		if err := run(seed, false, true); err != nil {
			t.Logf("brokenDelta, seed %d: %v", seed, err)
			caught = true
			break
		}
	}
	if !caught {
		t.Errorf("brokenDelta was not caught")
	}
}
