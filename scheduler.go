package gpusched

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpusched/gpusched/topology"
)

// JobStatus is what a scheduler may know about one job at the time of a View: the job, where
// it runs (if it does) and the service it has received so far. It never holds the job's true
// length.
type JobStatus struct {
	// Job is the job. Schedulers must not modify it.
	Job *Job
	// GPUs is the job's current placement, one GPU per worker in worker order; nil while the
	// job waits.
	GPUs []topology.GPUID
	// Iterations is the number of iterations done so far.
	Iterations float64
	// Executed is the time in seconds the job has held GPUs so far, over all its runs.
	Executed float64
	// Attained is the service received so far in GPU-seconds: the sum over its runs of GPUs held
	// times time held (Tiresias' "attained service").
	Attained float64
	// Started tells whether the job has ever run; FirstStart is when it first did.
	Started    bool
	FirstStart float64
	// Since is the time the job entered its current state: started or resumed (running jobs),
	// arrived or was preempted (waiting jobs).
	Since float64
	// Preemptions counts how often the job was stopped before finishing.
	Preemptions int
	// PlanChoice is the plan the running job runs under (see Assignment.PlanChoice); 0 for
	// waiting jobs and jobs that are not reconfigurable.
	PlanChoice int
}

// View is what a scheduler may see at one instant: the time, the cluster, the GPUs that may not
// be used, and the jobs that have arrived and not finished, split into those waiting and those
// running.
//
// The contract between a host and a scheduler:
//   - Every job the host has accepted and that has not finished or been cancelled is in the
//     view, pending or running, under the same JobID at every call. A job that was in an
//     earlier view and is absent from this one has left the host: a scheduler forgets it as if
//     it had been cancelled (hosts report finished jobs through CompletionObserver before the
//     next call; a job absent without a report is taken as cancelled and teaches no predictor).
//   - A job's description (the Job a status points to) does not change while the job is in the
//     host's hands. Schedulers key what they keep by JobID, never by pointer.
//   - The cluster may change between calls: servers join and leave (a new Cluster, whose GPU ids
//     the placements of this view use), and GPUs become unavailable and available again
//     (Unavailable). Jobs that ran on GPUs that left are pending in the view; the host has
//     stopped them.
//   - A View and everything it points to belong to the host and are valid only during the
//     Schedule call that receives it: schedulers must not modify them or keep them (or slices
//     of them) after the call.
type View struct {
	// Now is the current time in seconds.
	Now float64
	// Cluster is the cluster being scheduled.
	Cluster *topology.Cluster
	// Unavailable are GPUs that no job may hold from this decision on: failed, drained or
	// reserved by the host. A running job may hold some (a server being drained): the decision
	// must preempt it or move it off them. The zero set means every GPU is available.
	Unavailable topology.GPUSet
	// Pending are the jobs waiting for GPUs (never started or preempted), in arrival order.
	Pending []JobStatus
	// Running are the jobs holding GPUs.
	Running []JobStatus
	// Delta, when not nil, tells what changed in the set of jobs since the previous view of
	// the same host, so that a scheduler can keep its per-job state up to date in time
	// independent of the queue's length. nil: unknown (a scheduler rescans the view).
	Delta *ViewDelta
	// AcceptsKeepOthers tells that the host applies delta decisions (Decision.KeepOthers). A
	// scheduler may return a delta only for a view that says so, and returns the full form
	// otherwise, so that a host written before the delta form, or one that reads Decision.Run
	// as the complete desired state, keeps getting it. Package host sets it; a wrapper that
	// hands its inner scheduler a view of its own keeps it only if it handles deltas too
	// (Decision.Expand turns one into the full form).
	AcceptsKeepOthers bool

	// held is the host's record of the GPUs Running holds (SetHeld); zero: none.
	held heldRecord
}

