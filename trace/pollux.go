package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
)

// PolluxApp describes one application of the Pollux/Sia workloads: the model it trains, on
// which data, for how long, and how fast.
//
// Deprecated: not needed by embedders (what ReadPollux assumes of an application); removed
// in v0.3.0.
type PolluxApp struct {
	// Family and Dataset name the model and its training data.
	Family, Dataset string
	// Samples is the number of training samples per epoch; Epochs the epochs a job trains.
	Samples, Epochs float64
	// StepBase and StepPerSample give the time per iteration in seconds of a data-parallel
	// job at a consolidated placement: StepBase + StepPerSample x local batch, where the
	// local batch is ceil(batch_size / num_replicas).
	StepBase, StepPerSample float64
	// Zoo is the graph zoo model, trained in fp32, that the model-aware mapping gives the
	// application's jobs ("" for none: they keep the fixed step time).
	Zoo string
}

// polluxApps is the table of LookupPolluxApp; read-only.
var polluxApps = map[string]PolluxApp{
	"cifar10":     {"resnet18", "cifar10", 50_000, 100, 0.02, 0.00068, "resnet18-cifar10"},
	"imagenet":    {"resnet50", "imagenet", 1_281_167, 90, 0.03, 0.0045, "resnet50"},
	"bert":        {"bert-base", "squad", 88_641, 2, 0.17, 0.065, "bert-base-squad"},
	"deepspeech2": {"deepspeech2", "cmu-arctic", 7_900, 80, 0.05, 0.02, "deepspeech2-small"},
	"yolov3":      {"yolov3", "voc", 16_551, 50, 0.05, 0.06, ""},
	"ncf":         {"neumf", "movielens", 1_000_209, 10, 0.005, 0.000002, "ncf"},
}

// ReadPollux reads a Pollux (OSDI'21) or Sia (SOSP'23) workload CSV: a header naming the
// columns name, time, application, num_replicas and batch_size (any order; an optional
// duration column, other columns ignored), then one job per row:
//
//	name          job id, unique in the file, at most 256 bytes
//	time          submission time in seconds from the start of the workload, >= 0 and at
//	              most MaxArrival (100 years)
//	application   cifar10, imagenet, bert, deepspeech2, yolov3 or ncf (see LookupPolluxApp)
//	num_replicas  GPU demand, an integer >= 1
//	batch_size    global batch size in samples, an integer >= 1
//	duration      (optional) run time in seconds at a consolidated placement, at most
//	              MaxDuration (10 years)
//
// The application fixes the job's model (Features.Family, Dataset, BatchSize) and its step
// time, StepBase + StepPerSample x ceil(batch_size / num_replicas). Its true iterations are
// Epochs x Samples / batch_size, or duration / step time when the row has a duration. The
// job's Features.Group is the application. Records come in arrival order, ties in file
// order. opts.Seed is not used: the mapping is fixed by the table.
//
// With opts.Cluster set (the model-aware mapping, as for ReadPhilly), a job whose application
// has a zoo model (PolluxApp.Zoo: every one but yolov3) gets that model in fp32 and a
// data-parallel plan of num_replicas workers with ceil(batch_size / num_replicas) samples each
// (in the fewest micro-batches, a power of two, whose activations fit the reference GPU:
// gradient accumulation, as the applications do), so that package graph times it on its actual placement and GPU type (a job spread over
// servers runs slower and moves bytes between them; faster GPUs run it faster). Its StepTime is
// then its time per iteration consolidated on the cluster's reference GPU type
// (opts.ReferenceGPU, the slowest by default: T4 on the Pollux testbed), and a row's duration,
// when given, refers to that placement. Its iterations without a duration are as above. A job
// larger than the cluster is a malformed row.
//
// A malformed row (including an unknown application or a repeated name) is an error naming
// name:line and the column (a *ParseError wrapping ErrMalformed); with opts.Lenient it is
// skipped and counted in Trace.Skipped.
func ReadPollux(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	cr, cols, err := openCSV(r, name, []string{"name", "time", "application", "num_replicas", "batch_size"}, []string{"duration"})
	if err != nil {
		return nil, err
	}
	tr := &Trace{Name: name}
	sink := rowSink{t: tr, lenient: opts.Lenient}
	seen := map[gpusched.JobID]int{}
	var mm *polluxMapper
	if opts.Cluster != nil {
		m, err := newModelMapper(opts.Cluster, opts.ReferenceGPU)
		if err != nil {
			return nil, fmt.Errorf("trace: %s: %w", name, err)
		}
		mm = &polluxMapper{m: m, models: map[string]*graph.Model{}}
	}
	for {
		fields, line, err := nextRow(cr, name)
		if err == io.EOF {
			break
		}
		if err == nil {
			var rec Record
			rec, err = polluxRow(fields, cols, name, line, seen)
			if err == nil && mm != nil {
				_, hasDuration := cols["duration"]
				hasDuration = hasDuration && strings.TrimSpace(fields[cols["duration"]]) != ""
				if err = mm.mapJob(&rec, hasDuration); err != nil {
					err = &ParseError{File: name, Line: line, Err: err}
				}
			}
			if err == nil {
				seen[rec.Job.ID] = line
				tr.Records = append(tr.Records, rec)
				continue
			}
		}
		if fatal(err) {
			return nil, err
		}
		if err := sink.fail(err); err != nil {
			return nil, err
		}
	}
	sortByArrival(tr.Records)
	return tr, nil
}

