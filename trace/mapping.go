package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	gpusched "github.com/gpusched/gpusched"
)

// ReadOptions control the trace readers (ReadPhilly, ReadPollux, ReadJSONL).
type ReadOptions struct {
	// Lenient makes a reader skip malformed rows, counting them in Trace.Skipped and keeping
	// the first MaxProblems errors in Trace.Problems, instead of failing on the first one. A
	// file whose header is unusable fails either way.
	Lenient bool
	// Seed seeds the mapping of jobs that have only a GPU count and a run time to a model and
	// an iteration count (see MapJob). The same file and seed give the same records.
	Seed uint64
}

// MaxProblems is the number of skipped-row errors a lenient read keeps in Trace.Problems.
const MaxProblems = 100

// Trace is a workload read from a file.
type Trace struct {
	// Name is the name the reader was given (usually the file name).
	Name string
	// Records are the jobs in arrival order (ties in file order).
	Records []Record
	// Skipped counts the rows a lenient read skipped; Problems holds the errors of the first
	// MaxProblems of them. A strict read skips nothing.
	Skipped  int
	Problems []error
}

// ErrMalformed is reported (through a *ParseError) for a row or header a reader cannot use.
var ErrMalformed = errors.New("trace: malformed input")

// ParseError reports a malformed row: the file, the line (1-based), the column when one is to
// blame, and the reason. errors.Is(err, ErrMalformed) holds for every ParseError.
type ParseError struct {
	File   string
	Line   int
	Column string
	Err    error
}

// Error formats the error as "file:line: column c: reason".
func (e *ParseError) Error() string {
	if e.Column != "" {
		return fmt.Sprintf("%s:%d: column %s: %v", e.File, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMalformed.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// rowSink collects records and applies the lenient policy.
type rowSink struct {
	t       *Trace
	lenient bool
}

// fail handles a bad row: it returns the error (strict) or records it and returns nil.
func (s *rowSink) fail(err error) error {
	if !s.lenient {
		return err
	}
	s.t.Skipped++
	if len(s.t.Problems) < MaxProblems {
		s.t.Problems = append(s.t.Problems, err)
	}
	return nil
}

// zooModel is one entry of the mapping's model catalogue.
type zooModel struct {
	family  string
	dataset string
	batch   int     // per-GPU batch size in samples (data parallel: global = batch x GPUs)
	step    float64 // seconds per iteration at that batch, consolidated on A100-class GPUs
	minGPUs int     // the model is chosen for jobs of minGPUs..maxGPUs GPUs
	maxGPUs int
}

// mapCatalogue is the documented table of MapJob (see its doc comment). Step times are
// round figures for data-parallel training at the per-GPU batch on A100-class GPUs, in
// seconds per iteration.
var mapCatalogue = []zooModel{
	{"resnet18", "cifar10", 128, 0.03, 1, 4},
	{"lstm", "ptb", 20, 0.05, 1, 4},
	{"resnet50", "imagenet", 256, 0.25, 1, 64},
	{"vgg16", "imagenet", 64, 0.2, 1, 16},
	{"bert-base", "squad", 32, 0.15, 1, 16},
	{"transformer", "wmt16", 4096, 0.3, 2, 64},
	{"gpt2", "openwebtext", 8, 0.4, 4, 128},
	{"bert-large", "wikipedia", 16, 0.5, 8, 256},
}

// mapStepJitter is the half-width, in natural-log units, of the uniform jitter of a mapped
// job's step time around its model's table value: exp(U(-0.2, 0.2)), about ±20%.
const mapStepJitter = 0.2

// MapJob completes a trace job that has only a GPU count and a run time: it chooses a model
// from a documented catalogue, sets the job's Features (Family, Dataset, BatchSize) and
// StepTime, and returns the true iteration count, duration / StepTime, so that the job,
// run alone at a consolidated placement, takes exactly duration seconds (FixedCost). The
// count may be fractional: the last iteration of a trace job may be cut short.
//
// The choice depends only on (seed, key, GPU count): readers pass the row's line number as
// key, so a row maps the same way whatever other rows the file holds. A job of g GPUs gets a
// model uniformly among the catalogue entries whose GPU range holds g (the entry with the
// last, bert-large, if none does), and StepTime = table step x exp(U(-0.2, 0.2)):
//
//	family       dataset      per-GPU batch  step (s)  GPUs
//	resnet18     cifar10      128            0.03      1-4
//	lstm         ptb          20             0.05      1-4
//	resnet50     imagenet     256            0.25      1-64
//	vgg16        imagenet     64             0.2       1-16
//	bert-base    squad        32             0.15      1-16
//	transformer  wmt16        4096 (tokens)  0.3       2-64
//	gpt2         openwebtext  8              0.4       4-128
//	bert-large   wikipedia    16             0.5       8-256
//
// Features.BatchSize is the global batch: per-GPU batch x GPUs. The step times are round
// figures for weak-scaled data-parallel training on A100-class GPUs; they set the
// granularity of progress, not the run time, which the trace fixes.
//
// This is the placement-independent mapping, used until the graph package's model zoo is
// available to the trace package; its Job.StepTime is what gpusched.FixedCost charges.
// MapJob returns an error (wrapping gpusched.ErrInvalidJob) for a GPU count below 1 or a
// duration that is not finite and positive.
func MapJob(j *gpusched.Job, duration float64, seed, key uint64) (iterations float64, err error) {
	if j.GPUs < 1 {
		return 0, fmt.Errorf("%w: job %q: GPU count %d must be at least 1", gpusched.ErrInvalidJob, j.ID, j.GPUs)
	}
	if !(duration > 0) || math.IsInf(duration, 0) {
		return 0, fmt.Errorf("%w: job %q: duration %v s must be finite and > 0", gpusched.ErrInvalidJob, j.ID, duration)
	}
	rng := rand.New(rand.NewPCG(seed^0x6a09e667f3bcc908, key*0x9e3779b97f4a7c15+uint64(j.GPUs)))
	m := pickModel(rng, j.GPUs)
	j.Features.Family = m.family
	j.Features.Dataset = m.dataset
	j.Features.BatchSize = m.batch * j.GPUs
	j.StepTime = m.step * math.Exp(mapStepJitter*(2*rng.Float64()-1))
	iterations = duration / j.StepTime
	if math.IsInf(iterations, 0) {
		return 0, fmt.Errorf("%w: job %q: duration %v s is too long", gpusched.ErrInvalidJob, j.ID, duration)
	}
	return iterations, nil
}

// pickModel chooses a catalogue entry for a job of g GPUs.
func pickModel(rng *rand.Rand, g int) *zooModel {
	var fit [16]int
	n := 0
	for i := range mapCatalogue {
		if m := &mapCatalogue[i]; m.minGPUs <= g && g <= m.maxGPUs {
			fit[n] = i
			n++
		}
	}
	if n == 0 {
		return &mapCatalogue[len(mapCatalogue)-1]
	}
	return &mapCatalogue[fit[rng.IntN(n)]]
}
