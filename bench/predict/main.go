// Command predict is the accuracy benchmark of package predict (see
// bench/predict_vs_sklearn.sh and the "predict" section of BENCHMARKS.md).
//
// It generates a seeded synthetic recurring workload (trace.GenerateRecurring), splits it by
// arrival time (the first 80% of jobs train, the last 20% test) and replays it as events in
// time order: a job arrives (every method predicts it from what is known then) and a job
// finishes (every method learns it). Jobs finish at Arrival + Iterations * StepTime, as if they
// ran at once. The predictor is Fit on the training jobs that finished before the first test
// job arrived; training jobs that finish later are observed during the replay like test jobs.
// Only test jobs are scored.
//
// Methods:
//   - ours (static): the predictor (default options unless flags say otherwise) with the forest
//     frozen after Fit; history features still update as jobs finish. This is the protocol
//     scikit-learn gets: the same training rows and the same test vectors
//     (Predictor.TrainingData and Predictor.Encode), exported to CSV.
//   - ours (static), median P50: the same forest's median instead of its vote-weighted
//     geometric mean.
//   - ours (online): the same, retraining every Options.RetrainEvery observations.
//   - last run of group: the iterations of the group's most recently finished run; a job whose
//     group has none gets the median of all jobs finished so far.
//   - malaschitz backend (static), with -malaschitz: BackendMalaschitz, static protocol.
//
// The report (-report) adds scikit-learn's predictions written by sklearn_rf.py and prints
// RMSLE and MdAPE overall, RMSLE on the jobs that were not killed, on jobs whose group had a
// finished run when they arrived and on the others, the share of jobs inside [P10, P90], and
// train and replay times (wall clock).
//
// Usage:
//
//	go run ./bench/predict -out DIR            # replay; write DIR/train.csv, test.csv, ours.json
//	go run ./bench/predict -report DIR         # print the table (after sklearn_rf.py DIR)
//	go run ./bench/predict -sweep [-sweep-bins 8,16 ...]  # option sweep on a validation split
package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

