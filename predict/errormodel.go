package predict

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched"
)

// ErrorKind is the distribution of the multiplicative error an ErrorModel injects.
type ErrorKind int

const (
	// NoError leaves exact sizes exact.
	NoError ErrorKind = iota
	// LogUniform multiplies each size by exp(U), U uniform on [-ln Mu, ln Mu]: every
	// prediction within a factor Mu, independently per job.
	LogUniform
	// LogNormal multiplies each size by exp(N(0, Sigma^2)): unbounded error, median exact.
	LogNormal
	// Under divides every size by Mu: every job runs Mu times longer than predicted.
	Under
	// Over multiplies every size by Mu: every job ends long before its prediction.
	Over
	// Adversarial mirrors every size about the median of the sizes (on a log scale: size s
	// becomes median^2 / s) as far as the factor Mu allows: short jobs look long and long jobs
	// short, so that the predictions reverse the jobs' order wherever predictions within Mu
	// can. Under and Over only rescale the sizes, which leaves a pure priority order unchanged;
	// Adversarial reverses it.
	Adversarial
)

// String returns the name ParseErrorModel reads.
func (k ErrorKind) String() string {
	switch k {
	case NoError:
		return "none"
	case LogUniform:
		return "loguniform"
	case LogNormal:
		return "lognormal"
	case Under:
		return "under"
	case Over:
		return "over"
	case Adversarial:
		return "adversarial"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// ErrErrorModel reports an error model that ParseErrorModel or Validate refuses.
var ErrErrorModel = errors.New("predict: bad prediction-error model")

// ErrorModel injects multiplicative error into exact job sizes, to measure how a scheduler
// degrades as predictions get worse: Perturb turns the true iterations of a workload into the
// predictions an oracle then reports. Draws are per job, seeded by Seed and the job's ID, so
// every policy of a comparison sees the same wrong predictions, whatever the order of the jobs.
type ErrorModel struct {
	// Kind is the distribution of the error; NoError (the zero value) injects none.
	Kind ErrorKind
	// Mu >= 1 bounds the error factor of LogUniform, Under, Over and Adversarial.
	Mu float64
	// Sigma >= 0 is the standard deviation of the natural log of LogNormal's factor.
	Sigma float64
	// Seed seeds the per-job draws of LogUniform and LogNormal.
	Seed uint64
}

// ParseErrorModel reads "none", "loguniform:MU", "lognormal:SIGMA", "under:MU", "over:MU" or
// "adversarial:MU", optionally followed by ",seed=N" (default seed 1).
func ParseErrorModel(s string) (ErrorModel, error) {
	m := ErrorModel{Seed: 1}
	spec, rest, _ := strings.Cut(strings.TrimSpace(s), ",")
	if rest != "" {
		v, ok := strings.CutPrefix(rest, "seed=")
		if !ok {
			return ErrorModel{}, fmt.Errorf("%w %q: want KIND:VALUE[,seed=N], got %q after the comma", ErrErrorModel, s, rest)
		}
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return ErrorModel{}, fmt.Errorf("%w %q: seed: %w", ErrErrorModel, s, err)
		}
		m.Seed = seed
	}
	kind, val, hasVal := strings.Cut(spec, ":")
	switch kind {
	case "none", "":
		if hasVal {
			return ErrorModel{}, fmt.Errorf("%w %q: none takes no value", ErrErrorModel, s)
		}
		return m, nil
	case "loguniform":
		m.Kind = LogUniform
	case "lognormal":
		m.Kind = LogNormal
	case "under":
		m.Kind = Under
	case "over":
		m.Kind = Over
	case "adversarial":
		m.Kind = Adversarial
	default:
		return ErrorModel{}, fmt.Errorf("%w %q: unknown kind %q (want none, loguniform, lognormal, under, over or adversarial)", ErrErrorModel, s, kind)
	}
	if !hasVal {
		return ErrorModel{}, fmt.Errorf("%w %q: %s needs a value (%s:VALUE)", ErrErrorModel, s, kind, kind)
	}
	x, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return ErrorModel{}, fmt.Errorf("%w %q: value: %w", ErrErrorModel, s, err)
	}
	if m.Kind == LogNormal {
		m.Sigma = x
	} else {
		m.Mu = x
	}
	if err := m.Validate(); err != nil {
		return ErrorModel{}, err
	}
	return m, nil
}

