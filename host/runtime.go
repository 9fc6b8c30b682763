package host

import (
	"errors"
	"fmt"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// Errors of the Runtime. Every returned error wraps one of these (a refused decision also
// wraps the gpusched sentinel that Decision.Validate reports) and names the job concerned.
var (
	// ErrInvalidOptions reports Options the runtime cannot work with: no cluster, no
	// scheduler, a restore time or checkpoint interval that is not finite.
	ErrInvalidOptions = errors.New("host: invalid options")
	// ErrUnknownJob reports a call that names a job the runtime does not hold.
	ErrUnknownJob = errors.New("host: unknown job")
	// ErrDuplicateJob reports a Submit of a job id the runtime already holds.
	ErrDuplicateJob = errors.New("host: job already submitted")
	// ErrState reports a call that does not fit the job's state: a progress report on a job
	// that has left, an Interrupt of a job that does not run.
	ErrState = errors.New("host: job in the wrong state")
	// ErrTime reports a time that is not finite, or earlier than the runtime's clock.
	ErrTime = errors.New("host: bad time")
	// ErrScheduler reports an error returned by the scheduler itself (see ScheduleError).
	ErrScheduler = errors.New("host: scheduler failed")
	// ErrInvalidDecision reports a decision that Decision.Validate rejects (see
	// ScheduleError). The runtime never repairs a decision.
	ErrInvalidDecision = errors.New("host: invalid decision")
)

// ScheduleError is the error of a Schedule call whose scheduler failed (ErrScheduler) or
// returned a decision that fails Decision.Validate (ErrInvalidDecision). The runtime's state
// is as it was before the call.
type ScheduleError struct {
	// Scheduler names the scheduler (its String method, or its Go type).
	Scheduler string
	// Time is the time of the call, in seconds.
	Time float64
	// Invalid tells that the decision was refused, rather than the scheduler failing.
	Invalid bool
	// Job is the job of the refused decision that Validate names ("" for a NaN wake-up, and
	// when the scheduler failed).
	Job gpusched.JobID
	// Err is the scheduler's error, or Decision.Validate's.
	Err error
}

// Error says what failed, naming the scheduler, the time and (for a refused decision) the job.
func (e *ScheduleError) Error() string {
	if e.Invalid {
		return fmt.Sprintf("%v: scheduler %s at t=%g s: job %q: %v", ErrInvalidDecision, e.Scheduler, e.Time, e.Job, e.Err)
	}
	return fmt.Sprintf("%v: scheduler %s at t=%g s: %v", ErrScheduler, e.Scheduler, e.Time, e.Err)
}

// Unwrap returns ErrInvalidDecision or ErrScheduler, and Err.
func (e *ScheduleError) Unwrap() []error {
	if e.Invalid {
		return []error{ErrInvalidDecision, e.Err}
	}
	return []error{ErrScheduler, e.Err}
}

// RejectPolicy says what the runtime does with a job that a decision lists in
// Decision.Rejected.
type RejectPolicy uint8

const (
	// RejectRemove removes a rejected job at once: it is stopped if it runs, leaves the
	// runtime, is reported in Actions.Rejected with its reason, and its CompletionObserver
	// scheduler is told (Completion.Killed). The host tells the job's owner. The default.
	RejectRemove RejectPolicy = iota
	// RejectPark parks a job rejected because the cluster is too small for it
	// (gpusched.ErrTooLarge): it is stopped if it runs and kept out of the view, keeping its
	// progress, until the cluster changes (SetCluster), when it waits again in submission
	// order for another try. It is reported in Actions.Rejected each time it is parked; the
	// scheduler sees it leave as if cancelled. Jobs rejected for any other reason are removed
	// as with RejectRemove.
	RejectPark
)

// Options configure a Runtime. Cluster and Scheduler are required.
type Options struct {
	// Cluster is the cluster at the start (SetCluster replaces it).
	Cluster *topology.Cluster
	// Scheduler decides what runs where. If it implements gpusched.CompletionObserver it is
	// told of every job that leaves (see DeferCompletions).
	Scheduler gpusched.Scheduler
	// Cost, if it has a Forget(*gpusched.Job) method (gpusched.ModelCost does), is told of
	// every job that leaves or is parked, so that it drops what it cached for it. The
	// runtime computes no costs itself: hosts that time jobs with a cost model pass its
	// result to SetRate.
	Cost gpusched.CostModel
	// RestoreTime is the time in seconds a job restarted after a stop, or migrated, holds its
	// GPUs without progress while it restores its checkpoint (a job's first start is free).
	// Zero or negative: no restore time.
	RestoreTime float64
	// ReconfigureTime replaces RestoreTime for a reconfigurable job that restarts under
	// another plan than it last ran (gpusched.Assignment.PlanChoice): the time in seconds it
	// holds its GPUs without progress while it restarts under the new plan (the Rubick
	// artifact charges 260 s). Zero: RestoreTime; negative: no reconfiguration time.
	ReconfigureTime float64
	// CheckpointEvery, when positive, is the interval in seconds at which running jobs save a
	// checkpoint, counted from each placement; an interrupted job restarts from its last one.
	// Zero: jobs checkpoint only when stopped by a decision or migrated (and when the host
	// calls Checkpoint), so an interruption throws away all progress since the placement.
	CheckpointEvery float64
	// Rejected says what happens to jobs that a decision rejects. Default RejectRemove.
	Rejected RejectPolicy
	// DeferCompletions keeps completions off the path from an event to its actions: Schedule
	// no longer delivers the completions queued since the last call before it calls the
	// scheduler; they wait until the host calls Deliver (typically right after it has carried
	// out the actions, or from its own goroutine while no other call runs). A learning
	// scheduler's JobCompleted can be slow: A-SRPT's retrains its random forest over a window
	// of 10,000 jobs every 20,000 completions, up to about 0.6 s of CPU per call (see the
	// package documentation). Until it is told, the scheduler sees the job absent from the view and
	// treats it as cancelled (the View contract); the late report still teaches its
	// predictor. Off by default: completions are delivered before the next Schedule call, as
	// the View contract asks.
	DeferCompletions bool
	// OnSegment, if set, is called with every interval during which a job held a placement,
	// when it ends (the job stopped, finished, migrated, was interrupted, or its GPUs were
	// renumbered by SetCluster), in the order they end. The Segment belongs to the caller.
	// The simulator records them so (sim.Config.RecordSegments); a host may log them.
	OnSegment func(Segment)
	// RecordSegments makes the runtime keep every interval during which a job held a
	// placement (Segments). Off by default: it costs memory.
	//
	// Deprecated: set OnSegment and keep the segments you need (package sim does); removed
	// after one release.
	RecordSegments bool
	// Validate makes the runtime check its own view at every call (View.Validate) and
	// cross-check its validator with Decision.Validate: a debug aid, much slower.
	Validate bool
	// Decided, if set, is called with every view and the decision the scheduler returned for
	// it, in the full form (a delta decision expanded: Decision.Expand), after the decision
	// passed validation and before it is applied. Both belong to the runtime and are valid only
	// during the call.
	Decided func(v *gpusched.View, d gpusched.Decision)
}

// ActionKind is what an Action does.
type ActionKind uint8

const (
	// Stop stops a job and frees its GPUs: a preemption (it waits again), the stop half of a
	// migration, the stop of a rejected job, or an interruption by the host.
	Stop ActionKind = iota + 1
	// Start puts a job on GPUs: a start or resumption, or the start half of a migration.
	Start
)

// String returns "stop" or "start".
func (k ActionKind) String() string {
	switch k {
	case Stop:
		return "stop"
	case Start:
		return "start"
	}
	return fmt.Sprintf("ActionKind(%d)", k)
}

// Action is one step a host carries out on the real cluster.
type Action struct {
	// Kind is Stop or Start.
	Kind ActionKind
	// Job is the job concerned.
	Job gpusched.JobID
	// GPUs are the GPUs the job releases (Stop) or takes (Start), one per worker in worker
	// order. The slice belongs to the runtime and is valid until its next call.
	GPUs []topology.GPUID
	// Migration tells that the action is half of a migration: the job stops here and starts
	// again on new GPUs (which may overlap the old ones) within the same Actions.
	Migration bool
	// Interrupted tells that the host stopped the job (Fail, Interrupt, a server leaving):
	// it waits again and restarts from its last checkpoint.
	Interrupted bool
	// Rejected tells that the job stops because the decision rejected it.
	Rejected bool
}

// Actions is what one call asks the host to do, in a safe order: every Stop comes before every
// Start, so no job starts on a GPU that another job (or the same job, migrating) still holds.
type Actions struct {
	// Time is the time of the call, in seconds.
	Time float64
	// Steps are the stops (in the order of the view's running jobs) and then the starts (in
	// the order of the decision).
	Steps []Action
	// Rejected lists the jobs the decision rejected, with the reason; they have been removed
	// or parked (Options.Rejected).
	Rejected []*gpusched.JobError
	// WakeAt is the time the scheduler asked to be called again, or 0 for no request (a
	// request not after Time is no request).
	WakeAt float64
}

// Segment is one interval during which a job held a placement: from Start to End on GPUs,
// restoring (no progress) from Start to RestoreEnd.
type Segment struct {
	// Job is the job that held the placement.
	Job gpusched.JobID `json:"job"`
	// Start and End bound the interval, in seconds; RestoreEnd is when the job's restore
	// ended within it (Start when it paid none).
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	RestoreEnd float64 `json:"restore_end"`
	// GPUs is the placement, one GPU per worker, in the GPU ids of the cluster of the time.
	GPUs []topology.GPUID `json:"gpus"`
	// Interrupted tells that the placement ended because the host stopped the job (a GPU
	// failed or left): progress after the job's last checkpoint was thrown away.
	Interrupted bool `json:"interrupted,omitempty"`
}

// brokenKind names the deliberately wrong variants of the runtime that tests must catch.
type brokenKind uint8

const (
	brokenNone              brokenKind = iota
	brokenOrder                        // each migration's stop comes right before its start
	brokenNoRollback                   // an interruption keeps the progress made since the checkpoint
	brokenDelta                        // the view's delta forgets jobs that left while waiting
	brokenTransitions                  // the view's delta forgets jobs that stopped running
	brokenWaitMoved                    // a waiting job's reported progress leaves the next delta's Transitions set
	brokenHeld                         // unlink keeps the job's GPUs in the held set
	brokenOwner                        // check lets a start take the GPU of a kept job
	brokenByPos                        // check lets a start take the GPU of a job kept by position
	brokenRelisted                     // check keeps a job by position though it was listed before
	brokenRestoreCheckpoint            // a restored running job takes its progress as its last checkpoint
	brokenStopOrder                    // a delta's stops are carried out in the delta's order, not the running jobs'
	brokenImplicitOwner                // check lets a start take the GPU of a job a delta keeps without listing it
	brokenHot                          // a migrated job's hot fields are not copied (syncHot) after its move
)

// forgetter is implemented by cost models that cache per-job state (gpusched.ModelCost).
type forgetter interface{ Forget(j *gpusched.Job) }

// Runtime is the bookkeeping of a host of a gpusched.Scheduler. See the package documentation.
// It is not safe for concurrent use: a host serialises its calls.
type Runtime struct {
	c        *topology.Cluster
	sched    gpusched.Scheduler
	name     string
	observer gpusched.CompletionObserver
	forget   forgetter
	opt      Options
	restore  float64
	reconf   float64 // restore time of a plan change
	ck       float64
	now      float64

	ids   map[gpusched.JobID]*Entry
	seq   uint64
	block []Entry // entries not handed out yet (see newEntry)

	// Pending jobs in submission order: their statuses live in pbuf[plo:phi], their entries in
	// pent[plo:phi]. Both ends can move, so that removing jobs near the head of a long queue
	// costs little.
	pbuf     []gpusched.JobStatus
	pent     []*Entry
	pseq     []uint64 // pent[i].seq, for binary searches that touch no entry
	plo, phi int

	running      []*Entry // ascending seq
	runningStale bool     // running holds jobs that left (compacted lazily)
	busy         int      // GPUs held
	parked       []*Entry
	unavailable  topology.GPUSet
	nUnavail     int
	view         gpusched.View

	// The running jobs' hot fields (see runHot): runSlot[i] is the slot in hot of running[i]
	// (kept in step with running), hotFree the free slots.
	hot     []runHot
	runSlot []int32
	hotFree []int32
	runSeqs []uint64 // running[i].seq, in step with running: positions found without reading entries
	// hotSpare is the other buffer of repackHot; hotDisorder counts the slots taken from
	// hotFree since its last run.
	hotSpare    []runHot
	hotDisorder int

	linkJobs   [][]*Entry // dense link id -> running jobs on the link
	linkOf     []topology.Link
	linkStride int
	load       topology.LinkLoad
	dirty      []*Entry
	dirtyOut   []*Entry

	epoch    uint32
	deltaDec bool // the decision being checked and applied is a delta (KeepOthers)
	// lastDelta: the last decision checked was a delta, so the next view records no runKeys
	lastDelta bool
	hint      int // see find
	gpuStamp  []uint32
	held      topology.GPUSet // GPUs the running jobs hold, kept by link and unlink (View.SetHeld)
	owner     []*Entry        // the running job on each GPU (nil: none), kept by link and unlink
	keptAt    []uint32        // by position in running: epoch of the decision that kept the job there
	runKeys   []runKey        // by position in running, as of the last view: what keeps are checked against
	// runConstrained tells that a running job of the last view is constrained (its GPUs are
	// then checked one by one even when kept).
	runConstrained bool
	hostCPU        []int     // CPU cores a decision gives each server's jobs (nil: not accounted)
	hostMem        []float64 // host memory, likewise
	hostStamp      []uint32  // epoch of hostCPU/hostMem
	scratch        []topology.GPUID
	listed         []*Entry
	preempted      []*Entry
	started        []*Entry

	// broken selects a deliberately wrong variant, for tests that show their properties
	// catch it (export_test.go); zero in every real use.
	broken brokenKind

	ended []*Entry // jobs that left, whose completion waits for delivery

	// The delta of the next view (gpusched.ViewDelta): entries that entered or left the set
	// of jobs in the view since the last Schedule call, the sequence number of the views
	// handed to the scheduler, and whether every submission so far came in arrival order.
	touched    []*Entry
	viewSeq    uint64
	delta      gpusched.ViewDelta
	unordered  bool
	lastArrive float64
	// waitMoved: Report changed the progress of a waiting job since the last view, so the
	// next view's delta says Transitions false (gpusched.ViewDelta.Transitions).
	waitMoved bool
	acts      Actions
	stopBuf   []topology.GPUID // copies of the GPUs that stops release
	stopList  []*Entry         // a delta decision's running jobs that stop or move, in running order
	posBuf    []int            // queue or running positions being removed
	segments  []Segment

	clusterJSON []byte // the cluster's compact JSON form, made at the first SaveState after adopt
	// mark is what the books of the last base held (SaveBase; see incremental.go), lastBooks
	// the size of the books of the last SaveDelta.
	mark      *booksMark
	lastBooks int
	building  *booksMark // the mark of the books that save is writing for a base
}

// New returns a Runtime for the cluster and scheduler of opt.
func New(opt Options) (*Runtime, error) {
	switch {
	case opt.Cluster == nil:
		return nil, fmt.Errorf("%w: no cluster", ErrInvalidOptions)
	case opt.Scheduler == nil:
		return nil, fmt.Errorf("%w: no scheduler", ErrInvalidOptions)
	case math.IsNaN(opt.RestoreTime) || math.IsInf(opt.RestoreTime, 0):
		return nil, fmt.Errorf("%w: restore time %v is not finite", ErrInvalidOptions, opt.RestoreTime)
	case math.IsNaN(opt.ReconfigureTime) || math.IsInf(opt.ReconfigureTime, 0):
		return nil, fmt.Errorf("%w: reconfiguration time %v is not finite", ErrInvalidOptions, opt.ReconfigureTime)
	case !(opt.CheckpointEvery >= 0) || math.IsInf(opt.CheckpointEvery, 0):
		return nil, fmt.Errorf("%w: checkpoint interval %v must be finite and >= 0", ErrInvalidOptions, opt.CheckpointEvery)
	case opt.Rejected > RejectPark:
		return nil, fmt.Errorf("%w: unknown reject policy %d", ErrInvalidOptions, opt.Rejected)
	}
	r := &Runtime{
		sched:   opt.Scheduler,
		name:    SchedulerName(opt.Scheduler),
		opt:     opt,
		restore: max(0, opt.RestoreTime),
		reconf:  max(0, opt.ReconfigureTime),
		ck:      opt.CheckpointEvery,
		ids:     make(map[gpusched.JobID]*Entry),
		load:    make(topology.LinkLoad),
	}
	if opt.ReconfigureTime == 0 {
		r.reconf = r.restore
	}
	if o, ok := opt.Scheduler.(gpusched.CompletionObserver); ok {
		r.observer = o
	}
	if f, ok := opt.Cost.(forgetter); ok {
		r.forget = f
	}
	r.adopt(opt.Cluster)
	return r, nil
}

// SchedulerName returns the name the runtime uses for s in errors: its String method if it
// implements fmt.Stringer, otherwise its Go type.
func SchedulerName(s gpusched.Scheduler) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("%T", s)
}