func main() {
	jobs := flag.Int("jobs", 50000, "jobs in the synthetic workload")
	seed := flag.Uint64("seed", 1, "workload seed")
	out := flag.String("out", "", "replay and write CSVs and our predictions to this directory")
	report := flag.String("report", "", "print the accuracy table from this directory")
	sweep := flag.Bool("sweep", false, "sweep Bins x Trees on a validation split of the training jobs")
	malaschitz := flag.Bool("malaschitz", false, "also run the malaschitz backend (slow)")
	malaTrees := flag.Int("malaschitz-trees", 0, "trees for the malaschitz backend (0: same as ours)")
	bins := flag.Int("bins", 0, "Options.Bins (0: default)")
	trees := flag.Int("trees", 0, "Options.Trees (0: default)")
	mtry := flag.Int("mtry", 0, "Options.MTry (0: default)")
	minLeaf := flag.Int("minleaf", 0, "Options.MinLeaf (0: default)")
	retrain := flag.Int("retrain", 0, "Options.RetrainEvery of the online predictor (0: default)")
	split := flag.String("split", "gini", "CART split criterion: gini or variance")
	sweepBins := flag.String("sweep-bins", "8,16,32,64,128", "Bins values of the sweep")
	sweepTrees := flag.String("sweep-trees", "16,32,64,128", "Trees values of the sweep")
	sweepLeaf := flag.String("sweep-minleaf", "", "MinLeaf values of the sweep (default: -minleaf)")
	sweepMTry := flag.String("sweep-mtry", "", "MTry values of the sweep (default: -mtry)")
	sweepSplit := flag.String("sweep-split", "", "split criteria of the sweep (default: -split)")
	philly := flag.String("philly", "", "real-duration evaluation: online replay of this Philly job CSV")
	calWindows := flag.String("cal-window", "", "with -philly: CalibrationWindow values to compare (default: the default)")
	calPriors := flag.String("cal-prior", "", "with -philly: CalibrationPrior values to compare (default: the default)")
	calSteps := flag.String("cal-step", "", "with -philly: CalibrationStep values to compare, in thousandths (-1: none; default: the default)")
	uncal := flag.Bool("uncalibrated", false, "with -philly: also run the predictor without calibration")
	flag.Parse()

	opts := predict.Options{Bins: *bins, Trees: *trees, MTry: *mtry, MinLeaf: *minLeaf, RetrainEvery: *retrain, Seed: 1}
	switch *split {
	case "gini":
	case "variance":
		opts.Split = predict.SplitVariance
	default:
		log.Fatalf("unknown -split %q", *split)
	}

	switch {
	case *philly != "":
		var variants []predict.Options
		var names []string
		if *uncal {
			o := opts
			o.NoCalibration = true
			variants, names = append(variants, o), append(names, "forest online, uncalibrated")
		}
		for _, w := range or0(ints(*calWindows)) {
			for _, pr := range or0(ints(*calPriors)) {
				for _, st := range or0(ints(*calSteps)) {
					o := opts
					o.CalibrationWindow, o.CalibrationPrior, o.CalibrationStep = w, float64(pr), float64(st)/1000
					variants = append(variants, o)
					names = append(names, fmt.Sprintf("forest online (calibration window %d, prior %d, step %d/1000)", w, pr, st))
				}
			}
		}
		if err := runPhilly(*philly, variants, names); err != nil {
			log.Fatal(err)
		}
	case *report != "":
		if err := printReport(*report); err != nil {
			log.Fatal(err)
		}
	case *sweep:
		grid := sweepGrid{
			bins: ints(*sweepBins), trees: ints(*sweepTrees),
			minLeaf: ints(*sweepLeaf), mtry: ints(*sweepMTry),
		}
		if *sweepSplit != "" {
			grid.split = append(grid.split, strings.Split(*sweepSplit, ",")...)
		}
		if err := runSweep(*jobs, *seed, opts, grid); err != nil {
			log.Fatal(err)
		}
	case *out != "":
		if err := runReplay(*jobs, *seed, opts, *out, *malaschitz, *malaTrees); err != nil {
			log.Fatal(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
}

// finishTime is when a record's job finishes in the replay.
func finishTime(r *trace.Record) float64 {
	return r.Job.Arrival + r.Iterations*r.Job.StepTime
}

// result holds one method's predictions of the scored jobs.
type result struct {
	Name     string    `json:"name"`
	Pred     []float64 `json:"pred"`
	P10      []float64 `json:"p10,omitempty"` // nil unless the method has a spread
	P90      []float64 `json:"p90,omitempty"`
	TrainS   float64   `json:"train_s"`   // seconds to Fit (wall clock)
	TrainCPU float64   `json:"train_cpu"` // CPU seconds to Fit (all threads of the process)
	ReplayS  float64   `json:"replay_s"`  // seconds spent predicting and observing in the replay
	p50      []float64
	hasGroup []bool // whether the job's group had a finished run when it arrived
}

// replay scores the jobs recs[first:] (arrival order) for every predictor in ps, which are Fit
// on the jobs recs[:first] that finished before recs[first] arrived. It appends the last-run
// baseline, and through encode, if set, passes the vectors the first predictor gave each
// scored job at arrival.
func replay(recs []trace.Record, first int, ps []*predict.Predictor, names []string,
	encode func(i int, x []float64)) ([]result, error) {
	cut := recs[first].Job.Arrival
	var train []predict.Sample
	type event struct {
		t      float64
		arrive bool
		i      int
	}
	var events, trainDone []event
	for i := range recs {
		r := &recs[i]
		f := finishTime(r)
		switch {
		case i < first && f < cut:
			train = append(train, predict.Sample{Job: r.Job, Iterations: r.Iterations, Finished: f})
			trainDone = append(trainDone, event{f, false, i})
		case i < first:
			events = append(events, event{f, false, i})
		default:
			events = append(events, event{r.Job.Arrival, true, i}, event{f, false, i})
		}
	}
	// Arrivals before finishes at equal times: a job sees only runs finished strictly before.
	byTime := func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.arrive != b.arrive {
			if a.arrive {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	}
	slices.SortStableFunc(events, byTime)
	slices.SortStableFunc(trainDone, byTime)

	n := len(recs) - first
	res := make([]result, len(ps))
	for k, p := range ps {
		r := &res[k]
		*r = result{Name: names[k], Pred: make([]float64, n), p50: make([]float64, n),
			P10: make([]float64, n), P90: make([]float64, n)}
		start, cpu := time.Now(), cpuSeconds()
		if err := p.Fit(train); err != nil {
			return nil, err
		}
		r.TrainS, r.TrainCPU = time.Since(start).Seconds(), cpuSeconds()-cpu
		start = time.Now()
		for _, e := range events {
			rec := &recs[e.i]
			if !e.arrive {
				if err := p.Observe(&rec.Job, rec.Iterations); err != nil {
					return nil, err
				}
				continue
			}
			est, err := p.Predict(&rec.Job)
			if err != nil {
				return nil, err
			}
			j := e.i - first
			r.Pred[j], r.p50[j], r.P10[j], r.P90[j] = est.Iterations, est.P50, est.P10, est.P90
			if k == 0 && encode != nil {
				x, err := p.Encode(&rec.Job)
				if err != nil {
					return nil, err
				}
				encode(j, x)
			}
		}
		r.ReplayS = time.Since(start).Seconds()
	}
	// Last run of the group, over the same events.
	last := result{Name: "last run of group", Pred: make([]float64, n), hasGroup: make([]bool, n)}
	lastRun := map[string]float64{}
	var finished []float64
	for _, e := range append(trainDone, events...) {
		r := &recs[e.i]
		g := r.Job.Features.Group
		if !e.arrive {
			lastRun[g] = r.Iterations
			finished = append(finished, r.Iterations)
			continue
		}
		v, ok := lastRun[g]
		if !ok {
			v = medianOf(finished)
		}
		last.Pred[e.i-first] = v
		last.hasGroup[e.i-first] = ok
	}
	return append(res, last), nil
}

// cpuSeconds returns the process's user and system CPU time in seconds.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 1
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchFile is what the replay writes for the report (ours.json).
type benchFile struct {
	Jobs      int             `json:"jobs"`
	Seed      uint64          `json:"seed"`
	TrainJobs int             `json:"train_jobs"`
	TestJobs  int             `json:"test_jobs"`
	FitRows   int             `json:"fit_rows"`
	Features  int             `json:"features"`
	Options   predict.Options `json:"options"`
	Actual    []float64       `json:"actual"`
	Killed    []bool          `json:"killed"`
	HasGroup  []bool          `json:"has_group"`
	Results   []result        `json:"results"`
}

func runReplay(jobs int, seed uint64, opts predict.Options, dir string, withMala bool, malaTrees int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(jobs, seed))
	if err != nil {
		return err
	}
	first := len(recs) * 8 / 10

	static := opts
	static.RetrainEvery = -1
	sp, err := predict.New(static)
	if err != nil {
		return err
	}
	op, err := predict.New(opts)
	if err != nil {
		return err
	}
	ps := []*predict.Predictor{sp, op}
	names := []string{"ours (static)", fmt.Sprintf("ours (online, retrain every %d)", op.Options().RetrainEvery)}
	if withMala {
		mo := static
		mo.Backend = predict.BackendMalaschitz
		if malaTrees > 0 {
			mo.Trees = malaTrees
		}
		mp, err := predict.New(mo)
		if err != nil {
			return err
		}
		ps = append(ps, mp)
		names = append(names, fmt.Sprintf("malaschitz backend (static, %d trees)", mp.Options().Trees))
	}
	testX := make([][]float64, len(recs)-first)
	res, err := replay(recs, first, ps, names, func(i int, x []float64) { testX[i] = x })
	if err != nil {
		return err
	}
	// The point estimate is the vote-weighted geometric mean; show the median too.
	med := res[0]
	med.Name, med.Pred, med.TrainS, med.ReplayS = "ours (static), median P50", med.p50, 0, 0
	res = slices.Insert(res, 1, med)

	// Export the static predictor's training rows and test vectors for scikit-learn.
	cols, X, y := sp.TrainingData()
	if err := writeCSV(filepath.Join(dir, "train.csv"), append(slices.Clone(cols), "log_iterations"), X, y); err != nil {
		return err
	}
	bf := benchFile{Jobs: jobs, Seed: seed, TrainJobs: first, TestJobs: len(recs) - first, FitRows: len(X),
		Features: len(cols), Options: sp.Options(), HasGroup: res[len(res)-1].hasGroup, Results: res}
	for _, r := range recs[first:] {
		bf.Actual = append(bf.Actual, r.Iterations)
		bf.Killed = append(bf.Killed, r.Killed)
	}
	if err := writeCSV(filepath.Join(dir, "test.csv"), append(slices.Clone(cols), "iterations"), testX, bf.Actual); err != nil {
		return err
	}
	b, err := json.Marshal(bf)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ours.json"), b, 0o644)
}

func writeCSV(path string, header []string, X [][]float64, y []float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.Write(header); err != nil {
		f.Close()
		return err
	}
	rec := make([]string, len(header))
	for i := range X {
		for j, v := range X[i] {
			rec[j] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		rec[len(rec)-1] = strconv.FormatFloat(y[i], 'g', -1, 64)
		if err := w.Write(rec); err != nil {
			f.Close()
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// subsetRMSLE is the RMSLE over the jobs where keep is true.
func subsetRMSLE(pred, actual []float64, keep func(i int) bool) float64 {
	var p, a []float64
	for i := range pred {
		if keep(i) {
			p = append(p, pred[i])
			a = append(a, actual[i])
		}
	}
	v, err := predict.RMSLE(p, a)
	if err != nil {
		return math.NaN()
	}
	return v
}

func printReport(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "ours.json"))
	if err != nil {
		return err
	}
	var bf benchFile
	if err := json.Unmarshal(b, &bf); err != nil {
		return err
	}
	results := bf.Results
	// scikit-learn results, if present.
	skl, _ := filepath.Glob(filepath.Join(dir, "sklearn_*.csv"))
	slices.Sort(skl)
	for _, path := range skl {
		pred, err := readColumn(path, "prediction")
		if err != nil {
			return err
		}
		r := result{Name: filepath.Base(path), Pred: pred}
		if b, err := os.ReadFile(strings.TrimSuffix(path, ".csv") + ".json"); err == nil {
			var info struct {
				Name     string  `json:"name"`
				TrainS   float64 `json:"train_s"`
				TrainCPU float64 `json:"train_cpu"`
			}
			if err := json.Unmarshal(b, &info); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r.Name, r.TrainS, r.TrainCPU = info.Name, info.TrainS, info.TrainCPU
		}
		results = append(results, r)
	}
	a := bf.Actual
	var nKilled, nGroup int
	for i := range a {
		if bf.Killed[i] {
			nKilled++
		}
		if bf.HasGroup[i] {
			nGroup++
		}
	}
	fmt.Printf("workload: %d jobs (seed %d), %d train / %d test by arrival (%d test jobs killed, %d with a finished run of their group);\n",
		bf.Jobs, bf.Seed, bf.TrainJobs, bf.TestJobs, nKilled, nGroup)
	fmt.Printf("forest fit on %d rows x %d features; options %+v\n\n", bf.FitRows, bf.Features, bf.Options)
	fmt.Println("| method | RMSLE | MdAPE | RMSLE, jobs not killed | RMSLE, group seen | RMSLE, group new | P10-P90 coverage | train wall / CPU | replay wall |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if len(r.Pred) != len(a) {
			return fmt.Errorf("%s: %d predictions for %d jobs", r.Name, len(r.Pred), len(a))
		}
		rm, err := predict.RMSLE(r.Pred, a)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		md, err := predict.MdAPE(r.Pred, a)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		cover, train, rep := "-", "-", "-"
		if r.P10 != nil {
			in := 0
			for i := range a {
				if a[i] >= r.P10[i] && a[i] <= r.P90[i] {
					in++
				}
			}
			cover = fmt.Sprintf("%.0f%%", 100*float64(in)/float64(len(a)))
		}
		if r.TrainS > 0 {
			train = fmt.Sprintf("%.2f s / %.2f s", r.TrainS, r.TrainCPU)
		}
		if r.ReplayS > 0 {
			rep = fmt.Sprintf("%.2f s", r.ReplayS)
		}
		fmt.Printf("| %s | %.4f | %.1f%% | %.4f | %.4f | %.4f | %s | %s | %s |\n", r.Name, rm, md,
			subsetRMSLE(r.Pred, a, func(i int) bool { return !bf.Killed[i] }),
			subsetRMSLE(r.Pred, a, func(i int) bool { return bf.HasGroup[i] }),
			subsetRMSLE(r.Pred, a, func(i int) bool { return !bf.HasGroup[i] }),
			cover, train, rep)
	}
	return nil
}

func readColumn(path, col string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	k := slices.Index(recs[0], col)
	if k < 0 {
		return nil, fmt.Errorf("%s: no column %q", path, col)
	}
	out := make([]float64, len(recs)-1)
	for i, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[k], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+2, err)
		}
		out[i] = v
	}
	return out, nil
}

// sweepGrid lists the option values a sweep tries (empty: the value of opts).
type sweepGrid struct {
	bins, trees, minLeaf, mtry []int
	split                      []string
}

// or0 returns v, or {0} (the default) when v is empty.
func or0(v []int) []int {
	if len(v) == 0 {
		return []int{0}
	}
	return v
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			log.Fatalf("bad integer list %q", s)
		}
		out = append(out, v)
	}
	return out
}

