package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// ReadOptions control the trace readers (ReadPhilly, ReadPollux, ReadJSONL).
type ReadOptions struct {
	// Lenient makes a reader skip malformed rows, counting them in Trace.Skipped and keeping
	// the first MaxProblems errors in Trace.Problems, instead of failing on the first one. A
	// file whose header is unusable fails either way.
	Lenient bool
	// Seed seeds the mapping of jobs that have only a GPU count and a run time to a model and
	// an iteration count. The same file, seed and cluster give the same records.
	Seed uint64
	// Cluster, when set, makes ReadPhilly map jobs to zoo models with parallel plans whose
	// iteration times come from package graph on this cluster (MapModelJob); without it, jobs
	// get a placement-independent step time (MapJob). Jobs larger than the cluster are then
	// malformed rows.
	Cluster *topology.Cluster
	// ReferenceGPU names the GPU type (or model) on which the trace's durations were measured,
	// for the model-aware mapping on a cluster with several GPU types: a job's iterations are
	// its duration over its time per iteration consolidated on GPUs of this type, and on other
	// GPUs it runs as the cost model says (faster on faster GPUs). Empty selects the cluster's
	// slowest GPU type (least peak FLOP/s, the first such server's on ties). Naming a type the
	// cluster does not have is an error. Ignored without Cluster.
	ReferenceGPU string
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

// mapJob completes a trace job that has only a GPU count and a run time: it chooses a model
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
// This is the placement-independent mapping, for hosts that run jobs at a fixed speed
// (gpusched.FixedCost charges Job.StepTime); MapModelJob is the model-aware one.
// MapJob returns an error (wrapping gpusched.ErrInvalidJob) for a GPU count below 1 or a
// duration that is not finite and positive.
func mapJob(j *gpusched.Job, duration float64, seed, key uint64) (iterations float64, err error) {
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

// zooEntry is one entry of the model-aware mapping's catalogue.
type zooEntry struct {
	name    string // graph zoo model
	dataset string
	minGPUs int // chosen for jobs of minGPUs..maxGPUs GPUs
	maxGPUs int
}

// zooCatalogue is the documented table of MapModelJob.
var zooCatalogue = []zooEntry{
	{"resnet18-cifar10", "cifar10", 1, 4},
	{"ncf", "movielens", 1, 4},
	{"resnet50", "imagenet", 1, 64},
	{"vgg16", "imagenet", 1, 16},
	{"inception-v3", "imagenet", 1, 32},
	{"bert-base", "squad", 1, 16},
	{"deepspeech2-small", "librispeech", 1, 16},
	{"bert-large", "wikipedia", 4, 64},
	{"gpt2-1.5b", "openwebtext", 8, 128},
	{"t5-3b", "c4", 8, 128},
	{"llama-7b", "redpajama", 16, 1024},
	{"gpt3-6.7b", "pile", 16, 1024},
	{"gpt3-13b", "pile", 32, 1024},
}

// zooChoice is a catalogue model with its default plan for a GPU count and its time per
// iteration at the consolidated placement, idle links.
type zooChoice struct {
	entry *zooEntry
	model *graph.Model
	plan  graph.Plan
	step  float64
}

// modelMapper maps jobs to zoo models on one cluster, caching per GPU count the catalogue
// models that fit and their consolidated iteration times on the reference GPU type. It is not
// safe for concurrent use.
type modelMapper struct {
	c     *topology.Cluster
	ref   topology.ServerSpec // the first server of the reference GPU type
	pool  topology.GPUSet     // the cluster's GPUs of the reference type
	cache map[int][]zooChoice
}

// newModelMapper returns the mapper for cluster c with durations measured on GPUs of type ref
// ("" for the cluster's slowest type).
func newModelMapper(c *topology.Cluster, ref string) (*modelMapper, error) {
	m := &modelMapper{c: c, cache: map[int][]zooChoice{}, pool: topology.NewGPUSet(c.NumGPUs())}
	refServer := -1
	for i := range c.NumServers() {
		spec := c.Server(i).GPU
		switch {
		case ref != "" && !spec.Is(ref):
		case refServer < 0, ref == "" && spec.PeakFLOPS < c.Server(refServer).GPU.PeakFLOPS:
			refServer = i
		}
	}
	if refServer < 0 {
		return nil, fmt.Errorf("reference GPU type %q: cluster %q has no GPU of that type", ref, c.Name())
	}
	m.ref = c.Server(refServer).ServerSpec
	for i := range c.NumServers() {
		if c.Server(i).GPU == m.ref.GPU {
			first, n := c.GPUsOf(i)
			for g := first; g < first+topology.GPUID(n); g++ {
				m.pool.Add(g)
			}
		}
	}
	return m, nil
}

// sizing returns where a job of g GPUs is timed: consolidated on the cluster's GPUs of the
// reference type when there are enough, else on a cluster of as many reference servers as
// it needs.
func (m *modelMapper) sizing(g int) (*topology.Cluster, []topology.GPUID, error) {
	if g <= m.pool.Len() {
		if gpus, ok := m.c.Pack(m.pool, g); ok {
			return m.c, gpus, nil
		}
	}
	ref, err := topology.Uniform(m.ref, (g+m.ref.GPUs-1)/m.ref.GPUs)
	if err != nil {
		return nil, nil, err
	}
	gpus, ok := ref.Pack(ref.AllGPUs(), g)
	if !ok {
		return nil, nil, fmt.Errorf("no placement of %d GPUs of type %s", g, m.ref.GPU.Type())
	}
	return ref, gpus, nil
}

// choices returns the catalogue models that run on g GPUs of the reference type: those whose
// GPU range holds g, or, if none of them fits, every catalogue model that fits.
func (m *modelMapper) choices(g int) ([]zooChoice, error) {
	if ch, ok := m.cache[g]; ok {
		return ch, nil
	}
	if g > m.c.NumGPUs() {
		return nil, fmt.Errorf("%d GPUs, more than cluster %q has (%d)", g, m.c.Name(), m.c.NumGPUs())
	}
	cl, gpus, err := m.sizing(g)
	if err != nil {
		return nil, err
	}
	spec := m.ref
	try := func(inRange bool) ([]zooChoice, error) {
		var out []zooChoice
		for i := range zooCatalogue {
			e := &zooCatalogue[i]
			if inRange && (g < e.minGPUs || g > e.maxGPUs) {
				continue
			}
			model, err := graph.ZooModel(e.name)
			if err != nil {
				return nil, err
			}
			plan, err := graph.DefaultPlan(model, g, spec)
			if err != nil || plan.Workers() != g {
				continue // does not fit this many GPUs of this kind
			}
			b, err := graph.IterationTime(model, plan, cl, gpus, graph.Options{})
			if err != nil {
				return nil, err
			}
			out = append(out, zooChoice{entry: e, model: model, plan: plan, step: b.Total})
		}
		return out, nil
	}
	ch, err := try(true)
	if err == nil && len(ch) == 0 {
		ch, err = try(false)
	}
	if err != nil {
		return nil, err
	}
	if len(ch) == 0 {
		return nil, fmt.Errorf("no zoo model fits %d GPUs of cluster %q", g, m.c.Name())
	}
	m.cache[g] = ch
	return ch, nil
}

// mapJob is MapModelJob with the mapper's cache.
func (m *modelMapper) mapJob(j *gpusched.Job, duration float64, seed, key uint64) (float64, error) {
	if j.GPUs < 1 {
		return 0, fmt.Errorf("%w: job %q: GPU count %d must be at least 1", gpusched.ErrInvalidJob, j.ID, j.GPUs)
	}
	if !(duration > 0) || math.IsInf(duration, 0) {
		return 0, fmt.Errorf("%w: job %q: duration %v s must be finite and > 0", gpusched.ErrInvalidJob, j.ID, duration)
	}
	ch, err := m.choices(j.GPUs)
	if err != nil {
		return 0, fmt.Errorf("%w: job %q: %v", gpusched.ErrInvalidJob, j.ID, err)
	}
	rng := rand.New(rand.NewPCG(seed^0xbb67ae8584caa73b, key*0x9e3779b97f4a7c15+uint64(j.GPUs)))
	c := &ch[rng.IntN(len(ch))]
	j.Model = c.model
	j.Plan = c.plan
	j.StepTime = c.step
	j.Features.Family = c.entry.name
	j.Features.Dataset = c.entry.dataset
	j.Features.BatchSize = c.plan.GlobalBatch
	iterations := duration / c.step
	if math.IsInf(iterations, 0) {
		return 0, fmt.Errorf("%w: job %q: duration %v s is too long", gpusched.ErrInvalidJob, j.ID, duration)
	}
	return iterations, nil
}

// mapModelJob completes a trace job that has only a GPU count and a run time with a model
// from package graph's zoo, a parallel plan and its true iterations, for cluster c: the job
// gets Model, Plan (graph.DefaultPlan for its GPU count on c's servers: data parallel when a
// replica fits a GPU, else tensor then pipeline parallel), Features (Family: the zoo name,
// Dataset, BatchSize: the plan's global batch) and StepTime, its time per iteration at the
// consolidated placement on the cluster's slowest GPU type (c.Pack over those GPUs of the idle
// cluster, idle links, graph's default efficiency, which is what gpusched.DefaultCost charges
// there; on a cluster of one GPU type, simply c.Pack on the idle cluster). ReadOptions
// .ReferenceGPU chooses another reference type for the readers. The returned iterations are
// duration / StepTime, so that the job run alone at a consolidated placement lasts exactly
// duration seconds; elsewhere, or sharing links, it runs as the cost model says.
//
// The model is drawn uniformly, seeded by (seed, key, GPU count), among the catalogue
// entries whose GPU range holds the job's GPU count and whose default plan fits that many
// GPUs of c's kind (if none does, among every catalogue entry that fits):
//
//	zoo model          dataset      GPUs
//	resnet18-cifar10   cifar10      1-4
//	ncf                movielens    1-4
//	resnet50           imagenet     1-64
//	vgg16              imagenet     1-16
//	inception-v3       imagenet     1-32
//	bert-base          squad        1-16
//	deepspeech2-small  librispeech  1-16
//	bert-large         wikipedia    4-64
//	gpt2-1.5b          openwebtext  8-128
//	t5-3b              c4           8-128
//	llama-7b           redpajama    16-1024
//	gpt3-6.7b          pile         16-1024
//	gpt3-13b           pile         32-1024
//
// A job larger than the cluster, or one no zoo model fits, is an error wrapping
// gpusched.ErrInvalidJob. The readers and GeneratePhilly use this mapping when given a
// cluster (ReadOptions.Cluster, PhillyConfig.Cluster) and MapJob otherwise; they cache the
// per-GPU-count work, so prefer them to calling MapModelJob row by row.
func mapModelJob(j *gpusched.Job, duration float64, c *topology.Cluster, seed, key uint64) (iterations float64, err error) {
	if c == nil {
		return 0, fmt.Errorf("%w: job %q: no cluster to map onto", gpusched.ErrInvalidJob, j.ID)
	}
	m, err := newModelMapper(c, "")
	if err != nil {
		return 0, err
	}
	return m.mapJob(j, duration, seed, key)
}

// jobMapper returns the mapping a reader or generator uses: MapModelJob's on cluster c with
// durations measured on GPUs of type ref ("" for the slowest), or MapJob's when c is nil.
func jobMapper(c *topology.Cluster, ref string) (func(j *gpusched.Job, duration float64, seed, key uint64) (float64, error), error) {
	if c == nil {
		return mapJob, nil
	}
	m, err := newModelMapper(c, ref)
	if err != nil {
		return nil, err
	}
	return m.mapJob, nil
}