// maxMu bounds Mu and exp(Sigma): larger factors turn sizes into infinities or zeros.
const maxMu = 1e6

// Validate checks Mu (in [1, 1e6] where used) and Sigma (in [0, ln 1e6]).
func (m ErrorModel) Validate() error {
	switch m.Kind {
	case NoError:
		return nil
	case LogNormal:
		if !(m.Sigma >= 0 && m.Sigma <= math.Log(maxMu)) {
			return fmt.Errorf("%w: lognormal sigma %v must be in [0, %.3g]", ErrErrorModel, m.Sigma, math.Log(maxMu))
		}
		return nil
	case LogUniform, Under, Over, Adversarial:
		if !(m.Mu >= 1 && m.Mu <= maxMu) {
			return fmt.Errorf("%w: %s mu %v must be in [1, %g]", ErrErrorModel, m.Kind, m.Mu, float64(maxMu))
		}
		return nil
	}
	return fmt.Errorf("%w: unknown kind %d", ErrErrorModel, int(m.Kind))
}

// String returns the model in ParseErrorModel's syntax.
func (m ErrorModel) String() string {
	switch m.Kind {
	case NoError:
		return "none"
	case LogNormal:
		return fmt.Sprintf("lognormal:%g,seed=%d", m.Sigma, m.Seed)
	case LogUniform:
		return fmt.Sprintf("loguniform:%g,seed=%d", m.Mu, m.Seed)
	}
	return fmt.Sprintf("%s:%g", m.Kind, m.Mu)
}

// Bound returns the factor within which every prediction lies: Mu, 1 for NoError, and +Inf
// for LogNormal with Sigma > 0.
func (m ErrorModel) Bound() float64 {
	switch m.Kind {
	case NoError:
		return 1
	case LogNormal:
		if m.Sigma == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return m.Mu
}

// Perturb returns the predicted sizes: each true size (iterations, positive) times its error
// factor. Non-positive or non-finite sizes are kept as they are. The input is not changed.
func (m ErrorModel) Perturb(truth map[gpusched.JobID]float64) (map[gpusched.JobID]float64, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	out := make(map[gpusched.JobID]float64, len(truth))
	median := 0.0
	if m.Kind == Adversarial {
		vals := make([]float64, 0, len(truth))
		for _, v := range truth {
			if v > 0 && !math.IsInf(v, 0) {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		if len(vals) > 0 {
			median = vals[len(vals)/2]
		}
	}
	for id, v := range truth {
		if !(v > 0) || math.IsInf(v, 0) {
			out[id] = v
			continue
		}
		out[id] = v * m.factor(id, v, median)
	}
	return out, nil
}

// factor returns job id's error factor given its true size and the median size.
func (m ErrorModel) factor(id gpusched.JobID, v, median float64) float64 {
	switch m.Kind {
	case Under:
		return 1 / m.Mu
	case Over:
		return m.Mu
	case Adversarial:
		return min(max(median*median/v, v/m.Mu), v*m.Mu) / v
	case LogUniform, LogNormal:
		h := fnv.New64a()
		h.Write([]byte(id))
		rng := rand.New(rand.NewPCG(m.Seed, h.Sum64()))
		if m.Kind == LogUniform {
			return math.Exp((2*rng.Float64() - 1) * math.Log(m.Mu))
		}
		return math.Exp(rng.NormFloat64() * m.Sigma)
	}
	return 1
}
