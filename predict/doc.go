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
//	est, err := p.Predict(job)          // on arrival: est.Iterations, est.P10, est.P90
//	est, err = p.Conditional(job, done) // the job has run done iterations and is still going
//	err = p.Observe(job, iterations)    // when it finishes (or is killed)
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
// iterations. Predict returns its vote-weighted geometric mean (the estimate that minimises
// the expected squared log error) and its 10th, 50th and 90th percentiles, the spread A-SRPT
// can use for robustness.
//
// Two implementations sit behind the same small internal interface (fit on rows and bins,
// vote on a vector): BackendCART, this package's own forest (the default), and
// BackendMalaschitz, the library. Ours is seeded and deterministic, starts no goroutines and
// trains on pre-binned features (a linear counting pass per node and feature); the library
// draws from the global math/rand source in goroutines, so it cannot be reproduced run to run,
// and sorts the rows at every node. On 50,000 jobs ours trains in about 4 s of CPU against
// 74 s, and is at least as accurate. BENCHMARKS.md has the measurements behind the default
// and its options (split criterion, bins, trees, leaf size, features per split).
//
// # Learning online
//
// Observe adds a finished job to its group's history at once (the next job of the group
// benefits immediately) and to a training window of the Options.Window most recent jobs. The
// forest is retrained over the window every Options.RetrainEvery observations (sooner while
// the window is small); the cost is amortised over the observations and predictions keep
// using the previous forest while the next one trains. Before any forest exists, a job is
// predicted by the median of its group's recent runs, and a job of a group never seen by the
// global prior (the recent runs of all jobs, or Options.PriorIterations before anything is
// observed).
//
// # Jobs that overrun
//
// Conditional re-estimates a running job from the same distribution restricted to what lies
// above the iterations already done. Its estimate never decreases as the job runs, is always
// above what is done, and beyond the distribution grows in proportion to the work done, so the
// SRPT priority of a job that runs past its prediction falls steadily rather than staying
// high forever.
package predict