// heldRecord is a host's account of the GPUs a view's running jobs hold, valid only for the
// Running slice and Cluster it was recorded with.
type heldRecord struct {
	gpus     topology.GPUSet
	running  *JobStatus // first element of Running when recorded
	nRunning int
	cluster  *topology.Cluster
}

// SetHeld records, for Free, the GPUs that the view's running jobs hold, as the host keeps
// them, so that Free does not walk every running job at every call. held must be exactly the
// union of Running's GPUs (Validate checks it) and must not change during the call. The record
// holds only for this Running slice and Cluster: a copy of the view whose Running is another
// slice or length, or whose Cluster differs, computes Free from its own jobs.
func (v *View) SetHeld(held topology.GPUSet) {
	v.held = heldRecord{gpus: held, running: unsafe.SliceData(v.Running), nRunning: len(v.Running), cluster: v.Cluster}
}

// heldGPUs returns the host's record of the GPUs Running holds, if it holds for this view.
func (v *View) heldGPUs() (topology.GPUSet, bool) {
	h := &v.held
	if h.cluster == nil || h.cluster != v.Cluster || h.nRunning != len(v.Running) || h.running != unsafe.SliceData(v.Running) {
		return topology.GPUSet{}, false
	}
	return h.gpus, true
}

// ViewDelta is a host's account of how a view's set of jobs differs from its previous view.
// A scheduler may use it only if it saw that previous view: same Source, Seq one more than the
// Seq it saw last. Otherwise (its first view, a view of another host, a view it missed) it
// rescans the view. Moves between Pending and Running are not listed: Running is bounded by
// the cluster's size, so schedulers compare it themselves.
type ViewDelta struct {
	// Source identifies the host's sequence of views; compare with ==. Hosts use a pointer of
	// their own. A value == cannot compare (a slice, a map, a struct holding one) identifies
	// nothing: this module's schedulers rescan such a view rather than panic.
	Source any
	// Seq numbers the view in its sequence: 1 for the first.
	Seq uint64
	// Arrived are the statuses, in this view's Pending or Running, of the jobs that were not
	// in the previous view (submitted since, or back from being set aside).
	Arrived []*JobStatus
	// Left are the jobs of the previous view that are absent from this one (finished,
	// cancelled, rejected or set aside).
	Left []JobID
	// ArrivalOrder tells that Pending is in non-decreasing order of Job.Arrival (the View
	// asks for it; a host sets this when it guarantees it), so a scheduler need not check.
	ArrivalOrder bool
	// Transitions tells that Started and Stopped are filled: with it, a scheduler learns
	// which of the previous view's jobs changed between waiting and running without comparing
	// the two views' running jobs. Without it (a host that does not track them), both are
	// empty and say nothing. It also tells that no job that waits in both views changed its
	// progress (JobStatus.Iterations) between them, so that a scheduler may keep waiting jobs'
	// progress from view to view: a host that set a waiting job's progress (package host's
	// Runtime.Report of a late report, or of a restore from an older checkpoint) leaves it
	// false for the next view.
	Transitions bool
	// Started are the statuses, in this view's Running, of the jobs that waited in the
	// previous view (Transitions).
	Started []*JobStatus
	// Stopped are the statuses, in this view's Pending, of the jobs that ran in the previous
	// view (Transitions): preempted, interrupted or moved off GPUs taken away.
	Stopped []*JobStatus
}

// Free returns the set of GPUs that no running job holds and that are not Unavailable: where
// jobs may start. A view without a cluster has none.
func (v *View) Free() topology.GPUSet {
	if v.Cluster == nil {
		return topology.GPUSet{}
	}
	free := v.Cluster.AllGPUs()
	if held, ok := v.heldGPUs(); ok {
		free.RemoveAll(held)
		free.RemoveAll(v.Unavailable)
		return free
	}
	for i := range v.Running {
		for _, g := range v.Running[i].GPUs {
			free.Remove(g)
		}
	}
	free.RemoveAll(v.Unavailable)
	return free
}

