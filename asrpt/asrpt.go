package asrpt

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/consolidate"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/srptq"
	"github.com/gpusched/gpusched/internal/viewseq"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// Estimator predicts a job's total number of training iterations.
type Estimator interface {
	// Estimate returns the predicted total iterations of job j given that it has done `done`
	// iterations so far (0 on arrival). For done > 0 it is the conditional estimate used to
	// re-size a job that ran past its prediction, and must exceed done.
	Estimate(j *gpusched.Job, done float64) (float64, error)
}

// Learner is implemented by Estimators that learn from finished jobs.
type Learner interface {
	// Observe records that job j finished after the given number of iterations.
	Observe(j *gpusched.Job, iterations float64) error
}

// Oracle is an Estimator that knows every job's true iterations: the upper reference for
// experiments. Unknown jobs are an error.
type Oracle func(id gpusched.JobID) (iterations float64, ok bool)

// Estimate returns the true iterations of j.
func (o Oracle) Estimate(j *gpusched.Job, done float64) (float64, error) {
	n, ok := o(j.ID)
	if !ok || !(n > 0) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("asrpt: oracle has no iteration count for job %q", j.ID)
	}
	return n, nil
}

// DefaultPatience is the patience (Options.Patience) of the conversions: theta = 8. On
// the shared Philly file overloaded (five of its virtual clusters on 192 GPUs) it takes A-SRPT
// with true sizes from 135 h of mean JCT (the original conversion) to 15.6 h (theta 1: 45 h;
// theta 2: 16 h); on three other virtual clusters overloaded on 48 GPUs, from 157 h to 14.6 h,
// where theta 2 still left 53 h: under sustained overload a small patience lets the backlog
// become overdue and served in order of virtual completion again. It costs 8 mu in the
// competitive ratio (see the package documentation and BENCHMARKS.md "A-SRPT across workload
// families").
//
// Deprecated: not needed by embedders (leave Options.Patience zero for it); removed in v0.3.0.
const DefaultPatience = 8.0

// Options configure a Scheduler. The zero value is the default A-SRPT: a random-forest
// predictor that learns online, sizes from the default cost model, the remaining-work
// conversion (DefaultPatience), consolidating placement, strict order, immediate preemption,
// re-estimation of overrunning jobs.
type Options struct {
	// Estimator predicts iterations. Default: a Forest over predict.New(ForestOptions(1)). Use an
	// Oracle for experiments with true sizes.
	Estimator Estimator
	// Cost gives per-iteration times; a job's time per iteration at its best placement (all GPUs
	// free, consolidated by Pack) sizes it. Default: gpusched.DefaultCost() (the model's cost
	// for jobs with a model, Job.StepTime for the others). Pass the host's cost model so that
	// A-SRPT sizes jobs as the host runs them. With idle links it must be a function of its
	// arguments (every CostModel of this module is): consolidation remembers its answers.
	Cost gpusched.CostModel
	// Placer places jobs on free GPUs, and proposes the targets of consolidating migrations.
	// Default: a Partitioned placer (seed 1), which places jobs with a model by their worker
	// graph and consolidates the others. gpusched.Pack is the simple alternative.
	Placer gpusched.Placer
	// Backfill lets lower-priority jobs start on GPUs that the priority prefix leaves free.
	// Off (strict order) is the variant of the paper's analysis; the bound in the package
	// documentation holds with backfilling too as long as preemption is immediate.
	Backfill bool
	// NoPreemption forbids stopping running jobs: a job that does not fit waits for GPUs to be
	// released. The competitive bound needs preemption. Consolidating migrations still
	// interrupt a job for a restore; set NoConsolidate too if jobs must never stop.
	NoPreemption bool
	// MinRunTime is the least time in seconds a job runs after it starts or resumes before
	// A-SRPT may preempt it: the rule against thrashing. A preemption costs the host a
	// checkpoint and restore (30 s in package sim), so a job that just paid it is not stopped
	// again at once. Default 0: preempt whenever priority says so (the analysed variant).
	MinRunTime float64
	// NoReestimate keeps every job's prediction as made on arrival, even when the job runs past
	// it: the variant the competitive bound covers. By default an overrunning job is re-estimated.
	NoReestimate bool
	// ReestimateMargin is how far past its prediction (as a fraction of the prediction) a job
	// must run before it is re-estimated. Default 0.
	ReestimateMargin float64
	// NoConsolidate turns off consolidating migrations. By default, after each decision A-SRPT
	// moves a running job that was resumed scattered over more servers than it needs onto
	// fewer servers, once GPUs free up and its predicted remaining iterations repay the
	// restore cost twice over (package consolidate, with the Cost above). Without it a job
	// resumed on leftover GPUs stays scattered until it finishes.
	NoConsolidate bool
	// RestoreTime is the host's checkpoint/restore cost in seconds, which a consolidating
	// migration must repay. Zero selects 30 s (package sim's default); negative means free.
	RestoreTime float64
	// Patience is theta of the patient and remaining-work conversions (see the package
	// documentation): a job the virtual machine has finished is ordered by its predicted
	// remaining GPU-time, shortest first, until it is theta times its predicted processing time
	// past its virtual completion, and from then on ahead of such jobs, by virtual completion. It keeps a
	// backlog of virtually finished jobs from being served in arrival order when the real
	// cluster lags the virtual machine (overload), at a price of theta mu in the competitive
	// ratio. Zero selects DefaultPatience; negative means none (the original conversion, whose
	// bound is the package documentation's first theorem).
	Patience float64
	// Patient selects the patient conversion (Theorem 2 in the package documentation; the
	// default before v0.2.0) instead of the remaining-work conversion (Theorem 3, the default):
	// every job the virtual machine has finished comes before every job it has not, in place of
	// one order of the jobs that are not overdue by predicted remaining GPU-time over weight.
	// The remaining-work conversion is far less sensitive to prediction errors: on an
	// overloaded Philly slice a 7% size error (lognormal, sigma 0.1) doubled A-SRPT's mean JCT
	// under the patient conversion and costs it 7% under the other (benchmarks/asrpt.md, "The
	// remaining-work conversion", which also gives the families table behind the change of
	// default). No effect with Patience < 0.
	Patient bool
	// Name names the scheduler in reports. Default "asrpt".
	Name string
	// Gittins sizes a job by its Gittins rank under the Estimator's predictive distribution
	// when the Estimator is Distributional, instead of by its point estimate: see GittinsRank
	// and the package documentation, "Predictions as distributions". Off by default: measured
	// on the workload families it did not pay (BENCHMARKS.md).
	Gittins bool
	// Strikes is how many times a job must have run past its prediction (each time
	// re-estimated) before A-SRPT stops trusting its priority: such a job no longer preempts
	// running jobs for its GPUs, and in strict order it no longer holds up the jobs behind it
	// when it cannot start; it starts when GPUs are free. It keeps jobs the predictor keeps
	// under-predicting (long jobs, which report last) from preempting each other in turn at
	// every re-estimation (see the package documentation, "Wrong predictions"). Zero selects
	// DefaultStrikes; negative means never (every re-estimated job keeps its full rights).
	Strikes int
	// StrikeRunTime is the least time in seconds a job with strikes (see Strikes) runs after
	// it starts or resumes before A-SRPT may preempt it again: such a job starts only on free
	// GPUs, as the lowest priority, so without it the next arrival would stop it again at once.
	// Zero selects DefaultStrikeRunTime; negative means none (MinRunTime still applies).
	StrikeRunTime float64
	// NoMigrate tells A-SRPT that the host cannot move a running job (no checkpoint it can
	// restore elsewhere): A-SRPT then never emits a migration (no consolidation, whatever
	// NoConsolidate says; a job on GPUs that became unavailable is preempted, not moved) and,
	// since a job started scattered stays scattered until it ends, the conversion starts a
	// multi-GPU job only on a compact placement (see CompactSlack and the package
	// documentation, "Hosts that cannot migrate").
	NoMigrate bool
	// NoCompact turns the compact conversion off: a multi-GPU job then starts on whatever
	// placement the Placer finds on the free GPUs, however scattered (the conversion before
	// the compact one). With NoMigrate the compact conversion is always on.
	NoCompact bool
	// CompactSlack is how much slower per iteration than at its best placement a multi-GPU
	// job's placement may be for the compact conversion to start it at once: a placement at
	// most (1 + CompactSlack) times the best time is compact. Zero selects
	// DefaultCompactSlack; negative means exactly the best time.
	CompactSlack float64
	// NoGroupFallback turns off the group fallback. By default the jobs of a recurrence group
	// (Features.Group) whose predictions have been poor are sized by their Gittins ranks under
	// the group's own distribution of lengths instead of by the Estimator: the Kaplan-Meier
	// estimate over the group's last 64 finished jobs and its live ones, censored at what they
	// have done. A group's predictions are poor when, over its finished jobs (at least three),
	// the group distribution's median at their arrival erred less than half as much as the
	// Estimator (median absolute log error), or, before three have finished, when two of its
	// live jobs have run past their predictions. See the package documentation, "Wrong
	// predictions".
	NoGroupFallback bool
	// BurstGap groups jobs that name no recurrence group (empty Features.Group) into bursts
	// for the group fallback: a job of the same Features.User and GPU count submitted at most
	// BurstGap seconds after the previous one joins its burst, whose jobs the fallback then
	// treats as a group (with lengths compared in seconds per reference GPU, not iterations,
	// since a burst need not share a model). Traces that carry no job names, such as Philly's,
	// hold most of their signal there: jobs submitted together are a sweep of one experiment.
	// Zero selects DefaultBurstGap; negative turns bursts off.
	BurstGap float64
}

// DefaultBurstGap is the default Options.BurstGap: 60 s.
//
// Deprecated: not needed by embedders (leave Options.BurstGap zero for it); removed in v0.3.0.
const DefaultBurstGap = 60

// DefaultStrikes is the default Options.Strikes: a job re-estimated twice no longer preempts.
//
// Deprecated: not needed by embedders (leave Options.Strikes zero for it); removed in v0.3.0.
const DefaultStrikes = 2

// DefaultStrikeRunTime is the default Options.StrikeRunTime: 600 s, twenty times package sim's
// default restore cost.
//
// Deprecated: not needed by embedders (leave Options.StrikeRunTime zero for it); removed in v0.3.0.
const DefaultStrikeRunTime = 600.0

// DefaultCompactSlack is the default Options.CompactSlack: placements within 10% of a job's
// best time per iteration are compact.
//
// Deprecated: not needed by embedders (leave Options.CompactSlack zero for it); removed in v0.3.0.
const DefaultCompactSlack = 0.1

type jobState struct {
	// The fields the walks over the order read or write at every call (orderPrefix, for each
	// running job and each job of the prefix) come first, in the first cache line of the 192
	// bytes: key to inWait. 192 bytes is a size class whose objects start on a cache line
	// (the 224 bytes this struct once took straddled a line boundary every other object). The
	// second line holds what decide and compactCandidates read of the jobs of the prefix and
	// of the running ones (prefix to overruns), the third the virtual queue's mirror (rem,
	// rel, vkey: liveCmp). See TestJobStateLayout before adding a field.
	key     int
	gpus    int     // job.GPUs, kept here so that walks over the order load no Job
	iters   float64 // predicted total iterations (revised on overrun)
	tau     float64 // seconds per iteration at the best placement
	weight  float64 // the job's effective weight
	vfinish float64 // virtual completion time when vdone
	// stamp is, with patience (patientOrder), the epoch of the last call that took the job as
	// fresh (the remaining-work conversion, remainingOrder, does not use it).
	stamp uint64
	vdone bool // completed on the virtual machine
	gone  bool // left the host; a ghost in the virtual queue until it completes there
	unfit bool // the current cluster has fewer GPUs than it needs of its kind
	// The remaining-work conversion keeps waiting jobs in Scheduler.wait, sorted by their
	// fresh keys (freshLess) as of when they were last placed there: inWait tells that the job
	// is in it, wr and wv are its keys there (predicted remaining GPU-time over weight, virtual
	// completion) and wdone the iterations done that wr was computed from.
	inWait bool

	prefix    uint64 // epoch of the last call that put the job in the priority prefix
	displaced uint64 // epoch of the last call in which it ran on an unavailable GPU
	preempted uint64 // epoch of the last call that preempted the job
	overruns  int    // re-estimations so far (see Options.Strikes)
	wr, wv    float64
	wdone     float64
	job       *gpusched.Job // the job as the latest view describes it (refreshed every call)

	rem, rel float64 // virtual remaining work and release, as the queue holds them (live jobs)
	vkey     float64 // the queue's priority key: rem / weight
	// waitFrom is the time since which the compact conversion has kept the job waiting for a
	// compact placement (NaN: it is not waiting for one).
	waitFrom float64
	pred0    float64      // the Estimator's prediction at arrival (group fallback)
	gpred0   float64      // the group distribution's median at arrival (0: none)
	group    *groupBook   // its group's book while it is live (nil: no group fallback)
	cm       *compactMemo // the compact conversion\'s memo while the job waits (nil: none)
}

