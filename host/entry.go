package host

import (
	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

type phase uint8

const (
	phasePending phase = iota + 1 // waiting for GPUs
	phaseRunning                  // holding GPUs
	phaseParked                   // rejected as too large, waiting for the cluster to change
	phaseDone                     // left the runtime; its completion may wait for delivery
)

// act is what the decision being applied does to one job.
type act uint8

const (
	actNone act = iota
	actStart
	actKeep
	actMigrate
	actReject
	actDropped // rejected while running: stopped, never back in the queue
	actStop    // named in Decision.Stop: preempted
)

// Entry is the runtime's record of one job, from Submit until the job leaves (it finishes, is
// cancelled or is rejected). Hosts read it; only the Runtime changes it. Entries are never
// reused: once a job has left and its completion has been delivered the runtime holds no
// reference to its entry, and the garbage collector reclaims it when the host holds none
// either. So the *gpusched.Job a scheduler or cost model sees (Entry.Job) is never handed out
// for another job, and caches keyed by it cannot mistake one job for another.
//
// Progress is folded in at discrete times (when the job starts, stops, is reported on or
// changes speed); in between, a job with a known time per iteration (SetRate) progresses at
// that rate, and Progress and Status extrapolate.
type Entry struct {
	// Hot fields, read at every call by the view (buildView, Progress), come first and fit in
	// 128 bytes: the flags, the placement and the progress with its anchors.
	phase   phase
	inView  bool // in the last view handed to the scheduler (see Runtime.delta)
	viewRun bool // running in the last view handed to the scheduler
	logged  bool // in Runtime.touched
	act     act
	dirty   bool // step cost must be recomputed (SetRate)
	started bool
	// constrained caches job.Constrained()
	constrained bool
	ngpus       int32            // job.GPUsFor(plan)
	plan        int32            // plan choice it runs or last ran under
	preempt     int32            // stops by decisions
	interr      int32            // stops by the host (Interrupt, Fail, SetCluster)
	gpus        []topology.GPUID // current placement (nil while waiting)
	segAt       float64          // progress below is folded in up to this time
	done        float64          // iterations done
	executed    float64          // seconds holding GPUs
	attained    float64          // GPU-seconds holding GPUs
	productive  float64          // seconds holding GPUs and making progress (restores excluded)
	restoreEnd  float64          // no progress before this time (restore after a stop or migration)
	step        float64          // seconds per iteration in the current placement and load (0: unknown)
	limit       float64          // extrapolated progress never exceeds this many iterations
	firstStart  float64
	since       float64

	// Read by check and find for the jobs a decision mentions.
	listed  uint32 // decision epoch in which the job was listed
	asgOff  int32  // offset of its new placement in the runtime's scratch buffer
	newPlan int32  // plan choice of its assignment in the decision being applied
	// Tag is the host's own: the runtime never reads or changes it (but saves it).
	//
	// Deprecated: keep the host's own data about a job in the host, keyed by the job's ID
	// (package sim does); removed after one release.
	Tag int32
	id  gpusched.JobID
	seq uint64 // submission order

	bytes    float64       // cross-server bytes moved
	xbytes   float64       // cross-server bytes per iteration in the current placement
	links    []int32       // dense ids of the shared links the placement uses
	eff      *gpusched.Job // job.WithPlan(plan), built on demand (nil for plan 0)
	migrate  int
	maxSpan  int
	placedAt float64 // start of the current placement (the origin of periodic checkpoints)
	segStart float64 // start of the current segment (Options.RecordSegments)

	ckAt, ckDone, ckProd float64 // the last checkpoint: when, iterations and productive seconds then
	lostIters            float64 // iterations thrown away by interruptions
	lostProd             float64 // productive seconds thrown away
	lostGPU              float64 // GPU-seconds of progress thrown away

	ended    float64 // when the job left
	killed   bool
	rejected *gpusched.JobError
	job      gpusched.Job
}

// ID returns the job's id.
func (e *Entry) ID() gpusched.JobID { return e.id }

// Job returns the job as submitted. It must not be modified.
func (e *Entry) Job() *gpusched.Job { return &e.job }

// Running tells whether the job holds GPUs.
func (e *Entry) Running() bool { return e.phase == phaseRunning }

// Pending tells whether the job waits for GPUs (in the view's Pending list).
func (e *Entry) Pending() bool { return e.phase == phasePending }

// Parked tells whether the job is parked: rejected as too large for the cluster and kept out
// of the view until the cluster changes (see RejectPolicy).
func (e *Entry) Parked() bool { return e.phase == phaseParked }

// GPUs returns the job's placement, one GPU per worker in worker order, or nil while it waits.
// The slice belongs to the runtime: it must not be modified and is valid until the next call
// that changes the runtime.
func (e *Entry) GPUs() []topology.GPUID {
	if e.phase != phaseRunning {
		return nil
	}
	return e.gpus
}

// Iterations returns the job's iterations done as last folded in (at the last SetRate, Report,
// start or stop); Progress extrapolates to a later time.
func (e *Entry) Iterations() float64 { return e.done }

// Step returns the job's time per iteration in seconds as last set by SetRate (0: unknown).
func (e *Entry) Step() float64 { return e.step }

// RestoreEnd returns the time until which the job restores its checkpoint and makes no
// progress (at or before its placement when it pays no restore).
func (e *Entry) RestoreEnd() float64 { return e.restoreEnd }

// Rejection returns the reason for which a decision rejected the job, or nil.
func (e *Entry) Rejection() *gpusched.JobError { return e.rejected }

// Progress returns the job's iterations done, seconds held, GPU-seconds held and productive
// seconds (held and not restoring) at time t, not before the last time its progress was
// folded in, without changing the entry. A running job with a known rate (SetRate) is
// extrapolated at that rate, up to its limit (progress reported past the limit stands).
func (e *Entry) Progress(t float64) (done, executed, attained, productive float64) {
	done, executed, attained, productive = e.done, e.executed, e.attained, e.productive
	if e.phase != phaseRunning {
		return
	}
	dt := t - e.segAt
	if dt <= 0 {
		return
	}
	executed += dt
	attained += dt * float64(e.ngpus)
	if ps := max(e.segAt, e.restoreEnd); t > ps {
		p := t - ps
		productive += p
		done = extrapolated(done, e.limit, e.step, p)
	}
	return
}

// extrapolated is the progress of a job that had done `done` iterations and then ran p
// productive seconds at step seconds per iteration (0: rate unknown): never past limit, and
// never below done (a job may report more than its limit; see Runtime.Submit). Entry.Progress
// and the runtime's dense array of running jobs (runHot.progress) both extrapolate with it.
func extrapolated(done, limit, step, p float64) float64 {
	if step > 0 && done < limit {
		return min(limit, done+p/step)
	}
	return done
}

// Status returns the job's status at time t as a view shows it.
func (e *Entry) Status(t float64) gpusched.JobStatus {
	done, ex, att, _ := e.Progress(t)
	st := gpusched.JobStatus{
		Job: &e.job, Iterations: done, Executed: ex, Attained: att,
		Started: e.started, FirstStart: e.firstStart, Since: e.since, Preemptions: int(e.preempt + e.interr),
		PlanChoice: int(e.plan),
	}
	if e.phase == phaseRunning {
		st.GPUs = e.gpus
	}
	return st
}

// Stats is what the runtime counted for one job.
type Stats struct {
	// Iterations is the number of iterations done (after any rollback).
	Iterations float64
	// Executed is the time in seconds the job held GPUs, restores included; Productive the
	// part of it spent making progress (progress later thrown away included).
	Executed, Productive float64
	// Attained is the GPU-seconds the job held.
	Attained float64
	// Started tells whether the job ever ran; FirstStart is when it first did.
	Started    bool
	FirstStart float64
	// Preemptions counts stops by decisions; Interruptions stops by the host (Interrupt,
	// Fail, a server leaving); Migrations moves.
	Preemptions, Interruptions, Migrations int
	// ServersSpanned is the largest number of servers any of the job's placements spanned.
	ServersSpanned int
	// CrossServerBytes is the bytes the job sent between servers, at the rates SetRate gave.
	CrossServerBytes float64
	// LostIterations is the number of iterations thrown away by interruptions (progress after
	// the last checkpoint), LostProductive the productive seconds they took and LostGPUTime
	// those seconds times the job's GPUs.
	LostIterations, LostProductive, LostGPUTime float64
	// Ended is when the job left the runtime (finished, cancelled or rejected); Killed tells
	// that it did not finish its training (cancelled or rejected).
	Ended  float64
	Killed bool
}

// Stats returns what the runtime counted for the job, folded in up to the last change (use
// Progress for the running totals at a later time).
func (e *Entry) Stats() Stats {
	return Stats{
		Iterations: e.done, Executed: e.executed, Productive: e.productive, Attained: e.attained,
		Started: e.started, FirstStart: e.firstStart,
		Preemptions: int(e.preempt), Interruptions: int(e.interr), Migrations: e.migrate, ServersSpanned: e.maxSpan,
		CrossServerBytes: e.bytes, LostIterations: e.lostIters, LostProductive: e.lostProd, LostGPUTime: e.lostGPU,
		Ended: e.ended, Killed: e.killed,
	}
}

// settle folds the job's progress up to time t into its record, catching up the periodic
// checkpoints (every ck seconds of a placement; 0: none) passed on the way.
func (e *Entry) settle(t, ck float64) {
	if e.phase != phaseRunning {
		e.segAt = t
		return
	}
	if ck > 0 {
		e.catchUp(t, ck)
	}
	dt := t - e.segAt
	if dt <= 0 {
		return
	}
	e.executed += dt
	e.attained += dt * float64(e.ngpus)
	if ps := max(e.segAt, e.restoreEnd); t > ps {
		p := t - ps
		e.productive += p
		if e.step > 0 && e.done < e.limit { // a job may have reported more than its limit
			di := min(p/e.step, e.limit-e.done)
			e.done += di
			e.bytes += di * e.xbytes
		}
	}
	e.segAt = t
}

// catchUp records the last periodic checkpoint at or before t, if it is later than the one
// recorded. Between two settles the job's rate is constant, so its progress at the checkpoint
// is exact.
func (e *Entry) catchUp(t, ck float64) {
	k := (t - e.placedAt) / ck
	if !(k >= 1) {
		return
	}
	c := e.placedAt + float64(int64(k))*ck
	if c > t { // rounding
		c -= ck
	}
	if c <= e.ckAt || c < e.segAt {
		return
	}
	done, _, _, prod := e.Progress(c)
	e.ckAt, e.ckDone, e.ckProd = c, done, prod
}

// checkpoint records the job's progress at its last settle as its checkpoint.
func (e *Entry) checkpoint() {
	e.ckAt, e.ckDone, e.ckProd = e.segAt, e.done, e.productive
}

// status is the view's status of a job that is not running.
func (e *Entry) pendingStatus() gpusched.JobStatus {
	return gpusched.JobStatus{
		Job: &e.job, Iterations: e.done, Executed: e.executed, Attained: e.attained,
		Started: e.started, FirstStart: e.firstStart, Since: e.since, Preemptions: int(e.preempt + e.interr),
		PlanChoice: int(e.plan),
	}
}

// planChoice returns the plan choice the job runs under, or last ran under while it waits
// (gpusched.Assignment.PlanChoice; 0 for a job that is not reconfigurable).
func (e *Entry) planChoice() int { return int(e.plan) }

// Current returns the job as it runs under its plan choice (gpusched.Job.WithPlan): what a
// cost model times. It is Job() for plan choice 0.
func (e *Entry) Current() *gpusched.Job {
	if e.plan == 0 {
		return &e.job
	}
	if e.eff == nil {
		e.eff = e.job.WithPlan(int(e.plan))
	}
	return e.eff
}

// setPlan makes k the job's plan choice, with its GPU count.
func (e *Entry) setPlan(k int) {
	if int(e.plan) != k {
		e.eff = nil
	}
	e.plan = int32(k)
	e.ngpus = int32(e.job.GPUsFor(k))
}