// Available returns the number of GPUs of the cluster that are not Unavailable (0 for a view
// without a cluster).
func (v *View) Available() int {
	if v.Cluster == nil {
		return 0
	}
	n := v.Cluster.NumGPUs()
	v.Unavailable.Range(func(g topology.GPUID) bool {
		if v.Cluster.Check(g) == nil {
			n--
		}
		return true
	})
	return n
}

// Validate checks the view itself (a host's duty): a cluster, no job both pending and running or
// listed twice, every running job on exactly its demand of distinct, existing GPUs that no other
// job holds, and no placement on a pending job. Hosts call it in tests and debug builds.
func (v *View) Validate() error {
	if v.Cluster == nil {
		return fmt.Errorf("%w: no cluster", ErrInvalidView)
	}
	if math.IsNaN(v.Now) || math.IsInf(v.Now, 0) {
		return fmt.Errorf("%w: time %v is not finite", ErrInvalidView, v.Now)
	}
	seen := make(map[JobID]struct{}, len(v.Pending)+len(v.Running))
	for _, list := range [][]JobStatus{v.Pending, v.Running} {
		for i := range list {
			st := &list[i]
			if st.Job == nil {
				return fmt.Errorf("%w: a job status without a job", ErrInvalidView)
			}
			if _, dup := seen[st.Job.ID]; dup {
				return fmt.Errorf("%w: job %q appears twice", ErrInvalidView, st.Job.ID)
			}
			seen[st.Job.ID] = struct{}{}
		}
	}
	for i := range v.Pending {
		if len(v.Pending[i].GPUs) != 0 {
			return fmt.Errorf("%w: pending job %q holds GPUs", ErrInvalidView, v.Pending[i].Job.ID)
		}
	}
	run := make([]Assignment, len(v.Running))
	for i := range v.Running {
		run[i] = Assignment{Job: v.Running[i].Job.ID, GPUs: v.Running[i].GPUs, PlanChoice: v.Running[i].PlanChoice}
	}
	jobs := make(map[JobID]*Job, len(v.Running))
	for i := range v.Running {
		jobs[v.Running[i].Job.ID] = v.Running[i].Job
	}
	if err := checkAssignments(v.Cluster, run, jobs, topology.GPUSet{}); err != nil {
		return fmt.Errorf("%w: running jobs: %w", ErrInvalidView, err)
	}
	if held, ok := v.heldGPUs(); ok {
		var union topology.GPUSet
		for i := range v.Running {
			for _, g := range v.Running[i].GPUs {
				union.Add(g)
			}
		}
		missing := topology.GPUID(-1)
		held.Range(func(g topology.GPUID) bool {
			if !union.Contains(g) {
				missing = g
				return false
			}
			return true
		})
		if missing >= 0 || held.Len() != union.Len() {
			return fmt.Errorf("%w: the host's record of held GPUs (SetHeld) is %v, the running jobs hold %v", ErrInvalidView, held, union)
		}
	}
	return nil
}

// Assignment places one job: GPUs[i] is the GPU of the job's worker i.
type Assignment struct {
	Job  JobID
	GPUs []topology.GPUID
	// PlanChoice chooses the plan of a reconfigurable job (Job.Plans): 0 is the job's own plan,
	// k >= 1 is Plans[k-1] (Job.Option). GPUs holds one GPU per worker of the chosen plan, and
	// the chosen plan's CPUs and HostMemory per worker are taken on the servers of those GPUs.
	// A running job given another choice is restarted under the new plan (a reconfiguration).
	PlanChoice int
}