func polluxRow(fields []string, cols map[string]int, name string, line int, seen map[gpusched.JobID]int) (Record, error) {
	bad := func(col string, e error) error { return &ParseError{File: name, Line: line, Column: col, Err: e} }
	id := gpusched.JobID(strings.Clone(strings.TrimSpace(fields[cols["name"]])))
	if id == "" {
		return Record{}, bad("name", errors.New("empty job name"))
	}
	if len(id) > maxIDLen {
		return Record{}, bad("name", fmt.Errorf("job name %s is longer than %d bytes", quote(string(id)), maxIDLen))
	}
	if prev, dup := seen[id]; dup {
		return Record{}, bad("name", fmt.Errorf("job %q already defined on line %d", id, prev))
	}
	at, err := parseArrival(fields[cols["time"]])
	if err != nil {
		return Record{}, bad("time", err)
	}
	appName := strings.ToLower(strings.TrimSpace(fields[cols["application"]]))
	app, ok := polluxApps[appName]
	if !ok {
		known := polluxAppNames()
		return Record{}, bad("application", fmt.Errorf("unknown application %s (known: %s)", quote(appName), strings.Join(known, ", ")))
	}
	gpus, err := parseCount(fields[cols["num_replicas"]])
	if err != nil {
		return Record{}, bad("num_replicas", err)
	}
	batch, err := parseCount(fields[cols["batch_size"]])
	if err != nil {
		return Record{}, bad("batch_size", err)
	}
	local := (batch + gpus - 1) / gpus
	step := app.StepBase + app.StepPerSample*float64(local)
	iters := app.Epochs * app.Samples / float64(batch)
	if c, ok := cols["duration"]; ok && strings.TrimSpace(fields[c]) != "" {
		d, err := parseDuration(fields[c])
		if err != nil {
			return Record{}, bad("duration", err)
		}
		iters = d / step
	}
	if !(iters > 0) || math.IsInf(iters, 0) {
		return Record{}, bad("", fmt.Errorf("job %q: %v iterations", id, iters))
	}
	if err := checkDuration(iters * step); err != nil {
		return Record{}, bad("", fmt.Errorf("job %q runs %v iterations of %v s: %w", id, iters, step, err))
	}
	return Record{
		Job: gpusched.Job{
			ID: id, Arrival: at, GPUs: gpus, StepTime: step,
			Features: gpusched.Features{Family: app.Family, Dataset: app.Dataset, BatchSize: batch, Group: appName, SubmitHour: -1},
		},
		Iterations: iters,
	}, nil
}

// polluxMapper gives Pollux jobs zoo models timed on a cluster (see ReadPollux).
type polluxMapper struct {
	m      *modelMapper
	models map[string]*graph.Model // zoo name -> its fp32 variant
}