// adopt sets the cluster and sizes the per-GPU and per-link tables for it. Running jobs must
// be unlinked.
func (r *Runtime) adopt(c *topology.Cluster) {
	r.c = c
	r.clusterJSON = nil
	r.view.Cluster = c
	r.linkStride = max(c.NumServers(), c.NumRacks()) + 1
	r.linkJobs = make([][]*Entry, 3*r.linkStride)
	r.linkOf = make([]topology.Link, 3*r.linkStride)
	for k := range 3 {
		for i := range r.linkStride {
			r.linkOf[k*r.linkStride+i] = topology.Link{Kind: topology.LinkKind(k), Index: i}
		}
	}
	r.gpuStamp = make([]uint32, c.NumGPUs())
	r.held = topology.NewGPUSet(c.NumGPUs())
	r.owner = make([]*Entry, c.NumGPUs())
	r.hostCPU, r.hostMem, r.hostStamp = nil, nil, nil
	for s := range c.NumServers() {
		if sp := c.Server(s); sp.CPUs > 0 || sp.HostMemory > 0 {
			r.hostCPU = make([]int, c.NumServers())
			r.hostMem = make([]float64, c.NumServers())
			r.hostStamp = make([]uint32, c.NumServers())
			break
		}
	}
}

// WakeAt returns the wake-up time the last Schedule call asked for (Actions.WakeAt; 0 for
// none). It is saved with the runtime (SaveState), so that a restarted host knows when to
// call next.
func (r *Runtime) WakeAt() float64 { return r.acts.WakeAt }

