package sim

import (
	"errors"
	"fmt"
	"math"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// Horizon is the latest time, in seconds, a simulation may reach: 2^32 s, about 136 years.
// Every arrival, completion and wake-up must come before it. Times are float64 seconds, whose
// spacing at t is t x 2^-52: up to 2^32 s that is at most 2^-20 s (about a microsecond), so
// that a job's 0.1 s iterations, a 30 s restore or the gap between two events still move
// the clock. Far beyond (at 1e15 s the spacing is 0.125 s) short intervals vanish:
// completions collapse onto their start and the timeline can no longer be binned. Run
// rejects a job that arrives after Horizon, or whose length known up front (iterations x
// StepTime, when the job has a step time) would end it after Horizon even run alone at once
// (ErrInvalidConfig, naming the job), and stops with ErrLimit, naming the job or the
// wake-up, when an event would fall past Horizon as the run goes (a cost model's step time
// or queueing can push a job there). Package trace's bounds (arrivals within 100 years,
// run times within 10) leave room below it.
const Horizon = 1 << 32

// DefaultRestoreTime is the checkpoint/restore cost in seconds that Config.RestoreTime selects
// when it is zero: a job restarted after a preemption, or migrated, holds its GPUs for this
// long before it makes progress again.
const DefaultRestoreTime = 30.0

// Errors returned by Run. Every returned error wraps one of these (or, for an invalid
// decision, also the gpusched sentinel that Decision.Validate reports) and names the
// scheduler, the simulated time and the job concerned.
var (
	// ErrInvalidConfig reports a Config that cannot be simulated: no cluster, no scheduler, a
	// job that fails Job.Validate, a duplicate job id, a non-positive or non-finite iteration
	// count, a NaN limit.
	ErrInvalidConfig = errors.New("sim: invalid config")
	// ErrInvalidDecision reports a decision that Decision.Validate rejects (unknown or
	// duplicate job, wrong GPU count, missing or double-booked GPU, NaN wake-up). The
	// simulator never repairs a decision.
	ErrInvalidDecision = errors.New("sim: invalid decision")
	// ErrScheduler reports an error returned by the scheduler itself.
	ErrScheduler = errors.New("sim: scheduler failed")
	// ErrCost reports a cost model that failed or returned an unusable step time (not finite
	// and positive) for a placement.
	ErrCost = errors.New("sim: cost model failed")
	// ErrStalled reports a scheduler that leaves jobs waiting on an idle cluster with no
	// arrival, completion, wake-up or repair to come: the simulation could never end.
	ErrStalled = errors.New("sim: scheduler stalled")
	// ErrLimit reports that Config.MaxTime or Config.MaxEvents was reached before every job
	// finished, or that an event would fall past Horizon.
	ErrLimit = errors.New("sim: limit reached")
	// ErrNoProgress reports a run with random failures (Failures.MTBF) that cannot be expected
	// to end: a job lost everything it did since its last checkpoint to MaxLostAttempts
	// failures in a row, never keeping any progress in between (see MaxLostAttempts).
	ErrNoProgress = errors.New("sim: no progress")
)

// MaxLostAttempts is how many times in a row a job may lose its progress to a random server
// failure (Failures.MTBF) before Run gives up with ErrNoProgress. A job's attempt is the time
// from its start to the failure that stops it; the attempt is lost when the job keeps none of
// what it did: it had not finished, and its progress as of its last checkpoint (Config.
// Checkpoint, or a preemption or migration by the scheduler) had not grown since the previous
// failure that stopped it. Run returns only once every job has finished, so one job that
// cannot keep any progress keeps the run going until the failures' log and the timeline
// exhaust memory (with MTBF 1 min and no checkpoints, a job that needs an hour on one server
// runs uninterrupted with probability e^-60 per start). The threshold is a probability:
// a job with even a 1% chance per start of reaching its next checkpoint or its end loses
// 1,000 starts in a row with probability 0.99^1000 < 5e-5, and a run that needs more than a
// hundred restarts per job is no longer a study of the scheduler. Failures from a list
// (Failures.Outages) alone always end, and are never given up on.
const MaxLostAttempts = 1000

// Config describes one simulation. Cluster, Jobs and Scheduler are required; the other
// fields have documented defaults.
type Config struct {
	// Cluster is the cluster the jobs run on.
	Cluster *topology.Cluster
	// Jobs is the workload: each job as the scheduler sees it and its true length in
	// iterations, which only the simulator knows. The order does not matter: jobs arrive in
	// order of Job.Arrival, ties in the order given. Job ids must be unique.
	Jobs []trace.Record
	// Scheduler decides what runs where. It is called at every event (see Run) and is never
	// called concurrently. If it implements gpusched.CompletionObserver it is told of every
	// job that leaves, before the next Schedule call.
	Scheduler gpusched.Scheduler
	// Cost gives each running job's time per iteration and cross-server bytes per iteration
	// for its placement and the load on its shared links. Nil means gpusched.DefaultCost():
	// for a job with a model, the time package graph gives for its model, plan and placement
	// with the links' load; for a job without, its Job.StepTime wherever it runs (FixedCost).
	// Pass the same cost model to schedulers that size jobs with one. A cost model
	// with a Forget(*gpusched.Job) method is told of every job that leaves, so that it can
	// drop what it cached for it. The simulator keeps a job's last answer while its GPUs,
	// plan choice and link loads stay as they were, so the answer must depend on nothing else.
	Cost gpusched.CostModel
	// RestoreTime is the checkpoint/restore cost in seconds: a job started again after a
	// preemption, or migrated, holds its GPUs but makes no progress for this long. A job's
	// first start is free. Zero selects DefaultRestoreTime (30 s); a negative value means no
	// cost at all.
	RestoreTime float64
	// ReconfigureTime is the restore cost in seconds of a reconfigurable job restarted under
	// another plan (gpusched.Assignment.PlanChoice; the Rubick artifact charges 260 s). Zero:
	// RestoreTime's; negative: none. See host.Options.ReconfigureTime.
	ReconfigureTime float64
	// MaxTime, when positive, stops the simulation with ErrLimit if an event would happen
	// after this time (seconds) with jobs unfinished.
	MaxTime float64
	// MaxEvents, when positive, stops the simulation with ErrLimit after this many Schedule
	// calls with jobs unfinished.
	MaxEvents int
	// ValidateViews makes the simulator check its own bookkeeping at every event (a debug
	// aid, much slower): View.Validate on every view, and Decision.Validate against the
	// simulator's own fast validator on every decision.
	ValidateViews bool
	// RecordSegments makes Result.Segments list every interval during which a job held a
	// placement (for Gantt charts and audits). Off by default: it costs memory.
	RecordSegments bool
	// Failures makes servers fail and be repaired (see Failures). The zero value: none.
	Failures Failures
	// Checkpoint is the interval in seconds at which running jobs save a checkpoint, counted
	// from each placement: a job whose server fails restarts from its last one, losing the
	// progress made since (Summary.LostGPUTime). Zero: jobs checkpoint only when preempted or
	// migrated (the checkpoint the restore time pays for), so a failure loses all progress
	// since the job's placement.
	Checkpoint float64
	// Observer receives events as the simulation runs; nil fields are skipped.
	Observer Observer

	// broken selects a deliberately wrong variant, for tests that show their properties
	// catch it (export_test.go); zero in every real use.
	broken brokenKind
}

// brokenKind names the deliberately wrong variants of the simulator that tests must catch.
type brokenKind uint8

const (
	brokenNone        brokenKind = iota
	brokenNoRollback             // a failure keeps the progress made since the last checkpoint
	brokenEarlyRepair            // a failed server's GPUs are available again at once
)

// Observer holds optional callbacks, called synchronously from Run.
type Observer struct {
	// Scheduled is called with every view and the decision the scheduler returned for it, in
	// the full form (a delta decision expanded: gpusched.Decision.Expand), after the decision
	// passed validation and before it is applied. Both belong to the simulator and are valid
	// only during the call.
	Scheduled func(v *gpusched.View, d gpusched.Decision)
	// Finished is called with the record of every job as it leaves the system.
	Finished func(r JobRecord)
	// Progress is called after every event with the simulated time, the number of jobs
	// finished so far and the total number of jobs. Progress bars use it.
	Progress func(now float64, finished, total int)
}

// SchedulerName returns the name the simulator uses for s in errors and results: its
// String method if it implements fmt.Stringer, otherwise its Go type (host.SchedulerName).
//
// Deprecated: use host.SchedulerName (the same function); removed in v0.3.0.
func SchedulerName(s gpusched.Scheduler) string { return host.SchedulerName(s) }

// Run simulates the workload and returns its metrics.
//
// Events are job arrivals, job completions, server failures and repairs (Config.Failures) and
// the wake-up time the scheduler last asked for (Decision.WakeAt; each decision replaces the
// previous request, and a time not after now is no request). All events at the same time are
// handled together: completions first (their jobs leave, a CompletionObserver scheduler is
// told), then failures (the jobs on a failed server go back to their last checkpoint and wait)
// and repairs, then arrivals, then one Schedule call. Jobs the decision rejects leave, with
// the reason in their record.
// The decision is validated (an invalid one ends the run with ErrInvalidDecision naming the
// scheduler, the time and the job) and carried out: running jobs left out are preempted
// (they return to the queue, and their next start pays RestoreTime), pending jobs listed are
// started, running jobs listed with other GPUs (or the same GPUs in another worker order)
// are migrated (they pay RestoreTime).
//
// A running job makes 1/StepCost.Time iterations per second once its restore period is
// over. Its step cost is computed by Config.Cost from its placement and from the load on the
// shared links it uses (Cluster.Links of its GPUs): the load of a link is the number of other
// running jobs on it. A job holds its links, and loads them, from the moment it holds its
// GPUs, restore period included. Step costs are recomputed only for jobs placed, migrated,
// or whose links gained or lost a job. A job finishes exactly when it has done its
// Record.Iterations.
//
// Run is deterministic: the same config gives the same result. It returns an error (and
// no result) if the config is invalid, the scheduler fails or returns an invalid decision,
// the cost model fails, the scheduler stalls (jobs wait with nothing running, no arrival,
// wake-up or repair to come), or a limit is reached.
func Run(cfg Config) (*Result, error) {
	e, err := newEngine(&cfg)
	if err != nil {
		return nil, err
	}
	if err := e.run(); err != nil {
		return nil, err
	}
	e.deliver()
	return e.result(), nil
}

func (cfg *Config) check() error {
	switch {
	case cfg.Cluster == nil:
		return fmt.Errorf("%w: no cluster", ErrInvalidConfig)
	case cfg.Scheduler == nil:
		return fmt.Errorf("%w: no scheduler", ErrInvalidConfig)
	case math.IsNaN(cfg.RestoreTime) || math.IsInf(cfg.RestoreTime, 0):
		return fmt.Errorf("%w: restore time %v is not finite", ErrInvalidConfig, cfg.RestoreTime)
	case math.IsNaN(cfg.ReconfigureTime) || math.IsInf(cfg.ReconfigureTime, 0):
		return fmt.Errorf("%w: reconfiguration time %v is not finite", ErrInvalidConfig, cfg.ReconfigureTime)
	case math.IsNaN(cfg.MaxTime):
		return fmt.Errorf("%w: MaxTime is NaN", ErrInvalidConfig)
	case !(cfg.Checkpoint >= 0) || math.IsInf(cfg.Checkpoint, 0):
		return fmt.Errorf("%w: checkpoint interval %v s must be finite and >= 0", ErrInvalidConfig, cfg.Checkpoint)
	}
	if err := cfg.Failures.check(cfg.Cluster); err != nil {
		return err
	}
	for i := range cfg.Jobs {
		r := &cfg.Jobs[i]
		if err := r.Job.Validate(cfg.Cluster); err != nil {
			return fmt.Errorf("%w: job %d: %w", ErrInvalidConfig, i, err)
		}
		if !(r.Iterations > 0) || math.IsInf(r.Iterations, 0) {
			return fmt.Errorf("%w: job %q: iterations %v must be finite and > 0",
				ErrInvalidConfig, r.Job.ID, r.Iterations)
		}
		if r.Job.Arrival > Horizon {
			return fmt.Errorf("%w: job %q: arrival %v s is past the simulator's horizon of %v s (2^32 s, about 136 years; see Horizon)",
				ErrInvalidConfig, r.Job.ID, r.Job.Arrival, float64(Horizon))
		}
		if end := r.Job.Arrival + r.Iterations*r.Job.StepTime; end > Horizon {
			return fmt.Errorf("%w: job %q: %v iterations of %v s from t=%v s end at %v s, past the simulator's horizon of %v s (2^32 s, about 136 years; see Horizon)",
				ErrInvalidConfig, r.Job.ID, r.Iterations, r.Job.StepTime, r.Job.Arrival, end, float64(Horizon))
		}
	}
	return nil
}

// pastHorizon is the error of an event at time t > Horizon: the completion of job idx when
// idx >= 0, otherwise the scheduler's wake-up.
func (e *engine) pastHorizon(t float64, idx int32) error {
	if idx >= 0 {
		j := &e.jobs[idx]
		done := j.en.Iterations()
		return fmt.Errorf("%w: job %q (%v iterations, %v done, %v s each on GPUs %v) would finish at t=%v s, past the simulator's horizon of %v s (2^32 s, about 136 years; see Horizon) (scheduler %s)",
			ErrLimit, j.job.ID, j.iters, done, j.en.Step(), topology.SetOf(j.en.GPUs()...), t, float64(Horizon), e.name)
	}
	return fmt.Errorf("%w: scheduler %s asked to be woken at t=%v s, past the simulator's horizon of %v s (2^32 s, about 136 years; see Horizon)",
		ErrLimit, e.name, t, float64(Horizon))
}
