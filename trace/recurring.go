package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	gpusched "github.com/gpusched/gpusched"
)

// ErrInvalidRecurringConfig reports a RecurringConfig that GenerateRecurring cannot honour.
// The message names the offending field.
var ErrInvalidRecurringConfig = errors.New("trace: invalid recurring-workload config")

// RecurringConfig sets the size and the mix of a synthetic recurring workload (see
// GenerateRecurring for the generative model). Zero values of Users, Groups and ArrivalRate
// select the documented defaults; the fractions are taken as given (0 means none).
type RecurringConfig struct {
	// Jobs is the number of jobs to generate (at least 1).
	Jobs int
	// Users is the number of distinct submitting users; 0 means 64.
	Users int
	// Groups is the number of recurrence groups that recurring jobs are drawn from; 0 means
	// max(1, Jobs/25).
	Groups int
	// OneOffFraction is the probability in [0, 1] that a job is a one-off: a group of its own
	// that never recurs.
	OneOffFraction float64
	// KillFraction is the probability in [0, 1] that a job is killed before it finishes its
	// training.
	KillFraction float64
	// ArrivalRate is the mean number of submissions per second (a Poisson process), at least
	// 1e-9 (about one job in 30 years), and high enough that every job arrives within
	// MaxArrival (100 years); 0 means 1/120 (one job every two minutes on average).
	ArrivalRate float64
	// Seed seeds the generator: the same config gives the same workload.
	Seed uint64
}

// DefaultRecurringConfig returns the config used by the predictor's benchmark: jobs jobs from
// 64 users in max(1, jobs/25) groups, 15% one-offs, 8% killed, one job every two minutes.
func DefaultRecurringConfig(jobs int, seed uint64) RecurringConfig {
	return RecurringConfig{Jobs: jobs, OneOffFraction: 0.15, KillFraction: 0.08, Seed: seed}
}

// recFamily describes one model family of the generator's catalogue.
type recFamily struct {
	name     string
	weight   float64    // relative frequency of new groups
	datasets []string   // datasets the family trains on
	batches  []int      // global batch sizes a group may pick, ascending powers of two
	opt, alt string     // usual and alternative optimizer
	lr       float64    // typical base learning rate
	epochs   [2]float64 // log-uniform range of a group's epochs
	step     float64    // seconds per iteration at batches[0] on one GPU
}

// recDatasetSize is the number of training samples of each dataset in the catalogue.
var recDatasetSize = map[string]float64{
	"imagenet":    1_281_167,
	"cifar10":     50_000,
	"cifar100":    50_000,
	"coco":        118_287,
	"squad":       87_599,
	"mnli":        392_702,
	"openwebtext": 8_013_769,
	"wikitext103": 1_801_350,
	"ptb":         42_068,
	"wmt16":       4_500_966,
	"librispeech": 281_241,
}

// recCatalogue lists the model families, their datasets and their typical settings. It is
// read-only.
var recCatalogue = []recFamily{
	{"resnet50", 3, []string{"imagenet"}, []int{128, 256, 512, 1024}, "sgd", "lars", 0.1, [2]float64{20, 90}, 0.15},
	{"resnet18", 3, []string{"cifar10", "cifar100"}, []int{64, 128, 256}, "sgd", "adam", 0.1, [2]float64{30, 200}, 0.02},
	{"vgg16", 1, []string{"imagenet", "cifar10"}, []int{64, 128, 256}, "sgd", "adam", 0.01, [2]float64{20, 100}, 0.2},
	{"bert-base", 3, []string{"squad", "mnli"}, []int{16, 32, 64}, "adamw", "lamb", 3e-5, [2]float64{2, 6}, 0.1},
	{"gpt2", 2, []string{"openwebtext", "wikitext103"}, []int{64, 128, 256, 512}, "adamw", "adafactor", 6e-4, [2]float64{0.05, 2}, 0.5},
	{"lstm", 2, []string{"ptb", "wikitext103"}, []int{20, 40, 80}, "sgd", "adam", 1, [2]float64{10, 60}, 0.03},
	{"transformer", 2, []string{"wmt16"}, []int{128, 256, 512}, "adam", "adamw", 7e-4, [2]float64{1, 10}, 0.3},
	{"deepspeech2", 1, []string{"librispeech"}, []int{32, 64}, "adam", "sgd", 3e-4, [2]float64{10, 40}, 0.4},
	{"yolov5", 2, []string{"coco"}, []int{16, 32, 64}, "sgd", "adam", 0.01, [2]float64{50, 300}, 0.15},
	{"vit-b16", 1, []string{"imagenet", "cifar100"}, []int{256, 512, 1024}, "adamw", "lamb", 1e-3, [2]float64{10, 300}, 0.4},
}