// Now returns the runtime's clock: the latest time it was given, in seconds.
func (r *Runtime) Now() float64 { return r.now }

// Cluster returns the current cluster.
func (r *Runtime) Cluster() *topology.Cluster { return r.c }

// SchedulerName returns the name of the runtime's scheduler (see SchedulerName).
//
// Deprecated: call the package function SchedulerName with the scheduler the runtime was
// built with; removed after one release.
func (r *Runtime) SchedulerName() string { return r.name }

// Job returns the entry of job id, if the runtime holds it (waiting, running or parked).
func (r *Runtime) Job(id gpusched.JobID) (*Entry, bool) {
	e, ok := r.ids[id]
	return e, ok
}

// Len returns the number of jobs the runtime holds: waiting, running and parked.
func (r *Runtime) Len() int { return len(r.ids) }

// NumPending returns the number of jobs waiting for GPUs.
func (r *Runtime) NumPending() int { return r.phi - r.plo }

// NumRunning returns the number of jobs holding GPUs.
func (r *Runtime) NumRunning() int {
	r.compactRunning()
	return len(r.running)
}

// Busy returns the number of GPUs that jobs hold.
func (r *Runtime) Busy() int { return r.busy }

// Pending returns the waiting jobs in submission order. The slice belongs to the runtime and
// is valid until its next call.
func (r *Runtime) Pending() []*Entry { return r.pent[r.plo:r.phi] }