// Decision is a scheduler's answer: the set of jobs that should run from now on and where. It
// comes in two forms (see the package documentation, "The Decision contract"):
//
//   - Full (KeepOthers false, the default): Run is the complete desired state. A running job
//     that is absent is to be preempted, a pending job that is present is to be started, a
//     running job present with other GPUs or another plan choice is to be migrated (see Diff).
//   - Delta (KeepOthers true): Run lists only what changes (starts, migrations; listing a
//     running job where it runs is allowed and changes nothing), Stop the running jobs to
//     preempt, and every running job of the view that neither Run, Stop nor Rejected mentions
//     keeps its placement and plan choice. Expand gives the full form of the same decision.
//
// An assignment that keeps a job where it runs may share its GPU slice with the View
// (JobStatus.GPUs), so hosts must apply or copy a decision before they change the view's
// slices, and nobody may modify a decision's GPU slices in place.
type Decision struct {
	// Run lists the jobs that should hold GPUs, with their placement: every such job in the
	// full form; with KeepOthers, only those started, moved or re-planned (and any kept job
	// the scheduler chooses to list).
	Run []Assignment
	// KeepOthers makes the decision a delta: every running job of the view that Run, Stop and
	// Rejected do not mention keeps its GPUs and plan choice. A scheduler that changes little
	// per call returns it so that neither it nor the host spends time on every running job.
	KeepOthers bool
	// Stop lists running jobs of the view to preempt (they wait again). It is how a delta
	// decision preempts; in the full form it may be used too and is redundant (a running job
	// absent from Run is preempted anyway). A job in Stop must not be in Run or Rejected.
	Stop []JobID
	// WakeAt, when later than the view's Now, asks the host to call Schedule again no later than
	// that time (in seconds) even if nothing else happens. Zero means no request.
	WakeAt float64
	// Rejected lists the jobs of the view that the scheduler cannot run as described (no cost,
	// more GPUs than the cluster has of the kind they may use, a plan that fits no GPU's memory,
	// a prediction that fails), each with the reason; they are not in Run, and every other job
	// is scheduled as if they were absent. A decision is a statement about the current view, so
	// a job stays listed at every call while it stays in the view and the reason holds (a job
	// too large for a shrunken cluster runs again once the cluster grows back). Hosts report
	// rejected jobs to their owners and usually remove them (Admit catches them up front).
	Rejected []*JobError
}

// Validate checks a decision against the view it answers. It rejects, with an error naming the
// job and GPU: a job the view does not hold (ErrUnknownJob), a job listed twice or both run and
// rejected (ErrDuplicateJob), a placement whose size differs from the job's demand
// (ErrGPUCount), a GPU the cluster lacks (ErrNoSuchGPU), a GPU given twice (ErrDoubleBooked), a
// GPU the job may not use (ErrIneligibleGPU) or that the view marks unavailable
// (ErrUnavailableGPU), a plan choice the job does not offer (ErrPlanChoice), more CPU cores or
// host memory on a server than it has (ErrHostResources), a rejection without a reason, and a
// WakeAt that is NaN. The GPU count checked is that of the assignment's plan choice. A job in
// Stop must be running in the view (ErrUnknownJob otherwise) and mentioned nowhere else in the
// decision (ErrDuplicateJob). A delta decision (KeepOthers) is checked as its full form
// (Expand), so the running jobs it keeps are checked too: on GPUs now unavailable, or beside
// new placements that take their GPUs, they make the decision invalid.
func (d Decision) Validate(v View) error {
	if v.Cluster == nil {
		return fmt.Errorf("%w: no cluster", ErrInvalidView)
	}
	if math.IsNaN(d.WakeAt) {
		return fmt.Errorf("gpusched: decision wake-up time is NaN")
	}
	if len(d.Stop) > 0 || d.KeepOthers {
		if err := d.checkStop(v); err != nil {
			return err
		}
		d = d.Expand(v)
	}
	jobs := make(map[JobID]*Job, len(v.Pending)+len(v.Running))
	for _, list := range [][]JobStatus{v.Pending, v.Running} {
		for i := range list {
			if list[i].Job == nil {
				return fmt.Errorf("%w: a job status without a job", ErrInvalidView)
			}
			jobs[list[i].Job.ID] = list[i].Job
		}
	}
	if err := checkAssignments(v.Cluster, d.Run, jobs, v.Unavailable); err != nil {
		return err
	}
	if len(d.Rejected) == 0 {
		return nil
	}
	listed := make(map[JobID]struct{}, len(d.Run)+len(d.Rejected))
	for _, a := range d.Run {
		listed[a.Job] = struct{}{}
	}
	for _, r := range d.Rejected {
		if r == nil || r.Err == nil {
			return fmt.Errorf("gpusched: decision rejects a job without a reason")
		}
		switch _, dup := listed[r.Job]; {
		case jobs[r.Job] == nil:
			return fmt.Errorf("%w: rejected job %q", ErrUnknownJob, r.Job)
		case dup:
			return fmt.Errorf("%w: job %q is both run and rejected, or rejected twice", ErrDuplicateJob, r.Job)
		}
		listed[r.Job] = struct{}{}
	}
	return nil
}

