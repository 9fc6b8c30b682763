package asrpt

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/predict"
)

// Distributional is implemented by Estimators that know more than a point: a job's
// predictive distribution of total iterations given the iterations it has done (Forest does,
// from package predict's calibrated forest). With Options.Gittins, A-SRPT sizes a job by its
// Gittins rank under that distribution instead of a point estimate (see the package
// documentation, "Predictions as distributions").
type Distributional interface {
	Distribution(j *gpusched.Job, done float64) (predict.Distribution, error)
}

// Quantiler is a distribution of a job's total iterations as GittinsRank reads it: its
// quantile function, non-decreasing in q on (0, 1). predict.Distribution is one.
//
// Deprecated: not needed by embedders (the group fallback's internals); removed in v0.3.0.
type Quantiler interface {
	Quantile(q float64) float64
}

// GittinsAtoms is the number of equally likely points at which GittinsRank reads a
// distribution: the quantiles at (k - 1/2) / GittinsAtoms, k = 1..GittinsAtoms.
//
// Deprecated: not needed by embedders (the group fallback's internals); removed in v0.3.0.
const GittinsAtoms = 40

// GittinsRank returns the Gittins rank of a job that has done `done` iterations and whose
// total iterations follow d (already conditioned on done: every quantile above done), in
// iterations, and the end of the quantum that attains it:
//
//	rank = min over b > done of E[min(X, b) - done] / P(X <= b),
//
// the expected iterations the job still needs per unit of probability of finishing by b
// (Gittins' index of the job is its inverse; a single server that always serves the job of
// least rank minimises the mean completion time in the M/G/1 queue: Gittins, "Multi-armed
// Bandit Allocation Indices", 1989; Aalto, Ayesta and Righter, "On the Gittins index in the
// M/G/1 queue", Queueing Syst. 63, 2009). X is read as GittinsAtoms equally likely points at
// its quantiles, and b ranges over them. For a distribution concentrated on one value n the
// rank is n - done (SRPT's remaining work) and until is n; for a wide distribution the rank is
// small early on and grows as the job outruns its likely ends, as least-attained-service
// ordering would have it. ok is false when d gives no finite quantiles above done.
//
// Deprecated: not needed by embedders (the group fallback's internals); removed in v0.3.0.
func GittinsRank(d Quantiler, done float64) (rank, until float64, ok bool) {
	var x [GittinsAtoms]float64
	for k := range x {
		if !gittinsAtom(&x, k, d.Quantile((float64(k)+0.5)/GittinsAtoms), done) {
			return 0, 0, false
		}
	}
	return gittinsOfAtoms(&x, done)
}

// gittinsAtom sets atom k of x to quantile q, kept above done and non-decreasing; false when
// no finite atom above done can be had (GittinsRank's ok).
func gittinsAtom(x *[GittinsAtoms]float64, k int, q, done float64) bool {
	if !(q > done) || math.IsInf(q, 1) {
		if k == 0 {
			return false
		}
		q = math.Max(q, x[k-1]) // keep the atoms non-decreasing
		if !(q > done) || math.IsInf(q, 1) {
			return false
		}
	}
	if k > 0 && q < x[k-1] {
		q = x[k-1]
	}
	x[k] = q
	return true
}

// gittinsOfAtoms is GittinsRank over its atoms x.
func gittinsOfAtoms(x *[GittinsAtoms]float64, done float64) (rank, until float64, ok bool) {
	rank = math.Inf(1)
	sum := 0.0 // sum of (x_k - done) over k <= m
	for m := range x {
		sum += x[m] - done
		if m+1 < len(x) && x[m+1] == x[m] {
			continue // P(X <= b) counts every atom at b
		}
		n := float64(m + 1)
		e := (sum + (GittinsAtoms-n)*(x[m]-done)) / GittinsAtoms
		if r := e / (n / GittinsAtoms); r < rank {
			rank, until = r, x[m]
		}
	}
	return rank, until, rank > 0 && !math.IsInf(rank, 1)
}

// gittins sizes job j, which has done `done` iterations, from the estimator's distribution:
// the end of its current quantum (the iterations at which it is sized again) and its Gittins
// rank in iterations. ok is false without a Distributional estimator or a usable distribution.
func (s *Scheduler) gittins(j *gpusched.Job, done float64) (until, rank float64, ok bool) {
	if s.dist == nil {
		return 0, 0, false
	}
	d, err := s.dist.Distribution(j, done)
	if err != nil {
		return 0, 0, false
	}
	rank, until, ok = GittinsRank(d, done)
	if !ok || !(until > done) {
		return 0, 0, false
	}
	return until, rank, true
}

// predictNew predicts a newly admitted job: the iterations at which it is sized again (its
// prediction, or the end of its Gittins quantum) and its size in iterations (the prediction,
// or its Gittins rank).
func (s *Scheduler) predictNew(j *gpusched.Job) (iters, rank float64, err error) {
	if n, r, ok := s.gittins(j, 0); ok {
		return n, r, nil
	}
	n, err := s.opt.Estimator.Estimate(j, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("asrpt: predicting job %q: %w", j.ID, err)
	}
	if !(n > 0) || math.IsInf(n, 0) {
		return 0, 0, fmt.Errorf("asrpt: predicted iterations %v of job %q must be positive and finite", n, j.ID)
	}
	return n, n, nil
}