// Running returns the running jobs in submission order. The slice belongs to the runtime and
// is valid until its next call.
func (r *Runtime) Running() []*Entry {
	r.compactRunning()
	return r.running
}

// Parked returns the parked jobs in the order they were parked (see RejectPark). The slice
// belongs to the runtime and is valid until its next call.
func (r *Runtime) Parked() []*Entry { return r.parked }

// Unavailable returns the GPUs marked unavailable (Drain, Fail). The set belongs to the
// runtime: it must not be modified.
func (r *Runtime) Unavailable() topology.GPUSet { return r.unavailable }

// Segments returns the placement intervals recorded so far (Options.RecordSegments), in the
// order they ended. The slice belongs to the runtime.
//
// Deprecated: set Options.OnSegment and keep the segments you need; removed after one
// release.
func (r *Runtime) Segments() []Segment { return r.segments }

// clock checks a time given by the host and advances the clock to it.
func (r *Runtime) clock(at float64, what string) error {
	if math.IsNaN(at) || math.IsInf(at, 0) {
		return fmt.Errorf("%w: %s at t=%v s", ErrTime, what, at)
	}
	if at < r.now {
		return fmt.Errorf("%w: %s at t=%v s, before the runtime's clock (t=%v s)", ErrTime, what, at, r.now)
	}
	r.now = at
	return nil
}

// Submit adds a job, waiting, at the tail of the queue. The runtime keeps a copy of j; the
// job's Arrival is the start of its wait. limit, when positive, caps the iterations that
// progress extrapolated from a rate (SetRate) may reach: the job's length, when the host
// knows it (the simulator does; a real host passes 0). Progress the job reports (Report)
// past the limit stands; extrapolation then adds nothing. Submit checks the job's form
// (Job.Validate without a cluster: a job too large for the cluster is the scheduler's to
// reject, and may run once the cluster grows) and that its id is new. Every refusal is a
// *gpusched.JobError naming the job, wrapping the reason (gpusched.ErrInvalidJob,
// gpusched.ErrNoCost, ErrDuplicateJob, or gpusched.ErrInvalidJob for a limit that is NaN).
func (r *Runtime) Submit(j gpusched.Job, limit float64) (*Entry, error) {
	if err := j.Validate(nil); err != nil {
		return nil, gpusched.Reject(j.ID, err)
	}
	if _, dup := r.ids[j.ID]; dup {
		return nil, &gpusched.JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q", ErrDuplicateJob, j.ID)}
	}
	if math.IsNaN(limit) {
		return nil, &gpusched.JobError{Job: j.ID, Err: fmt.Errorf("%w: job %q: iteration limit is NaN", gpusched.ErrInvalidJob, j.ID)}
	}
	if !(limit > 0) {
		limit = math.Inf(1)
	}
	e := r.newEntry()
	r.seq++
	e.seq = r.seq
	e.job = j
	e.id = j.ID
	e.ngpus = int32(j.GPUs)
	e.constrained = j.Constrained()
	e.limit = limit
	e.phase = phasePending
	e.since = j.Arrival
	e.segAt = j.Arrival
	r.ids[j.ID] = e
	r.pushPendingTail(e)
	r.touch(e)
	if j.Arrival < r.lastArrive {
		r.unordered = true
	}
	r.lastArrive = max(r.lastArrive, j.Arrival)
	return e, nil
}

// touch logs that e entered or left the set of jobs in the view, or changed between waiting
// and running.
func (r *Runtime) touch(e *Entry) {
	if !e.logged {
		e.logged = true
		r.touched = append(r.touched, e)
	}
}

