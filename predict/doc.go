// Package predict estimates how many training iterations a deep-learning job will run, for
// recurring jobs: the same user re-submits the same job group again and again with small
// changes. It is the prediction step of A-SRPT: the scheduler multiplies the estimate by the
// job's time per iteration to get its predicted size.
//
// # Using a Predictor
//
// Create one, teach it finished jobs and ask it about new ones:
//
//	p, err := predict.New(predict.Options{Seed: 1})
//	err = p.Fit(history)                // optional: past finished jobs ([]predict.Sample)
//	est, err := p.Predict(job)          // on arrival: est.Iterations, est.P10, est.P50, est.P90
//	est, err = p.Conditional(job, done) // the job has run done iterations and is still going
//	d, err := p.Distribution(job, done) // any quantile: d.Quantile(0.95), d.CDF(n), d.Point()
//	err = p.Observe(job, iterations)    // when it finishes (or is killed)
//	out, err := p.ObserveOutcome(job, iterations) // the same, and how far off its estimate was
//	first, ok := p.First(job.ID)        // its first estimate, while it runs (a map lookup)
//	acc := p.Accuracy()                 // the error of the latest 1,000 observed jobs' estimates
//	err = p.Save(w); q, err := predict.Load(r) // the complete learned state, as JSON
//
// A Predictor is safe for concurrent use (see Predictor for how retraining interacts with
// predictions) and gives the same answers for the same sequence of calls.
//
// # Features
//
// A job is described by its gpusched.Features (model family, dataset, batch size, learning
// rate, optimizer, user, recurrence group, submit hour, free-form numeric and categorical
// extras) and its GPU count. Until gpusched.Job carries a parallel plan, plan degrees can be
// passed as numeric extras (e.g. Numeric["tp"], Numeric["pp"]). To these the predictor adds a
// History computed from the jobs it has seen finish before the job arrived: the recent runs of
// the same group (how many, the last, the median, the median number of samples processed
// divided by this job's batch size), of the same user and of the same model family and
// dataset. The Encoder turns all of it into a fixed-length vector: categories become smoothed
// target codes (an unseen category gets the global mean), missing numbers and NaN become a
// value below every known one. Nothing a caller passes makes it panic.
//
// # The forest
//
// The forest is a classifier, as github.com/malaschitz/randomForest is: iterations are cut
// into Options.Bins quantile bins of log(iterations), each tree's leaf holds the bins of its
// training rows, and the forest's votes form a distribution over bins. Each bin is represented
// by 16 quantiles of the training targets that fell in it, so the votes give a distribution of
// iterations: each representative point holds its share of the vote around itself, the
// distribution function runs linearly from point to point, with exponential tails of scale
// ln(1 + Options.Tail) in log-iterations beyond the smallest and the largest (Pareto tails).
//
// Two implementations sit behind the same small internal interface (fit on rows and bins,
// vote on a vector): BackendCART, this package's own forest (the default), and
// BackendMalaschitz, the library. Ours is seeded and deterministic, starts no goroutines and
// trains on pre-binned features (a linear counting pass per node and feature); the library
// draws from the global math/rand source in goroutines, so it cannot be reproduced run to run,
// and sorts the rows at every node. On 50,000 jobs ours trains in about 4 s of CPU against
// 74 s, and is at least as accurate. BENCHMARKS.md ("predict") has the measurements behind
// the default and its options (split criterion, bins, trees, leaf size, features per split).
//
// # Calibrated uncertainty
//
// The forest's distribution is only as honest as the past is like the future: on the shared
// Philly trace its 80% intervals held 62% of the jobs of one virtual cluster and 92% of
// another's. So the distribution a Predictor returns is recalibrated online by the jobs it has
// seen finish, per group, per user and overall (group-wise, "Mondrian", split-conformal
// calibration of the whole distribution: Kuleshov, Fenner and Ermon, "Accurate uncertainties
// for deep learning using calibrated regression", ICML 2018; Chernozhukov, Wuthrich and Zhu,
// "Distributional conformal prediction", PNAS 2021):
//
//   - When a job finishes, Observe records where its length fell in the distribution the
//     predictor gives it then: its probability integral transform (PIT) F(n), which is
//     uniform on (0, 1) for a calibrated forecaster. Outcome.PIT returns it.
//   - Jobs of one group first predicted between the same two completions of that group form
//     a batch: they were predicted from the same information (typically a burst of
//     near-identical submissions) and their errors go together. A batch weighs 1 in all,
//     shared by its jobs' PITs, so that a burst of fifty jobs counts as one observation.
//   - Each group, user and the whole predictor keep the PITs of their last
//     Options.CalibrationWindow batches; their weighted empirical quantiles, with
//     split-conformal prediction's finite-sample correction, form a monotone map G from the
//     forest's probabilities to observed frequencies, kept at every 2.5%.
//   - A job's map blends the overall map with its user's and then its group's, each level
//     weighted by its number n of batches as n / (n + Options.CalibrationPrior): a group with
//     little history borrows its user's and everyone's calibration.
//   - Finally, the levels read for the nominal 10th and 90th percentiles adapt online over all
//     jobs by adaptive conformal inference (Gibbs and Candes, "Adaptive conformal inference
//     under distribution shift", NeurIPS 2021; step Options.CalibrationStep): measured
//     against the map as it stands when each job finishes, the share of jobs below the 10th
//     and above the 90th percentile tends to 10% each for any sequence of jobs (within
//     1/(step x jobs), unless a level reaches its bound).
//
// The calibrated distribution is H = G(F); Predict's percentiles and point estimate (the
// geometric mean, which minimises the expected squared log error) are H's, and Conditional and
// Distribution.Given condition H on the work done. Fit does not calibrate: calibration learns
// from the jobs observed afterwards (before any, the forest's distribution is used as it is).
// The settings were chosen on the training period of six of the trace's twelve virtual
// clusters; BENCHMARKS.md ("predict", "Real durations") reports every cluster.
//
// # When to trust it
//
// Measured online, as a scheduler uses it (BENCHMARKS.md, "predict"):
//
//   - Recurring jobs with informative features (the synthetic workload: groups that come back
//     with their model, dataset and batch size) are predicted to within a factor of about 1.3
//     for half the jobs (median error 25%; RMSLE 0.84, 0.81 for jobs whose group has run
//     before, 0.43 when killed jobs are left out). The point estimate is then worth using as
//     it is, as A-SRPT does.
//   - Real durations known only by virtual cluster, GPU count and submit time (the Philly
//     trace) are predicted poorly by every method: RMSLE 1.57 (errors of a factor 5 are
//     common; median error 57%), tuned scikit-learn 1.64, the last run of the group 2.09.
//     There the intervals are what to trust, not the point: the 80% intervals are wide (P90 /
//     P10 about 14) but calibrated: they hold 79% of the test jobs, and 75-85% in five of the
//     eight virtual clusters with test jobs in the hundreds; the other three (74%, 86%, 59%)
//     are within 1.5 standard deviations of 80% given how few independent bursts their jobs
//     come in (five, for the 59%). Uncalibrated, two clusters were off by 3 and 6 standard
//     deviations.
//   - First runs of a group (no history) are the least predictable: RMSLE about 1.0 on the
//     synthetic workload against 0.81 for the others.
//   - Distrust it after a change in the workload: calibration adapts within about
//     CalibrationWindow batches of a group, the forest within Options.RetrainEvery jobs.
//     Accuracy reports the error factor of the latest 1,000 jobs' estimates (the mu of a
//     prediction-assisted scheduler's bound) and their interval coverage: a scheduler can
//     fall back to a prediction-free order when it grows.
//
// # Real durations: what a host knows about its jobs
//
// Where jobs carry little more than their user, group, GPU count and submit time (the Philly
// trace: group = virtual cluster x GPU count), these options, all off by default, use what a
// host sees anyway (BENCHMARKS: benchmarks/predict-28.md, bench/predict_intervals.sh):
//
//   - Options.ArrivalFeatures: at a job's first prediction, the seconds since its group's
//     previous submission, its group's and its user's submissions in the hour before and its
//     group's jobs predicted and not yet observed (numeric extras ArrivalGroupGap,
//     ArrivalGroupHour, ArrivalUserHour, ArrivalGroupRunning). Bursts of submissions are
//     hyper-parameter sweeps and retries, whose lengths differ from a lone submission's. A
//     host that knows the calendar can add the day of the week as a numeric extra.
//   - Options.GroupMix and GroupMixAdaptive: the empirical distribution of the group's last
//     GroupMixRuns (200) runs mixed into the forest's before calibration, each group's weight
//     moved online towards whichever of the two has lately given its finished jobs the higher
//     likelihood.
//   - Options.CalibrationAtArrival and CalibrationJobWeights: the calibration learns where each
//     finished job fell in the distribution it was given at its first prediction (not in the
//     one it would get when it finishes, which has seen its batch-mates finish), and every job
//     weighs 1 in the calibration windows (not every batch): coverage is then a share of jobs,
//     as a scheduler that sees every job of a burst counts it. On Philly they improved the
//     training period and worsened the held-out test period: off, and not part of
//     WithRealDurations.
//   - Options.CalibrationUserStep and CalibrationJobStep: adaptive conformal inference on the
//     10th and 90th percentiles, per user or over all jobs, measured on the coverage of each
//     job's first estimate, on top of the group/user/overall calibration maps. On Philly they
//     reach 80% coverage only with much wider intervals (a worse interval score): off, and
//     not part of WithRealDurations. Options.CalibrationUserBound bounds the per-user offsets;
//     bounded, they keep the widths and little of the coverage (round 4 of the benchmark).
//
// Options.WithRealDurations sets the first two entries (ArrivalFeatures, GroupMix with
// GroupMixAdaptive, and CalibrationPrior 500) as chosen on the Philly trace: there, on the
// last 30% of an online replay, its 80% intervals have an interval score 18% lower than the
// default's (4.64 against 5.65 on ln(duration); the last 200 runs of the job's group: 5.35)
// at a median width of a factor 9 between their ends instead of 15, and cover 77% of the jobs
// (75-85% in six of the eight virtual clusters with test jobs in the hundreds; the bursty
// b436b2 and ed69ec at 65-70%).
//
// Predictor.GroupAccuracy reports, per group, the error factor, bias and 80% coverage of the
// latest (about 20) finished jobs' first estimates: the signal a scheduler needs to fall back
// to a prediction-free order for a group whose predictions have been poor.
//
// # Learning online
//
// Observe adds a finished job to its group's history at once (the next job of the group
// benefits immediately), to the calibration windows and to a training window of the
// Options.Window most recent jobs. The forest is retrained over the window every
// Options.RetrainEvery observations (sooner while the window is small); the cost is amortised
// over the observations and predictions keep using the previous forest while the next one
// trains. Before any forest exists, a job is predicted by the distribution of its group's
// recent runs, and a job of a group never seen by the global prior (the recent runs of all
// jobs, or Options.PriorIterations before anything is observed).
//
// # Jobs that overrun
//
// Conditional re-estimates a running job from the same calibrated distribution restricted to
// what lies above the iterations already done. Its estimate never decreases as the job runs,
// is always above what is done, and far beyond the distribution grows in proportion to the
// work done (the Pareto tail: done * (1 + Options.Tail)), so the SRPT priority of a job that
// runs past its prediction falls steadily rather than staying high forever. Given the median
// was passed, its 80% interval held 80% of the Philly test jobs.
//
// # Saving and restoring
//
// Save (or MarshalJSON) writes the complete learned state — options, forest, training rows,
// window, histories, calibration windows, accuracy record, remembered jobs, retraining
// counters, and what the options that learn online hold (the groups' runs and mixture scores
// of GroupMix, the submissions of ArrivalFeatures and each remembered job's arrival features
// and first quantiles, the tail offsets of CalibrationUserStep and CalibrationJobStep, the
// per-group accuracies: an "online" section with its own version, absent where there is
// nothing of it; a state written before it restores with those parts empty, as it did then) —
// as versioned JSON (StateVersion) with exact floats; Load (or UnmarshalJSON)
// restores a predictor that answers and goes on learning exactly as the saved one. Data of
// another version, truncated or inconsistent, is an error wrapping ErrInvalidState, never a
// panic. A default predictor with a full window (20,000 jobs) saves to about 17 MB in about
// 1 s of CPU, save and load together.
//
// A host that saves often saves by changes: SaveBase writes the whole state as a base (the
// forest as SaveModel writes it, the rest as SaveLearned does) and remembers what it held;
// SaveDelta writes only what changed since (the rows observed since, the window's overwritten
// slots, the histories and calibration windows updated, the remembered jobs added, changed or
// forgotten), so that between two retrainings its size grows with the jobs observed and
// predicted since the base, not with the window or the forest; BaseKey changes when a new base
// is due (a retraining, or deltas grown beyond half the base's learned part);
// RestoreDelta restores from a base and a delta and goes on writing deltas against that base.
// It also reads the version-1 pairs of SaveModel and SaveLearned; a version-2 delta with a
// version-1 base is an error (ErrInvalidState) that names both versions.
package predict
