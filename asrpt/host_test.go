package asrpt

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// tJob is a job of a test workload with its true iteration count.
type tJob struct {
	job   gpusched.Job
	iters float64
}

// runHost is a minimal exact host for placement-independent jobs (Job.StepTime), with free and
// immediate preemption: the model of the competitive analysis. It calls the scheduler at every
// arrival, completion and requested wake-up, validates every decision, and returns each job's
// completion time. It fails if a job can never run (nothing running, nothing arriving, no
// wake-up, jobs waiting).
func runHost(c *topology.Cluster, jobs []tJob, s gpusched.Scheduler) (map[gpusched.JobID]float64, error) {
	type state struct {
		st    gpusched.JobStatus
		iters float64
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b tJob) int {
		if a.job.Arrival != b.job.Arrival {
			if a.job.Arrival < b.job.Arrival {
				return -1
			}
			return 1
		}
		return 0
	})
	var pending, running []*state
	done := map[gpusched.JobID]float64{}
	now, next, wake := 0.0, 0, math.Inf(1)
	for events := 0; len(done) < len(jobs); events++ {
		if events > 100000 {
			return done, fmt.Errorf("too many events")
		}
		// Next event: an arrival, a completion or a wake-up.
		t := wake
		if next < len(order) {
			t = math.Min(t, order[next].job.Arrival)
		}
		for _, r := range running {
			t = math.Min(t, now+(r.iters-r.st.Iterations)*r.st.Job.StepTime)
		}
		if math.IsInf(t, 1) {
			return done, fmt.Errorf("deadlock at %v: %d jobs wait and nothing will happen", now, len(pending))
		}
		dt := t - now
		var finished []*state
		keep := running[:0]
		for _, r := range running {
			finish := now + (r.iters-r.st.Iterations)*r.st.Job.StepTime
			r.st.Executed += dt
			r.st.Attained += dt * float64(r.st.Job.GPUs)
			r.st.Iterations += dt / r.st.Job.StepTime
			if finish <= t+1e-9*math.Max(1, t) {
				r.st.Iterations = r.iters
				done[r.st.Job.ID] = finish
				finished = append(finished, r)
				continue
			}
			keep = append(keep, r)
		}
		running = keep
		now = t
		if wake <= now {
			wake = math.Inf(1)
		}
		for next < len(order) && order[next].job.Arrival <= now {
			j := &order[next].job
			pending = append(pending, &state{st: gpusched.JobStatus{Job: j, Since: j.Arrival}, iters: order[next].iters})
			next++
		}
		if obs, ok := s.(gpusched.CompletionObserver); ok {
			for _, f := range finished {
				obs.JobCompleted(gpusched.Completion{Job: f.st.Job, Time: done[f.st.Job.ID], Iterations: f.iters, StepTime: f.st.Job.StepTime})
			}
		}
		v := gpusched.View{Now: now, Cluster: c}
		for _, p := range pending {
			v.Pending = append(v.Pending, p.st)
		}
		for _, r := range running {
			v.Running = append(v.Running, r.st)
		}
		if err := v.Validate(); err != nil {
			return done, fmt.Errorf("host bug: %w", err)
		}
		d, err := s.Schedule(v)
		if err != nil {
			return done, fmt.Errorf("t=%v: %w", now, err)
		}
		if err := d.Validate(v); err != nil {
			return done, fmt.Errorf("t=%v: invalid decision: %w", now, err)
		}
		if d.WakeAt > now {
			wake = math.Min(wake, d.WakeAt)
		}
		place := map[gpusched.JobID][]topology.GPUID{}
		for _, a := range d.Run {
			place[a.Job] = a.GPUs
		}
		var nextRunning, nextPending []*state
		for _, r := range running {
			if g, ok := place[r.st.Job.ID]; ok {
				if !slices.Equal(g, r.st.GPUs) {
					r.st.Since = now
				}
				r.st.GPUs = g
				nextRunning = append(nextRunning, r)
			} else {
				r.st.GPUs, r.st.Since = nil, now
				r.st.Preemptions++
				nextPending = append(nextPending, r)
			}
		}
		for _, p := range pending {
			if g, ok := place[p.st.Job.ID]; ok {
				p.st.GPUs, p.st.Since = g, now
				if !p.st.Started {
					p.st.Started, p.st.FirstStart = true, now
				}
				nextRunning = append(nextRunning, p)
			} else {
				nextPending = append(nextPending, p)
			}
		}
		// Keep the pending list in arrival order.
		slices.SortStableFunc(nextPending, func(a, b *state) int {
			if a.st.Job.Arrival < b.st.Job.Arrival {
				return -1
			}
			if a.st.Job.Arrival > b.st.Job.Arrival {
				return 1
			}
			return 0
		})
		running, pending = nextRunning, nextPending
	}
	return done, nil
}