// Resumption is the state of a job that a restarted host takes over: what the host knows of
// it from the cluster (which GPUs its workers hold, its progress) or from its own records.
type Resumption struct {
	// Status is the job's status at time At as a view shows it: GPUs (nil for a waiting
	// job), Iterations, Executed, Attained, Started, FirstStart, Since and Preemptions.
	// Status.Job is ignored: the runtime copies the job passed to Resume.
	Status gpusched.JobStatus
	// At is the time of the status, in seconds; the runtime's clock moves to it.
	At float64
	// RestoreEnd is, for a running job still restoring its checkpoint, when it will be done
	// (0: not restoring).
	RestoreEnd float64
	// Limit caps extrapolated progress, as Submit's limit does (0: none).
	Limit float64
}

// Resume adds a job in the state res describes, at the tail of the submission order: a
// restarted host calls it for every job it held, in their original submission order, so that
// its views are the old runtime's views and a scheduler restored from saved state
// (gpusched.Stateful) decides as the old one would have. A running job's GPUs must exist, be
// distinct, be as many as it needs, and be held by no other job; they may be unavailable (a
// server being drained: Drain it again). The job's preemptions and interruptions are all
// counted as preemptions; its last checkpoint is taken to be its progress at At.
func (r *Runtime) Resume(j gpusched.Job, res Resumption) (*Entry, error) {
	st := &res.Status
	if err := r.clock(res.At, "Resume"); err != nil {
		return nil, err
	}
	for _, v := range []float64{st.Iterations, st.Executed, st.Attained, st.FirstStart, st.Since, res.RestoreEnd} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: job %q: resumed with a status that is not finite and >= 0: %+v", gpusched.ErrInvalidJob, j.ID, res)
		}
	}
	if st.Preemptions > math.MaxInt32 {
		return nil, fmt.Errorf("%w: job %q: resumed with %d preemptions (at most %d)", gpusched.ErrInvalidJob, j.ID, st.Preemptions, math.MaxInt32)
	}
	if st.GPUs != nil {
		if n := j.GPUsFor(st.PlanChoice); len(st.GPUs) != n {
			if n == 0 {
				return nil, fmt.Errorf("%w: resumed job %q under plan choice %d", gpusched.ErrPlanChoice, j.ID, st.PlanChoice)
			}
			return nil, fmt.Errorf("%w: resumed job %q needs %d GPUs, holds %d", gpusched.ErrGPUCount, j.ID, n, len(st.GPUs))
		}
		seen := topology.NewGPUSet(r.c.NumGPUs())
		for _, g := range st.GPUs {
			if err := r.c.Check(g); err != nil {
				return nil, fmt.Errorf("resumed job %q: %w", j.ID, err)
			}
			if seen.Contains(g) {
				return nil, fmt.Errorf("%w: resumed job %q holds GPU %d twice", gpusched.ErrDoubleBooked, j.ID, g)
			}
			seen.Add(g)
		}
		r.compactRunning()
		for _, o := range r.running {
			for _, g := range o.gpus {
				if seen.Contains(g) {
					return nil, fmt.Errorf("%w: resumed job %q on GPU %d, which job %q holds", gpusched.ErrDoubleBooked, j.ID, g, o.id)
				}
			}
		}
	}
	e, err := r.Submit(j, res.Limit)
	if err != nil {
		return nil, err
	}
	e.done, e.executed, e.attained = st.Iterations, st.Executed, st.Attained
	if st.GPUs != nil {
		e.setPlan(st.PlanChoice)
	}
	e.started, e.firstStart, e.since, e.preempt = st.Started || st.GPUs != nil, st.FirstStart, st.Since, int32(st.Preemptions)
	e.segAt = res.At
	if st.GPUs == nil {
		r.pbuf[r.phi-1] = e.pendingStatus()
		return e, nil
	}
	// From the queue's tail to the running jobs.
	r.phi--
	r.pbuf[r.phi], r.pent[r.phi], r.pseq[r.phi] = gpusched.JobStatus{}, nil, 0
	e.phase = phaseRunning
	e.gpus = append(e.gpus[:0], st.GPUs...)
	e.placedAt, e.segStart = res.At, res.At
	e.restoreEnd = res.RestoreEnd
	e.maxSpan = r.c.ServersSpanned(e.gpus)
	e.checkpoint()
	r.busy += int(e.ngpus)
	r.appendRunning(e) // the latest submission: the end of the order
	r.link(e)
	return e, nil
}

// newEntry returns a new entry. Entries are allocated in small blocks so that jobs submitted
// together lie together in memory (the view walks the running ones at every call); a block
// is reclaimed once none of its entries is referenced, and no entry is ever reused.
func (r *Runtime) newEntry() *Entry {
	if len(r.block) == 0 {
		r.block = make([]Entry, entryBlock)
	}
	e := &r.block[0]
	r.block = r.block[1:]
	return e
}

// entryBlock is the number of entries allocated at once.
const entryBlock = 32

// pushPendingTail appends e, which must come after every pending job in submission order.
func (r *Runtime) pushPendingTail(e *Entry) {
	if r.phi == len(r.pbuf) {
		r.growPending(1)
	}
	r.pbuf[r.phi] = e.pendingStatus()
	r.pent[r.phi] = e
	r.pseq[r.phi] = e.seq
	r.phi++
}

// growPending makes room for k more entries after phi.
func (r *Runtime) growPending(k int) {
	n := r.phi - r.plo
	if r.phi+k <= len(r.pbuf) {
		return
	}
	if r.plo > 0 && n+k <= len(r.pbuf)/2 {
		copy(r.pbuf, r.pbuf[r.plo:r.phi])
		copy(r.pent, r.pent[r.plo:r.phi])
		copy(r.pseq, r.pseq[r.plo:r.phi])
		clear(r.pbuf[n:r.phi])
		clear(r.pent[n:r.phi])
		r.plo, r.phi = 0, n
		return
	}
	size := max(64, 2*(n+k))
	nb := make([]gpusched.JobStatus, size)
	ne := make([]*Entry, size)
	ns := make([]uint64, size)
	copy(nb, r.pbuf[r.plo:r.phi])
	copy(ne, r.pent[r.plo:r.phi])
	copy(ns, r.pseq[r.plo:r.phi])
	r.pbuf, r.pent, r.pseq = nb, ne, ns
	r.plo, r.phi = 0, n
}

