// Command embed shows how a cluster scheduler embeds A-SRPT: it keeps its own state of jobs and
// GPUs, and on every event (a submission, a completion, a requested wake-up) it builds a View,
// asks the scheduler, validates the decision and carries out its diff: evict (checkpoint) the
// preempted jobs, bind the started ones. It reports completions back so that the predictor
// learns. Here the "cluster" is a simulated clock; in a kube-scheduler or Volcano plugin the same
// loop runs in the reconcile function, with pods and nodes instead of the maps below.
package main

import (
	"fmt"
	"math"
	"os"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/topology"
)

// host is the embedding scheduler's own state.
type host struct {
	cluster   *topology.Cluster
	sched     *asrpt.Scheduler
	jobs      map[gpusched.JobID]*gpusched.JobStatus // waiting and running jobs
	order     []gpusched.JobID                       // submission order
	length    map[gpusched.JobID]float64             // true iterations: known to the "cluster" only
	wake      float64
	now       float64
	predicted map[gpusched.JobID]float64 // revised predictions already reported
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(out *os.File) error {
	cluster, err := topology.Uniform(topology.A100(), 2) // 16 GPUs
	if err != nil {
		return err
	}
	h := &host{cluster: cluster, jobs: map[gpusched.JobID]*gpusched.JobStatus{},
		length: map[gpusched.JobID]float64{}, wake: math.Inf(1), predicted: map[gpusched.JobID]float64{}}
	// The host predicts with what it knows: here, the user's own estimate in a job feature.
	est := estimator{}
	if h.sched, err = asrpt.New(asrpt.Options{Estimator: est, MinRunTime: 60}); err != nil {
		return err
	}
	submissions := []struct {
		at           float64
		job          gpusched.Job
		trueIters    float64
		userEstimate float64
	}{
		{0, gpusched.Job{ID: "pretrain", GPUs: 16, StepTime: 1}, 3600, 3600},
		{120, gpusched.Job{ID: "finetune", GPUs: 8, StepTime: 0.5}, 400, 400},
		{130, gpusched.Job{ID: "sweep-1", GPUs: 4, StepTime: 0.2}, 900, 300}, // runs 3x longer than its estimate
		{140, gpusched.Job{ID: "sweep-2", GPUs: 4, StepTime: 0.2}, 600, 600},
	}
	next := 0
	for step := 0; step < 1000; step++ {
		// The next event: a submission, a completion or a wake-up.
		t, kind := math.Inf(1), ""
		if next < len(submissions) {
			t, kind = submissions[next].at, "submit"
		}
		for _, id := range h.order {
			st := h.jobs[id]
			if st != nil && st.GPUs != nil {
				if f := h.now + (h.length[id]-st.Iterations)*st.Job.StepTime; f < t {
					t, kind = f, "finish"
				}
			}
		}
		if h.wake < t {
			t, kind = h.wake, "wake"
		}
		if math.IsInf(t, 1) {
			break
		}
		h.advance(t)
		switch kind {
		case "submit":
			s := submissions[next]
			next++
			j := s.job
			j.Arrival = t
			j.Features.Numeric = map[string]float64{"user_estimate": s.userEstimate}
			h.jobs[j.ID] = &gpusched.JobStatus{Job: &j, Since: t}
			h.order = append(h.order, j.ID)
			h.length[j.ID] = s.trueIters
			fmt.Fprintf(out, "t=%6.0f submit %-8s %2d GPUs\n", t, j.ID, j.GPUs)
		case "finish":
			for _, id := range h.order {
				st := h.jobs[id]
				if st != nil && st.GPUs != nil && st.Iterations >= h.length[id]-1e-9 {
					fmt.Fprintf(out, "t=%6.0f finish %-8s\n", t, id)
					h.sched.JobCompleted(gpusched.Completion{Job: st.Job, Time: t, Iterations: h.length[id]})
					delete(h.jobs, id)
				}
			}
		case "wake":
			h.wake = math.Inf(1)
		}
		if err := h.reconcile(out); err != nil {
			return err
		}
	}
	return nil
}

// advance moves the clock, crediting progress to running jobs.
func (h *host) advance(t float64) {
	dt := t - h.now
	for _, st := range h.jobs {
		if st.GPUs != nil {
			st.Iterations += dt / st.Job.StepTime
			st.Executed += dt
			st.Attained += dt * float64(st.Job.GPUs)
		}
	}
	h.now = t
}

// reconcile is the embedding: view -> Schedule -> Validate -> Diff -> act.
func (h *host) reconcile(out *os.File) error {
	v := gpusched.View{Now: h.now, Cluster: h.cluster}
	for _, id := range h.order {
		if st := h.jobs[id]; st != nil {
			if st.GPUs == nil {
				v.Pending = append(v.Pending, *st)
			} else {
				v.Running = append(v.Running, *st)
			}
		}
	}
	d, err := h.sched.Schedule(v)
	if err != nil {
		return err
	}
	for _, st := range v.Running {
		if n, _, ok := h.sched.Predicted(st.Job.ID); ok && n > st.Job.Features.Numeric["user_estimate"] && h.predicted[st.Job.ID] != n {
			h.predicted[st.Job.ID] = n
			fmt.Fprintf(out, "t=%6.0f revise %-8s ran past its estimate: now predicted %.0f iterations\n", h.now, st.Job.ID, n)
		}
	}
	if err := d.Validate(v); err != nil {
		return fmt.Errorf("refusing decision: %w", err)
	}
	ch := d.Diff(v)
	for _, id := range ch.Preempt { // checkpoint and evict
		st := h.jobs[id]
		st.GPUs, st.Since = nil, h.now
		st.Preemptions++
		fmt.Fprintf(out, "t=%6.0f evict  %-8s (checkpointed at %.0f iterations)\n", h.now, id, st.Iterations)
	}
	for _, a := range append(ch.Start, ch.Migrate...) { // bind workers to GPUs
		st := h.jobs[a.Job]
		st.GPUs, st.Since = a.GPUs, h.now
		if !st.Started {
			st.Started, st.FirstStart = true, h.now
		}
		fmt.Fprintf(out, "t=%6.0f bind   %-8s on %v\n", h.now, a.Job, topology.SetOf(a.GPUs...))
	}
	if d.WakeAt > h.now {
		h.wake = d.WakeAt
	}
	return nil
}

// estimator predicts from the user's estimate; when a job outlives it, it guesses the job needs
// half as much again as it has done.
type estimator struct{}

func (estimator) Estimate(j *gpusched.Job, done float64) (float64, error) {
	n := j.Features.Numeric["user_estimate"]
	if done >= n {
		return 1.5 * done, nil
	}
	return n, nil
}
