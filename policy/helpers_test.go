package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// cluster builds a cluster of A100-like servers with the given GPU counts.
func cluster(t tb, gpus ...int) *topology.Cluster {
	t.Helper()
	servers := make([]topology.Server, len(gpus))
	for i, n := range gpus {
		spec := topology.A100()
		spec.GPUs = n
		spec.NICs = min(n, spec.NICs)
		servers[i] = topology.Server{ID: fmt.Sprintf("s%d", i), ServerSpec: spec}
	}
	c, err := topology.New("test", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func job(id string, gpus int, arrival, step float64) *gpusched.Job {
	return &gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, Arrival: arrival, StepTime: step}
}

// waiting is a job that has never run.
func waiting(j *gpusched.Job) gpusched.JobStatus {
	return gpusched.JobStatus{Job: j, Since: j.Arrival}
}

// running is a job that has run continuously since `since` on gpus.
func running(j *gpusched.Job, now, since float64, gpus ...topology.GPUID) gpusched.JobStatus {
	exec := now - since
	return gpusched.JobStatus{Job: j, GPUs: gpus, Iterations: exec / j.StepTime, Executed: exec,
		Attained: exec * float64(j.GPUs), Started: true, FirstStart: since, Since: since}
}

func gpuRange(first, n int) []topology.GPUID {
	out := make([]topology.GPUID, n)
	for i := range out {
		out[i] = topology.GPUID(first + i)
	}
	return out
}

// decide calls the scheduler and checks the decision against the view.
func decide(t testing.TB, s gpusched.Scheduler, v gpusched.View) gpusched.Decision {
	t.Helper()
	if err := v.Validate(); err != nil {
		t.Fatalf("test bug: %v", err)
	}
	d, err := s.Schedule(v)
	if err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	if err := d.Validate(v); err != nil {
		t.Fatalf("%v: invalid decision: %v", s, err)
	}
	return d
}

// runs returns the ids the decision runs, sorted.
func runs(d gpusched.Decision) []string {
	out := make([]string, len(d.Run))
	for i, a := range d.Run {
		out[i] = string(a.Job)
	}
	slices.Sort(out)
	return out
}

func placement(d gpusched.Decision, id string) []topology.GPUID {
	for _, a := range d.Run {
		if string(a.Job) == id {
			return a.GPUs
		}
	}
	return nil
}

// hostJob is a job of the mini host: the job and its true iterations.
type hostJob struct {
	job   gpusched.Job
	iters float64
}

// hostStats is what the mini host observed.
type hostStats struct {
	calls, preemptions, migrations int
	finish                         map[gpusched.JobID]float64
	// minRun is the shortest time a job ran before it was preempted.
	minRun float64
}

var (
	errHostInvalid = errors.New("host: invalid decision")
	errHostStall   = errors.New("host: stalled")
	errHostLimit   = errors.New("host: too many calls")
)

// runHost is a small event loop over StepTime-only jobs: arrivals, completions and requested
// wake-ups. It builds the View, validates every decision (so no GPU is double-booked), applies
// its Diff, and advances every running job at 1/StepTime iterations per second (no restore
// cost). It fails if the scheduler errs, returns an invalid decision, leaves jobs waiting with
// nothing to come, or needs more than maxCalls calls.
func runHost(c *topology.Cluster, jobs []hostJob, s gpusched.Scheduler, maxCalls int) (hostStats, error) {
	st := hostStats{finish: map[gpusched.JobID]float64{}, minRun: math.Inf(1)}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b hostJob) int {
		if a.job.Arrival < b.job.Arrival {
			return -1
		} else if a.job.Arrival > b.job.Arrival {
			return 1
		}
		return 0
	})
	type live struct {
		hostJob
		status gpusched.JobStatus
	}
	var active []*live
	next, now, wake := 0, 0.0, 0.0
	if len(order) > 0 {
		now = order[0].job.Arrival
	}
	for len(st.finish) < len(order) {
		for next < len(order) && order[next].job.Arrival <= now {
			j := order[next].job
			active = append(active, &live{hostJob: order[next], status: gpusched.JobStatus{Job: &j, Since: j.Arrival}})
			next++
		}
		v := gpusched.View{Now: now, Cluster: c}
		for _, l := range active {
			if l.status.GPUs == nil {
				v.Pending = append(v.Pending, l.status)
			} else {
				v.Running = append(v.Running, l.status)
			}
		}
		if st.calls++; st.calls > maxCalls {
			return st, fmt.Errorf("%w: %d at t=%v", errHostLimit, st.calls, now)
		}
		d, err := s.Schedule(v)
		if err != nil {
			return st, fmt.Errorf("host: %v at t=%v: %w", s, now, err)
		}
		if err := d.Validate(v); err != nil {
			return st, fmt.Errorf("%w: %v at t=%v: %w", errHostInvalid, s, now, err)
		}
		ch := d.Diff(v)
		st.preemptions += len(ch.Preempt)
		st.migrations += len(ch.Migrate)
		byID := map[gpusched.JobID]*live{}
		for _, l := range active {
			byID[l.status.Job.ID] = l
		}
		for _, id := range ch.Preempt {
			l := byID[id]
			st.minRun = min(st.minRun, now-l.status.Since)
			l.status.GPUs, l.status.Since = nil, now
			l.status.Preemptions++
		}
		for _, a := range append(ch.Start, ch.Migrate...) {
			l := byID[a.Job]
			l.status.GPUs = slices.Clone(a.GPUs)
			l.status.Since = now
			if !l.status.Started {
				l.status.Started, l.status.FirstStart = true, now
			}
		}
		if d.WakeAt > now {
			wake = d.WakeAt
		} else {
			wake = 0
		}
		// Next event.
		t := math.Inf(1)
		if next < len(order) {
			t = order[next].job.Arrival
		}
		for _, l := range active {
			if l.status.GPUs != nil {
				t = min(t, now+(l.iters-l.status.Iterations)*l.job.StepTime)
			}
		}
		if wake > 0 {
			t = min(t, wake)
		}
		if math.IsInf(t, 1) {
			return st, fmt.Errorf("%w: %v at t=%v with %d jobs left", errHostStall, s, now, len(order)-len(st.finish))
		}
		dt := max(t-now, 0)
		kept := active[:0]
		for _, l := range active {
			if l.status.GPUs != nil {
				l.status.Iterations += dt / l.job.StepTime
				l.status.Executed += dt
				l.status.Attained += dt * float64(l.job.GPUs)
				if l.status.Iterations >= l.iters*(1-1e-12)-1e-9 {
					st.finish[l.status.Job.ID] = t
					if o, ok := s.(gpusched.CompletionObserver); ok {
						o.JobCompleted(gpusched.Completion{Job: l.status.Job, Time: t, Iterations: l.iters, StepTime: l.job.StepTime})
					}
					continue
				}
			}
			kept = append(kept, l)
		}
		active = kept
		now = t
	}
	return st, nil
}