// recMinArrivalRate is the smallest ArrivalRate accepted, in jobs per second.
const recMinArrivalRate = 1e-9

// recGPUChoices and recGPUWeights give the distribution of a group's GPU demand (Philly-like:
// mostly one GPU, a tail of multi-server jobs).
var (
	recGPUChoices = []int{1, 2, 4, 8, 16, 32}
	recGPUWeights = []float64{0.55, 0.12, 0.15, 0.12, 0.04, 0.02}
)

// Constants of the generative model (see GenerateRecurring).
const (
	recUserZipf       = 1.0  // user popularity exponent
	recGroupZipf      = 0.9  // group popularity exponent
	recAltOptimizer   = 0.2  // probability that a group uses its family's alternative optimizer
	recDriftProb      = 0.1  // probability that a submission drifts its group's epochs for good
	recDriftKeep      = 0.8  // the drift is mean-reverting: this share of the old offset stays
	recDriftSigma     = 0.3  // log-normal sigma of that drift
	recEpochSigma     = 0.05 // log-normal sigma of a submission's own epochs change
	recBatchChange    = 0.2  // probability that a submission halves or doubles its batch size
	recLRSigma        = 0.4  // log-normal sigma of a submission's learning-rate change
	recGPUChange      = 0.1  // probability that a submission halves or doubles its GPUs
	recEarlyStopSigma = 0.25 // scale of the early-stopping term
	recStepSigma      = 0.25 // log-normal sigma of the step time
	recGPUScaling     = 0.85 // step time falls as GPUs^-0.85 (imperfect data-parallel scaling)
)

// recGroup is a recurrence group's current base settings; submissions perturb them.
type recGroup struct {
	name    string
	user    string
	fam     *recFamily
	dataset string
	batch   int // index into fam.batches
	lr      float64
	opt     string
	epochs  float64 // current base epochs E_g
	epochs0 float64 // the group's original epochs, which drift reverts to
	gpus    int
}

