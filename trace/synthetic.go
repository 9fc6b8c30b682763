package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// ErrInvalidPhillyConfig reports a PhillyConfig that GeneratePhilly cannot honour; the
// message names the field.
var ErrInvalidPhillyConfig = errors.New("trace: invalid Philly-like workload config")

// Constants fitted to the shared Philly file (70,361 jobs, Sep-Dec 2017; see
// TestPhillyFitMatchesFile, which recomputes them from the file when it is present). They are
// summary statistics, not data.
const (
	// phillyArrivalRate is the mean submission rate of the Philly file in jobs per second:
	// 70,361 jobs over 9,408,690 s between the first and the last submission.
	phillyArrivalRate = 70361.0 / 9408690.0
)

// phillyGPUs and phillyGPUShare give the GPU-count distribution of the Philly file: the share of
// jobs asking for each count.
var (
	phillyGPUs     = []int{1, 2, 4, 8, 12, 16, 24, 32}
	phillyGPUShare = []float64{66912, 1668, 1198, 475, 7, 92, 6, 3} // job counts, normalised on use
)

// phillyQuantileP are the probabilities at which the log10-duration quantiles below are given.
var phillyQuantileP = []float64{0, .01, .05, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99, .999, 1}

// phillyLogDuration holds, for jobs of 1 GPU, of 2-4 GPUs and of 8 or more GPUs, the quantiles
// of log10(duration in seconds) at phillyQuantileP (linear interpolation between order
// statistics). Multi-GPU jobs are bimodal: many fail within a minute, the rest run for days.
var phillyLogDuration = [3][]float64{
	{0.0000, 1.5051, 1.7160, 1.7853, 1.8585, 2.2380, 2.7126, 3.0105, 3.2307, 3.3856, 3.5311, 3.7803, 4.1215, 5.0437, 5.8806, 6.5127},
	{0.3010, 0.7782, 1.0000, 1.1139, 1.2304, 1.3010, 1.4150, 2.0414, 3.4834, 4.4599, 4.9518, 5.2558, 5.4249, 5.9310, 6.3871, 6.4394},
	{0.9542, 1.7621, 1.8926, 2.1510, 2.7524, 3.5409, 3.8486, 4.1047, 4.5464, 5.0092, 5.3445, 5.7033, 5.7935, 6.3189, 6.5253, 6.6654},
}

// phillyClass returns the duration class of a GPU count: 0 for 1 GPU, 1 for 2-4, 2 for more.
func phillyClass(gpus int) int {
	switch {
	case gpus <= 1:
		return 0
	case gpus <= 4:
		return 1
	}
	return 2
}

// PhillyConfig sets the size and mix of a synthetic Philly-like workload (see GeneratePhilly).
type PhillyConfig struct {
	// Jobs is the number of jobs (at least 1).
	Jobs int
	// ArrivalRate is the mean number of submissions per second (a Poisson process); 0 means
	// PhillyArrivalRate. RateForLoad gives the rate that offers a chosen load to a cluster.
	ArrivalRate float64
	// OneOffFraction is the probability in [0, 1] that a job is a one-off rather than a
	// re-submission of a recurring group.
	OneOffFraction float64
	// Groups is the number of recurrence groups; 0 means max(1, Jobs/20).
	Groups int
	// Seed seeds the generator: the same config gives the same workload.
	Seed uint64
	// Cluster, when set, gives jobs zoo models and parallel plans timed on it (MapModelJob);
	// otherwise they get a placement-independent step time (MapJob). A job larger than the
	// cluster is then an error.
	Cluster *topology.Cluster
}

// DefaultPhillyConfig returns a config of n jobs at the Philly file's arrival rate with 30%
// one-off jobs and max(1, n/20) recurring groups.
func DefaultPhillyConfig(n int, seed uint64) PhillyConfig {
	return PhillyConfig{Jobs: n, OneOffFraction: 0.3, Seed: seed}
}

// Constants of GeneratePhilly's recurrence model.
const (
	phlGroupZipf     = 0.9  // group popularity exponent
	phlDurationSigma = 0.25 // log-normal sigma of a re-submission's duration around its group's
	phlUsers         = 12   // virtual clusters ("vc00".."vc11"), as in the Philly file
	phlUserZipf      = 1.2  // virtual-cluster popularity exponent
)

