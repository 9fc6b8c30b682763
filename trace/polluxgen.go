package trace

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// PolluxWorkloadConfig configures GeneratePolluxWorkload. The zero value selects the Pollux
// artifact's defaults.
type PolluxWorkloadConfig struct {
	// Jobs is the number of jobs. Default 160.
	Jobs int
	// StartHour and Hours choose the daily window the jobs are sampled from: submissions whose
	// time of day, shifted back by StartHour hours, falls in the first Hours hours. Defaults
	// 2 and 8.
	StartHour, Hours int
	// Seed seeds every random choice.
	Seed uint64
}

// polluxRefBatch is each application's per-GPU batch in a generated Pollux-style workload (see
// GeneratePolluxWorkload): within the local batch sizes measured on the Pollux testbed where
// ../shared/data/placements has them (bert, cifar10, imagenet), round figures otherwise.
var polluxRefBatch = map[string]int{
	"cifar10": 128, "imagenet": 100, "bert": 12, "deepspeech2": 20, "yolov3": 8, "ncf": 8192,
}

// polluxReplicas are the replica counts the Pollux artifact's generator considers, ascending.
var polluxReplicas = []int{1, 2, 4, 6, 8, 12, 16, 24, 32, 48}

// GeneratePolluxWorkload draws a Pollux-style workload from a Philly job file (the format
// ReadPhilly reads; ../shared/data/philly/philly.csv is the file the Pollux artifact sampled)
// the way the artifact's generator (simulator/workload.py, OSDI'21) does, and reads it as
// ReadPollux would (opts: a cluster for the model-aware mapping, the reference GPU type):
//
//   - rows with a run time of at least 60 s and under 1,000 GPU-hours whose time of day,
//     shifted back StartHour hours, is within the first Hours hours; cfg.Jobs of them drawn
//     uniformly without replacement; each job arrives at that shifted time of day (so the
//     workload spans Hours hours, every day of the file folded onto one);
//   - the application by the row's GPU-time: under 1 hour cifar10 or ncf (even odds); under 10
//     hours deepspeech2, half of them turned into bert; under 100 hours yolov3; otherwise
//     imagenet;
//   - num_replicas: the row's GPU count rounded down to one of the counts the artifact's
//     generator considers (1, 2, 4, 6, 8, 12, 16, 24, 32, 48); batch_size: that times the
//     application's per-GPU batch (polluxRefBatch: cifar10 128, imagenet 100, bert 12,
//     deepspeech2 20, yolov3 8, ncf 8192; within the local batch sizes measured on the Pollux
//     testbed where ../shared/data/placements has them). The artifact instead draws a
//     configuration whose scaling efficiency, from each application's measured throughput and
//     statistical efficiency at its best batch size, lies between 0.5 and 0.8; those
//     measurements are not in ../shared/data, so the row's own GPU demand stands in for them.
//
// Job names are "<application>-<index>" in arrival order. The same file, configuration and seed
// give the same workload. A file with fewer eligible rows than cfg.Jobs is an error.
func GeneratePolluxWorkload(philly io.Reader, name string, cfg PolluxWorkloadConfig, opts ReadOptions) (*Trace, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = 160
	}
	if cfg.Hours == 0 {
		cfg.Hours = 8
	}
	if cfg.StartHour == 0 {
		cfg.StartHour = 2
	}
	switch {
	case cfg.Jobs < 1 || cfg.Jobs > 1_000_000:
		return nil, fmt.Errorf("trace: Pollux workload: %d jobs: want 1 to 1,000,000", cfg.Jobs)
	case cfg.Hours < 1 || cfg.Hours > 24:
		return nil, fmt.Errorf("trace: Pollux workload: window of %d hours: want 1 to 24", cfg.Hours)
	case cfg.StartHour < 0 || cfg.StartHour > 23:
		return nil, fmt.Errorf("trace: Pollux workload: start hour %d: want 0 to 23", cfg.StartHour)
	}
	src, err := ReadPhilly(philly, name, ReadOptions{Lenient: opts.Lenient, Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	type cand struct {
		at      int // seconds into the window
		gpuTime float64
		gpus    int
	}
	var cands []cand
	for _, r := range src.Records {
		dur := r.Iterations * r.Job.StepTime
		gt := dur * float64(r.Job.GPUs)
		if dur < 60 || gt >= 1000*3600 || r.Job.Features.SubmitHour < 0 {
			continue
		}
		tod := int(math.Round(r.Job.Features.SubmitHour*3600)) - cfg.StartHour*3600
		tod = ((tod % 86400) + 86400) % 86400
		if tod < cfg.Hours*3600 {
			cands = append(cands, cand{at: tod, gpuTime: gt, gpus: r.Job.GPUs})
		}
	}
	if len(cands) < cfg.Jobs {
		return nil, fmt.Errorf("trace: Pollux workload: %s has %d eligible rows, fewer than %d jobs", name, len(cands), cfg.Jobs)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x706f6c6c7578))       // sampling, applications
	rngBert := rand.New(rand.NewPCG(cfg.Seed, 0x706f6c6c75782b)) // deepspeech2 -> bert
	// A uniform sample without replacement: the first Jobs of a seeded partial shuffle.
	for i := range cfg.Jobs {
		k := i + rng.IntN(len(cands)-i)
		cands[i], cands[k] = cands[k], cands[i]
	}
	sample := cands[:cfg.Jobs]
	slices.SortStableFunc(sample, func(a, b cand) int { return a.at - b.at })
	type job struct {
		at          int
		app         string
		replicas, b int
	}
	jobs := make([]job, len(sample))
	for i, c := range sample {
		var app string
		switch {
		case c.gpuTime < 3600:
			app = []string{"cifar10", "ncf"}[rng.IntN(2)]
		case c.gpuTime < 10*3600:
			app = "deepspeech2"
		case c.gpuTime < 100*3600:
			app = "yolov3"
		default:
			app = "imagenet"
		}
		if app == "deepspeech2" && rngBert.IntN(2) == 1 {
			app = "bert"
		}
		r := 1
		for _, k := range polluxReplicas {
			if k <= c.gpus {
				r = k
			}
		}
		jobs[i] = job{at: c.at, app: app, replicas: r, b: r * polluxRefBatch[app]}
	}
	var buf bytes.Buffer
	buf.WriteString("name,time,application,num_replicas,batch_size\n")
	for i, j := range jobs {
		fmt.Fprintf(&buf, "%s-%d,%d,%s,%d,%d\n", j.app, i, j.at, j.app, j.replicas, j.b)
	}
	return ReadPollux(&buf, "pollux-"+strconv.Itoa(cfg.Jobs)+"-seed"+strconv.FormatUint(cfg.Seed, 10), opts)
}