// GenerateRecurring returns a synthetic workload of recurring training jobs in arrival order,
// with each job's true iterations. It is deterministic: the same config gives the same
// records (math/rand/v2 PCG seeded with cfg.Seed).
//
// The generative model:
//
//   - Arrivals form a Poisson process of rate λ = cfg.ArrivalRate: t_i = t_{i-1} + Exp(λ),
//     t_0 = 0; a rate so low that a job would arrive after MaxArrival (100 years) is an
//     error. SubmitHour = (t_i / 3600) mod 24.
//   - Users u = 0..U-1 have popularity ∝ (u+1)^-1.0. Groups g = 0..G-1 are created up front,
//     each owned by a user drawn by popularity, with popularity ∝ (g+1)^-0.9, so that a few
//     groups recur very often and many rarely.
//   - A group draws a model family f from a fixed catalogue (ResNet, VGG, BERT, GPT-2, LSTM,
//     Transformer, DeepSpeech2, YOLOv5, ViT), one of f's datasets d with N_d training samples,
//     a base batch size B_g from f's list, a base learning rate lr_f * LogUniform(1/3, 3), f's
//     usual optimizer (alternative with probability 0.2), base epochs E_g ~ LogUniform(f's
//     range) and a GPU demand from {1: 55%, 2: 12%, 4: 15%, 8: 12%, 16: 4%, 32: 2%}.
//   - Each job is a one-off with probability cfg.OneOffFraction (a fresh group named
//     "once-<i>" that never recurs), otherwise a re-submission of a group g drawn by
//     popularity. A re-submission first drifts its group for good with probability 0.1, in a
//     mean-reverting way around the group's original epochs E_g0:
//     log(E_g/E_g0) <- 0.8 log(E_g/E_g0) + N(0, 0.3^2) (stationary SD 0.5). It then makes
//     small changes of its own: batch
//     B = B_g halved or doubled (within f's list) with probability 0.2, learning rate
//     lr = lr_g * exp(N(0, 0.4^2)), epochs E = E_g * exp(N(0, 0.05^2)), GPUs halved or
//     doubled with probability 0.1.
//   - Iterations: n = max(1, round(E * N_d / B * eta)), with the early-stopping term
//     eta = exp(-0.25 |Z|), Z ~ N(0, 1): training stops somewhat before its planned epochs.
//   - With probability cfg.KillFraction the job is killed early: it runs
//     max(1, floor(n * U^2)) iterations, U ~ Uniform(0, 1), and Record.Killed is set.
//   - StepTime = s_f * (B / B_f,min) / GPUs^0.85 * exp(N(0, 0.25^2)) seconds per iteration,
//     s_f being f's step time at its smallest batch on one GPU.
//
// Jobs are named "r<i>" (six digits), users "u<k>", groups "g<k>". The generator sets
// Family, Dataset, BatchSize, LearningRate, Optimizer, User, Group and SubmitHour; it sets no
// Numeric or Categorical extras and Weight 0 (that is, 1).
func GenerateRecurring(cfg RecurringConfig) ([]Record, error) {
	cfg, err := cfg.recNormalize()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))

	userCum := zipfCumulative(cfg.Users, recUserZipf)
	famWeights := make([]float64, len(recCatalogue))
	for i := range recCatalogue {
		famWeights[i] = recCatalogue[i].weight
	}
	famCum := cumulative(famWeights)
	gpuCum := cumulative(recGPUWeights)

	newGroup := func(name string) *recGroup {
		f := &recCatalogue[pick(rng, famCum)]
		g := &recGroup{
			name:    name,
			user:    fmt.Sprintf("u%03d", pick(rng, userCum)),
			fam:     f,
			dataset: f.datasets[rng.IntN(len(f.datasets))],
			batch:   rng.IntN(len(f.batches)),
			lr:      f.lr * math.Exp(math.Log(3)*(2*rng.Float64()-1)),
			opt:     f.opt,
			epochs:  recLogUniform(rng, f.epochs[0], f.epochs[1]),
			gpus:    recGPUChoices[pick(rng, gpuCum)],
		}
		g.epochs0 = g.epochs
		if rng.Float64() < recAltOptimizer {
			g.opt = f.alt
		}
		return g
	}

	groups := make([]*recGroup, cfg.Groups)
	for i := range groups {
		groups[i] = newGroup(fmt.Sprintf("g%05d", i))
	}
	groupCum := zipfCumulative(cfg.Groups, recGroupZipf)

	out := make([]Record, cfg.Jobs)
	t := 0.0
	for i := range out {
		t += rng.ExpFloat64() / cfg.ArrivalRate
		if err := checkArrival(t); err != nil {
			return nil, fmt.Errorf("%w: ArrivalRate = %v: job %d: %w", ErrInvalidRecurringConfig, cfg.ArrivalRate, i, err)
		}
		var g *recGroup
		if rng.Float64() < cfg.OneOffFraction {
			g = newGroup(fmt.Sprintf("once-%06d", i))
		} else {
			g = groups[pick(rng, groupCum)]
			if rng.Float64() < recDriftProb {
				off := math.Log(g.epochs / g.epochs0)
				g.epochs = g.epochs0 * math.Exp(recDriftKeep*off+recDriftSigma*rng.NormFloat64())
			}
		}
		f := g.fam
		bi := g.batch
		if rng.Float64() < recBatchChange {
			if rng.IntN(2) == 0 {
				bi--
			} else {
				bi++
			}
			bi = min(max(bi, 0), len(f.batches)-1)
		}
		batch := f.batches[bi]
		lr := g.lr * math.Exp(recLRSigma*rng.NormFloat64())
		epochs := g.epochs * math.Exp(recEpochSigma*rng.NormFloat64())
		gpus := g.gpus
		if rng.Float64() < recGPUChange {
			if rng.IntN(2) == 0 && gpus > 1 {
				gpus /= 2
			} else if gpus < recGPUChoices[len(recGPUChoices)-1] {
				gpus *= 2
			}
		}
		eta := math.Exp(-recEarlyStopSigma * math.Abs(rng.NormFloat64()))
		n := math.Max(1, math.Round(epochs*recDatasetSize[g.dataset]/float64(batch)*eta))
		killed := rng.Float64() < cfg.KillFraction
		if killed {
			u := rng.Float64()
			n = math.Max(1, math.Floor(n*u*u))
		}
		step := f.step * float64(batch) / float64(f.batches[0]) /
			math.Pow(float64(gpus), recGPUScaling) * math.Exp(recStepSigma*rng.NormFloat64())
		out[i] = Record{
			Job: gpusched.Job{
				ID:       gpusched.JobID(fmt.Sprintf("r%06d", i)),
				Arrival:  t,
				GPUs:     gpus,
				StepTime: step,
				Features: gpusched.Features{
					Family:       f.name,
					Dataset:      g.dataset,
					BatchSize:    batch,
					LearningRate: lr,
					Optimizer:    g.opt,
					User:         g.user,
					Group:        g.name,
					SubmitHour:   math.Mod(t/3600, 24),
				},
			},
			Iterations: n,
			Killed:     killed,
		}
	}
	return out, nil
}