// rejection is a job that admission refused, remembered so that it is not retried at every
// call (until the cluster changes).
type rejection struct {
	err  *gpusched.JobError
	seen uint64
}

// presence is where the latest view listed a job, kept apart from jobState (in
// Scheduler.marks, by key) so that the walk over the view touches a small dense array instead
// of every job's state: one cache miss fewer per job of the view.
type presence struct {
	seen    uint64 // epoch of the last view that held the job
	idx     int32  // index in that view's list
	running bool   // in that view's Running list
	gone    bool   // the job has left (jobState.gone), or the key is free
	// gen counts the jobs the key has been given to (newKey), modulo 2^16: an entry of the
	// last view's lists (viewEntry.gen) still names the state that holds its key when the
	// gens agree. Between two walks over a list a key is given anew at most once (keys are
	// freed only outside the walks, and taken only by admissions in them), so the count
	// cannot wrap around to a stale entry's.
	gen uint16
}

// runs reports whether the job is in the current view's Running list (epoch: the current
// call's). Every call walks Running, so a running job's mark is always of the current call;
// a waiting job's may be older (a call that followed a delta does not walk Pending).
func (m presence) runs(epoch uint64) bool { return m.running && m.seen == epoch }

// forgetter is implemented by cost models and placers that cache per-job state
// (gpusched.ModelCost, Partitioned): A-SRPT tells them when a job leaves.
type forgetter interface{ Forget(j *gpusched.Job) }

// Scheduler is the A-SRPT scheduler. It keeps the virtual single-machine SRPT instance across
// calls, so it must see every event of one host in time order. It is not safe for concurrent use.
type Scheduler struct {
	groups      map[string]*groupBook // the group fallback's books, by Features.Group
	groupClock  uint64                // counts arrivals and departures of grouped jobs (groupBook.used)
	regroup     []*jobState           // jobs admitted in this call, sized by their group once all are marked
	bursts      map[string]string     // burst key (user, GPUs) -> its latest burst's group name
	dirtyGroups []*groupBook          // books that learnt something since the last call
	km          kmCurve               // the group refresh's Kaplan-Meier curve of one book
	kmFresh     kmDist                // that curve for jobs that have not run
	kmJob       kmDist                // that curve conditioned on one job's progress
	kmOne       kmCurve               // the curve of groupDist, which returns its own kmDist
	opt         Options
	cluster     *topology.Cluster
	g0          float64 // GPUs of the first cluster seen: the unit of virtual sizes
	queue       *srptq.Queue
	placer      *Partitioned // the default placer, told when jobs leave
	forget      []forgetter  // caches told when jobs leave
	jobs        map[gpusched.JobID]*jobState
	rejected    map[gpusched.JobID]*rejection
	byKey       []*jobState // key -> state (nil when gone)
	marks       []presence  // key -> where the latest view listed the job
	waitDone    []float64   // key -> the iterations a waiting job had done when last listed
	// vranks is, by key, a job's position in the order (remaining work) or in its virtually
	// finished part (patience), as the last walk that ranked it left it (see rank).
	vranks []int32
	// limits is, by key, the iterations past which a job is re-estimated: its prediction
	// times 1 + ReestimateMargin, kept by setIters (the re-estimation check reads it for
	// every running job at every call, without loading the job's state).
	limits    []float64
	free      []int       // free keys
	vdone     []*jobState // virtually completed jobs still present, by virtual completion
	vdoneGone int         // entries of vdone that have left (compacted away when most have)
	live      []*jobState // jobs in the virtual queue that have not left, in queue order
	unfit     int         // live jobs too large for the current cluster
	epoch     uint64
	now       float64
	consol    *consolidate.Consolidator // nil with NoConsolidate
	moves     int

	// reversed flips the priority order: a deliberately wrong variant for tests.
	reversed bool
	// brokenWait places waiting jobs as if they had done nothing: a deliberately wrong
	// variant of the remaining-work order's incremental list, for tests.
	brokenWait bool
	// brokenCands forgets the running jobs outside the prefix that are not candidates (their
	// GPUs stay among the candidates' when those are built by removal): a deliberately wrong
	// variant of compactCandidates, for tests.
	brokenCands bool
	// brokenMark keeps a job's progress in the marking walk's list from the previous call: a
	// deliberately wrong variant (a list that misses an update), for tests.
	brokenMark bool
	// brokenLimits misses the re-estimation limit's update when a job is re-estimated: a
	// deliberately wrong variant, for tests.
	brokenLimits bool
	// brokenGen gives a key to a new job without counting it in the key's gen: a deliberately
	// wrong variant (a missed update: the last view's entries for the key's old job pass for
	// current), for tests.
	brokenGen bool
	// brokenSorted misses taking a finished length out of a book's sorted lengths when the
	// ring overwrites it, and brokenPoor misses forgetting groupPoor's answer when a job
	// overruns: deliberately wrong variants (a missed update), for tests.
	brokenSorted, brokenPoor bool
	// brokenShape answers placeShared from its memo whatever GPUs the answer was made on: a
	// deliberately wrong variant, for tests.
	brokenShape bool
	// brokenSlow answers slowShared from its memo whatever placement the answer was for: a
	// deliberately wrong variant, for tests.
	brokenSlow bool
	// brokenRunOrder takes a running job's rank from the last call as its position in the
	// last order without confirming it there (a wrong condition: a stale rank of a job that
	// was not in it places it): a deliberately wrong variant, for tests.
	brokenRunOrder bool
	// runHook, when set (tests), sees the running jobs in remainingOrder's starting order,
	// before the sort, and the last call's order.
	runHook func(start []freshJob, last []*jobState)
	// candHook, when set (tests), is called at the end of every compactCandidates.
	candHook func(v *gpusched.View, prefixLen, mine int)

	// the lists of the latest view (0: pending, 1: running): last[w][i] describes entry i of
	// its list w; and scratch for building the next ones
	last, scratch [2][]viewEntry
	sizing        map[sizingKey][][]topology.GPUID // candidate sizing placements
	// shapes remembers the default placer's latest answer per job shape, on the free GPUs
	// (shapes[0]) and on the compact conversion's pool (shapes[1]): see placeShared.
	shapes [2]map[placeShape]*shapePlaces
	slows  map[slowShape][]slowPlace // slowShared's memo

	patience   float64        // Options.Patience resolved: 0 for none
	remWork    bool           // the remaining-work conversion (patience > 0 and not Options.Patient)
	wait       []*jobState    // with remWork: the waiting jobs, sorted by their fresh keys (see waitInsert)
	running    []freshJob     // with remWork: scratch, this call's running jobs that are not overdue
	runOrder   []*jobState    // with remWork: the last call's running jobs in order, the next sort's start
	runOld     []*jobState    // with remWork: scratch, the order before runOrder (remainingOrder)
	runBase    int            // with remWork: vranks[k] - runBase is the running job k's position in runOrder
	runSlot    []int32        // with remWork: scratch, by position in the last order: the job's entry in runTmp (-1: none)
	runTail    []int32        // with remWork: scratch, entries of runTmp not in the last order, in the view's order
	runTmp     []freshJob     // with remWork: scratch, this call's running jobs in the view's order
	compact    bool           // the compact conversion (on unless Options.NoCompact)
	dist       Distributional // the Estimator's distributions (nil: point sizes)
	slack      float64        // Options.CompactSlack resolved
	strikes    int            // Options.Strikes resolved: 0 for never
	strikeRun  float64        // Options.StrikeRunTime resolved
	fixedPlain bool           // the cost model times jobs without a model the same on every placement
	startBuf   []gpusched.Assignment
	runBuf     []gpusched.Assignment // the full form of the decision being made (see decide)
	stopIDs    []gpusched.JobID      // running jobs the decision being made leaves out
	cands      []candidate           // the compact conversion's preemptable jobs this call
	candK      int
	candEpoch  uint64
	candGPUs   topology.GPUSet
	nonCands   []int32           // compactCandidates: the running jobs that are not candidates (indices)
	free0      topology.GPUSet   // the view's free GPUs as decide began (compactCandidates)
	allGPUs    topology.GPUSet   // every GPU of allFor
	allFor     *topology.Cluster // the cluster allGPUs describes
	poolBuf    topology.GPUSet

	// The host's sequence of views (gpusched.ViewDelta) this state follows: the Source and Seq
	// of the last view a call completed (dsrc nil: none, the next view is walked whole).
	dsrc    any
	dseq    uint64
	arrIdx  []int       // scratch: positions in Pending of a delta's arrivals
	goneBuf []*jobState // scratch: jobs that left
	// brokenDelta skips the jobs of a delta that stopped running: a deliberately wrong variant
	// (a missed update), for tests.
	brokenDelta bool
	followed    int // calls that followed a delta (for tests)

	// saved is what the own state of the last base held (SaveBase; see state_delta.go).
	saved *ownMark

	// scratch
	fresh     []freshJob
	vorder    []*jobState // the latest patient order
	vorderOld []*jobState // the one before, kept as the starting order of the next sort
	victims   []victim
	order     []*jobState
	waitPos   []int32 // decide: the positions in order of the prefix's jobs that do not hold their GPUs
	doneBuf   []srptq.Completed
	rejectBuf []*gpusched.JobError
}

// viewEntry is what the marking walk learned of one entry of a view's list: the job's id and
// description, and its state and key (nil and -1 for a job that admission refused).
type viewEntry struct {
	id   gpusched.JobID
	job  *gpusched.Job
	st   *jobState
	key  int32
	gen  uint16  // the key's presence.gen when the entry was made
	done float64 // the iterations the entry reported (the remaining-work order's key of a waiting job)
}

// sizingKey identifies the jobs that share sizing candidates: same GPU count and constraints.
type sizingKey struct {
	gpus    int
	gpuType string
	minMem  float64
}