// mapJob turns a fixed-step Pollux record into a model job; with a duration, its iterations
// are recomputed from the duration at the consolidated reference placement.
func (p *polluxMapper) mapJob(rec *Record, hasDuration bool) error {
	j := &rec.Job
	app := polluxApps[j.Features.Group]
	if app.Zoo == "" {
		return nil
	}
	model, ok := p.models[app.Zoo]
	if !ok {
		base, err := graph.ZooModel(app.Zoo)
		if err != nil {
			return err
		}
		if model, err = base.WithDTypeBytes(4); err != nil {
			return err
		}
		p.models[app.Zoo] = model
	}
	if j.GPUs > p.m.c.NumGPUs() {
		return fmt.Errorf("%w: job %q: %d GPUs, more than cluster %q has (%d)", gpusched.ErrInvalidJob, j.ID, j.GPUs, p.m.c.Name(), p.m.c.NumGPUs())
	}
	local := (j.Features.BatchSize + j.GPUs - 1) / j.GPUs
	plan := graph.Plan{DP: j.GPUs, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: j.GPUs * local}
	// Gradient accumulation, as the applications do when a batch does not fit: the fewest
	// micro-batches (a power of two) whose activations fit the reference GPU.
	for m := 1; m <= local; m *= 2 {
		try := graph.Plan{DP: j.GPUs, TP: 1, PP: 1, MicroBatches: m, GlobalBatch: j.GPUs * m * ((local + m - 1) / m)}
		comp, err := graph.Compile(model, try)
		if err != nil {
			break
		}
		if comp.CheckMemory(p.m.ref.GPU) == nil {
			plan = try
			break
		}
	}
	cl, gpus, err := p.m.sizing(j.GPUs)
	if err != nil {
		return err
	}
	b, err := graph.IterationTime(model, plan, cl, gpus, graph.Options{})
	if err != nil {
		return fmt.Errorf("%w: job %q: %w", gpusched.ErrInvalidJob, j.ID, err)
	}
	if hasDuration {
		rec.Iterations = rec.Iterations * j.StepTime / b.Total // the same duration at the new step
	}
	j.Model, j.Plan, j.StepTime = model, plan, b.Total
	if err := checkDuration(rec.Iterations * b.Total); err != nil {
		return fmt.Errorf("job %q runs %v iterations of %v s: %w", j.ID, rec.Iterations, b.Total, err)
	}
	return nil
}

// lookupPolluxApp returns the model, data and speed ReadPollux assumes for an application of
// the Pollux/Sia workloads. Sizes and epochs are those of the Pollux artifact's applications
// (CIFAR-10 ResNet-18 100 epochs, ImageNet ResNet-50 90, BERT fine-tuning on SQuAD 2,
// DeepSpeech2 80, YOLOv3 on PASCAL VOC 50, NeuMF on MovieLens 10); step times are round
// linear fits in the per-GPU batch, on the Pollux testbed's T4 GPUs, to its measured
// placements (cifar10, imagenet, bert) or rough estimates (the others); the zoo model is what
// the model-aware mapping uses (see ReadPollux):
//
//	application  family       samples    epochs  step (s)                      zoo model
//	cifar10      resnet18     50,000     100     0.02 + 0.00068 x local batch  resnet18-cifar10
//	imagenet     resnet50     1,281,167  90      0.03 + 0.0045 x local batch   resnet50
//	bert         bert-base    88,641     2       0.17 + 0.065 x local batch    bert-base-squad
//	deepspeech2  deepspeech2  7,900      80      0.05 + 0.02 x local batch     deepspeech2-small
//	yolov3       yolov3       16,551     50      0.05 + 0.06 x local batch     (none)
//	ncf          neumf        1,000,209  10      0.005 + 0.000002 x local batch ncf
func lookupPolluxApp(name string) (PolluxApp, bool) {
	a, ok := polluxApps[name]
	return a, ok
}

// polluxAppNames returns the application names ReadPollux knows, sorted.
func polluxAppNames() []string {
	names := make([]string, 0, len(polluxApps))
	for k := range polluxApps {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