func checkAssignments(c *topology.Cluster, run []Assignment, jobs map[JobID]*Job, unavailable topology.GPUSet) error {
	owner := make([]int32, c.NumGPUs()) // 0: free; i+1: run[i]
	listed := make(map[JobID]struct{}, len(run))
	host := newHostLoad(c)
	for i, a := range run {
		j, ok := jobs[a.Job]
		if !ok {
			return fmt.Errorf("%w: job %q", ErrUnknownJob, a.Job)
		}
		if _, dup := listed[a.Job]; dup {
			return fmt.Errorf("%w: job %q", ErrDuplicateJob, a.Job)
		}
		listed[a.Job] = struct{}{}
		opt, ok := j.Option(a.PlanChoice)
		if !ok {
			return fmt.Errorf("%w: job %q plan choice %d (it offers 0..%d)", ErrPlanChoice, a.Job, a.PlanChoice, len(j.Plans))
		}
		if n := j.GPUsFor(a.PlanChoice); len(a.GPUs) != n {
			if a.PlanChoice != 0 {
				return fmt.Errorf("%w: job %q needs %d GPUs under plan choice %d (%v), placement has %d",
					ErrGPUCount, a.Job, n, a.PlanChoice, opt.Plan, len(a.GPUs))
			}
			return fmt.Errorf("%w: job %q needs %d GPUs, placement has %d", ErrGPUCount, a.Job, j.GPUs, len(a.GPUs))
		}
		constrained := j.Constrained()
		for w, g := range a.GPUs {
			if c.Check(g) != nil {
				return fmt.Errorf("%w: job %q worker %d on GPU %d (cluster %q has GPUs 0..%d)",
					ErrNoSuchGPU, a.Job, w, g, c.Name(), c.NumGPUs()-1)
			}
			if o := owner[g]; o != 0 {
				other := run[o-1].Job
				if other == a.Job {
					return fmt.Errorf("%w: GPU %d (%s) given to two workers of job %q",
						ErrDoubleBooked, g, c.GPUName(g), a.Job)
				}
				return fmt.Errorf("%w: GPU %d (%s) given to jobs %q and %q",
					ErrDoubleBooked, g, c.GPUName(g), other, a.Job)
			}
			owner[g] = int32(i + 1)
			if unavailable.Contains(g) {
				return fmt.Errorf("%w: job %q worker %d on GPU %d (%s)", ErrUnavailableGPU, a.Job, w, g, c.GPUName(g))
			}
			if constrained && !j.Eligible(c.GPU(g)) {
				return fmt.Errorf("%w: job %q worker %d on GPU %d (%s, %s), job needs type %q with >= %.3g GiB",
					ErrIneligibleGPU, a.Job, w, g, c.GPUName(g), c.GPU(g).Model, j.GPUType, j.MinGPUMemory/(1<<30))
			}
		}
		if err := host.add(j, a.PlanChoice, a.GPUs); err != nil {
			return err
		}
	}
	return nil
}