// New returns an A-SRPT scheduler.
func New(opt Options) (*Scheduler, error) {
	if opt.Estimator == nil {
		f, err := NewForest(ForestOptions(1))
		if err != nil {
			return nil, err
		}
		opt.Estimator = f
	}
	if opt.Cost == nil {
		opt.Cost = gpusched.DefaultCost()
	}
	var own *Partitioned
	if opt.Placer == nil {
		own = NewPartitioned(partition.PlaceOptions{Seed: 1})
		opt.Placer = own.Place
	}
	if !(opt.MinRunTime >= 0) || math.IsInf(opt.MinRunTime, 0) {
		return nil, fmt.Errorf("asrpt: MinRunTime %v must be finite and >= 0", opt.MinRunTime)
	}
	if !(opt.ReestimateMargin >= 0) || math.IsInf(opt.ReestimateMargin, 0) {
		return nil, fmt.Errorf("asrpt: ReestimateMargin %v must be finite and >= 0", opt.ReestimateMargin)
	}
	if math.IsNaN(opt.StrikeRunTime) || math.IsInf(opt.StrikeRunTime, 0) {
		return nil, fmt.Errorf("asrpt: StrikeRunTime %v must be finite", opt.StrikeRunTime)
	}
	if math.IsNaN(opt.CompactSlack) || math.IsInf(opt.CompactSlack, 0) {
		return nil, fmt.Errorf("asrpt: CompactSlack %v must be finite", opt.CompactSlack)
	}
	if math.IsNaN(opt.Patience) || math.IsInf(opt.Patience, 0) {
		return nil, fmt.Errorf("asrpt: Patience %v must be finite", opt.Patience)
	}
	if opt.Name == "" {
		opt.Name = "asrpt"
	}
	q, err := srptq.NewQueue(1)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{opt: opt, queue: q, placer: own, jobs: make(map[gpusched.JobID]*jobState), rejected: make(map[gpusched.JobID]*rejection)}
	switch {
	case opt.Patience == 0:
		s.patience = DefaultPatience
	case opt.Patience > 0:
		s.patience = opt.Patience
	}
	s.remWork = s.patience > 0 && !opt.Patient
	s.compact = !opt.NoCompact || opt.NoMigrate
	switch opt.Cost.(type) {
	case *gpusched.ModelCost, gpusched.FixedCost, *gpusched.FixedCost:
		s.fixedPlain = true // jobs without a model take their StepTime wherever they run
	}
	if d, ok := opt.Estimator.(Distributional); ok && opt.Gittins {
		s.dist = d
	}
	switch {
	case opt.Strikes == 0:
		s.strikes = DefaultStrikes
	case opt.Strikes > 0:
		s.strikes = opt.Strikes
	}
	switch {
	case opt.StrikeRunTime == 0:
		s.strikeRun = DefaultStrikeRunTime
	case opt.StrikeRunTime > 0:
		s.strikeRun = opt.StrikeRunTime
	}
	switch {
	case opt.CompactSlack == 0:
		s.slack = DefaultCompactSlack
	case opt.CompactSlack > 0:
		s.slack = opt.CompactSlack
	}
	if own != nil {
		s.forget = append(s.forget, own)
	}
	if f, ok := opt.Cost.(forgetter); ok {
		s.forget = append(s.forget, f)
	}
	if !opt.NoConsolidate && !opt.NoMigrate {
		if s.consol, err = consolidate.New(consolidate.Options{Cost: opt.Cost, RestoreTime: opt.RestoreTime, Remaining: s.remaining, Placer: opt.Placer, Best: s.best, Memo: true}); err != nil {
			return nil, fmt.Errorf("asrpt: %w", err)
		}
	}
	return s, nil
}

// ready returns an error for a nil or zero Scheduler (one not built by New), whose methods
// would otherwise dereference what New sets up.
func (s *Scheduler) ready() error {
	if s == nil || s.queue == nil {
		return errors.New("asrpt: a nil or zero Scheduler: build it with New")
	}
	return nil
}

// remaining is A-SRPT's estimate of a running job's remaining iterations, for consolidation:
// its prediction less what it has done (no estimate once it has overrun: consolidate then
// assumes it runs as long again).
func (s *Scheduler) remaining(st *gpusched.JobStatus) (float64, bool) {
	js, ok := s.jobs[st.Job.ID]
	if !ok || js.iters <= st.Iterations {
		return 0, false
	}
	return js.iters - st.Iterations, true
}

// best is a running job's time per iteration at its best placement, as A-SRPT sized it, for
// consolidation.
func (s *Scheduler) best(st *gpusched.JobStatus) (float64, bool) {
	js, ok := s.jobs[st.Job.ID]
	if !ok || !(js.tau > 0) {
		return 0, false
	}
	return js.tau, true
}

// Migrations returns how many consolidating migrations A-SRPT has asked for so far.
func (s *Scheduler) Migrations() int { return s.moves }

// String returns the scheduler's name.
func (s *Scheduler) String() string { return s.opt.Name }

// Predicted returns A-SRPT's current prediction of job id's total iterations and its time per
// iteration at the best placement, for jobs it has seen and that have not left.
func (s *Scheduler) Predicted(id gpusched.JobID) (iterations, stepTime float64, ok bool) {
	st, ok := s.jobs[id]
	if !ok {
		return 0, 0, false
	}
	return st.iters, st.tau, true
}

// VirtualCompletion returns the time at which job id completes on the virtual machine: the
// actual time if it has, the projection if nothing else arrives otherwise.
func (s *Scheduler) VirtualCompletion(id gpusched.JobID) (float64, bool) {
	st, ok := s.jobs[id]
	if !ok {
		return 0, false
	}
	if st.vdone {
		return st.vfinish, true
	}
	return s.queue.ProjectedCompletion(st.key)
}

// JobCompleted forgets the job and teaches the estimator, if it learns.
func (s *Scheduler) JobCompleted(c gpusched.Completion) {
	if c.Job == nil || s.ready() != nil {
		return
	}
	if l, ok := s.opt.Estimator.(Learner); ok && !c.Killed && c.Iterations > 0 {
		_ = l.Observe(c.Job, c.Iterations) // a bad report must not stop scheduling
	}
	if st, ok := s.jobs[c.Job.ID]; ok {
		s.groupLeave(st, !c.Killed, c.Iterations)
		s.drop(st)
	}
	delete(s.rejected, c.Job.ID)
}

// drop forgets a job that left the host. A job the virtual machine has not finished stays in
// the virtual queue as a ghost until it does, so that the virtual schedule remains exactly the
// SRPT schedule of the predicted instance, whatever happens on the real cluster (the analysis
// needs this).
func (s *Scheduler) drop(st *jobState) {
	s.groupLeave(st, false, 0)
	for _, f := range s.forget {
		f.Forget(st.job)
	}
	delete(s.jobs, st.job.ID)
	if st.unfit {
		st.unfit = false
		s.unfit--
	}
	s.marks[st.key].gone = true
	if st.inWait {
		s.waitRemove(st)
	}
	if st.vdone {
		st.gone = true
		s.vdoneGone++
		s.release(st) // it stays in s.vdone, marked gone, until the list is compacted
		return
	}
	s.liveRemove(st)
	st.gone = true
}

func (s *Scheduler) release(st *jobState) {
	s.byKey[st.key] = nil
	s.marks[st.key] = presence{gone: true, gen: s.marks[st.key].gen}
	s.free = append(s.free, st.key)
}

// The live list mirrors the virtual queue without its ghosts, ordered as the queue orders jobs:
// by remaining work over weight, then release, then key. Only the queue's head changes its remaining work
// as time passes, so keeping the mirror costs one reposition per Advance; walking it visits no
// ghost.
func liveCmp(a, b *jobState) int {
	switch {
	case a.vkey != b.vkey:
		if a.vkey < b.vkey {
			return -1
		}
		return 1
	case a.rel != b.rel:
		if a.rel < b.rel {
			return -1
		}
		return 1
	}
	return a.key - b.key
}

func (s *Scheduler) liveInsert(st *jobState) {
	st.rem, _ = s.queue.Remaining(st.key)
	st.vkey = st.rem / st.weight // as the queue computes its key
	i, _ := slices.BinarySearchFunc(s.live, st, liveCmp)
	s.live = slices.Insert(s.live, i, st)
}

func (s *Scheduler) liveRemove(st *jobState) {
	if i, ok := slices.BinarySearchFunc(s.live, st, liveCmp); ok && s.live[i] == st {
		s.live = slices.Delete(s.live, i, i+1)
		return
	}
	if i := slices.Index(s.live, st); i >= 0 { // not reached while the mirror is consistent
		s.live = slices.Delete(s.live, i, i+1)
	}
}

func (s *Scheduler) newKey() int {
	if n := len(s.free); n > 0 {
		k := s.free[n-1]
		s.free = s.free[:n-1]
		gen := s.marks[k].gen + 1
		if s.brokenGen {
			gen--
		}
		s.marks[k] = presence{gen: gen}
		s.waitDone[k] = 0
		s.vranks[k] = 0
		s.limits[k] = 0
		return k
	}
	s.byKey = append(s.byKey, nil)
	s.marks = append(s.marks, presence{})
	s.waitDone = append(s.waitDone, 0)
	s.vranks = append(s.vranks, 0)
	s.limits = append(s.limits, 0)
	return len(s.byKey) - 1
}

