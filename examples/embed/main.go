// Command embed is the host to copy: it embeds A-SRPT in a cluster scheduler with package
// host's Runtime, the bookkeeping every host needs (job statuses, the view, validation, a safe
// order of actions). Here the "cluster" is simulated (a clock and each job's true length); in
// a kube-scheduler or Volcano plugin the same loop runs in the reconcile function, with pods
// and nodes, binds and evictions.
//
// It shows, in one run on two 8-GPU servers:
//   - the host loop: submit, Schedule, carry out the actions (every stop before every start),
//     report completions;
//   - bad jobs reported while the rest run: one refused when submitted (no cost), one rejected
//     by A-SRPT (larger than the cluster);
//   - a server drained for maintenance (its jobs move off it) and returned;
//   - a restart of the host: A-SRPT's state saved (asrpt.Scheduler.SaveState), a new
//     scheduler and runtime built, the state restored (RestoreState) and every job resumed
//     where it was (host.Runtime.Resume). Every later decision is the one the uninterrupted
//     host makes; without the saved state, the new scheduler would take the long job that is
//     nearly done for a new one and preempt it (the test checks both).
package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

func main() {
	if err := run(os.Stdout, restart); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// submission is a job a user submits, with what only the cluster knows: its true length.
type submission struct {
	at           float64
	job          gpusched.Job
	trueIters    float64
	userEstimate float64
}

var submissions = []submission{
	{0, gpusched.Job{ID: "pretrain", GPUs: 16, StepTime: 1}, 3600, 3600},
	{120, gpusched.Job{ID: "finetune", GPUs: 8, StepTime: 0.5}, 400, 400},
	{130, gpusched.Job{ID: "sweep-1", GPUs: 4, StepTime: 0.2}, 900, 300}, // runs 3x longer than its estimate
	{140, gpusched.Job{ID: "sweep-2", GPUs: 4, StepTime: 0.2}, 600, 600},
	{150, gpusched.Job{ID: "typo", GPUs: 2}, 100, 100},                  // no model, no step time
	{160, gpusched.Job{ID: "too-big", GPUs: 32, StepTime: 1}, 100, 100}, // larger than the cluster
	{3100, gpusched.Job{ID: "eval", GPUs: 16, StepTime: 1}, 2000, 2000}, // shorter than pretrain, longer than what it has left
}

// Operator actions: drain server a100-1 at t=200 for maintenance and return it at t=600; the
// host itself restarts at t=3000, while pretrain runs with about a quarter of its work left.
const (
	drainAt   = 200
	returnAt  = 600
	restartAt = 3000
)

// mode says whether the host restarts, and whether it restores the scheduler's state.
type mode int

const (
	noRestart    mode = iota
	restart           // restart, restoring A-SRPT's saved state
	restartFresh      // restart with a new A-SRPT that knows nothing (what not to do)
)

// app is the embedding scheduler: the runtime, the scheduler and what the host knows that the
// runtime does not (each job's submission, in order, and the true lengths).
type app struct {
	out     io.Writer
	mode    mode
	cluster *topology.Cluster
	rt      *host.Runtime
	sched   *asrpt.Scheduler
	length  map[gpusched.JobID]float64 // true iterations: known to the "cluster" only
	order   []gpusched.Job             // submitted jobs, in submission order
	wake    float64
	drained []topology.GPUID
}

// newScheduler builds A-SRPT with the host's options: a restarted host builds it again with
// the same options and restores its state.
func newScheduler() (*asrpt.Scheduler, error) {
	return asrpt.New(asrpt.Options{Estimator: estimator{}, MinRunTime: 60})
}

// newRuntime builds the runtime around the scheduler.
func (a *app) newRuntime() error {
	rt, err := host.New(host.Options{Cluster: a.cluster, Scheduler: a.sched, RestoreTime: 30})
	a.rt = rt
	return err
}

// run runs the scenario, writing what happens to out.
func run(out io.Writer, m mode) error {
	cluster, err := topology.Uniform(topology.A100(), 2) // a100-0 (GPUs 0-7), a100-1 (8-15)
	if err != nil {
		return err
	}
	a := &app{out: out, mode: m, cluster: cluster, length: map[gpusched.JobID]float64{}, wake: math.Inf(1)}
	if a.sched, err = newScheduler(); err != nil {
		return err
	}
	if err := a.newRuntime(); err != nil {
		return err
	}
	next := 0
	ops := []float64{drainAt, returnAt}
	if m != noRestart {
		ops = append(ops, restartAt)
	}
	for step := 0; step < 1000; step++ {
		// The next event: a submission, a completion, an operator action or a wake-up.
		t := a.wake
		if next < len(submissions) {
			t = min(t, submissions[next].at)
		}
		for _, op := range ops {
			t = min(t, op)
		}
		for _, e := range a.rt.Running() {
			t = min(t, a.finishTime(e))
		}
		if math.IsInf(t, 1) {
			return nil
		}
		// Completions: the cluster reports the jobs that are done.
		var done []*host.Entry
		for _, e := range a.rt.Running() {
			if a.finishTime(e) <= t {
				done = append(done, e)
			}
		}
		for _, e := range done {
			fmt.Fprintf(out, "t=%6.0f finish %-8s\n", t, e.ID())
			if err := a.rt.Finish(e.ID(), t, a.length[e.ID()], false); err != nil {
				return err
			}
		}
		// Operator actions.
		for i := 0; i < len(ops); i++ {
			if ops[i] > t {
				continue
			}
			if err := a.operate(ops[i]); err != nil {
				return err
			}
			ops = append(ops[:i], ops[i+1:]...)
			i--
		}
		// Submissions.
		for next < len(submissions) && submissions[next].at <= t {
			a.submit(submissions[next], t)
			next++
		}
		if a.wake <= t {
			a.wake = math.Inf(1)
		}
		if err := a.reconcile(t); err != nil {
			return err
		}
	}
	return fmt.Errorf("too many events")
}

// finishTime is when running job e will finish at its rate: the cluster's knowledge.
func (a *app) finishTime(e *host.Entry) float64 {
	done, _, _, _ := e.Progress(a.rt.Now())
	return max(a.rt.Now(), e.RestoreEnd()) + (a.length[e.ID()]-done)*e.Step()
}

// submit takes a job from a user. A job that cannot be scheduled as described is refused at
// once, with the reason; the others wait in the runtime.
func (a *app) submit(s submission, t float64) {
	j := s.job
	j.Arrival = t
	j.Features.Numeric = map[string]float64{"user_estimate": s.userEstimate}
	if _, err := a.rt.Submit(j, s.trueIters); err != nil {
		fmt.Fprintf(a.out, "t=%6.0f refuse %-8s %v\n", t, j.ID, err)
		return
	}
	a.order = append(a.order, j)
	a.length[j.ID] = s.trueIters
	fmt.Fprintf(a.out, "t=%6.0f submit %-8s %2d GPUs\n", t, j.ID, j.GPUs)
}

// operate carries out an operator action at time t.
func (a *app) operate(t float64) error {
	first, n := a.cluster.GPUsOf(1)
	server := make([]topology.GPUID, n)
	for i := range server {
		server[i] = first + topology.GPUID(i)
	}
	switch t {
	case drainAt:
		fmt.Fprintf(a.out, "t=%6.0f drain  %s\n", t, a.cluster.Server(1).ID)
		a.drained = server
		return a.rt.Drain(server...)
	case returnAt:
		fmt.Fprintf(a.out, "t=%6.0f return %s\n", t, a.cluster.Server(1).ID)
		a.drained = nil
		return a.rt.Return(server...)
	}
	return a.restart(t)
}

// reconcile is the embedding: Schedule (view, decision, validation), then carry out the
// actions, every stop before every start, and report rejected jobs to their owners.
func (a *app) reconcile(t float64) error {
	acts, err := a.rt.Schedule(t)
	if err != nil {
		return err // a scheduler error or an invalid decision: nothing changed
	}
	for _, act := range acts.Steps {
		switch {
		case act.Kind == host.Stop && act.Migration:
			fmt.Fprintf(a.out, "t=%6.0f move   %-8s off %v\n", t, act.Job, topology.SetOf(act.GPUs...))
		case act.Kind == host.Stop: // checkpoint and evict
			e, _ := a.rt.Job(act.Job)
			fmt.Fprintf(a.out, "t=%6.0f evict  %-8s (checkpointed at %.0f iterations)\n", t, act.Job, e.Status(t).Iterations)
		case act.Migration:
			fmt.Fprintf(a.out, "t=%6.0f move   %-8s to  %v\n", t, act.Job, topology.SetOf(act.GPUs...))
		default: // bind workers to GPUs
			fmt.Fprintf(a.out, "t=%6.0f bind   %-8s on  %v\n", t, act.Job, topology.SetOf(act.GPUs...))
		}
	}
	for _, r := range acts.Rejected {
		fmt.Fprintf(a.out, "t=%6.0f reject %-8s %v\n", t, r.Job, r.Err)
	}
	// Jobs whose placement changed progress at their step time from now on. (A real host
	// reports observed progress with Report instead, or times jobs with a cost model.)
	for _, e := range a.rt.TakeDirty() {
		if err := a.rt.SetRate(e, t, gpusched.StepCost{Time: e.Job().StepTime}); err != nil {
			return err
		}
	}
	a.wake = math.Inf(1)
	if acts.WakeAt > t {
		a.wake = acts.WakeAt
	}
	return nil
}

// restart is a host failover at time t: what a new host process does after the old one died.
// It needs the scheduler's saved state (a file, a ConfigMap) and what it knows of the jobs
// (from the cluster: which pods run where, each job's progress; here, from the old runtime).
func (a *app) restart(t float64) error {
	a.rt.Deliver() // the old host told the scheduler of every completion before saving
	var saved bytes.Buffer
	if err := a.sched.SaveState(&saved); err != nil { // written regularly by the old host
		return err
	}
	size := saved.Len()
	old := a.rt
	// --- the old host is gone; a new one starts ---
	sched, err := newScheduler()
	if err != nil {
		return err
	}
	if a.mode == restart {
		// The restart step: A-SRPT's virtual queue, predictions and rejections come back.
		if err := sched.RestoreState(&saved); err != nil {
			return err
		}
	}
	a.sched = sched
	if err := a.newRuntime(); err != nil {
		return err
	}
	n := 0
	for _, j := range a.order { // every job still held, in submission order
		e, ok := old.Job(j.ID)
		if !ok {
			continue
		}
		f, err := a.rt.Resume(j, host.Resumption{Status: e.Status(t), At: t, RestoreEnd: e.RestoreEnd(), Limit: a.length[j.ID]})
		if err != nil {
			return err
		}
		if f.Running() {
			if err := a.rt.SetRate(f, t, gpusched.StepCost{Time: e.Step()}); err != nil {
				return err
			}
		}
		n++
	}
	a.rt.TakeDirty()
	if err := a.rt.Drain(a.drained...); err != nil {
		return err
	}
	if a.mode == restart {
		fmt.Fprintf(a.out, "t=%6.0f restart: A-SRPT restored from %d bytes of saved state, %d jobs resumed\n", t, size, n)
	} else {
		fmt.Fprintf(a.out, "t=%6.0f restart: a new A-SRPT without saved state, %d jobs resumed\n", t, n)
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