// removeLeaving removes from the queue the pending jobs at the ascending positions pos (those
// whose act is actStart or actReject), moving as few entries as possible and without reading
// the entries that stay (a block move per gap between removed positions).
func (r *Runtime) removeLeaving(pos []int) {
	k := len(pos)
	if k == 0 {
		return
	}
	if pos[k-1]-r.plo <= r.phi-pos[0] {
		// Compact towards the tail: the entries before each removed one move right by the
		// number of removed positions from it on.
		for j := k - 1; j >= 0; j-- {
			lo := r.plo
			if j > 0 {
				lo = pos[j-1] + 1
			}
			sh := k - j
			copy(r.pbuf[lo+sh:pos[j]+sh], r.pbuf[lo:pos[j]])
			copy(r.pent[lo+sh:pos[j]+sh], r.pent[lo:pos[j]])
			copy(r.pseq[lo+sh:pos[j]+sh], r.pseq[lo:pos[j]])
		}
		clear(r.pbuf[r.plo : r.plo+k])
		clear(r.pent[r.plo : r.plo+k])
		r.plo += k
		return
	}
	// Compact towards the head: the entries after each removed one move left by the number of
	// removed positions up to it.
	for j := range k {
		hi := r.phi
		if j+1 < k {
			hi = pos[j+1]
		}
		sh := j + 1
		copy(r.pbuf[pos[j]+1-sh:hi-sh], r.pbuf[pos[j]+1:hi])
		copy(r.pent[pos[j]+1-sh:hi-sh], r.pent[pos[j]+1:hi])
		copy(r.pseq[pos[j]+1-sh:hi-sh], r.pseq[pos[j]+1:hi])
	}
	clear(r.pbuf[r.phi-k : r.phi])
	clear(r.pent[r.phi-k : r.phi])
	r.phi -= k
}

// insertPending merges the entries of ins (ascending seq) into the queue in submission order.
func (r *Runtime) insertPending(ins []*Entry) {
	k := len(ins)
	r.growPending(k)
	i, w := r.phi-1, r.phi+k-1
	for j := k - 1; j >= 0; w-- {
		if i >= r.plo && r.pseq[i] > ins[j].seq {
			r.pbuf[w], r.pent[w], r.pseq[w] = r.pbuf[i], r.pent[i], r.pseq[i]
			i--
		} else {
			r.pbuf[w], r.pent[w], r.pseq[w] = ins[j].pendingStatus(), ins[j], ins[j].seq
			j--
		}
	}
	r.phi += k
}

// pendingPos returns the queue position of pending entry e.
func (r *Runtime) pendingPos(e *Entry) int {
	p, ok := slices.BinarySearch(r.pseq[r.plo:r.phi], e.seq)
	if !ok {
		panic(fmt.Sprintf("host: pending job %q not in queue", e.id))
	}
	return r.plo + p
}

// runningPos returns the position of running entry e in r.running (compacted).
func (r *Runtime) runningPos(e *Entry) int {
	p, _ := slices.BinarySearch(r.runSeqs, e.seq)
	return p
}

// compactRunning drops the jobs that left from r.running.
func (r *Runtime) compactRunning() {
	if r.runningStale {
		r.dropStopped()
		r.runningStale = false
	}
}

// lookup returns the entry of a job the runtime holds.
func (r *Runtime) lookup(id gpusched.JobID) (*Entry, error) {
	e, ok := r.ids[id]
	if !ok {
		return nil, fmt.Errorf("%w: job %q", ErrUnknownJob, id)
	}
	return e, nil
}

// SetRate sets a running job's time per iteration (sc.Time seconds; 0: unknown, no
// extrapolation) and cross-server bytes per iteration from time at on, folding its progress
// in up to at. Hosts that time jobs with a cost model call it for the jobs of TakeDirty, with
// the cost model's StepCost for the job's GPUs and LinkLoad; the simulator does.
func (r *Runtime) SetRate(e *Entry, at float64, sc gpusched.StepCost) error {
	if e.phase != phaseRunning {
		return fmt.Errorf("%w: SetRate on job %q, which is not running", ErrState, e.id)
	}
	if at != r.now {
		if err := r.clock(at, "SetRate"); err != nil {
			return err
		}
	}
	if !(sc.Time >= 0) || math.IsInf(sc.Time, 0) || !(sc.CrossServerBytes >= 0) || math.IsInf(sc.CrossServerBytes, 0) {
		return fmt.Errorf("%w: job %q: step time %v s and %v cross-server bytes (need finite values >= 0)",
			gpusched.ErrInvalidJob, e.id, sc.Time, sc.CrossServerBytes)
	}
	e.settle(at, r.ck)
	e.step, e.xbytes = sc.Time, sc.CrossServerBytes
	r.syncHot(e)
	return nil
}

// Report sets a job's progress to iterations done at time at, as the real job reports it.
// Time held and attained service are the runtime's own (they follow from when the job holds
// GPUs); iterations may go down (a host that restores a job from an older checkpoint).
func (r *Runtime) Report(id gpusched.JobID, at, iterations float64) error {
	e, err := r.lookup(id)
	if err != nil {
		return err
	}
	if !(iterations >= 0) || math.IsInf(iterations, 0) {
		return fmt.Errorf("%w: job %q: reported %v iterations (need a finite number >= 0)", gpusched.ErrInvalidJob, id, iterations)
	}
	if err := r.clock(at, "Report"); err != nil {
		return err
	}
	e.settle(at, r.ck)
	if e.phase == phasePending && e.done != iterations && r.broken != brokenWaitMoved {
		r.waitMoved = true
	}
	e.done = iterations
	if e.phase == phasePending {
		r.pbuf[r.pendingPos(e)].Iterations = iterations
	}
	r.syncHot(e)
	return nil
}