// Schedule returns the desired state for the view. See the package documentation for the rule.
// Its cost per call is O(jobs in the view) cheap steps plus O(log n) per job of the priority
// prefix, plus placement of the jobs it starts; a call after the cluster changed also
// re-checks every job against the new cluster. A view whose delta (gpusched.ViewDelta, with
// Transitions) continues the last view is walked only in Running and in what the delta lists,
// so the waiting jobs outside the priority prefix cost nothing (see "Views and their deltas"
// in the package documentation).
//
// A job that cannot be admitted (gpusched.BestPlacement fails for it, or the estimator does)
// or that needs more GPUs of its kind than the current cluster has is left out and listed in
// Decision.Rejected; every other job is scheduled. Schedule returns an error only for a view
// it cannot use at all (no cluster, a job listed twice, time going backwards) or a placer that
// breaks its contract.
func (s *Scheduler) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	if v.Cluster == nil {
		return gpusched.Decision{}, fmt.Errorf("asrpt: view has no cluster")
	}
	if s.cluster != v.Cluster && (s.cluster == nil || !s.cluster.Equal(v.Cluster)) {
		s.setCluster(v.Cluster)
	}
	s.cluster = v.Cluster
	avail := v.Available()
	// 1. Advance the virtual machine to now at the speed it had; record virtual completions.
	if v.Now > s.queue.Now() {
		var err error
		s.doneBuf, err = s.queue.Advance(v.Now, s.doneBuf[:0])
		if err != nil {
			return gpusched.Decision{}, fmt.Errorf("asrpt: virtual machine: %w", err)
		}
		for _, c := range s.doneBuf {
			st := s.byKey[c.ID]
			if st == nil {
				continue
			}
			if st.gone {
				s.release(st)
				continue
			}
			s.liveRemove(st)
			st.vdone, st.vfinish = true, c.Time
			s.vdone = append(s.vdone, st)
			s.waitRekey(st)
		}
		if k, _, ok := s.queue.Head(); ok {
			if st := s.byKey[k]; st != nil && !st.gone {
				s.liveRemove(st)
				s.liveInsert(st)
			}
		}
	} else if v.Now < s.queue.Now() {
		return gpusched.Decision{}, fmt.Errorf("asrpt: view at t=%g s is earlier than the last one (t=%g s)", v.Now, s.queue.Now())
	}
	// From now on the virtual machine runs as fast as the GPUs that are available.
	if sp := float64(avail) / s.g0; sp != s.queue.Speed() {
		if err := s.queue.SetSpeed(sp); err != nil {
			return gpusched.Decision{}, fmt.Errorf("asrpt: virtual machine: %w", err)
		}
	}
	s.now = v.Now
	// 2. Admit new jobs, mark the present ones.
	s.epoch++
	s.rejectBuf = s.rejectBuf[:0]
	seen := 0
	mark := func(list []gpusched.JobStatus, running bool) error {
		w := 0
		if running {
			w = 1
		}
		prev, cur := s.last[w], s.scratch[w][:0]
		k := 0
		for i := range list {
			js := &list[i]
			if js.Job == nil {
				return fmt.Errorf("%w: a job status without a job", gpusched.ErrInvalidView)
			}
			// Hosts change few entries between calls: walk the previous list alongside. The
			// same Job pointer is the same job (a job's description does not change while it
			// is in the view), which spares loading its ID, a cache miss per job; a host that
			// rebuilds its Jobs is matched by ID instead.
			// A matched entry's key and state come from the previous lists, so an unchanged job
			// costs no load of its state at all (the key still holds the same state and the job
			// has not left: checked in the dense marks alone, by the key's gen).
			var st *jobState
			key := int32(-1)
			var id gpusched.JobID
			same := false     // js.Job is the Job the state holds
			fromPrev := false // st comes from the previous call's entry in the same list
			prevDone := 0.0   // the iterations that entry reported
			for d := 0; d < 4 && k+d < len(prev); d++ {
				if e := &prev[k+d]; e.job == js.Job {
					id, same = e.id, true
					if c, ck := e.st, e.key; c != nil && s.marks[ck].gen == e.gen && !s.marks[ck].gone {
						st, key, fromPrev, prevDone = c, ck, true, e.done
					}
					k += d + 1
					break
				}
			}
			if !same {
				id = js.Job.ID
				for d := 0; d < 4 && k+d < len(prev); d++ {
					if e := &prev[k+d]; e.id == id {
						if c, ck := e.st, e.key; c != nil && s.marks[ck].gen == e.gen && !s.marks[ck].gone {
							st, key, fromPrev, prevDone = c, ck, true, e.done
						}
						k += d + 1
						break
					}
				}
			}
			if st == nil {
				st = s.jobs[id]
				same = false
			}
			if st == nil {
				var err error
				if st, err = s.admitOrReject(v.Cluster, js.Job); err != nil {
					return err
				}
				if st == nil {
					cur = append(cur, viewEntry{id: id, job: js.Job, key: -1})
					continue
				}
			}
			if key < 0 {
				key = int32(st.key)
			}
			m := &s.marks[key]
			if m.seen == s.epoch {
				return fmt.Errorf("asrpt: job %q appears twice in the view", id)
			}
			anew := !same && st.job != js.Job
			if anew {
				s.describe(st, js.Job, v.Cluster)
			}
			m.seen, m.running, m.idx = s.epoch, running, int32(i)
			if !running {
				s.waitDone[key] = js.Iterations
			}
			if s.unfit > 0 && st.unfit {
				s.rejectBuf = append(s.rejectBuf, s.unfitError(st))
			}
			if s.remWork {
				// A job in the same list as in the last call is where it was in s.wait (a
				// waiting job that reports other progress is placed again); any other moved
				// between the lists, was admitted, or was described anew.
				// A job in s.wait whose keys are those of its description and progress now is
				// where it belongs (placing it again is the identity), whether or not the
				// previous list shows it: after a call that followed a delta it is empty.
				switch {
				case running:
					if !fromPrev && st.inWait {
						s.waitRemove(st)
					}
				case !fromPrev || !same || prevDone != js.Iterations:
					if st.inWait && !anew && st.wdone == js.Iterations && !s.brokenWait {
						break
					}
					if st.inWait {
						s.waitRemove(st)
					}
					s.waitInsert(st, js.Iterations)
				}
			}
			done := js.Iterations
			if s.brokenMark && fromPrev {
				done = prevDone
			}
			// Written in place (see remainingOrder): a composite literal is built on the stack
			// and copied out in 16-byte moves that wait on its narrower stores.
			cur = append(cur, viewEntry{})
			e := &cur[len(cur)-1]
			e.id, e.job, e.st, e.key, e.gen, e.done = id, js.Job, st, key, m.gen, done
			seen++
		}
		s.last[w], s.scratch[w] = cur, prev
		return nil
	}
	// A view that continues the last one with a delta that lists the jobs that started and
	// stopped (and no rejected or unfit job to list again) is walked only in Running: the
	// waiting jobs are those of the last view, less those that left or started, plus those
	// that arrived or stopped, and a waiting job's progress does not change while it waits.
	vd := v.Delta
	follows := vd != nil && viewseq.Same(vd.Source, s.dsrc) && vd.Seq == s.dseq+1 && vd.Transitions &&
		len(s.rejected) == 0 && s.unfit == 0 && s.arrivals(&v)
	s.dsrc = nil // recorded again when the call completes
	if err := mark(v.Running, true); err != nil {
		return gpusched.Decision{}, err
	}
	if follows {
		if err := s.follow(&v); err != nil {
			return gpusched.Decision{}, err
		}
	} else {
		if err := mark(v.Pending, false); err != nil {
			return gpusched.Decision{}, err
		}
	}
	// Jobs that left without a completion report (cancelled) are forgotten.
	if !follows && seen < len(s.jobs) {
		var gone []*jobState
		for _, st := range s.jobs {
			if s.marks[st.key].seen != s.epoch {
				gone = append(gone, st)
			}
		}
		slices.SortFunc(gone, func(a, b *jobState) int { return a.key - b.key })
		for _, st := range gone {
			s.drop(st)
		}
	}
	if len(s.rejected) > len(s.rejectBuf) {
		for id, r := range s.rejected {
			if r.seen != s.epoch {
				delete(s.rejected, id)
			}
		}
	}
	// Jobs admitted in this call whose group's predictions are poor are sized by the group.
	for _, st := range s.regroup {
		if st.gone || s.jobs[st.job.ID] != st {
			continue
		}
		if err := s.groupArrive(&v, st); err != nil {
			return gpusched.Decision{}, err
		}
	}
	clear(s.regroup)
	s.regroup = s.regroup[:0]
	if err := s.groupRefresh(&v); err != nil {
		return gpusched.Decision{}, err
	}
	// 3. Re-estimate running jobs that ran past their prediction.
	wake := math.Inf(1)
	if !s.opt.NoReestimate {
		last := s.last[1]
		for i := range v.Running {
			js := &v.Running[i]
			e := &last[i]
			if e.st == nil {
				continue
			}
			limit := s.limits[e.key]
			if reached(js.Iterations, limit) {
				if err := s.reestimate(&v, e.st, js.Iterations); err != nil {
					return gpusched.Decision{}, err
				}
				limit = s.limits[e.key]
			}
			// Ask to be woken when the job will reach its prediction, at its observed pace, but
			// no sooner than MinWake from now: a job now running slower than its average pace
			// (a slower placement or plan, a restore) would otherwise approach its prediction
			// in ever shorter wake-ups that never reach it (Zeno: a simulator then makes no
			// progress in time).
			if js.Iterations > 0 && js.Executed > 0 {
				pace := js.Executed / js.Iterations
				if t := v.Now + max((limit-js.Iterations)*pace, MinWake); t < wake {
					wake = t
				}
			}
		}
	}
	d, w, err := s.decide(v, avail)
	if err != nil {
		return gpusched.Decision{}, err
	}
	if w < wake {
		wake = w
	}
	if !math.IsInf(wake, 1) {
		d.WakeAt = wake
	}
	if len(s.rejectBuf) > 0 {
		d.Rejected = slices.Clone(s.rejectBuf)
	}
	if v.Delta != nil {
		s.dsrc, s.dseq = v.Delta.Source, v.Delta.Seq
	}
	return d, nil
}

// describe adopts a new description of job st (a host that rebuilds its Jobs, or the first view
// after a restore): the view's Job is authoritative, so it is checked against the cluster
// again in case it disagrees with what was known.
func (s *Scheduler) describe(st *jobState, j *gpusched.Job, c *topology.Cluster) {
	if st.job.GPUs != j.GPUs || st.job.GPUType != j.GPUType || st.job.MinGPUMemory != j.MinGPUMemory {
		if unfit := gpusched.Fits(j, c) != nil; unfit != st.unfit {
			st.unfit = unfit
			if unfit {
				s.unfit++
			} else {
				s.unfit--
			}
		}
	}
	st.job, st.gpus = j, j.GPUs
}

// arrivals checks that the statuses of v's delta point into v's lists as they say (arrivals
// into either, stops into Pending) and sets s.arrIdx to the positions in Pending of the
// arrivals there, in the list's order: a delta that breaks this is not followed.
func (s *Scheduler) arrivals(v *gpusched.View) bool {
	s.arrIdx = s.arrIdx[:0]
	for _, js := range v.Delta.Arrived {
		if i, ok := indexIn(v.Pending, js); ok {
			s.arrIdx = append(s.arrIdx, i)
		} else if _, ok := indexIn(v.Running, js); !ok {
			return false
		}
	}
	for _, js := range v.Delta.Stopped {
		if _, ok := indexIn(v.Pending, js); !ok || js.Job == nil {
			return false
		}
	}
	slices.Sort(s.arrIdx)
	return true
}

// admitOrReject returns the state of a job the scheduler holds none for: the job admitted
// now, or nil when it is rejected, now or at an earlier call (its error is listed again in
// s.rejectBuf). A job already seen in this view is an error.
func (s *Scheduler) admitOrReject(c *topology.Cluster, job *gpusched.Job) (*jobState, error) {
	id := job.ID
	if r, ok := s.rejected[id]; ok {
		if r.seen == s.epoch {
			return nil, fmt.Errorf("asrpt: job %q appears twice in the view", id)
		}
		r.seen = s.epoch
		s.rejectBuf = append(s.rejectBuf, r.err)
		return nil, nil
	}
	st, jerr := s.admit(c, job)
	if jerr != nil {
		s.rejected[id] = &rejection{err: jerr, seen: s.epoch}
		s.rejectBuf = append(s.rejectBuf, jerr)
		return nil, nil
	}
	return st, nil
}

// indexIn returns the position of *js in list, if js points to one of its elements.
func indexIn(list []gpusched.JobStatus, js *gpusched.JobStatus) (int, bool) {
	if len(list) == 0 || js == nil {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(list)))
	p, size := uintptr(unsafe.Pointer(js)), unsafe.Sizeof(list[0])
	if p < base || p >= base+uintptr(len(list))*size || (p-base)%size != 0 {
		return 0, false
	}
	return int((p - base) / size), true
}

// follow is the marking of the waiting jobs for a view that continues the last one with a
// delta (see Schedule): the jobs that stopped running are marked waiting (and placed in
// s.wait), those that arrived among the waiting ones are admitted in the list's order, and
// those that left are forgotten in the order of their keys, as the walk over Pending does. The
// other waiting jobs keep their marks and the progress they had (Scheduler.waitDone); their
// positions in Pending are not kept (what A-SRPT reads of a waiting job is its progress).
func (s *Scheduler) follow(v *gpusched.View) error {
	vd := v.Delta
	s.followed++
	for _, js := range vd.Stopped {
		if s.brokenDelta {
			break
		}
		st := s.jobs[js.Job.ID]
		if st == nil {
			continue // rejected: absent from the last view's jobs (not reached: none is)
		}
		m := &s.marks[st.key]
		if m.seen == s.epoch {
			return fmt.Errorf("asrpt: job %q appears twice in the view", js.Job.ID)
		}
		if st.job != js.Job {
			s.describe(st, js.Job, v.Cluster)
		}
		m.seen, m.running = s.epoch, false
		s.waitDone[st.key] = js.Iterations
		if s.remWork {
			if st.inWait {
				s.waitRemove(st)
			}
			s.waitInsert(st, js.Iterations)
		}
	}
	for _, i := range s.arrIdx {
		js := &v.Pending[i]
		if js.Job == nil {
			return fmt.Errorf("%w: a job status without a job", gpusched.ErrInvalidView)
		}
		id := js.Job.ID
		st := s.jobs[id]
		if st == nil {
			var err error
			if st, err = s.admitOrReject(v.Cluster, js.Job); err != nil {
				return err
			}
			if st == nil {
				continue
			}
		}
		m := &s.marks[st.key]
		if m.seen == s.epoch {
			return fmt.Errorf("asrpt: job %q appears twice in the view", id)
		}
		if st.job != js.Job {
			s.describe(st, js.Job, v.Cluster)
		}
		m.seen, m.running, m.idx = s.epoch, false, int32(i)
		s.waitDone[st.key] = js.Iterations
		if s.unfit > 0 && st.unfit {
			s.rejectBuf = append(s.rejectBuf, s.unfitError(st))
		}
		if s.remWork {
			if st.inWait {
				s.waitRemove(st)
			}
			s.waitInsert(st, js.Iterations)
		}
	}
	gone := s.goneBuf[:0]
	for _, id := range vd.Left {
		if st := s.jobs[id]; st != nil && s.marks[st.key].seen != s.epoch {
			gone = append(gone, st)
		}
	}
	slices.SortFunc(gone, func(a, b *jobState) int { return a.key - b.key })
	for _, st := range gone {
		s.drop(st)
	}
	clear(gone)
	s.goneBuf = gone[:0]
	// The walk's list of the waiting jobs is not kept: the next walk over Pending starts
	// without one (see mark).
	clear(s.last[0])
	s.last[0] = s.last[0][:0]
	return nil
}