// GeneratePhilly returns a synthetic Philly-like workload in arrival order, with each job's
// true iterations. It is deterministic (math/rand/v2 PCG seeded with cfg.Seed).
//
// The model, fitted to the shared Philly file:
//
//   - Arrivals form a Poisson process of rate cfg.ArrivalRate (default PhillyArrivalRate,
//     about 0.0075 jobs/s, one every 134 s); a rate so low that a job would arrive after
//     MaxArrival (100 years) is an error. The real file is burstier (inter-arrival
//     coefficient of variation 14, against 1 here) and has a daily cycle; neither is modelled.
//   - GPU demand follows the file's distribution: 1 GPU 95.1%, 2: 2.4%, 4: 1.7%, 8: 0.68%,
//     16: 0.13%, and 12, 24, 32 rarely.
//   - Run time: log10(duration) follows a piecewise-linear inverse CDF through the file's
//     quantiles (at probabilities 0, 1%, 5%, 10%, 20%, ..., 90%, 95%, 99%, 99.9%, 100%),
//     fitted separately for 1-GPU, 2-4-GPU and 8-or-more-GPU jobs; medians 17 min, 2 min
//     and 3.5 h.
//   - Recurrence, for the iteration predictor: with probability cfg.OneOffFraction a job is a
//     one-off (GPUs and run time drawn as above, group "once-<i>"); otherwise it re-submits
//     one of cfg.Groups groups drawn with popularity ∝ (g+1)^-0.9. A group draws its GPU
//     count, a base run time D_g as above, a virtual cluster, and its model through MapJob,
//     or MapModelJob when cfg.Cluster is set (key: the group index); a re-submission runs
//     D_g x exp(N(0, 0.25²)).
//   - Iterations = run time / StepTime (the time per iteration at a consolidated
//     placement), so a job alone at a consolidated placement runs for its drawn run time.
//
// Features: Family, Dataset, BatchSize (from the mapping), User (virtual cluster "vc00".."vc11",
// popularity ∝ (k+1)^-1.2), Group, SubmitHour. Jobs are named "ph<i>" (seven digits).
func GeneratePhilly(cfg PhillyConfig) ([]Record, error) {
	bad := func(field string, v any) ([]Record, error) {
		return nil, fmt.Errorf("%w: %s = %v", ErrInvalidPhillyConfig, field, v)
	}
	switch {
	case cfg.Jobs < 1:
		return bad("Jobs (must be >= 1)", cfg.Jobs)
	case !(cfg.ArrivalRate >= 0) || math.IsInf(cfg.ArrivalRate, 0):
		return bad("ArrivalRate (must be finite and >= 0)", cfg.ArrivalRate)
	case !(cfg.OneOffFraction >= 0 && cfg.OneOffFraction <= 1):
		return bad("OneOffFraction (must be in [0, 1])", cfg.OneOffFraction)
	case cfg.Groups < 0:
		return bad("Groups (must be >= 0)", cfg.Groups)
	}
	if cfg.ArrivalRate == 0 {
		cfg.ArrivalRate = phillyArrivalRate
	}
	if cfg.Groups == 0 {
		cfg.Groups = max(1, cfg.Jobs/20)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d))
	gpuCum := cumulative(phillyGPUShare)
	userCum := zipfCumulative(phlUsers, phlUserZipf)
	groupCum := zipfCumulative(cfg.Groups, phlGroupZipf)

	type group struct {
		name     string
		user     string
		gpus     int
		duration float64
		job      gpusched.Job // model fields set by mapJob
	}
	mapJob, err := jobMapper(cfg.Cluster, "")
	if err != nil {
		return nil, err
	}
	newGroup := func(name string, key uint64) (*group, error) {
		g := &group{name: name, user: fmt.Sprintf("vc%02d", pick(rng, userCum))}
		g.gpus = phillyGPUs[pick(rng, gpuCum)]
		g.duration = phillyDuration(rng, g.gpus)
		g.job.ID = gpusched.JobID(name)
		g.job.GPUs = g.gpus
		if _, err := mapJob(&g.job, g.duration, cfg.Seed, key); err != nil {
			return nil, fmt.Errorf("trace: group %s: %w", name, err)
		}
		return g, nil
	}
	groups := make([]*group, cfg.Groups)
	for i := range groups {
		var err error
		if groups[i], err = newGroup(fmt.Sprintf("grp%05d", i), uint64(i)); err != nil {
			return nil, err
		}
	}
	out := make([]Record, cfg.Jobs)
	t := 0.0
	for i := range out {
		if i > 0 {
			t += rng.ExpFloat64() / cfg.ArrivalRate
		}
		if err := checkArrival(t); err != nil {
			return nil, fmt.Errorf("%w: ArrivalRate = %v: job %d: %w", ErrInvalidPhillyConfig, cfg.ArrivalRate, i, err)
		}
		var g *group
		dur := 0.0
		if rng.Float64() < cfg.OneOffFraction {
			var err error
			if g, err = newGroup(fmt.Sprintf("once-%07d", i), uint64(cfg.Groups+i)); err != nil {
				return nil, err
			}
			dur = g.duration
		} else {
			g = groups[pick(rng, groupCum)]
			dur = g.duration * math.Exp(phlDurationSigma*rng.NormFloat64())
		}
		j := g.job
		j.ID = gpusched.JobID(fmt.Sprintf("ph%07d", i))
		j.Arrival = t
		j.Features.User = g.user
		j.Features.Group = g.name
		j.Features.SubmitHour = math.Mod(t/3600, 24)
		out[i] = Record{Job: j, Iterations: dur / j.StepTime}
	}
	return out, nil
}