// recNormalize validates cfg and fills in the defaults.
func (cfg RecurringConfig) recNormalize() (RecurringConfig, error) {
	bad := func(field string, v any) (RecurringConfig, error) {
		return cfg, fmt.Errorf("%w: %s = %v", ErrInvalidRecurringConfig, field, v)
	}
	switch {
	case cfg.Jobs < 1:
		return bad("Jobs (must be >= 1)", cfg.Jobs)
	case cfg.Users < 0:
		return bad("Users (must be >= 0)", cfg.Users)
	case cfg.Groups < 0:
		return bad("Groups (must be >= 0)", cfg.Groups)
	case !(cfg.OneOffFraction >= 0 && cfg.OneOffFraction <= 1):
		return bad("OneOffFraction (must be in [0, 1])", cfg.OneOffFraction)
	case !(cfg.KillFraction >= 0 && cfg.KillFraction <= 1):
		return bad("KillFraction (must be in [0, 1])", cfg.KillFraction)
	case !(cfg.ArrivalRate == 0 || cfg.ArrivalRate >= recMinArrivalRate) || math.IsInf(cfg.ArrivalRate, 0):
		return bad("ArrivalRate (must be 0 or finite and >= 1e-9)", cfg.ArrivalRate)
	}
	if cfg.Users == 0 {
		cfg.Users = 64
	}
	if cfg.Groups == 0 {
		cfg.Groups = max(1, cfg.Jobs/25)
	}
	if cfg.ArrivalRate == 0 {
		cfg.ArrivalRate = 1.0 / 120
	}
	return cfg, nil
}

// recLogUniform draws from the log-uniform distribution on [lo, hi].
func recLogUniform(rng *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(rng.Float64()*math.Log(hi/lo))
}