// reachTolerance is the relative tolerance with which a job's progress counts as having
// reached its prediction: progress within one part in 10^9 below it has reached it. Progress a
// host reports after a restart, or from a different order of floating-point operations, can be
// a few ULPs below the value the uninterrupted run saw at the same moment; without the
// tolerance such a difference would flip a re-estimation, and with it every later decision.
const reachTolerance = 1e-9

// reached reports whether progress done has reached limit, within reachTolerance.
func reached(done, limit float64) bool { return done >= limit*(1-reachTolerance) }

// MinWake is the shortest time, in seconds, after which A-SRPT asks to be woken to re-estimate
// a running job (Decision.WakeAt): re-estimations come at most that much later than the
// moment a job reaches its prediction.
//
// Deprecated: not needed by embedders (A-SRPT's own wake-up floor); removed in v0.3.0.
const MinWake = 1.0

// setCluster adopts a new (or first) cluster: sizing caches are dropped, earlier rejections
// are retried, and every live job is checked against the new cluster's GPUs.
func (s *Scheduler) setCluster(c *topology.Cluster) {
	if s.cluster == nil {
		s.g0 = float64(c.NumGPUs())
	}
	s.cluster = c
	s.sizing = nil
	s.shapes = [2]map[placeShape]*shapePlaces{}
	s.slows = nil
	clear(s.rejected)
	s.unfit = 0
	for _, st := range s.jobs {
		st.unfit = gpusched.Fits(st.job, c) != nil
		if st.unfit {
			s.unfit++
		}
	}
}

func (s *Scheduler) unfitError(st *jobState) *gpusched.JobError {
	return gpusched.Reject(st.job.ID, gpusched.Fits(st.job, s.cluster))
}

// orderPrefix fills s.order with present jobs in priority order: with the original conversion
// virtually completed jobs by virtual completion, then the SRPT queue; with patience the
// patient order (patientOrder), followed by the SRPT queue unless the conversion is the
// remaining-work one, whose patient order holds every job. Unless full is set it stops once
// the GPU demands of the jobs taken exceed the cluster (the rest cannot be in the prefix).
func (s *Scheduler) orderPrefix(v *gpusched.View, G int, full bool) {
	s.order = s.order[:0]
	budget := G
	take := func(st *jobState) bool {
		if st.gone || st.unfit {
			return true
		}
		s.order = append(s.order, st)
		budget -= st.gpus
		return full || budget >= 0
	}
	// takeRun is take for a job known to be present and to fit, whose GPU count is given: the
	// remaining-work order's running jobs, which it takes without loading their states again.
	takeRun := func(st *jobState, gpus int) bool {
		s.order = append(s.order, st)
		budget -= gpus
		return full || budget >= 0
	}
	// Compact the virtual-done list when it is mostly ghosts.
	if live := len(s.vdone) - s.vdoneGone; live < len(s.vdone)/2 {
		s.vdone = slices.DeleteFunc(s.vdone, func(st *jobState) bool { return st.gone })
		s.vdoneGone = 0
	}
	if s.remWork {
		s.remainingOrder(v, take, takeRun)
		return
	}
	vorder := s.vdone
	if s.patience > 0 {
		vorder = s.patientOrder(v)
	}
	for _, st := range vorder {
		if !take(st) {
			return
		}
	}
	for _, st := range s.live {
		if !take(st) {
			return
		}
	}
}

// patientOrder returns the present virtually finished jobs in priority order with patience
// theta: first the overdue ones (at least theta times their predicted processing time past
// their virtual completion), by virtual completion; then the others, by predicted remaining
// GPU-time over weight, shortest first (ties by virtual completion).
func (s *Scheduler) patientOrder(v *gpusched.View) []*jobState {
	s.fresh = s.fresh[:0]
	prev := s.vorder
	s.vorder, s.vorderOld = s.vorderOld[:0], prev
	// fresh reports whether st is a present, fitting, virtually finished job that is not yet
	// overdue, and if so adds it to s.fresh with its keys.
	fresh := func(st *jobState) {
		if st.stamp == s.epoch || !st.vdone || st.gone || st.unfit ||
			s.now-st.vfinish >= s.patience*st.iters*st.tau {
			return
		}
		done := 0.0
		if m := s.marks[st.key]; m.runs(s.epoch) {
			done = v.Running[m.idx].Iterations
		} else {
			done = s.waitDone[st.key]
		}
		st.stamp = s.epoch
		s.fresh = append(s.fresh, freshJob{freshKey(st, done), st.vfinish, int32(st.key), int32(st.gpus), st})
	}
	// The fresh jobs, first in the previous call's order, then those new to the list: the
	// keys change little between calls (only running jobs' remaining work shrinks), so the
	// insertion sort below does little work. The comparison is a total order, so the result
	// does not depend on the starting order. The overdue jobs are taken in the same walk over
	// the virtually finished list, in its order.
	for _, st := range prev {
		fresh(st)
	}
	for _, st := range s.vdone {
		if st.gone || st.unfit {
			continue
		}
		if s.now-st.vfinish >= s.patience*st.iters*st.tau {
			s.vorder = append(s.vorder, st)
			continue
		}
		fresh(st)
	}
	sortFresh(s.fresh)
	for _, f := range s.fresh {
		s.vorder = append(s.vorder, f.st)
	}
	for i, st := range s.vorder {
		s.vranks[st.key] = int32(i)
	}
	return s.vorder
}

// overdue reports whether job st is overdue: finished by the virtual machine at least theta
// times its predicted processing time ago.
func (s *Scheduler) overdue(st *jobState) bool {
	return st.vdone && s.now-st.vfinish >= s.patience*st.iters*st.tau
}

// remainingOrder is orderPrefix under the remaining-work conversion: the overdue jobs, in the
// order the virtual machine finished them, then every other present fitting job by its fresh
// keys (freshLess), taken while take says so. The waiting jobs come from s.wait, which is kept
// sorted between calls (their keys change only when they stop, are re-sized or finish
// virtually: waitInsert), merged with this call's running jobs, sorted here; so a call walks
// the running jobs and the prefix, not every waiting job. Each running job's vrank is set to a
// position that orders the running jobs as the whole priority order would (see rank).
func (s *Scheduler) remainingOrder(v *gpusched.View, take func(*jobState) bool, takeRun func(*jobState, int) bool) {
	s.vorder = s.vorder[:0]
	for _, st := range s.vdone {
		if !st.gone && !st.unfit && s.overdue(st) {
			s.vranks[st.key] = int32(len(s.vorder))
			s.vorder = append(s.vorder, st)
		}
	}
	// The running jobs, starting from the last call's order (their keys shrink as they run,
	// mostly keeping it, so the insertion sort does little work), then those that started, in
	// the view's order. One walk over the marking walk's running list (entry i is
	// v.Running[i]'s) computes their keys; a job's position in the last call's order is read
	// from vranks (which that call set to base + position) and confirmed by the order itself
	// (runOld[p] == st), so a stale rank of a job that was not in it cannot place it there.
	// The starting order is exactly the last order's jobs that still run and fit and are not
	// overdue, in that order, then the others in the view's order.
	prev := s.runOrder
	s.runOrder, s.runOld = s.runOld[:0], prev
	base := s.runBase
	slot := s.runSlot[:0]
	for range prev {
		slot = append(slot, -1)
	}
	s.runTmp = s.runTmp[:0]
	tail := s.runTail[:0]
	last := s.last[1]
	for i := range last {
		e := &last[i]
		st := e.st
		if st == nil || st.gone || st.unfit || s.overdue(st) {
			continue
		}
		// The progress the marking walk recorded for the entry (v.Running[i].Iterations).
		// Written in place: a composite literal is built on the stack and copied out in 16-byte
		// moves that wait on its 8-byte stores.
		n := int32(len(s.runTmp))
		s.runTmp = append(s.runTmp, freshJob{})
		f := &s.runTmp[n]
		f.rkey, f.vfinish, f.key, f.gpus, f.st = freshKey(st, e.done), st.vfinish, e.key, int32(st.gpus), st
		if p := int(s.vranks[e.key]) - base; p >= 0 && p < len(prev) && (prev[p] == st || s.brokenRunOrder) {
			slot[p] = n
		} else {
			tail = append(tail, n)
		}
	}
	s.running = s.running[:0]
	for _, n := range slot {
		if n >= 0 {
			s.running = append(s.running, s.runTmp[n])
		}
	}
	for _, n := range tail {
		s.running = append(s.running, s.runTmp[n])
	}
	s.runSlot, s.runTail = slot[:0], tail[:0]
	if s.runHook != nil {
		s.runHook(s.running, prev)
	}
	clear(prev) // no references to states past their use
	sortFresh(s.running)
	// Their ranks go to the dense vranks (by key), not to each job's state: a store per
	// running job into a few kilobytes rather than into scattered states.
	s.runBase = len(s.vorder)
	for i := range s.running {
		s.runOrder = append(s.runOrder, s.running[i].st)
		s.vranks[s.running[i].key] = int32(s.runBase + i)
	}
	for _, st := range s.vorder {
		if !take(st) {
			return
		}
	}
	i := 0
	for _, w := range s.wait {
		if w.gone || w.unfit || s.overdue(w) {
			continue
		}
		wf := w.waitJob()
		for ; i < len(s.running); i++ {
			r := &s.running[i]
			if !freshLess(r, &wf) {
				break
			}
			if !takeRun(r.st, int(r.gpus)) {
				return
			}
		}
		if !take(w) {
			return
		}
	}
	for ; i < len(s.running); i++ {
		if !takeRun(s.running[i].st, int(s.running[i].gpus)) {
			return
		}
	}
}

// freshKey is the first of job st's fresh keys (freshLess) when it has done `done` iterations:
// its predicted remaining GPU-time over weight.
func freshKey(st *jobState, done float64) float64 {
	return float64(st.gpus) * max(st.iters-done, 0) * st.tau / st.weight
}

// waitJob is waiting job st with the keys it was placed in s.wait with.
func (st *jobState) waitJob() freshJob {
	return freshJob{st.wr, st.wv, int32(st.key), int32(st.gpus), st}
}

// waitCmp orders s.wait: by the keys the jobs were placed with, in freshLess's order.
func waitCmp(a, b *jobState) int {
	fa, fb := a.waitJob(), b.waitJob()
	return freshCmp(&fa, &fb)
}

// waitInsert places waiting job st, which has done `done` iterations, in s.wait by its current
// keys. Its keys change when it is re-sized (waitRekey from resize) or the virtual machine
// finishes it (Schedule's step 1), when it is placed again.
func (s *Scheduler) waitInsert(st *jobState, done float64) {
	if s.brokenWait {
		done = 0
	}
	st.wr, st.wv, st.wdone = freshKey(st, done), st.vfinish, done
	i, _ := slices.BinarySearchFunc(s.wait, st, waitCmp)
	s.wait = slices.Insert(s.wait, i, st)
	st.inWait = true
}

// waitRemove takes job st out of s.wait.
func (s *Scheduler) waitRemove(st *jobState) {
	st.inWait = false
	if i, ok := slices.BinarySearchFunc(s.wait, st, waitCmp); ok && s.wait[i] == st {
		s.wait = slices.Delete(s.wait, i, i+1)
		return
	}
	if i := slices.Index(s.wait, st); i >= 0 { // not reached while the keys are current
		s.wait = slices.Delete(s.wait, i, i+1)
	}
}

// waitRekey places a waiting job again after its keys changed.
func (s *Scheduler) waitRekey(st *jobState) {
	if st.inWait && (st.wr != freshKey(st, st.wdone) || st.wv != st.vfinish) {
		s.waitRemove(st)
		s.waitInsert(st, st.wdone)
	}
}