// phillyDuration draws a run time in seconds for a job of the given GPU count.
func phillyDuration(rng *rand.Rand, gpus int) float64 {
	q := phillyLogDuration[phillyClass(gpus)]
	u := rng.Float64()
	k := 0
	for k+2 < len(phillyQuantileP) && u >= phillyQuantileP[k+1] {
		k++
	}
	p0, p1 := phillyQuantileP[k], phillyQuantileP[k+1]
	x := q[k] + (u-p0)/(p1-p0)*(q[k+1]-q[k])
	return math.Pow(10, x)
}

// phillyMeanGPUTime returns the mean GPU-seconds per job (GPUs x run time) of the fitted
// Philly distributions, computed exactly from the piecewise-linear quantile functions.
func phillyMeanGPUTime() float64 {
	total, mass := 0.0, 0.0
	for i, g := range phillyGPUs {
		total += phillyGPUShare[i] * float64(g) * phillyMeanDuration(phillyClass(g))
		mass += phillyGPUShare[i]
	}
	return total / mass
}

// phillyMeanDuration is the mean run time in seconds of a duration class: on each segment
// log10 d rises linearly from a to b over probability dp, so its mean contributes
// dp x (10^b - 10^a) / ((b - a) ln 10).
func phillyMeanDuration(class int) float64 {
	q := phillyLogDuration[class]
	m := 0.0
	for k := 0; k+1 < len(q); k++ {
		dp := phillyQuantileP[k+1] - phillyQuantileP[k]
		a, b := q[k], q[k+1]
		if b-a < 1e-12 {
			m += dp * math.Pow(10, a)
			continue
		}
		m += dp * (math.Pow(10, b) - math.Pow(10, a)) / ((b - a) * math.Ln10)
	}
	return m
}

// RateForLoad returns the arrival rate in jobs per second at which a Philly-like workload
// offers the given load to a cluster of the given number of GPUs: load x gpus /
// PhillyMeanGPUTime(). A load of 1 asks for every GPU all the time on average.
func RateForLoad(load float64, gpus int) float64 {
	return load * float64(gpus) / phillyMeanGPUTime()
}

// PhillyFit holds the constants GeneratePhilly draws from, fitted to the shared Philly file.
//
// Deprecated: not needed by embedders (GeneratePhilly draws from them); removed in v0.3.0.
type PhillyFit struct {
	// ArrivalRate is the mean submission rate in jobs per second.
	ArrivalRate float64
	// GPUs lists the GPU counts; GPUShare[i] is the number of jobs of the file asking for
	// GPUs[i] (normalise to get probabilities).
	GPUs     []int
	GPUShare []float64
	// QuantileP are probabilities; LogDuration[c][k] is the QuantileP[k]-quantile of
	// log10(run time in seconds) for class c: 0 for 1-GPU jobs, 1 for 2-4 GPUs, 2 for more.
	QuantileP   []float64
	LogDuration [3][]float64
}

// phillyFitted returns a copy of the fitted constants.
func phillyFitted() PhillyFit {
	f := PhillyFit{
		ArrivalRate: phillyArrivalRate,
		GPUs:        slices.Clone(phillyGPUs),
		GPUShare:    slices.Clone(phillyGPUShare),
		QuantileP:   slices.Clone(phillyQuantileP),
	}
	for c := range f.LogDuration {
		f.LogDuration[c] = slices.Clone(phillyLogDuration[c])
	}
	return f
}