// Checkpoint records that running job id saved a checkpoint at time at, of its progress then:
// an interruption later rolls it back to no less. (With Options.CheckpointEvery the runtime
// also models periodic checkpoints itself.)
func (r *Runtime) Checkpoint(id gpusched.JobID, at float64) error {
	e, err := r.lookup(id)
	if err != nil {
		return err
	}
	if e.phase != phaseRunning {
		return fmt.Errorf("%w: Checkpoint of job %q, which is not running", ErrState, id)
	}
	if err := r.clock(at, "Checkpoint"); err != nil {
		return err
	}
	e.settle(at, r.ck)
	e.checkpoint()
	r.syncHot(e)
	return nil
}

// Finish reports that job id finished its training at time at after the given number of
// iterations (its length; 0 or less: the progress the runtime has). It leaves the runtime:
// its GPUs are free, the cost model forgets it, and its completion is delivered to a
// CompletionObserver scheduler before the next Schedule call (or by Deliver). killed marks a
// job that ended without finishing its training (gpusched.Completion.Killed).
func (r *Runtime) Finish(id gpusched.JobID, at, iterations float64, killed bool) error {
	e, err := r.lookup(id)
	if err != nil {
		return err
	}
	if math.IsNaN(iterations) || math.IsInf(iterations, 0) {
		return fmt.Errorf("%w: job %q finished after %v iterations", gpusched.ErrInvalidJob, id, iterations)
	}
	if err := r.clock(at, "Finish"); err != nil {
		return err
	}
	e.settle(at, r.ck)
	if iterations > 0 {
		if rest := iterations - e.done; rest > 0 {
			e.bytes += rest * e.xbytes
		}
		e.done = iterations
	}
	e.killed = killed
	r.leave(e)
	return nil
}

// Cancel removes job id at time at, with the progress it has: the job's owner cancelled it or
// it failed for good. It is reported as a killed completion.
func (r *Runtime) Cancel(id gpusched.JobID, at float64) error {
	return r.Finish(id, at, 0, true)
}

// leave takes e out of the runtime at r.now: off its GPUs or out of the queue, forgotten by
// the cost model, queued for delivery.
func (r *Runtime) leave(e *Entry) {
	switch e.phase {
	case phaseRunning:
		r.closeSegment(e, false)
		r.unlink(e)
		r.busy -= int(e.ngpus)
		// Out of r.running by position (its order by submission holds with stale entries in
		// it), not by a later scan of every running job.
		p := r.runningPos(e)
		r.freeHotAt(p)
		r.posBuf = append(r.posBuf[:0], p)
		r.deleteRunning(r.posBuf)
	case phasePending:
		r.posBuf = append(r.posBuf[:0], r.pendingPos(e))
		r.removeLeaving(r.posBuf)
	case phaseParked:
		r.parked = slices.DeleteFunc(r.parked, func(x *Entry) bool { return x == e })
	}
	r.depart(e)
}

// depart records that e, out of every list, left the runtime at r.now.
func (r *Runtime) depart(e *Entry) {
	e.phase = phaseDone
	e.ended = r.now
	r.touch(e)
	e.gpus = e.gpus[:0]
	delete(r.ids, e.id)
	if r.forget != nil {
		r.forget.Forget(&e.job)
	}
	r.ended = append(r.ended, e)
}

// Deliver tells a CompletionObserver scheduler of every job that left since the last
// delivery, in the order they left, and drops the runtime's last references to their entries.
// Schedule calls it first
// unless Options.DeferCompletions is set. It must not run concurrently with another call.
func (r *Runtime) Deliver() {
	for i, e := range r.ended {
		if r.observer != nil {
			c := gpusched.Completion{Job: &e.job, Time: e.ended, Iterations: e.done, Killed: e.killed}
			if p := e.productive - e.lostProd; p > 0 && e.done > 0 {
				c.StepTime = p / e.done
			}
			r.observer.JobCompleted(c)
		}
		r.ended[i] = nil
	}
	r.ended = r.ended[:0]
}

// Drain marks GPUs unavailable: no job may start on them, and the next decision must move or
// preempt the jobs that hold them (View.Unavailable). Return makes them available again.
func (r *Runtime) Drain(gpus ...topology.GPUID) error {
	for _, g := range gpus {
		if err := r.c.Check(g); err != nil {
			return err
		}
	}
	for _, g := range gpus {
		if !r.unavailable.Contains(g) {
			r.unavailable.Add(g)
			r.nUnavail++
		}
	}
	return nil
}

// Return makes GPUs available again after Drain or Fail.
func (r *Runtime) Return(gpus ...topology.GPUID) error {
	for _, g := range gpus {
		if err := r.c.Check(g); err != nil {
			return err
		}
	}
	for _, g := range gpus {
		if r.unavailable.Contains(g) {
			r.unavailable.Remove(g)
			r.nUnavail--
		}
	}
	return nil
}

// Fail marks GPUs unavailable at time at because they failed, and interrupts every job that
// holds one of them (see Interrupt). It returns the stops the host must carry out (the
// failed jobs' other GPUs are freed), in submission order; the slice belongs to the runtime
// and is valid until its next call.
func (r *Runtime) Fail(at float64, gpus ...topology.GPUID) ([]Action, error) {
	if err := r.clock(at, "Fail"); err != nil {
		return nil, err
	}
	if err := r.Drain(gpus...); err != nil {
		return nil, err
	}
	r.acts.Steps = r.acts.Steps[:0]
	r.stopBuf = r.stopBuf[:0]
	failed := topology.SetOf(gpus...)
	r.compactRunning()
	for _, e := range r.running {
		for _, g := range e.gpus {
			if failed.Contains(g) {
				r.acts.Steps = append(r.acts.Steps, Action{Kind: Stop, Job: e.id, GPUs: r.keepGPUs(e.gpus), Interrupted: true})
				r.interrupt(e)
				break
			}
		}
	}
	r.compactRunning()
	return r.acts.Steps, nil
}

