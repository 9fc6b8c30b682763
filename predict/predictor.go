package predict

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	gpusched "github.com/gpusched/gpusched"
)

// Errors returned by this package; they are wrapped with the offending item (job id, sample
// index, option name): use errors.Is.
var (
	// ErrInvalidOptions reports an Options value New cannot use.
	ErrInvalidOptions = errors.New("predict: invalid options")
	// ErrInvalidIterations reports an iteration count that is NaN, infinite or negative.
	ErrInvalidIterations = errors.New("predict: invalid iteration count")
	// ErrInvalidSample reports a training sample Fit or FitEncoder cannot use.
	ErrInvalidSample = errors.New("predict: invalid sample")
	// ErrNilJob reports a nil job.
	ErrNilJob = errors.New("predict: nil job")
	// ErrNoModel reports that no forest has been trained yet.
	ErrNoModel = errors.New("predict: no forest trained yet")
	// ErrNoHistory reports a retraining request with no observed job.
	ErrNoHistory = errors.New("predict: nothing observed to train on")
)

// Backend selects the random-forest implementation.
type Backend int

const (
	// BackendCART is the package's own seeded CART forest (the default): deterministic, no
	// goroutines, fast training on pre-binned features.
	BackendCART Backend = iota
	// BackendMalaschitz is github.com/malaschitz/randomForest: Gini splits, trained in
	// goroutines from the global math/rand source, so not reproducible run to run.
	BackendMalaschitz
)