// Changes is what a host must do to move from a view's state to a decision's.
type Changes struct {
	// Start lists pending jobs to start, with their placement.
	Start []Assignment
	// Preempt lists running jobs to stop (they return to the queue).
	Preempt []JobID
	// Migrate lists running jobs to move to a new placement.
	Migrate []Assignment
	// Keep lists running jobs that stay where they are.
	Keep []JobID
}

// Diff returns the changes that carry out the decision from the view's state. A running job
// whose new placement holds the same GPUs in a different worker order, or that is given another
// plan choice, counts as migrated. The
// decision should have passed Validate. Each list follows the order of d.Run (Preempt: of
// v.Running). Running statuses without a job (which Validate refuses) are ignored. A delta
// decision (KeepOthers) is diffed as its full form (Expand).
func (d Decision) Diff(v View) Changes {
	if d.KeepOthers {
		d = d.Expand(v)
	}
	var ch Changes
	running := make(map[JobID]*JobStatus, len(v.Running))
	for i := range v.Running {
		if v.Running[i].Job != nil {
			running[v.Running[i].Job.ID] = &v.Running[i]
		}
	}
	inRun := make(map[JobID]struct{}, len(d.Run))
	for _, a := range d.Run {
		inRun[a.Job] = struct{}{}
		cur, ok := running[a.Job]
		switch {
		case !ok:
			ch.Start = append(ch.Start, a)
		case slices.Equal(cur.GPUs, a.GPUs) && cur.PlanChoice == a.PlanChoice:
			ch.Keep = append(ch.Keep, a.Job)
		default:
			ch.Migrate = append(ch.Migrate, a)
		}
	}
	for i := range v.Running {
		if v.Running[i].Job == nil {
			continue
		}
		if _, ok := inRun[v.Running[i].Job.ID]; !ok {
			ch.Preempt = append(ch.Preempt, v.Running[i].Job.ID)
		}
	}
	return ch
}

// Scheduler decides which jobs run where. Hosts call Schedule at every event: a job arrives or
// finishes, a requested wake-up time comes. The result is the desired state, which the host
// validates (Decision.Validate) and carries out (Decision.Diff): in the full form, or, only
// when the view accepts it (View.AcceptsKeepOthers), as a delta (see the package
// documentation, "The Decision contract").
//
// A host drives a Scheduler like this:
//
//	for each event at time t {
//		update the job statuses (progress, arrivals, completions)
//		if the job ended, tell the scheduler (CompletionObserver), if it listens
//		d, err := s.Schedule(view at t)
//		if err != nil or d.Validate(view) != nil { keep the current state; report }
//		apply d.Diff(view): preempt, migrate, start
//		if d.WakeAt > t { arrange an event at d.WakeAt }
//	}
//
// A kube-scheduler or Volcano plugin builds the View from its cache of pods and nodes (one Job
// per gang of pods) and turns Changes into bind and evict calls.
//
// A Scheduler that implements fmt.Stringer names itself in reports. Implementations document
// whether they are safe for concurrent use; most keep state between calls and are not.
type Scheduler interface {
	Schedule(v View) (Decision, error)
}

// SchedulerFunc adapts a function to the Scheduler interface.
type SchedulerFunc func(v View) (Decision, error)

// Schedule calls f(v).
func (f SchedulerFunc) Schedule(v View) (Decision, error) { return f(v) }

// Completion reports that a job left the system.
type Completion struct {
	// Job is the job that ended.
	Job *Job
	// Time is when it ended, in seconds.
	Time float64
	// Iterations is the number of iterations it did: its true length when it finished.
	Iterations float64
	// StepTime is the observed mean time per iteration while it ran, in seconds (0: unknown).
	StepTime float64
	// Killed tells that the job was cancelled or failed rather than finishing its training.
	Killed bool
}

// CompletionObserver is implemented by schedulers that learn from finished jobs (A-SRPT's
// predictor). Hosts call JobCompleted once per job that leaves the system, before the next
// Schedule call.
type CompletionObserver interface {
	JobCompleted(c Completion)
}