// runSweep trains on the first 70% of the jobs (by arrival) and scores the next 10% (the
// validation split; the last 20%, the test split, is never looked at), static protocol, for
// every combination of the grid.
func runSweep(jobs int, seed uint64, opts predict.Options, g sweepGrid) error {
	recs, err := trace.GenerateRecurring(trace.DefaultRecurringConfig(jobs, seed))
	if err != nil {
		return err
	}
	recs = recs[:len(recs)*8/10]
	first := len(recs) * 7 / 8
	actual := make([]float64, len(recs)-first)
	for i := range actual {
		actual[i] = recs[first+i].Iterations
	}
	or := func(v []int, d int) []int {
		if len(v) == 0 {
			return []int{d}
		}
		return v
	}
	splits := g.split
	if len(splits) == 0 {
		splits = []string{opts.Split.String()}
	}
	fmt.Printf("validation: train on %d jobs, score the next %d (static protocol)\n\n", first, len(actual))
	fmt.Println("| split | MinLeaf | MTry | Bins | Trees | RMSLE | MdAPE | P10-P90 coverage | fit CPU |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, sp := range splits {
		for _, ml := range or(g.minLeaf, opts.MinLeaf) {
			for _, mt := range or(g.mtry, opts.MTry) {
				for _, b := range or(g.bins, opts.Bins) {
					for _, t := range or(g.trees, opts.Trees) {
						o := opts
						o.Bins, o.Trees, o.MinLeaf, o.MTry, o.RetrainEvery = b, t, ml, mt, -1
						o.Split = predict.SplitGini
						if sp == "variance" {
							o.Split = predict.SplitVariance
						}
						p, err := predict.New(o)
						if err != nil {
							return err
						}
						res, err := replay(recs, first, []*predict.Predictor{p}, []string{"ours"}, nil)
						if err != nil {
							return err
						}
						r := res[0]
						rm, _ := predict.RMSLE(r.Pred, actual)
						md, _ := predict.MdAPE(r.Pred, actual)
						in := 0
						for i := range actual {
							if actual[i] >= r.P10[i] && actual[i] <= r.P90[i] {
								in++
							}
						}
						oo := p.Options()
						mtry := mt
						if mtry == 0 { // the default: half the columns
							x, err := p.Encode(&recs[first].Job)
							if err != nil {
								return err
							}
							mtry = (len(x) + 1) / 2
						}
						fmt.Printf("| %s | %d | %d | %d | %d | %.4f | %.1f%% | %.0f%% | %.2f s |\n", sp, oo.MinLeaf, mtry, oo.Bins, oo.Trees,
							rm, md, 100*float64(in)/float64(len(actual)), r.TrainCPU)
					}
				}
			}
		}
	}
	return nil
}