// sortFresh sorts fresh jobs by their keys. The input is usually almost sorted (the previous
// call's order, a few new jobs at the end), so it sorts by insertion, in time linear in the
// jobs plus the moves; past a budget of moves it sorts the rest in O(n log n).
func sortFresh(f []freshJob) {
	budget := 8*len(f) + 64
	for i := 1; i < len(f); i++ {
		x := f[i]
		j := i
		for j > 0 && freshLess(&x, &f[j-1]) {
			f[j] = f[j-1]
			j--
		}
		f[j] = x
		if budget -= i - j; budget < 0 {
			slices.SortFunc(f, func(a, b freshJob) int { return freshCmp(&a, &b) })
			return
		}
	}
}

// freshLess orders fresh jobs by predicted remaining GPU-time over weight, then virtual
// completion, then key: a total order.
func freshLess(a, b *freshJob) bool {
	if a.rkey != b.rkey {
		return a.rkey < b.rkey
	}
	if a.vfinish != b.vfinish {
		return a.vfinish < b.vfinish
	}
	return a.key < b.key
}

// freshCmp is freshLess as a three-way comparison.
func freshCmp(a, b *freshJob) int {
	switch {
	case freshLess(a, b):
		return -1
	case freshLess(b, a):
		return 1
	}
	return 0
}

// freshJob is a virtually finished job that is not yet overdue, with its sort keys: predicted
// remaining GPU-time over weight, then virtual completion, then key.
type freshJob struct {
	rkey, vfinish float64
	key           int32
	gpus          int32 // st.gpus (read by remainingOrder's walk without loading st)
	st            *jobState
}

// victim is a running job outside the priority prefix, with its position in the order.
type victim struct {
	st   *jobState
	rank int
}

// rank returns a job's position in the priority order (smaller runs first).
func (s *Scheduler) rank(st *jobState) int {
	if s.remWork {
		return int(s.vranks[st.key])
	}
	if st.vdone {
		if s.patience > 0 {
			return int(s.vranks[st.key])
		}
		return slices.Index(s.vdone, st)
	}
	r, _ := slices.BinarySearchFunc(s.live, st, liveCmp)
	return len(s.vdone) + r
}

// admit predicts and sizes a new job and adds it to the virtual queue, or says why it cannot.
func (s *Scheduler) admit(c *topology.Cluster, j *gpusched.Job) (*jobState, *gpusched.JobError) {
	key := sizingKey{j.GPUs, j.GPUType, j.MinGPUMemory}
	cands, ok := s.sizing[key]
	if !ok {
		var err error
		if cands, err = gpusched.SizingCandidates(j, c); err != nil {
			return nil, gpusched.Reject(j.ID, err)
		}
		if s.sizing == nil {
			s.sizing = map[sizingKey][][]topology.GPUID{}
		}
		s.sizing[key] = cands
	} else if err := j.Validate(c); err != nil { // as SizingCandidates does
		return nil, gpusched.Reject(j.ID, err)
	}
	_, sc, err := gpusched.BestAmong(j, c, s.opt.Cost, cands)
	if err != nil {
		return nil, gpusched.Reject(j.ID, err)
	}
	n, rank, err := s.predictNew(j)
	if err != nil {
		return nil, &gpusched.JobError{Job: j.ID, Err: err}
	}
	st := &jobState{key: s.newKey(), job: j, gpus: j.GPUs, tau: sc.Time, weight: j.EffectiveWeight(), waitFrom: math.NaN()}
	s.setIters(st, n)
	size := float64(j.GPUs) * rank * sc.Time / s.g0
	if err := s.queue.AddWeighted(st.key, size, st.weight); err != nil {
		s.release(st)
		return nil, &gpusched.JobError{Job: j.ID, Err: fmt.Errorf("asrpt: job %q: %w", j.ID, err)}
	}
	s.byKey[st.key] = st
	s.jobs[j.ID] = st
	st.rel = s.queue.Now()
	s.liveInsert(st)
	s.groupJoin(st)
	return st, nil
}

// reestimate revises the prediction of a job that has done `done` >= its predicted iterations;
// the extra predicted work joins the virtual queue in SRPT order.
func (s *Scheduler) reestimate(v *gpusched.View, st *jobState, done float64) error {
	st.overruns++
	s.groupOverrun(st)
	if until, rank, ok := s.groupRank(v, st, done); ok {
		s.reIters(st, until)
		return s.resize(st, float64(st.gpus)*rank*st.tau/s.g0)
	}
	if n, rank, ok := s.gittins(st.job, done); ok {
		s.reIters(st, n)
		return s.resize(st, float64(st.job.GPUs)*rank*st.tau/s.g0)
	}
	n, err := s.opt.Estimator.Estimate(st.job, done)
	if err != nil || !(n > done) || math.IsInf(n, 0) {
		// No usable conditional estimate: assume it needs as much again as it has done.
		n = 2 * math.Max(done, st.iters)
		if n <= done {
			n = done + 1
		}
	}
	extra := float64(st.job.GPUs) * (n - st.iters) * st.tau / s.g0
	s.reIters(st, n)
	if extra <= 0 {
		s.waitRekey(st)
		return nil
	}
	rem := 0.0
	if !st.vdone {
		rem, _ = s.queue.Remaining(st.key)
	}
	return s.resize(st, rem+extra)
}

// setIters sets job st's predicted total iterations, and the iterations at which it is
// re-estimated (Scheduler.limits).
func (s *Scheduler) setIters(st *jobState, n float64) {
	st.iters = n
	s.limits[st.key] = n * (1 + s.opt.ReestimateMargin)
}

// reIters is setIters for a re-estimation (brokenLimits misses the limit's update there).
func (s *Scheduler) reIters(st *jobState, n float64) {
	if s.brokenLimits {
		st.iters = n
		return
	}
	s.setIters(st, n)
}

// resize gives a re-estimated job `size` of remaining virtual work: a job the virtual machine
// had finished joins its queue again, released now; the others keep their release.
func (s *Scheduler) resize(st *jobState, size float64) error {
	if st.vdone {
		if i := slices.Index(s.vdone, st); i >= 0 {
			s.vdone = slices.Delete(s.vdone, i, i+1)
		}
		// Its virtual completion is gone with it: vfinish is read only while the job is
		// virtually done (a stale one would break ties among fresh keys differently from a
		// restored scheduler, whose state holds it only for virtually finished jobs).
		st.vdone, st.vfinish = false, 0
		if err := s.queue.AddWeighted(st.key, size, st.weight); err != nil {
			return fmt.Errorf("asrpt: re-queueing job %q: %w", st.job.ID, err)
		}
		st.rel = s.queue.Now()
		s.liveInsert(st)
		s.waitRekey(st)
		return nil
	}
	s.liveRemove(st)
	if err := s.queue.Update(st.key, size); err != nil {
		return fmt.Errorf("asrpt: re-sizing job %q: %w", st.job.ID, err)
	}
	s.liveInsert(st)
	s.waitRekey(st)
	return nil
}