// String returns the backend's name.
func (b Backend) String() string {
	switch b {
	case BackendCART:
		return "cart"
	case BackendMalaschitz:
		return "malaschitz"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// SplitCriterion selects how the CART backend scores a split.
type SplitCriterion int

const (
	// SplitGini scores a split by the Gini impurity of the bins, as the malaschitz library
	// does (the default: the more accurate on the benchmark, see BENCHMARKS.md).
	SplitGini SplitCriterion = iota
	// SplitVariance scores a split by the squared error of the rows' log-iterations: the
	// bins' order counts, as in a regression tree, while the leaves still hold class
	// distributions.
	SplitVariance
)

// String returns the criterion's name.
func (s SplitCriterion) String() string {
	switch s {
	case SplitVariance:
		return "variance"
	case SplitGini:
		return "gini"
	}
	return fmt.Sprintf("SplitCriterion(%d)", int(s))
}

// Options configure a Predictor. The zero value of every field selects its default.
type Options struct {
	// Backend is the forest implementation; default BackendCART.
	Backend Backend
	// Split is the CART backend's split criterion; default SplitGini. The malaschitz backend
	// always uses Gini.
	Split SplitCriterion
	// Bins is the number of quantile bins of log(iterations), the forest's classes, at most
	// 256; default 32.
	Bins int
	// Trees is the number of trees; default 64 (128 gain less than 0.001 RMSLE on the
	// benchmark; see BENCHMARKS.md).
	Trees int
	// MaxDepth limits the depth of the trees; default 0, unlimited.
	MaxDepth int
	// MinLeaf is the least number of bootstrap rows on each side of a split; default 40
	// (large leaves hold well-estimated distributions; see BENCHMARKS.md).
	MinLeaf int
	// MTry is the number of features tried at each split; default half the encoded columns,
	// rounded up (9 of the 18 fixed columns; see BENCHMARKS.md).
	MTry int
	// Window is the number of most recent finished jobs the forest is trained on; default
	// 20,000.
	Window int
	// RetrainEvery is how many Observe calls trigger a retraining over the window; default
	// 2,000. Until the forest has been trained on that many jobs, it is retrained as soon as
	// the observations since the last training are as many as the jobs it was trained on (the
	// window doubles). Negative: never retrain automatically (call Retrain).
	RetrainEvery int
	// MinSamples is the number of observed jobs below which no forest is trained and
	// predictions fall back to the group history or the prior; default 100.
	MinSamples int
	// Seed seeds the CART forest; trainings are numbered and seeded from it.
	Seed uint64
	// PriorIterations is the median iteration count predicted before anything is observed;
	// default 10,000.
	PriorIterations float64
	// PriorSigma is the standard deviation of the natural log of the prior's iterations;
	// default 1.5 (the 10th-90th percentiles are the median divided and multiplied by 6.8).
	PriorSigma float64
	// Margin is the least remaining work, as a fraction of the iterations done, that
	// Conditional ever predicts for a job inside the predicted distribution; default 0.02.
	Margin float64
	// Tail is the remaining work, as a fraction of the iterations done, that Conditional
	// predicts for a job that has run past every point of its predicted distribution
	// (E[X | X > d] = (1 + Tail) d, as for a Pareto tail of index 1 + 1/Tail); default 0.5.
	// Values below Margin are raised to Margin.
	Tail float64
	// HistoryRuns is the number of most recent runs per group, user and cohort that the
	// history features and the group fallback use; default 16.
	HistoryRuns int
	// MaxKeys bounds the groups (and, separately, users and cohorts) whose history is kept;
	// beyond it the least recently updated quarter is dropped. Default 1<<18.
	MaxKeys int
	// MaxPending bounds the jobs whose History is remembered between their first prediction
	// and their observation (oldest forgotten first); default 1<<16.
	MaxPending int
	// CalibrationWindow is the number of most recent batches of finished jobs (a group's jobs
	// predicted between the same two of its completions), per group, per user and overall,
	// whose probability integral transforms calibrate the predicted distributions (see the
	// package documentation); default 200 (chosen with CalibrationPrior and CalibrationStep on
	// the Philly trace: BENCHMARKS.md, "predict").
	CalibrationWindow int
	// CalibrationPrior is the weight, in batches, that a broader level of calibration (all
	// jobs for a user, the user for a group) keeps when it is blended with a narrower one
	// holding n batches: the narrower level weighs n / (n + CalibrationPrior); default 20.
	CalibrationPrior float64
	// CalibrationStep is the step of the online adaptation of the levels read for the 10th and
	// 90th percentiles (adaptive conformal inference over all jobs: see the package
	// documentation); default 0.001, negative: none.
	CalibrationStep float64
	// NoCalibration turns the calibration off: distributions are the forest's (or the
	// history's) as they are.
	NoCalibration bool
	// CalibrationUserStep is the step of each user's own online adaptation of the levels read
	// for the 10th and 90th percentiles, on top of the adaptation over all jobs
	// (CalibrationStep): adaptive conformal inference per user (Features.User: a team, a
	// virtual cluster) on whether each finished job fell below, inside or above the 80%
	// interval of its first estimate, each job weighted 1/sqrt(k) as the k-th of its batch, so
	// that coverage holds per user and not only on average. Default 0: none. On the Philly
	// trace (benchmarks/predict-28.md) it brought per-cluster coverage towards 80% only by
	// widening the intervals five- to tenfold (bursts of jobs that miss together drive a
	// user's levels to their bounds), a worse interval score: measured, not recommended. The
	// users' offsets are part of the saved state (see Save).
	CalibrationUserStep float64
	// CalibrationUserBound bounds the offsets CalibrationUserStep moves each user's tail levels
	// by, in (0, 0.5]: a user's 10th and 90th percentiles are read at most this far from the
	// levels over all jobs. Default 0: 0.5 (in effect unbounded). On the Philly trace
	// (benchmarks/predict-28.md, round 4), step 0.002 bounded to 0.05 or 0.025 kept round 2's
	// interval widths but little of the coverage the unbounded step buys, and lost to the
	// last-200-runs baseline on one selection cluster: measured, not recommended.
	CalibrationUserBound float64
	// CalibrationJobStep is the same adaptation over all jobs, each weighing 1, on the
	// coverage of their first estimates: the share of jobs, not of batches, that fall below
	// and above the 80% interval tends to 10% each. Default 0: none. On the Philly trace step
	// 0.001 gave 80.4% coverage but intervals four to five times wider and a worse interval
	// score (benchmarks/predict-28.md): measured, not recommended. Part of the saved state.
	CalibrationJobStep float64
	// CalibrationAtArrival makes the calibration learn, from each finished job, where its
	// length fell in the uncalibrated distribution the predictor gave it at its first
	// prediction (the one a scheduler acted on), instead of in the one it would give it when
	// it finishes: by then the job's batch-mates (its group's jobs predicted alongside it) have
	// often finished and sharpened the group's history, so that the latter is a narrower
	// yardstick than the first estimate had, and its coverage falls short. The predictor keeps
	// 41 quantiles (164 bytes) of each remembered job's first distribution (saved with it); a
	// job without one (no ID, forgotten, or restored from a state written before they were
	// saved) is calibrated as without the option. Outcome.PIT is unchanged. Default false; measured on
	// the Philly trace with CalibrationJobWeights (see there): not part of WithRealDurations.
	CalibrationAtArrival bool
	// CalibrationJobWeights makes every finished job weigh 1 in the calibration windows,
	// instead of every batch (see CalibrationWindow): the calibrated intervals then hold the
	// nominal share of jobs, not of batches, which a scheduler that sees each job of a burst
	// needs. The windows still hold CalibrationWindow batches, at most 64 jobs each. Default
	// false. On the Philly trace (benchmarks/predict-28.md, round 3), with CalibrationAtArrival
	// on top of WithRealDurations, the two lowered the interval score and lifted coverage
	// towards 80% on the training period, but on the held-out last 30% the large virtual
	// clusters' bursts, now weighing per job in the overall map, widened the small clusters'
	// intervals (over all test jobs IS80 4.64 -> 4.71; 80% coverage in 75-85% on 2 of 8
	// clusters instead of 6): measured, not part of WithRealDurations.
	CalibrationJobWeights bool
	// ArrivalFeatures adds to every job, at its first prediction, what the predictor has seen
	// of the submissions around it: the time since its group's previous submission, its
	// group's and its user's submissions in the hour before, its group's jobs predicted and not
	// yet observed (numeric extras ArrivalGroupGap, ArrivalGroupHour, ArrivalUserHour,
	// ArrivalGroupRunning; Job.Arrival must be in seconds). Jobs without an ID are not counted
	// as submissions. Default false. The submissions and each remembered job's arrival
	// features are part of the saved state.
	ArrivalFeatures bool
	// GroupMix, in [0, 1), mixes the empirical distribution of the last GroupMixRuns finished
	// runs of the job's group into the forest's distribution before calibration: a group with
	// n such runs weighs GroupMix * n / (n + 8), the forest the rest. The calibration then
	// learns from the mixture's PITs. Default 0: the forest alone. The groups' runs (and their
	// GroupMixAdaptive scores) are part of the saved state.
	GroupMix float64
	// GroupMixRuns is the number of a group's most recent runs GroupMix uses; default 200.
	GroupMixRuns int
	// GroupMixAdaptive adapts each group's GroupMix weight online: the weight's log-odds move
	// by the decayed sum, over the group's finished jobs (about the last 20), of how much more
	// likely each job's length was under the group's empirical distribution than under the
	// forest's (Bayesian model averaging with forgetting; weights kept in [0.02, 0.98]), so
	// that a group whose recent runs predict it better leans on them and one the forest
	// predicts better leans on the forest. Default false.
	GroupMixAdaptive bool
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	bad := func(name string, v any) (Options, error) {
		return o, fmt.Errorf("%w: %s = %v", ErrInvalidOptions, name, v)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"Bins", o.Bins}, {"Trees", o.Trees}, {"MaxDepth", o.MaxDepth}, {"MinLeaf", o.MinLeaf},
		{"MTry", o.MTry}, {"Window", o.Window}, {"MinSamples", o.MinSamples},
		{"HistoryRuns", o.HistoryRuns}, {"MaxKeys", o.MaxKeys}, {"MaxPending", o.MaxPending},
		{"CalibrationWindow", o.CalibrationWindow}, {"GroupMixRuns", o.GroupMixRuns}} {
		if c.v < 0 {
			return bad(c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"PriorIterations", o.PriorIterations}, {"PriorSigma", o.PriorSigma},
		{"Margin", o.Margin}, {"Tail", o.Tail}, {"CalibrationPrior", o.CalibrationPrior},
		{"CalibrationUserStep", o.CalibrationUserStep}, {"CalibrationJobStep", o.CalibrationJobStep},
		{"CalibrationUserBound", o.CalibrationUserBound}} {
		if !(c.v >= 0) || math.IsInf(c.v, 0) {
			return bad(c.name, c.v)
		}
	}
	if o.CalibrationUserBound > 0.5 {
		return bad("CalibrationUserBound (at most 0.5)", o.CalibrationUserBound)
	}
	if !(o.GroupMix >= 0 && o.GroupMix < 1) {
		return bad("GroupMix (in [0, 1))", o.GroupMix)
	}
	if math.IsNaN(o.CalibrationStep) || math.IsInf(o.CalibrationStep, 0) {
		return bad("CalibrationStep", o.CalibrationStep)
	}
	if o.Backend != BackendCART && o.Backend != BackendMalaschitz {
		return bad("Backend", o.Backend)
	}
	if o.Split != SplitGini && o.Split != SplitVariance {
		return bad("Split", o.Split)
	}
	if o.Bins > 256 {
		return bad("Bins (at most 256)", o.Bins)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Bins, 32)
	def(&o.Trees, 64)
	def(&o.MinLeaf, 40)
	def(&o.Window, 20_000)
	def(&o.RetrainEvery, 2_000)
	def(&o.MinSamples, 100)
	def(&o.HistoryRuns, 16)
	def(&o.MaxKeys, 1<<18)
	def(&o.MaxPending, 1<<16)
	def(&o.CalibrationWindow, 200)
	def(&o.GroupMixRuns, 200)
	deff(&o.CalibrationPrior, 20)
	deff(&o.CalibrationStep, 0.001)
	deff(&o.PriorIterations, 10_000)
	deff(&o.PriorSigma, 1.5)
	deff(&o.Margin, 0.02)
	deff(&o.Tail, 0.5)
	o.Tail = max(o.Tail, o.Margin)
	return o, nil
}

// Source tells where an Estimate comes from.
type Source int

const (
	// SourcePrior is the global prior: the recent runs of all jobs, or Options'
	// PriorIterations and PriorSigma before any job is observed.
	SourcePrior Source = iota
	// SourceGroup is the history of the job's recurrence group (before a forest is trained).
	SourceGroup
	// SourceForest is the random forest.
	SourceForest
)

// String returns the source's name.
func (s Source) String() string {
	switch s {
	case SourcePrior:
		return "prior"
	case SourceGroup:
		return "group"
	case SourceForest:
		return "forest"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Estimate is a prediction of a job's total iterations.
type Estimate struct {
	// Iterations is the point estimate of the total iterations: the geometric mean of the
	// calibrated predictive distribution (see Distribution.Point), what minimises the
	// expected squared log error.
	Iterations float64
	// P10, P50 and P90 are the 10th, 50th and 90th percentiles of the calibrated predictive
	// distribution.
	P10, P50, P90 float64
	// Survival is the predicted probability that the job runs past the iterations already
	// done (1 for Predict); far beyond the distribution it is negligible.
	Survival float64
	// Source is where the estimate comes from.
	Source Source
}

// Sample is a finished job for Fit: the job, its true iterations and when it finished.
type Sample struct {
	// Job is the job as it was submitted.
	Job gpusched.Job
	// Iterations is the number of iterations it ran (>= 0, finite).
	Iterations float64
	// Finished is when it finished, in seconds on the clock of Job.Arrival; 0 means
	// Job.Arrival + Iterations * Job.StepTime (as if it had run at once without waiting).
	// A sample's history features only use samples that finished strictly before it arrived.
	Finished float64
}

// model is one trained forest with everything needed to use it. Immutable.
type model struct {
	enc    *Encoder
	bins   binning
	clf    classifier
	rows   []row
	ticket uint64
	id     uint64 // unique among the models of the process (nextModelID), for memos
}

// nextModelID numbers models, so that a memo can tell which one it came from without keeping
// it alive.
var nextModelID atomic.Uint64

// Predictor predicts the iterations of training jobs and learns from finished ones.
//
// Concurrency: a Predictor is safe for concurrent use by multiple goroutines. Predict,
// Conditional and Encode take a read lock only to read the current forest and history;
// Observe holds the write lock only to record the job. A retraining runs in the goroutine of
// the Observe (or Retrain) call that triggers it, outside the lock: predictions continue with
// the previous forest meanwhile and the new one is swapped in when ready. At most one
// automatic retraining runs at a time. The package starts no goroutines (except inside the
// malaschitz library with BackendMalaschitz). Called in the same order, a Predictor with the
// CART backend gives the same answers.
type Predictor struct {
	opts  Options
	prior dist

	mu       sync.RWMutex
	model    *model
	hist     *historyStore
	window   []row // ring of at most opts.Window rows; oldest at head once full
	head     int
	observed uint64 // jobs observed since New or the last Fit (Fit's samples included)
	fitAt    uint64 // observed when the current forest's rows were taken
	training bool   // an automatic retraining is running
	tickets  uint64 // trainings started since New
	gen      uint64 // bumped by Fit: trainings of an older generation are dropped

	mix  *groupSamples           // the groups' last runs for Options.GroupMix; nil: off
	arr  *arrivalStore           // submissions for Options.ArrivalFeatures (under cacheMu); nil: off
	cal  [numSources]*calibrator // PIT windows per source of estimates; nil: NoCalibration
	acc  accuracyRing            // errors of the latest observed jobs' first estimates
	gacc groupAccuracies         // the same per group, decayed

	cacheMu  sync.Mutex
	pending  map[gpusched.JobID]pendingJob
	pendQ    []gpusched.JobID // FIFO of remembered ids, ring of opts.MaxPending
	pendHead int
	// pendDirty holds the remembered jobs added, changed or forgotten since the last base
	// (SaveBase, RestoreDelta); nil: not tracked (see noteDirty).
	pendDirty map[gpusched.JobID]struct{}

	bufs sync.Pool // *scratch for estimates

	// markMu guards mark, what the last base (SaveBase) held, and lastDelta, the size of the
	// last SaveDelta (see delta.go). It is taken before mu.
	markMu    sync.Mutex
	mark      *mark
	lastDelta int
	// modelBytes is what SaveModel writes of the forest modelFor (markMu): a new base of the
	// same forest reuses it.
	modelBytes []byte
	modelFor   *model
}

// New returns a Predictor with nothing observed: it predicts the prior until it observes jobs.
func New(opts Options) (*Predictor, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Predictor{
		opts:    o,
		prior:   priorDist(o.PriorIterations, o.PriorSigma),
		hist:    newHistoryStore(o.HistoryRuns, o.MaxKeys),
		pending: map[gpusched.JobID]pendingJob{},
		mix:     o.newMix(),
	}
	if o.ArrivalFeatures {
		p.arr = newArrivalStore(o.MaxKeys)
	}
	p.resetCalibration()
	return p, nil
}

// resetCalibration empties the calibration windows and the accuracy record. Called with p.mu
// held or before p is shared.
func (p *Predictor) resetCalibration() {
	for i := range p.cal {
		p.cal[i] = nil
		if !p.opts.NoCalibration {
			p.cal[i] = newCalibrator(p.opts.CalibrationWindow, p.opts.CalibrationPrior, max(p.opts.CalibrationStep, 0), p.opts.MaxKeys)
			p.cal[i].userStep = p.opts.CalibrationUserStep
			p.cal[i].userBound = userBound(p.opts.CalibrationUserBound)
			p.cal[i].userBatch = userBatchWeights
			p.cal[i].jobStep = p.opts.CalibrationJobStep
			p.cal[i].jobWeights = p.opts.CalibrationJobWeights
		}
	}
	p.acc = accuracyRing{}
	p.gacc = groupAccuracies{maxKeys: p.opts.MaxKeys}
}

// pendingJob is what the predictor remembers of a job between its first prediction and its
// observation.
type pendingJob struct {
	hist  History
	first Estimate // the first unconditioned estimate (Source < 0: none yet)
	// votes are the forest's vote fractions for the job with hist, from the model numbered
	// vmodel (0: none): the job's features and History do not change, so until the forest is
	// retrained a re-estimate (Conditional) or the job's PIT at its completion (ObserveOutcome)
	// reuses them instead of encoding the job and walking every tree again.
	votes  []float64
	vmodel uint64
	// arr are the job's arrival features (Options.ArrivalFeatures) when hasArr; the job then
	// counts among the running jobs of group until it is observed or forgotten.
	arr    arrivalFeats
	hasArr bool
	group  string
	// firstQ are the job's first uncalibrated distribution's quantiles at firstLevels, and
	// firstSrc its source (Options.CalibrationAtArrival; nil: none).
	firstQ   []float32
	firstSrc Source
}

// Options returns the predictor's options with the defaults filled in.
func (p *Predictor) Options() Options { return p.opts }

func checkIterations(n float64) error {
	if math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
		return fmt.Errorf("%w: %v (must be finite and >= 0)", ErrInvalidIterations, n)
	}
	return nil
}

// Fit replaces everything the predictor knows with the given finished jobs and trains the
// forest on the most recent Options.Window of them (by finish time) if there are at least
// Options.MinSamples. The calibration and the accuracy record start empty: they learn from
// the jobs observed after Fit. Each sample's History is computed from the samples that finished
// strictly before it arrived, as it would have been online. It returns an error naming the
// sample for a NaN, infinite or negative iteration count, a non-finite arrival or finish time
// or a finish before the arrival; the predictor is then unchanged. Observe calls that run
// concurrently with Fit may be lost.
func (p *Predictor) Fit(samples []Sample) error {
	n := len(samples)
	finish := make([]float64, n)
	for i := range samples {
		s := &samples[i]
		if err := checkIterations(s.Iterations); err != nil {
			return fmt.Errorf("%w: sample %d (job %q): %w", ErrInvalidSample, i, s.Job.ID, err)
		}
		a := s.Job.Arrival
		if !finite(a) {
			return fmt.Errorf("%w: sample %d (job %q): arrival %v is not finite", ErrInvalidSample, i, s.Job.ID, a)
		}
		f := s.Finished
		if f == 0 {
			f = a
			if st := s.Job.StepTime; st > 0 && finite(st) {
				f += s.Iterations * st
			}
		}
		if !finite(f) || f < a {
			return fmt.Errorf("%w: sample %d (job %q): finish %v is not a finite time >= arrival %v",
				ErrInvalidSample, i, s.Job.ID, f, a)
		}
		finish[i] = f
	}
	byArrival := make([]int, n)
	byFinish := make([]int, n)
	for i := range byArrival {
		byArrival[i], byFinish[i] = i, i
	}
	slices.SortStableFunc(byArrival, func(a, b int) int { return cmp.Compare(samples[a].Job.Arrival, samples[b].Job.Arrival) })
	slices.SortStableFunc(byFinish, func(a, b int) int { return cmp.Compare(finish[a], finish[b]) })

	hist := newHistoryStore(p.opts.HistoryRuns, p.opts.MaxKeys)
	ctx := make([]History, n)
	fi := 0
	for _, i := range byArrival {
		for fi < n && finish[byFinish[fi]] < samples[i].Job.Arrival {
			k := byFinish[fi]
			hist.add(&samples[k].Job.Features, logIters(samples[k].Iterations))
			fi++
		}
		ctx[i] = hist.context(&samples[i].Job.Features)
	}
	for ; fi < n; fi++ {
		k := byFinish[fi]
		hist.add(&samples[k].Job.Features, logIters(samples[k].Iterations))
	}
	mix := p.opts.newMix()
	if mix != nil {
		for _, k := range byFinish {
			mix.add(samples[k].Job.Features.Group, logIters(samples[k].Iterations))
		}
	}
	var arrFeats []arrivalFeats
	var arr *arrivalStore
	if p.opts.ArrivalFeatures {
		arrFeats, arr = fitArrivals(samples, finish, byArrival, p.opts.MaxKeys)
	}
	keep := byFinish[max(0, n-p.opts.Window):]
	window := make([]row, len(keep))
	for w, i := range keep {
		job := &samples[i].Job
		if arr != nil {
			job = withArrival(job, &arrFeats[i])
		}
		window[w] = newRow(job, ctx[i], logIters(samples[i].Iterations))
		window[w].seq = uint64(n - len(keep) + w + 1)
	}

	p.mu.Lock()
	p.tickets++
	ticket := p.tickets
	p.mu.Unlock()
	var m *model
	if len(window) >= p.opts.MinSamples {
		m = p.opts.train(window, ticket)
	}

	p.mu.Lock()
	p.gen++
	p.model = m
	p.hist = hist
	p.mix = mix
	p.window = slices.Clone(window) // the forest keeps its rows; the window is overwritten
	p.head = 0
	p.observed = uint64(n)
	p.fitAt = uint64(n)
	p.resetCalibration()
	p.mu.Unlock()
	p.cacheMu.Lock()
	p.pending = map[gpusched.JobID]pendingJob{}
	p.pendQ, p.pendHead = nil, 0
	p.arr = arr
	p.cacheMu.Unlock()
	return nil
}

// Observe records that job finished after running iterations iterations (its true length, or
// how far it got if it was killed; counts below 1 are learned as 1). The job joins the
// history of its group, user and cohort at once, and the training window; its training row
// holds the History the predictor gave it when it first predicted it (or, if it never did, the
// History as of now). Where the job's true length falls in the distribution the predictor
// gives it now (its probability integral transform) joins the calibration windows of its
// group, its user and all jobs. Every Options.RetrainEvery observations (sooner while the
// window is small) the forest is retrained over the window, in this call (see Predictor).
// Observe returns an error for a nil job or an iteration count that is NaN, infinite or
// negative.
func (p *Predictor) Observe(job *gpusched.Job, iterations float64) error {
	_, err := p.ObserveOutcome(job, iterations)
	return err
}

// Outcome is what a finished job says about the predictor's estimate of it (ObserveOutcome).
//
// Deprecated: use Predictor.Observe; removed in v0.3.0.
type Outcome struct {
	// First is the job's first unconditioned estimate, as Predict gave it (its Iterations, P10,
	// P50, P90 in iterations), when the predictor remembered one (Known).
	First Estimate
	// Known tells whether First holds an estimate: the job was predicted (Predict, Conditional
	// or Distribution with its ID) since its predictor was created or last Fit, and not
	// forgotten (Options.MaxPending).
	Known bool
	// Iterations is the job's true length, as observed.
	Iterations float64
	// LogError is ln(Iterations / First.Iterations), counts below 1 taken as 1: positive when
	// the job ran longer than predicted. 0 when not Known.
	LogError float64
	// PIT is where the job's length fell in the distribution the predictor gave it when it
	// finished, before calibration: F(Iterations), in (0, 1). This is the score the
	// calibration learns from.
	PIT float64
}

// ObserveOutcome is Observe, and it also returns how the job's length compares with its
// first estimate: the cheap check of a prediction's error after completion.
//
// Deprecated: use Predictor.Observe; removed in v0.3.0.
func (p *Predictor) ObserveOutcome(job *gpusched.Job, iterations float64) (Outcome, error) {
	if job == nil {
		return Outcome{}, ErrNilJob
	}
	if err := checkIterations(iterations); err != nil {
		return Outcome{}, fmt.Errorf("predict: observe job %q: %w", job.ID, err)
	}
	y := logIters(iterations)
	pj, known := p.takeContext(job.ID)
	h := pj.hist
	if !known {
		p.mu.RLock()
		h = p.hist.context(&job.Features)
		p.mu.RUnlock()
	}
	orig := job
	job = p.arrivalJob(job, &pj)
	out := Outcome{Iterations: iterations, First: pj.first, Known: known && pj.first.Source >= 0}
	if !out.Known {
		out.First = Estimate{}
	} else {
		out.LogError = y - logIters(pj.first.Iterations)
	}
	// The PIT under the distribution the predictor would give the job now, uncalibrated.
	sc := p.scratch()
	var memo *pendingJob
	if known {
		memo = &pj
	}
	d, src, gen, _ := p.rawDistribution(job, h, sc, memo)
	out.PIT = d.pit(iterations)
	mixDiff := math.NaN()
	if p.opts.GroupMixAdaptive && p.mix != nil && src == SourceForest && len(sc.gs) > 0 && sc.fd.pts != nil {
		// How much likelier the job's length was under its group's runs than under the forest.
		fd, ok1 := newDistribution(&sc.fd, math.Log1p(p.opts.Tail), nil, SourceForest, nil)
		gd, ok2 := newDistribution(&dist{pts: [][]float64{sc.gs}, w: []float64{1}}, math.Log1p(p.opts.Tail), nil, SourceGroup, nil)
		if ok1 && ok2 {
			mixDiff = logDensity(&gd, y) - logDensity(&fd, y)
		}
	}
	sc.fd = dist{}
	p.bufs.Put(sc)

	r := newRow(job, h, y)
	p.mu.Lock()
	r.seq = p.observed + 1
	if len(p.window) < p.opts.Window {
		p.window = append(p.window, r)
	} else {
		p.window[p.head] = r
		p.head = (p.head + 1) % len(p.window)
	}
	p.hist.add(&orig.Features, y)
	if p.mix != nil {
		p.mix.addScore(job.Features.Group, mixDiff)
		p.mix.add(job.Features.Group, y)
	}
	calSrc, u := src, out.PIT
	if p.opts.CalibrationAtArrival && pj.firstQ != nil {
		// Where the job fell in its first distribution (see Options.CalibrationAtArrival).
		if v := firstPIT(pj.firstQ, y, math.Log1p(p.opts.Tail)); !math.IsNaN(v) {
			calSrc, u = pj.firstSrc, v
		}
	}
	if c := p.cal[calSrc]; c != nil && p.gen == gen {
		key := batchKey(&job.Features, &h, known, r.seq)
		c.add(&job.Features, key, u)
		if out.Known && pj.first.Source == calSrc {
			c.adaptUser(&job.Features, key, iterations < pj.first.P10, iterations > pj.first.P90)
		}
	}
	if out.Known {
		covered := iterations >= pj.first.P10 && iterations <= pj.first.P90
		p.acc.add(out.LogError, covered)
		p.gacc.add(orig.Features.Group, out.LogError, covered)
	}
	p.observed++
	var snap []row
	var ticket, sgen uint64
	if p.retrainDue() {
		p.training = true
		snap, ticket, sgen = p.snapshotLocked()
	}
	p.mu.Unlock()
	if snap != nil {
		p.trainAndSwap(snap, ticket, sgen, true)
	}
	return out, nil
}

// retrainDue tells whether an automatic retraining should start now. Called with p.mu held.
func (p *Predictor) retrainDue() bool {
	if p.opts.RetrainEvery < 0 || p.training || len(p.window) < p.opts.MinSamples {
		return false
	}
	if p.model == nil {
		return true
	}
	since := p.observed - p.fitAt
	need := min(uint64(p.opts.RetrainEvery), uint64(max(p.opts.MinSamples, len(p.model.rows))))
	return since >= need
}

// snapshotLocked copies the window, oldest first, and numbers a new training. Called with
// p.mu held.
func (p *Predictor) snapshotLocked() ([]row, uint64, uint64) {
	snap := make([]row, 0, len(p.window))
	snap = append(snap, p.window[p.head:]...)
	snap = append(snap, p.window[:p.head]...)
	p.fitAt = p.observed
	p.tickets++
	return snap, p.tickets, p.gen
}

// trainAndSwap trains on snap outside the lock and installs the result unless a newer
// training or a Fit got there first.
func (p *Predictor) trainAndSwap(snap []row, ticket, gen uint64, auto bool) {
	defer func() {
		if auto {
			p.mu.Lock()
			p.training = false
			p.mu.Unlock()
		}
	}()
	m := p.opts.train(snap, ticket)
	p.mu.Lock()
	if p.gen == gen && (p.model == nil || p.model.ticket < ticket) {
		p.model = m
	}
	p.mu.Unlock()
}

// Retrain trains the forest now over the current window, whatever its size, in the calling
// goroutine. It returns ErrNoHistory if nothing has been observed.
func (p *Predictor) Retrain() error {
	p.mu.Lock()
	if len(p.window) == 0 {
		p.mu.Unlock()
		return ErrNoHistory
	}
	snap, ticket, gen := p.snapshotLocked()
	p.mu.Unlock()
	p.trainAndSwap(snap, ticket, gen, false)
	return nil
}

// Predict returns the estimated total iterations of job: the point estimate and percentiles
// of its calibrated predictive distribution (see Distribution). With a trained forest the
// distribution comes from the forest; before that, from the job's group's recent runs if it
// has any, else from the global prior. The job's History and this first estimate are
// remembered (see Observe and ObserveOutcome). Predict returns an error only for a nil job:
// unknown categories, missing or NaN features give a prediction.
func (p *Predictor) Predict(job *gpusched.Job) (Estimate, error) {
	if job == nil {
		return Estimate{}, ErrNilJob
	}
	return p.estimate(job, 0), nil
}

// Conditional re-estimates the total iterations of a job that has already done done
// iterations: the calibrated predictive distribution restricted to the part above done and
// renormalised (Distribution.Given). Its Iterations (the truncated distribution's geometric
// mean) and percentiles are at least done*(1+Margin) and never decrease as done grows, and
// Survival is the predicted probability of running past done. Far beyond the distribution
// the estimate is done*(1+Tail): the remaining work is taken to be proportional to the work
// done, so an overrunning job's priority under SRPT keeps falling. It returns an error for a
// nil job or a done that is NaN, infinite or negative.
func (p *Predictor) Conditional(job *gpusched.Job, done float64) (Estimate, error) {
	if job == nil {
		return Estimate{}, ErrNilJob
	}
	if err := checkIterations(done); err != nil {
		return Estimate{}, fmt.Errorf("predict: conditional estimate of job %q: iterations done: %w", job.ID, err)
	}
	return p.estimate(job, done), nil
}

// Distribution returns job's calibrated predictive distribution of total iterations,
// conditioned on the done iterations it has run (0: unconditioned; see Distribution.Given):
// any quantile, the distribution function, the point estimate. Predict and Conditional
// summarise it. It returns an error for a nil job or a done that is NaN, infinite or
// negative.
func (p *Predictor) Distribution(job *gpusched.Job, done float64) (Distribution, error) {
	if job == nil {
		return Distribution{}, ErrNilJob
	}
	if err := checkIterations(done); err != nil {
		return Distribution{}, fmt.Errorf("predict: distribution of job %q: iterations done: %w", job.ID, err)
	}
	d, first := p.distribution(job, nil)
	if first {
		p.rememberFirst(job.ID, summarize(&d, 0, 0))
	}
	return d.Given(done), nil
}

// First returns the first unconditioned estimate the predictor gave job id (by Predict,
// Conditional or Distribution), from that first prediction until the job is observed or
// forgotten (Options.MaxPending, Fit). It is a map lookup: a host can compare a running job's
// progress with it at every event, e.g. to treat a job that has run k times its first
// estimate as overrunning.
//
// Deprecated: not needed by embedders (Predictor.Conditional re-estimates); removed in v0.3.0.
func (p *Predictor) First(id gpusched.JobID) (Estimate, bool) {
	pj, ok := p.peekContext(id)
	if !ok || pj.first.Source < 0 {
		return Estimate{}, false
	}
	return pj.first, true
}

// scratch is reusable space for one estimate.
type scratch struct {
	x, votes, grid []float64
	d              Distribution
	gs             []float64  // a group's recent runs (Options.GroupMix)
	mix            mixScratch // the mixture's groups (Options.GroupMix)
	wg             float64    // the group's weight in the mixture (Options.GroupMix)
	fd             dist       // the forest's distribution before mixing (Options.GroupMix)
}

func (p *Predictor) scratch() *scratch {
	if sc, ok := p.bufs.Get().(*scratch); ok {
		return sc
	}
	return &scratch{grid: make([]float64, calLevels+1)}
}

// estimate predicts job's calibrated distribution and summarises it above done.
func (p *Predictor) estimate(job *gpusched.Job, done float64) Estimate {
	sc := p.scratch()
	defer p.bufs.Put(sc)
	d, first := p.distribution(job, sc)
	if done == 0 {
		// Unconditioned: the estimate is the first one (a floor of 0 whatever the margin).
		e := summarize(&d, 0, 0)
		if first {
			p.rememberFirst(job.ID, e)
		}
		return e
	}
	if first {
		p.rememberFirst(job.ID, summarize(&d, 0, 0))
	}
	if done > 0 {
		d = d.Given(done)
	}
	return summarize(&d, done, p.opts.Margin)
}

// summarize returns the Estimate of d, floored at done*(1+margin).
func summarize(d *Distribution, done, margin float64) Estimate {
	floor := done * (1 + margin)
	return Estimate{
		Iterations: max(d.Point(), floor),
		P10:        max(d.Quantile(0.1), floor),
		P50:        max(d.Quantile(0.5), floor),
		P90:        max(d.Quantile(0.9), floor),
		Survival:   d.Survival(),
		Source:     d.Source(),
	}
}

// distribution returns job's calibrated, unconditioned distribution (in sc's space when sc is
// not nil, else in fresh slices), remembering its History at its first prediction; first
// tells whether no first estimate is remembered for the job yet.
func (p *Predictor) distribution(job *gpusched.Job, sc *scratch) (d Distribution, first bool) {
	pj, known := p.peekContext(job.ID)
	h := pj.hist
	if !known {
		p.mu.RLock()
		h = p.hist.context(&job.Features)
		p.mu.RUnlock()
		pj = p.remember(job, h)
	}
	orig := job
	job = p.arrivalJob(job, &pj)
	own := sc == nil
	if own {
		sc = &scratch{grid: make([]float64, calLevels+1)}
	}
	var memo *pendingJob
	if known {
		memo = &pj
	}
	d, src, _, vm := p.rawDistribution(job, h, sc, memo)
	if vm != 0 && job.ID != "" {
		p.rememberVotes(job.ID, sc.votes, vm)
	}
	if p.opts.CalibrationAtArrival && job.ID != "" && (!known || pj.firstQ == nil && pj.first.Source < 0) {
		p.rememberFirstQ(job.ID, firstQuantiles(&d), src)
	}
	p.mu.RLock()
	if c := p.cal[src]; c != nil {
		d.g = c.grid(&orig.Features, sc.grid)
	}
	p.mu.RUnlock()
	return d, job.ID != "" && (!known || pj.first.Source < 0)
}

// rawDistribution returns the uncalibrated distribution of a job with History h, built in
// sc's space, its source and the generation of the predictor's state it comes from. With a
// memo (what is remembered of the job, h being its History) whose votes come from the current
// forest, it uses them; if it had to vote afresh, it returns the forest's model id (the votes
// are in sc.votes), else 0.
func (p *Predictor) rawDistribution(job *gpusched.Job, h History, sc *scratch, memo *pendingJob) (Distribution, Source, uint64, uint64) {
	var fb dist
	src := SourcePrior
	p.mu.RLock()
	m, gen := p.model, p.gen
	if m != nil && p.mix != nil {
		sc.gs = p.mix.appendSorted(job.Features.Group, sc.gs[:0])
		sc.wg = p.mix.weight(job.Features.Group, len(sc.gs), p.opts.GroupMix, p.opts.GroupMixAdaptive)
	}
	if m == nil {
		if g := p.hist.groupRuns(job.Features.Group); len(g) > 0 {
			fb, src = pointDist(g), SourceGroup
		} else if all := p.hist.globalRunsCopy(); len(all) > 0 {
			fb = pointDist(all)
		} else {
			fb = p.prior
		}
	}
	p.mu.RUnlock()
	s := math.Log1p(p.opts.Tail)
	fresh := uint64(0)
	if m != nil {
		var votes []float64
		if memo != nil && memo.vmodel == m.id && m.id != 0 && len(memo.votes) == m.bins.classes() {
			votes = memo.votes
		} else {
			sc.x = m.enc.Encode(job, h, sc.x)
			if cap(sc.votes) < m.bins.classes() {
				sc.votes = make([]float64, m.bins.classes())
			}
			sc.votes = m.clf.vote(sc.x, sc.votes[:m.bins.classes()])
			votes, fresh = sc.votes, m.id
		}
		fd := dist{pts: m.bins.points, w: votes, pre: m.bins.pre}
		if p.mix != nil && len(sc.gs) > 0 {
			sc.fd = fd
			fd = mixDist(&fd, sc.gs, sc.wg, &sc.mix)
		}
		if d, ok := newDistribution(&fd, s, nil, SourceForest, &sc.d); ok {
			sc.d = d
			return d, SourceForest, gen, fresh
		}
		fb, src = p.prior, SourcePrior // a forest whose trees could not vote
	}
	d, _ := newDistribution(&fb, s, nil, src, &sc.d) // never empty
	sc.d = d
	return d, src, gen, fresh
}

// rememberVotes keeps the forest's votes for a remembered job (see pendingJob.votes).
func (p *Predictor) rememberVotes(id gpusched.JobID, votes []float64, model uint64) {
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if pj, ok := p.pending[id]; ok {
		pj.votes = append(pj.votes[:0:0], votes...)
		pj.vmodel = model
		p.pending[id] = pj
	}
}

// Encode returns the vector the current forest sees for job (with its remembered History, as
// Predict). It returns ErrNoModel before a forest is trained and ErrNilJob for a nil job.
func (p *Predictor) Encode(job *gpusched.Job) ([]float64, error) {
	if job == nil {
		return nil, ErrNilJob
	}
	pj, known := p.peekContext(job.ID)
	h := pj.hist
	p.mu.RLock()
	m := p.model
	if !known {
		h = p.hist.context(&job.Features)
	}
	p.mu.RUnlock()
	if !known {
		pj = p.remember(job, h)
	}
	if m == nil {
		return nil, ErrNoModel
	}
	job = p.arrivalJob(job, &pj)
	return m.enc.Encode(job, h, nil), nil
}

// TrainingData returns what the current forest was trained on: the column names, the encoded
// rows and their targets, the natural log of iterations (fresh copies), so that other
// learners can be compared on the same features. All are nil before a forest is trained.
func (p *Predictor) TrainingData() (names []string, X [][]float64, logIterations []float64) {
	p.mu.RLock()
	m := p.model
	p.mu.RUnlock()
	if m == nil {
		return nil, nil, nil
	}
	X = make([][]float64, len(m.rows))
	logIterations = make([]float64, len(m.rows))
	for i := range m.rows {
		r := &m.rows[i]
		X[i] = m.enc.Encode(&gpusched.Job{GPUs: r.gpus, Features: r.feat}, r.hist, nil)
		logIterations[i] = r.y
	}
	return m.enc.Names(), X, logIterations
}

// Stats describe a predictor's state.
type Stats struct {
	// Observed counts the jobs observed since New or the last Fit (Fit's samples included).
	Observed int
	// Window is the number of jobs in the training window.
	Window int
	// TrainedOn is the number of jobs the current forest was trained on (0: no forest).
	TrainedOn int
	// Trainings counts the trainings started since New.
	Trainings int
}

// Stats returns the predictor's current state.
func (p *Predictor) Stats() Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := Stats{Observed: int(p.observed), Window: len(p.window), Trainings: int(p.tickets)}
	if p.model != nil {
		s.TrainedOn = len(p.model.rows)
	}
	return s
}

// peekContext returns what is remembered of job id, if anything.
func (p *Predictor) peekContext(id gpusched.JobID) (pendingJob, bool) {
	if id == "" {
		return pendingJob{}, false
	}
	p.cacheMu.Lock()
	pj, ok := p.pending[id]
	p.cacheMu.Unlock()
	return pj, ok
}

// takeContext returns and forgets what is remembered of job id, if anything.
func (p *Predictor) takeContext(id gpusched.JobID) (pendingJob, bool) {
	if id == "" {
		return pendingJob{}, false
	}
	p.cacheMu.Lock()
	pj, ok := p.pending[id]
	delete(p.pending, id)
	if ok {
		p.noteDirty(id)
	}
	if ok && pj.hasArr && p.arr != nil {
		p.arr.done(pj.group)
	}
	p.cacheMu.Unlock()
	return pj, ok
}

// pendSlack is how many ids of jobs no longer remembered (observed or forgotten) the ring of
// remembered ids may hold beyond twice the remembered jobs before it is compacted.
const pendSlack = 1024

// compactPending drops from the ring of remembered ids (pendQ) those of jobs no longer
// remembered, and all but the latest of an id that appears twice, keeping the others in their
// order (oldest first, from pendHead). Without it the ring fills to MaxPending with ids of
// finished jobs, so memory grows with the jobs seen up to that bound, and once full it forgets
// the job at its head even when only a few jobs are pending. Called with cacheMu held, when the
// ring holds at least twice the remembered jobs plus pendSlack: amortised O(1) per prediction.
func (p *Predictor) compactPending() {
	n := len(p.pendQ)
	keep := make([]gpusched.JobID, 0, len(p.pending)+pendSlack)
	seen := make(map[gpusched.JobID]struct{}, len(p.pending))
	for k := n - 1; k >= 0; k-- { // newest first: the latest copy of an id wins
		id := p.pendQ[(p.pendHead+k)%n]
		if _, ok := p.pending[id]; !ok {
			continue
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		keep = append(keep, id)
	}
	slices.Reverse(keep)
	p.pendQ, p.pendHead = keep, 0
}

// remember keeps job's History unless one is kept already, forgetting the oldest remembered
// job beyond Options.MaxPending, and returns what is kept (the zero value for a job without
// an ID). With Options.ArrivalFeatures it records the job's submission and keeps its arrival
// features.
func (p *Predictor) remember(job *gpusched.Job, h History) pendingJob {
	id := job.ID
	if id == "" {
		return pendingJob{}
	}
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if pj, ok := p.pending[id]; ok {
		return pj
	}
	if n := len(p.pendQ); n >= 2*len(p.pending)+pendSlack {
		p.compactPending()
	}
	if len(p.pendQ) < p.opts.MaxPending {
		p.pendQ = append(p.pendQ, id)
	} else {
		old := p.pendQ[p.pendHead]
		if pj, ok := p.pending[old]; ok && pj.hasArr && p.arr != nil {
			p.arr.done(pj.group)
		}
		delete(p.pending, old)
		p.noteDirty(old)
		p.pendQ[p.pendHead] = id
		p.pendHead = (p.pendHead + 1) % len(p.pendQ)
	}
	pj := pendingJob{hist: h, first: Estimate{Source: -1}}
	if p.arr != nil && finite(job.Arrival) {
		pj.arr = p.arr.features(&job.Features, job.Arrival)
		pj.hasArr, pj.group = true, job.Features.Group
		p.arr.arrive(&job.Features, job.Arrival, true)
	}
	p.pending[id] = pj
	p.noteDirty(id)
	return pj
}

// noteDirty records that what is remembered of job id changed (added, changed or forgotten)
// since the last base, when the remembered jobs are tracked (see SaveBase); beyond four times
// Options.MaxPending ids it stops tracking, and the next delta needs a new base. p.cacheMu is
// held.
func (p *Predictor) noteDirty(id gpusched.JobID) {
	if p.pendDirty == nil {
		return
	}
	p.pendDirty[id] = struct{}{}
	if len(p.pendDirty) > 4*max(p.opts.MaxPending, 1) {
		p.pendDirty = nil
	}
}

// arrivalJob returns job with its arrival features added (Options.ArrivalFeatures): those
// kept in pj at its first prediction, else those of a submission now that is not recorded.
// Without ArrivalFeatures it returns job.
func (p *Predictor) arrivalJob(job *gpusched.Job, pj *pendingJob) *gpusched.Job {
	if !p.opts.ArrivalFeatures {
		return job
	}
	if pj.hasArr {
		return withArrival(job, &pj.arr)
	}
	a := arrivalFeats{gap: math.NaN(), groupHour: math.NaN(), userHour: math.NaN(), running: math.NaN()}
	p.cacheMu.Lock()
	if p.arr != nil && finite(job.Arrival) {
		a = p.arr.features(&job.Features, job.Arrival)
	}
	p.cacheMu.Unlock()
	return withArrival(job, &a)
}

// rememberFirstQ records job id's first uncalibrated quantiles q from source src
// (Options.CalibrationAtArrival), if its History is remembered and it has none yet.
func (p *Predictor) rememberFirstQ(id gpusched.JobID, q []float32, src Source) {
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if pj, ok := p.pending[id]; ok && pj.firstQ == nil {
		pj.firstQ, pj.firstSrc = q, src
		p.pending[id] = pj
		p.noteDirty(id)
	}
}

// rememberFirst records job id's first estimate, if its History is remembered and it has no
// first estimate yet.
func (p *Predictor) rememberFirst(id gpusched.JobID, e Estimate) {
	if id == "" {
		return
	}
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if pj, ok := p.pending[id]; ok && pj.first.Source < 0 {
		pj.first = e
		p.pending[id] = pj
		p.noteDirty(id)
	}
}

// train fits the bins, the encoder and the forest on rows (oldest first). The ticket numbers
// the training and seeds it.
func (o *Options) train(rows []row, ticket uint64) *model {
	y := make([]float64, len(rows))
	for i := range rows {
		y[i] = rows[i].y
	}
	bins := fitBins(y, o.Bins)
	enc := fitEncoder(rows)
	nf := enc.Len()
	flat := make([]float64, len(rows)*nf)
	X := make([][]float64, len(rows))
	class := make([]int, len(rows))
	for i := range rows {
		r := &rows[i]
		X[i] = enc.Encode(&gpusched.Job{GPUs: r.gpus, Features: r.feat}, r.hist, flat[i*nf:(i+1)*nf:(i+1)*nf])
		class[i] = bins.class(y[i])
	}
	mtry := o.MTry
	if mtry == 0 {
		mtry = (nf + 1) / 2
	}
	fp := forestParams{
		trees:    o.Trees,
		maxDepth: o.MaxDepth,
		minLeaf:  o.MinLeaf,
		mtry:     mtry,
		split:    o.Split,
		seed:     splitmix(o.Seed ^ splitmix(ticket)),
	}
	var clf classifier
	switch o.Backend {
	case BackendMalaschitz:
		clf = trainMalaschitz(X, class, bins.classes(), fp)
	default:
		clf = trainCART(X, class, y, bins.classes(), fp)
	}
	return &model{enc: enc, bins: bins, clf: clf, rows: rows, ticket: ticket, id: nextModelID.Add(1)}
}

// newMix returns the store of the groups' last runs for GroupMix, or nil when it is off.
func (o *Options) newMix() *groupSamples {
	if o.GroupMix <= 0 {
		return nil
	}
	return newGroupSamples(o.GroupMixRuns, o.MaxKeys)
}

// splitmix is the SplitMix64 finaliser, to derive well-mixed seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
