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
//   - a restart of the host, done as an embedder should: after carrying out the actions of
//     each call the host saves the whole runtime (every job's books and A-SRPT's state, here in
//     memory, in a real host a file, a ConfigMap or a key in etcd) in two parts: the base,
//     which changes only when A-SRPT's learned model is retrained (host.Runtime.SaveBase,
//     written when host.Runtime.BaseKey changes), and the delta, the rest
//     (host.Runtime.SaveDelta, every time); host.Runtime.SaveState writes both in one blob
//     where the base is small. A new host process builds A-SRPT with the same options and
//     restores everything at once (host.RestoreDelta), and asks to be woken when the old one
//     would have been (host.Runtime.WakeAt). Every later decision is the one the
//     uninterrupted host makes; the test kills the host at random events and checks it.
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
	if err := run(os.Stdout, atRestart()); err != nil {
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
// host process dies at t=3000, while pretrain runs with about a quarter of its work left, and a
// new one takes over from the saved runtime at the next event.
const (
	drainAt   = 200
	returnAt  = 600
	restartAt = 3000
)

// kill says whether the host process dies just before handling event number step, at time t
// (a new one then takes over from the saved runtime).
type kill func(step int, t float64) bool

// never is the uninterrupted host; atRestart kills it once, at the first event at or after
// restartAt.
func never(int, float64) bool { return false }

func atRestart() kill {
	done := false
	return func(_ int, t float64) bool {
		if !done && t >= restartAt {
			done = true
			return true
		}
		return false
	}
}

// app is the embedding scheduler: the runtime and the scheduler (the host process's memory,
// lost when it dies), the saved runtime (what outlives the process), and what only the
// "cluster" knows (each job's true length; in a real host, the jobs themselves).
type app struct {
	out     io.Writer
	cluster *topology.Cluster
	rt      *host.Runtime
	sched   *asrpt.Scheduler
	store   []byte                     // the saved runtime's delta: a file, a ConfigMap, a key in etcd
	base    []byte                     // the saved runtime's base, stored beside it
	baseKey string                     // the key of base (host.Runtime.BaseKey)
	stale   bool                       // a wrong host that saves before carrying out the actions (tests)
	length  map[gpusched.JobID]float64 // true iterations: known to the "cluster" only
	wake    float64
}

// newScheduler builds A-SRPT with the host's options: a restarted host builds it again with
// the same options and restores its state.
func newScheduler() (*asrpt.Scheduler, error) {
	return asrpt.New(asrpt.Options{Estimator: estimator{}, MinRunTime: 60})
}

// options are the runtime's options: a restarted host uses the same.
func (a *app) options() host.Options {
	return host.Options{Cluster: a.cluster, Scheduler: a.sched, RestoreTime: 30}
}

// run runs the scenario, writing what happens to out; the host process dies before the
// events for which die says so.
func run(out io.Writer, die kill) error {
	return runHost(out, die, false)
}

// runHost is run, with a host that saves its runtime at the wrong moment when stale.
func runHost(out io.Writer, die kill, stale bool) error {
	cluster, err := topology.Uniform(topology.A100(), 2) // a100-0 (GPUs 0-7), a100-1 (8-15)
	if err != nil {
		return err
	}
	a := &app{out: out, cluster: cluster, length: map[gpusched.JobID]float64{}, wake: math.Inf(1), stale: stale}
	if a.sched, err = newScheduler(); err != nil {
		return err
	}
	if a.rt, err = host.New(a.options()); err != nil {
		return err
	}
	next := 0
	ops := []float64{drainAt, returnAt}
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
		if die(step, t) {
			if err := a.restart(t); err != nil {
				return err
			}
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
		return a.rt.Drain(server...)
	case returnAt:
		fmt.Fprintf(a.out, "t=%6.0f return %s\n", t, a.cluster.Server(1).ID)
		return a.rt.Return(server...)
	}
	return fmt.Errorf("no operator action at t=%g", t)
}

// reconcile is the embedding: Schedule (view, decision, validation), then carry out the
// actions, every stop before every start, and report rejected jobs to their owners.
func (a *app) reconcile(t float64) error {
	if a.stale { // wrong: a restart would lose this call's decision, carried out already
		if err := a.save(); err != nil {
			return err
		}
	}
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
	if a.stale {
		return nil
	}
	// The actions are carried out: save the runtime (and with it A-SRPT's state).
	return a.save()
}

// save writes the runtime, with its scheduler's state, to the store: the base only when its
// key changed (with A-SRPT's random forest, once per retraining), the delta every time. The
// base goes first, so that the stored delta never names a base the store lacks.
func (a *app) save() error {
	if k := a.rt.BaseKey(); k != a.baseKey || a.base == nil {
		var buf bytes.Buffer
		key, err := a.rt.SaveBase(&buf)
		if err != nil {
			return err
		}
		a.base, a.baseKey = buf.Bytes(), key
	}
	var buf bytes.Buffer
	if _, err := a.rt.SaveDelta(&buf); err != nil {
		return err
	}
	a.store = buf.Bytes()
	return nil
}

// restart is a host failover before the event at time t: what a new host process does after
// the old one died. It has only the saved runtime: it builds A-SRPT with the same options,
// restores the runtime and A-SRPT's state from the base and the delta, and takes the wake-up time the
// old host had asked for. Jobs, progress, checkpoints, drained GPUs, parked jobs and
// completions not yet told to A-SRPT all come back with it; no Resume calls, no bookkeeping
// of its own.
func (a *app) restart(t float64) error {
	// --- the old host is gone (a.rt and a.sched with it); a new one starts ---
	sched, err := newScheduler()
	if err != nil {
		return err
	}
	a.sched = sched
	if a.store == nil { // it died before it ever saved: start afresh
		a.rt, err = host.New(a.options())
		return err
	}
	if a.rt, err = host.RestoreDelta(a.options(), bytes.NewReader(a.base), bytes.NewReader(a.store)); err != nil {
		return err
	}
	a.wake = math.Inf(1)
	if w := a.rt.WakeAt(); w > 0 {
		a.wake = w
	}
	fmt.Fprintf(a.out, "t=%6.0f restart: runtime and A-SRPT restored from %d bytes, %d jobs held\n", t, len(a.store), a.rt.Len())
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