// decide turns the priority order into a decision: the longest prefix whose GPU demands fit in
// the available GPUs must run; running jobs outside it are preempted only as far as the prefix
// needs their GPUs (lowest priority first, never before MinRunTime); with Backfill,
// lower-priority jobs then start on what is left. A running job on a GPU that has become
// unavailable is displaced: it is placed afresh like a waiting job (a migration) if it is in
// the prefix and fits, and preempted otherwise. It returns the earliest time a blocked
// preemption becomes allowed (+Inf if none).
func (s *Scheduler) decide(v gpusched.View, G int) (gpusched.Decision, float64, error) {
	calm := func(st *jobState) bool { return s.strikes > 0 && st.overruns >= s.strikes }
	s.orderPrefix(&v, G, s.opt.Backfill || s.reversed)
	if s.reversed {
		s.orderPrefix(&v, G, true)
		slices.Reverse(s.order)
	}
	free := v.Free()
	s.free0.SetTo(free)
	displaced := false
	if v.Unavailable.Len() > 0 {
		for i := range v.Running {
			st := s.last[1][i].st
			if st == nil {
				continue
			}
			for _, g := range v.Running[i].GPUs {
				if v.Unavailable.Contains(g) {
					st.displaced = s.epoch
					displaced = true
					break
				}
			}
			if st.displaced == s.epoch {
				for _, g := range v.Running[i].GPUs {
					if !v.Unavailable.Contains(g) {
						free.Add(g)
					}
				}
			}
		}
	}
	// A job's displaced mark is read only in a call that displaced some job: it lies past the
	// first cache line of the job's state, which the walks over the order load.
	holds := func(st *jobState) bool {
		return s.marks[st.key].runs(s.epoch) && (!displaced || st.displaced != s.epoch)
	}
	budget := G
	need := 0 // GPUs the prefix's waiting (and displaced) jobs need
	prefixLen := 0
	// The prefix's jobs that do not hold their GPUs (waiting or displaced), by position: the
	// start loop places them and skips the rest, which it need not load again (holds does not
	// change within a call).
	s.waitPos = s.waitPos[:0]
	for _, st := range s.order {
		if st.gpus > budget {
			break
		}
		budget -= st.gpus
		st.prefix = s.epoch
		prefixLen++
		if !holds(st) {
			need += st.gpus
			s.waitPos = append(s.waitPos, int32(prefixLen-1))
		}
	}
	wake := math.Inf(1)
	preempted := false
	if need > free.Len() && !s.opt.NoPreemption {
		// Preempt running jobs outside the prefix, lowest priority first.
		s.victims = s.victims[:0]
		for i := range v.Running {
			if st := s.last[1][i].st; st != nil && st.prefix != s.epoch && holds(st) {
				s.victims = append(s.victims, victim{st, 0})
			}
		}
		if s.reversed {
			pos := make(map[*jobState]int, len(s.order))
			for i, st := range s.order {
				pos[st] = i
			}
			for i := range s.victims {
				s.victims[i].rank = pos[s.victims[i].st]
			}
		} else {
			for i := range s.victims {
				s.victims[i].rank = s.rank(s.victims[i].st)
			}
		}
		slices.SortFunc(s.victims, func(a, b victim) int { return b.rank - a.rank })
		// Preempt only for the waiting prefix jobs that the preemptable victims can make room
		// for, in priority order: a preemption that does not let a prefix job start only
		// hands its GPUs to a backfilled job and thrashes (jobs protected by MinRunTime cannot
		// be preempted yet).
		avail := free.Len()
		for _, vc := range s.victims {
			js := &v.Running[s.marks[vc.st.key].idx]
			if allowed := js.Since + s.minRun(vc.st); allowed > v.Now {
				wake = math.Min(wake, allowed)
				continue
			}
			avail += len(js.GPUs)
		}
		target := 0
		for _, st := range s.order[:prefixLen] {
			if holds(st) || calm(st) {
				continue
			}
			if target+st.gpus > avail {
				if !s.opt.Backfill {
					break
				}
				continue
			}
			target += st.gpus
		}
		for _, vc := range s.victims {
			if target <= free.Len() {
				break
			}
			js := &v.Running[s.marks[vc.st.key].idx]
			if js.Since+s.minRun(vc.st) > v.Now {
				continue
			}
			vc.st.preempted = s.epoch
			preempted = true
			for _, g := range js.GPUs {
				free.Add(g)
			}
		}
	}
	// The decision is built in its full form in a buffer reused between calls (consolidation
	// works on it), and returned as a delta (gpusched.Decision.KeepOthers: the starts and
	// moves, and the running jobs it leaves out as Stop) to a host that takes deltas
	// (View.AcceptsKeepOthers), as a copy of the full form to any other. Without consolidation
	// a delta is built without the kept running jobs (which it would leave out): a call that
	// stops nobody does not walk the running jobs for the decision.
	var d gpusched.Decision
	d.Run = s.runBuf[:0]
	s.stopIDs = s.stopIDs[:0]
	// kept lists the running jobs the decision keeps where they are. The ids come from the
	// marking walk's list (entry i is v.Running[i]'s), which spares loading every running job's
	// description again. The compact conversion may preempt more jobs while it starts the
	// prefix, so they are listed after the prefix's starts are chosen (and before them in Run).
	kept := func() {
		// A delta decision without consolidation lists only the running jobs it stops: none
		// unless some were preempted or displaced in this call.
		stopsOnly := v.AcceptsKeepOthers && s.consol == nil
		if stopsOnly && !preempted && !displaced {
			return
		}
		last := s.last[1]
		for i := range v.Running {
			st := last[i].st
			if st == nil || st.unfit {
				continue // rejected (Decision.Rejected)
			}
			if (displaced && st.displaced == s.epoch) || (preempted && st.preempted == s.epoch) {
				s.stopIDs = append(s.stopIDs, last[i].id)
				continue
			}
			if !stopsOnly {
				d.Run = append(d.Run, gpusched.Assignment{Job: last[i].id, GPUs: v.Running[i].GPUs})
			}
		}
	}
	starts := s.startBuf[:0]
	// startOne places the waiting (or displaced) job st at position pos of s.order, preempting
	// for a compact placement if mayPreempt; it reports stop when, in strict order, no job
	// after it may start.
	startOne := func(pos int, st *jobState, mayPreempt bool) (stop bool, err error) {
		if (preempted && st.preempted == s.epoch) || (s.opt.NoMigrate && displaced && st.displaced == s.epoch) {
			// Preempted for a compact placement of a job ahead of it, or displaced on a host
			// that cannot migrate: started again at the next call (a second or more later),
			// never moved within one decision.
			wake = math.Min(wake, v.Now+MinWake)
			return false, nil
		}
		if st.job.GPUs > free.Len() {
			if !s.opt.Backfill && !calm(st) {
				return true, nil // strict order: nobody overtakes a waiting prefix job
			}
			return false, nil
		}
		gpus, ok := s.placeMemo(v.Cluster, free, st)
		if !ok || len(gpus) != st.job.GPUs {
			if !s.opt.Backfill && !calm(st) {
				return true, nil
			}
			return false, nil
		}
		if s.compact && st.gpus > 1 {
			var more, wait bool
			gpus, more, wait = s.compactPlace(&v, st, pos, prefixLen, gpus, &free, mayPreempt)
			preempted = preempted || more
			if wait {
				return false, nil
			}
		}
		for _, g := range gpus {
			if !free.Contains(g) {
				return true, fmt.Errorf("asrpt: placer put job %q on GPU %d, which is not free", st.job.ID, g)
			}
			free.Remove(g)
		}
		st.waitFrom = math.NaN()
		starts = append(starts, gpusched.Assignment{Job: st.job.ID, GPUs: gpus})
		return false, nil
	}
	// start places the waiting (and displaced) jobs of s.order[from:to]; in strict order it
	// stops at the first job that cannot start.
	start := func(from, to int) error {
		for i, st := range s.order[from:to] {
			if holds(st) {
				continue
			}
			if stop, err := startOne(from+i, st, from == 0); stop || err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range s.waitPos {
		if stop, err := startOne(int(p), s.order[p], true); err != nil {
			return gpusched.Decision{}, 0, err
		} else if stop {
			break
		}
	}
	kept()
	nKept := len(d.Run)
	d.Run = append(d.Run, starts...)
	starts = starts[:0]
	// Consolidate before backfilling, or backfilled jobs take the GPUs a scattered job needs.
	var moves []consolidate.Move
	if s.consol != nil {
		var err error
		moves, err = s.consol.Apply(&v, &d)
		if err != nil {
			return gpusched.Decision{}, 0, fmt.Errorf("asrpt: %w", err)
		}
		s.moves += len(moves)
		for _, m := range moves {
			for _, g := range m.From {
				free.Add(g)
			}
			for _, g := range m.To {
				free.Remove(g)
			}
		}
	}
	if s.opt.Backfill {
		if err := start(prefixLen, len(s.order)); err != nil {
			return gpusched.Decision{}, 0, err
		}
		d.Run = append(d.Run, starts...)
	}
	s.startBuf = starts[:0]
	out := s.delta(d.Run, nKept, moves, displaced, !v.AcceptsKeepOthers)
	clear(d.Run) // no references to the view's slices past the call
	s.runBuf = d.Run[:0]
	return out, wake, nil
}

// delta returns the decision whose full form is run, of which the first nKept entries keep
// running jobs (consolidation may have moved some of them: moves) and the rest start or move
// jobs, with s.stopIDs the running jobs left out (displaced jobs among them may be placed
// again in run). With full (a host that does not take deltas) it returns the full form itself.
func (s *Scheduler) delta(run []gpusched.Assignment, nKept int, moves []consolidate.Move, displaced, full bool) gpusched.Decision {
	if full {
		return gpusched.Decision{Run: slices.Clone(run)}
	}
	out := gpusched.Decision{KeepOthers: true}
	if n := len(run) - nKept + len(moves); n > 0 {
		out.Run = make([]gpusched.Assignment, 0, n)
	}
	if len(moves) > 0 {
		for _, a := range run[:nKept] {
			if slices.ContainsFunc(moves, func(m consolidate.Move) bool { return m.Job == a.Job }) {
				out.Run = append(out.Run, a)
			}
		}
	}
	out.Run = append(out.Run, run[nKept:]...)
	for _, id := range s.stopIDs {
		if displaced && slices.ContainsFunc(run[nKept:], func(a gpusched.Assignment) bool { return a.Job == id }) {
			continue // displaced and placed again: a move
		}
		out.Stop = append(out.Stop, id)
	}
	return out
}

// Beta returns G / (G - gmax + 1), the list-scheduling factor of the competitive bound for a
// cluster of G GPUs whose jobs need at most gmax GPUs each (1 <= gmax <= G).
func Beta(G, gmax int) float64 {
	if G < 1 || gmax < 1 || gmax > G {
		return math.NaN()
	}
	return float64(G) / float64(G-gmax+1)
}

// Ratio returns the competitive ratio 1 + mu^2 Beta(G, gmax) that the package documentation
// proves for the sum of completion times under the original conversion (Patience < 0; Theorem
// 1), with predictions within a factor mu >= 1 of the truth.
func Ratio(G, gmax int, mu float64) float64 {
	if !(mu >= 1) {
		return math.NaN()
	}
	return 1 + mu*mu*Beta(G, gmax)
}

// PatientRatio returns the competitive ratio 1 + theta mu + mu^2 Beta(G, gmax) that the package
// documentation proves for the sum of completion times under the patient conversion with
// patience theta >= 0 (Theorem 2; the default theta is DefaultPatience), with predictions within
// a factor mu >= 1 of the truth.
func PatientRatio(G, gmax int, mu, theta float64) float64 {
	if !(mu >= 1) || !(theta >= 0) || math.IsInf(theta, 1) {
		return math.NaN()
	}
	return 1 + theta*mu + mu*mu*Beta(G, gmax)
}

// RemainingWorkRatio returns the competitive ratio 1 + mu + theta mu + mu^2 Beta(G, gmax) that
// the package documentation proves for the sum of completion times under the remaining-work
// conversion (Theorem 3, the default) with patience theta >= 0 and predictions within a
// factor mu >= 1 of the truth.
func RemainingWorkRatio(G, gmax int, mu, theta float64) float64 {
	if r := PatientRatio(G, gmax, mu, theta); !math.IsNaN(r) {
		return r + mu
	}
	return math.NaN()
}

// compactPlace is the compact conversion's check of a multi-GPU job's placement gpus on the
// free GPUs (see "Hosts that cannot migrate" in the package documentation). A placement at
// most 1 + slack times slower per iteration than the job's best is taken as it is. Otherwise,
// if mayPreempt, running jobs of lower priority (past MinRunTime) whose GPUs would make a
// compact placement are preempted for it: they are marked, their GPUs join free, and
// preempted is true (a preempted job of the prefix starts again at the next call). Failing that the job waits
// (wait true) for a compact placement, but never longer than the time the slower placement
// would cost it over its predicted remaining iterations (the ski-rental rule: waiting never
// costs more than twice what starting at once would); then it starts on gpus.
func (s *Scheduler) compactPlace(v *gpusched.View, st *jobState, pos, prefixLen int, gpus []topology.GPUID, free *topology.GPUSet, mayPreempt bool) (place []topology.GPUID, preempted, wait bool) {
	m := st.cm
	if m == nil {
		m = &compactMemo{}
		st.cm = m
	}
	// The job's time on a placement changes only with the placement: a job that waits is
	// offered the same one call after call.
	if !m.okSlow || !slices.Equal(m.gpus, gpus) {
		m.slow, _ = s.slowMemo(v.Cluster, st, m, gpus) // 0 when it cannot tell: taken as compact
		m.gpus = append(m.gpus[:0], gpus...)
		m.okSlow = true
	}
	slow := m.slow
	if !(slow > 1+s.slack) {
		return gpus, false, false
	}
	if mayPreempt && !s.opt.NoPreemption {
		s.compactCandidates(v, prefixLen, pos)
		if s.candK > 0 {
			pool := &s.poolBuf
			pool.SetTo(*free)
			pool.AddAll(s.candGPUs)
			// The placer's proposal on the pool and its time change only with the pool and the
			// free GPUs (a pure function of them: decisions do not depend on the memo).
			if !m.okPool || !m.pool.Equal(*pool) || !m.free.Equal(*free) {
				m.to, m.toOK = nil, false
				if to, ok := s.placeShared(v.Cluster, *pool, st, 1); ok && len(to) == st.gpus {
					if sl, ok := s.slowMemo(v.Cluster, st, m, to); ok && sl <= 1+s.slack {
						m.to, m.toOK = append(m.to[:0], to...), true
					}
				}
				m.pool.SetTo(*pool)
				m.free.SetTo(*free)
				m.okPool = true
			}
			if m.toOK {
				to := slices.Clone(m.to)
				for _, c := range s.cands[:s.candK] {
					js := &v.Running[c.idx]
					if c.st.preempted == s.epoch || !overlaps(js.GPUs, to) {
						continue
					}
					c.st.preempted = s.epoch
					preempted = true
					for _, g := range js.GPUs {
						free.Add(g)
						s.candGPUs.Remove(g) // free now: a start may take them
					}
				}
				m.okPool = false // free changed
				return to, preempted, false
			}
		}
	}
	if math.IsNaN(st.waitFrom) {
		st.waitFrom = s.now
	}
	done := 0.0
	if mk := s.marks[st.key]; !mk.runs(s.epoch) {
		done = s.waitDone[st.key]
	}
	if s.now-st.waitFrom < (slow-1)*max(st.iters-done, 0)*st.tau {
		return nil, false, true
	}
	return gpus, false, false
}

// compactMemo is what the compact conversion last computed for a waiting job: its slow-down on
// the placement it was offered, and the placer's compact proposal on the pool of free and
// preemptable GPUs (to, when toOK) with the free GPUs and pool it was made on; and the default
// placer's last placement of the job on the free GPUs (see placeMemo).
type compactMemo struct {
	gpus       []topology.GPUID
	slow       float64
	okSlow     bool
	free, pool topology.GPUSet
	to         []topology.GPUID
	toOK       bool
	okPool     bool

	placeFree    topology.GPUSet   // the free GPUs of the last placement,
	placeJob     *gpusched.Job     // the job's description,
	placeCluster *topology.Cluster // and the cluster it was made on
	placed       []topology.GPUID  // its answer
	placedOK     bool
	okPlace      bool // the fields above hold a placement

	slows  [slowMemoSize]slowEntry // the last slow-downs computed (see slowMemo)
	slowAt int                     // the entry the next one replaces
}

// slowEntry is one slow-down that slowMemo remembers: slowdown's answer for the job's
// description and time per iteration on a cluster and placement.
type slowEntry struct {
	gpus []topology.GPUID
	c    *topology.Cluster
	job  *gpusched.Job
	tau  float64
	slow float64
	has  bool // slowdown's second result
	ok   bool // the entry holds an answer
}

// slowMemoSize is how many slow-downs a waiting job's memo remembers.
const slowMemoSize = 4

// slowMemo is slowdown remembered in a waiting job's memo m: the compact conversion computes
// the slow-down of the placement the job is offered and of the placer's proposal on the pool
// of free and preemptable GPUs at every call, and both come back (the pool changes with the
// running jobs while the proposal, a whole server, often stays). slowdown is a function of
// the cluster, the job's description, its time per iteration at its best placement and the
// placement (the cost model is one of idle links), which are the key.
func (s *Scheduler) slowMemo(c *topology.Cluster, st *jobState, m *compactMemo, gpus []topology.GPUID) (float64, bool) {
	for k := range m.slows {
		if e := &m.slows[k]; e.ok && e.c == c && e.job == st.job && e.tau == st.tau && slices.Equal(e.gpus, gpus) {
			return e.slow, e.has
		}
	}
	slow, has := s.slowShared(c, st, gpus)
	e := &m.slows[m.slowAt]
	m.slowAt = (m.slowAt + 1) % slowMemoSize
	e.gpus = append(e.gpus[:0], gpus...)
	e.c, e.job, e.tau, e.slow, e.has, e.ok = c, st.job, st.tau, slow, has, true
	return slow, has
}

// placeShape identifies the jobs that the default placer (Partitioned) places alike: its
// answer is a function of the cluster, the GPUs offered, the job's model and plan (its worker
// graph), GPU count and GPU constraints (Job.EligibleIn), and of nothing else of the job.
type placeShape struct {
	model   *graph.Model
	gpus    int
	gpuType string
	minMem  float64
}

// shapePlace is one of the default placer's answers for a job shape: the plan (the rest of
// the shape), the cluster and GPUs it was asked on, and its answer.
type shapePlace struct {
	plan   graph.Plan
	c      *topology.Cluster
	set    topology.GPUSet
	placed []topology.GPUID
	ok     bool
}

// shapePlaces is the default placer's latest answers for one job shape, the last
// shapeAnswers of them (a ring).
type shapePlaces struct {
	e    [shapeAnswers]shapePlace
	next int
}

// shapeAnswers is how many answers placeShared remembers per job shape and kind of set: the
// waiting jobs of one shape are offered different pools within a call (each its own
// candidates), and the same ones again at the next call when nothing changed.
const shapeAnswers = 4

// maxShapes bounds the jobs shapes placeShared remembers (per kind); past it they are dropped.
const maxShapes = 256

// placeShared is the Placer's placement of st's job on set: with the default placer, the
// answer given for a job of the same shape (placeShape) when it was last asked on the same
// cluster and set (of the last shapeAnswers sets). Waiting jobs of one shape (the same model, plan and size) are offered the
// same free GPUs within a call and often across calls, and the placer costs a partitioning
// each. kind tells the free GPUs (0) from the compact conversion's pool (1), which alternate:
// each kind has its own answers here and its own memos in the placer (Partitioned.placeIn).
func (s *Scheduler) placeShared(c *topology.Cluster, set topology.GPUSet, st *jobState, kind int) ([]topology.GPUID, bool) {
	if s.placer == nil {
		return s.opt.Placer(c, set, st.job)
	}
	j := st.job
	key := placeShape{j.Model, j.GPUs, j.GPUType, j.MinGPUMemory}
	m := s.shapes[kind]
	r := m[key]
	if r != nil {
		for k := range r.e {
			if e := &r.e[k]; e.c == c && samePlan(e.plan, j.Plan) && (e.set.Equal(set) || s.brokenShape) {
				return slices.Clone(e.placed), e.ok
			}
		}
	}
	gpus, ok := s.placer.placeIn(c, set, j, kind)
	if r == nil {
		if m == nil || len(m) >= maxShapes {
			m = make(map[placeShape]*shapePlaces)
			s.shapes[kind] = m
		}
		r = &shapePlaces{}
		m[key] = r
	}
	e := &r.e[r.next]
	r.next = (r.next + 1) % shapeAnswers
	e.plan, e.c, e.ok = j.Plan, c, ok
	e.set.SetTo(set)
	e.placed = append(e.placed[:0], gpus...)
	return gpus, ok
}

// slowShape identifies the jobs whose slow-downs slowShared shares: under the default cost
// model (gpusched.ModelCost) a job's time per iteration on a placement is a function of the
// cluster, its model and plan, its parameter servers and the placement; its slow-down divides
// that by its time at its best placement (tau).
type slowShape struct {
	c     *topology.Cluster
	model *graph.Model
	ps    *ps.Spec
	gpus  int
	tau   float64
}

// slowPlace is one slow-down slowShared remembers for a shape: the plan (the rest of the
// shape), the placement and slowdown's answer.
type slowPlace struct {
	plan graph.Plan
	gpus []topology.GPUID
	slow float64
	has  bool
}

// slowShared is slowdown, shared between jobs of one shape (slowShape) under the default cost
// model: the compact conversion computes the slow-down of each waiting job's placement, and
// jobs of one shape are offered the same placements (placeShared). The last slowMemoSize
// answers of each shape are kept.
func (s *Scheduler) slowShared(c *topology.Cluster, st *jobState, gpus []topology.GPUID) (float64, bool) {
	j := st.job
	if _, ok := s.opt.Cost.(*gpusched.ModelCost); !ok || j.Model == nil {
		return s.slowdown(c, st, gpus)
	}
	key := slowShape{c, j.Model, j.PS, j.GPUs, st.tau}
	list := s.slows[key]
	for k := range list {
		if e := &list[k]; (slices.Equal(e.gpus, gpus) || s.brokenSlow) && samePlan(e.plan, j.Plan) {
			return e.slow, e.has
		}
	}
	slow, has := s.slowdown(c, st, gpus)
	if s.slows == nil || len(s.slows) >= maxShapes {
		s.slows = make(map[slowShape][]slowPlace)
	}
	e := slowPlace{plan: j.Plan, gpus: slices.Clone(gpus), slow: slow, has: has}
	if len(list) < slowMemoSize {
		list = append(list, e)
	} else {
		copy(list, list[1:])
		list[len(list)-1] = e
	}
	s.slows[key] = list
	return slow, has
}

// placeMemo is the Placer's placement of st's job on free. A job that the compact conversion
// keeps waiting is offered the placer's answer on the free GPUs call after call, and the free
// GPUs often do not change between calls (an arrival that queues): with the default placer
// (Partitioned, a function of the cluster, the free GPUs and the job) the answer is taken
// from the job's memo when they are the same as last time.
func (s *Scheduler) placeMemo(c *topology.Cluster, free topology.GPUSet, st *jobState) ([]topology.GPUID, bool) {
	m := st.cm
	if m == nil || s.placer == nil {
		return s.opt.Placer(c, free, st.job)
	}
	if m.okPlace && m.placeJob == st.job && m.placeCluster == c && m.placeFree.Equal(free) {
		return slices.Clone(m.placed), m.placedOK
	}
	gpus, ok := s.placeShared(c, free, st, 0)
	m.placeFree.SetTo(free)
	m.placeJob, m.placeCluster = st.job, c
	m.placed, m.placedOK, m.okPlace = append(m.placed[:0], gpus...), ok, true
	return gpus, ok
}

// candidate is a running job that the compact conversion may preempt, with its index in the
// view's Running list and its rank in the priority order.
type candidate struct {
	st    *jobState
	idx   int // index in v.Running
	order int // position in the priority order (math.MaxInt: outside the prefix)
}

// compactCandidates keeps, for the current call, the running jobs that the compact conversion
// may preempt for the job at position mine of the priority order (s.order): those past their
// protection (MinRunTime, StrikeRunTime) and of lower priority, as s.cands[:s.candK] (from the
// lowest priority up: first the running jobs outside the prefix, then the prefix's from its
// end), with their GPUs in s.candGPUs. It is built once per call and shrinks as the calls come
// for jobs further down the order (the prefix is started in priority order).
func (s *Scheduler) compactCandidates(v *gpusched.View, prefixLen, mine int) {
	if s.candEpoch != s.epoch {
		s.candEpoch = s.epoch
		s.cands = s.cands[:0]
		s.nonCands = s.nonCands[:0]
		// Entry i of the marking walk's running list is v.Running[i]'s (its mark says running
		// at index i): eligible without the load of its mark.
		for i := range v.Running {
			js := &v.Running[i]
			vs := s.last[1][i].st
			switch {
			case vs != nil && vs.prefix == s.epoch:
				// in the prefix: below
			case vs != nil && vs.preempted != s.epoch && vs.displaced != s.epoch && !vs.unfit &&
				js.Since+s.minRun(vs) <= v.Now:
				s.cands = append(s.cands, candidate{vs, i, math.MaxInt})
			default:
				if !s.brokenCands {
					s.nonCands = append(s.nonCands, int32(i))
				}
			}
		}
		// The prefix's running jobs from its end: those of lower priority than the job at
		// position mine are candidates if past their protection; those at or above it never
		// are for this call (positions only grow within it).
		for k := prefixLen - 1; k >= 0; k-- {
			vs := s.order[k]
			m := s.marks[vs.key]
			if !m.runs(s.epoch) {
				continue
			}
			i := int(m.idx)
			if k > mine && vs.preempted != s.epoch && vs.displaced != s.epoch && !vs.unfit &&
				v.Running[i].Since+s.minRun(vs) <= v.Now {
				s.cands = append(s.cands, candidate{vs, i, k})
				continue
			}
			s.nonCands = append(s.nonCands, int32(i))
		}
		s.candK = len(s.cands)
		// A running job's GPU list is a cache miss: the candidates' GPUs are added up from the
		// candidates or, when they are the more numerous, built as the GPUs running jobs hold
		// less those of the other running jobs. The held GPUs are the cluster's less the free
		// and unavailable ones when the call began (a job on an unavailable GPU is displaced,
		// so never a candidate).
		if s.allFor != v.Cluster {
			s.allGPUs, s.allFor = v.Cluster.AllGPUs(), v.Cluster
		}
		if len(s.cands) <= len(s.nonCands) {
			s.candGPUs.SetTo(topology.GPUSet{}) // empty; its storage is kept
			for _, c := range s.cands {
				for _, g := range v.Running[c.idx].GPUs {
					s.candGPUs.Add(g)
				}
			}
		} else {
			s.candGPUs.SetTo(s.allGPUs)
			s.candGPUs.RemoveAll(s.free0)
			s.candGPUs.RemoveAll(v.Unavailable)
			for _, i := range s.nonCands {
				for _, g := range v.Running[i].GPUs {
					s.candGPUs.Remove(g)
				}
			}
		}
	}
	for s.candK > 0 && s.cands[s.candK-1].order <= mine {
		s.candK--
		for _, g := range v.Running[s.cands[s.candK].idx].GPUs {
			s.candGPUs.Remove(g)
		}
	}
	if s.candHook != nil {
		s.candHook(v, prefixLen, mine)
	}
}

// slowdown is the job's time per iteration on gpus over its time at its best placement.
func (s *Scheduler) slowdown(c *topology.Cluster, st *jobState, gpus []topology.GPUID) (float64, bool) {
	if !(st.tau > 0) || (st.job.Model == nil && s.fixedPlain) {
		return 0, false // placement-independent: every placement is compact
	}
	sc, err := s.opt.Cost.StepCost(st.job, c, gpus, nil)
	if err != nil || !(sc.Time > 0) {
		return 0, false
	}
	return sc.Time / st.tau, true
}

// overlaps reports whether the two GPU lists share a GPU.
func overlaps(a, b []topology.GPUID) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// minRun is the least time in seconds a running job runs after it starts or resumes before
// A-SRPT may preempt it: MinRunTime, and at least StrikeRunTime for a job with strikes (see
// Options.Strikes).
func (s *Scheduler) minRun(st *jobState) float64 {
	if s.strikes > 0 && st.overruns >= s.strikes {
		return max(s.opt.MinRunTime, s.strikeRun)
	}
	return s.opt.MinRunTime
}