// Interrupt stops running job id at time at outside a decision: its server failed, or the
// host had to evict it. The job waits again; its progress goes back to its last checkpoint
// (Options.CheckpointEvery, Checkpoint, or its placement), the progress thrown away is counted
// (Stats.LostIterations, LostGPUTime), and its next start pays the restore time. The view
// counts it among the job's preemptions.
func (r *Runtime) Interrupt(id gpusched.JobID, at float64) error {
	e, err := r.lookup(id)
	if err != nil {
		return err
	}
	if e.phase != phaseRunning {
		return fmt.Errorf("%w: Interrupt of job %q, which is not running", ErrState, id)
	}
	if err := r.clock(at, "Interrupt"); err != nil {
		return err
	}
	r.interrupt(e)
	r.compactRunning()
	return nil
}

// interrupt stops running entry e at r.now, rolling it back to its last checkpoint, and puts
// it back in the queue. r.running is left stale.
func (r *Runtime) interrupt(e *Entry) {
	e.settle(r.now, r.ck)
	if r.broken == brokenNoRollback {
		e.ckDone, e.ckProd = e.done, e.productive
	}
	if lost := e.done - e.ckDone; lost > 0 {
		e.lostIters += lost
		e.done = e.ckDone
	}
	if lp := e.productive - e.ckProd; lp > 0 {
		e.lostProd += lp
		e.lostGPU += lp * float64(e.ngpus)
	}
	r.closeSegment(e, true)
	r.unlink(e)
	r.busy -= int(e.ngpus)
	e.phase = phasePending
	r.touch(e)
	e.gpus = e.gpus[:0]
	e.step = 0
	e.since = r.now
	e.interr++
	r.freeHotAt(r.runningPos(e))
	r.runningStale = true
	r.insertPending([]*Entry{e})
}

// link adds e's GPUs to the held set and e to the links of its placement, and marks the other
// jobs there dirty.
func (r *Runtime) link(e *Entry) {
	for _, g := range e.gpus {
		r.held.Add(g)
		r.owner[g] = e
	}
	e.links = e.links[:0]
	for _, l := range r.c.Links(e.gpus) {
		id := int32(int(l.Kind)*r.linkStride + l.Index)
		e.links = append(e.links, id)
		for _, o := range r.linkJobs[id] {
			r.markDirty(o)
		}
		r.linkJobs[id] = append(r.linkJobs[id], e)
	}
	r.markDirty(e)
}

// unlink takes e's GPUs out of the held set and e out of its links, and marks the other jobs
// there dirty.
func (r *Runtime) unlink(e *Entry) {
	for _, g := range e.gpus {
		if r.broken != brokenHeld {
			r.held.Remove(g)
		}
		if r.owner[g] == e {
			r.owner[g] = nil
		}
	}
	for _, id := range e.links {
		list := r.linkJobs[id]
		for k, o := range list {
			if o == e {
				list = slices.Delete(list, k, k+1)
				break
			}
		}
		r.linkJobs[id] = list
		for _, o := range list {
			r.markDirty(o)
		}
	}
	e.links = e.links[:0]
}

func (r *Runtime) markDirty(e *Entry) {
	if !e.dirty {
		e.dirty = true
		r.dirty = append(r.dirty, e)
		if n := len(r.dirty); n > 64 && n > 2*len(r.running) {
			// A host that never calls TakeDirty: keep the list to the running jobs.
			r.dirty = slices.DeleteFunc(r.dirty, func(x *Entry) bool {
				if x.phase != phaseRunning {
					x.dirty = false
					return true
				}
				return false
			})
		}
	}
}

// TakeDirty returns the running jobs whose speed may have changed since the last call: those
// placed or migrated, and those whose shared links gained or lost a job. A host that times
// jobs with a cost model gives each a new rate (SetRate) from its StepCost under LinkLoad.
// The slice belongs to the runtime and is valid until the next TakeDirty.
func (r *Runtime) TakeDirty() []*Entry {
	clear(r.dirtyOut)
	r.dirtyOut = r.dirtyOut[:0]
	for _, e := range r.dirty {
		e.dirty = false
		if e.phase == phaseRunning {
			r.dirtyOut = append(r.dirtyOut, e)
		}
	}
	clear(r.dirty)
	r.dirty = r.dirty[:0]
	return r.dirtyOut
}

// LinkLoad returns the load on the shared links of running job e: for each link of its
// placement (Cluster.Links) that other running jobs use, their number. It returns nil when
// no other job shares a link with e. The map belongs to the runtime and is valid until the
// next LinkLoad call.
func (r *Runtime) LinkLoad(e *Entry) topology.LinkLoad {
	if len(e.links) == 0 {
		return nil
	}
	clear(r.load)
	for _, id := range e.links {
		if k := len(r.linkJobs[id]) - 1; k > 0 {
			r.load[r.linkOf[id]] = float64(k)
		}
	}
	if len(r.load) == 0 {
		return nil
	}
	return r.load
}

// keepGPUs copies gpus into the buffer of released GPUs, for an Action.
func (r *Runtime) keepGPUs(gpus []topology.GPUID) []topology.GPUID {
	off := len(r.stopBuf)
	r.stopBuf = append(r.stopBuf, gpus...)
	return r.stopBuf[off:len(r.stopBuf):len(r.stopBuf)]
}

func (r *Runtime) closeSegment(e *Entry, interrupted bool) {
	if !r.opt.RecordSegments && r.opt.OnSegment == nil {
		return
	}
	seg := Segment{
		Job: e.id, Start: e.segStart, End: r.now,
		RestoreEnd:  min(max(e.restoreEnd, e.segStart), r.now),
		GPUs:        slices.Clone(e.gpus),
		Interrupted: interrupted,
	}
	if r.opt.RecordSegments {
		r.segments = append(r.segments, seg)
	}
	if r.opt.OnSegment != nil {
		r.opt.OnSegment(seg)
	}
}
