// Command predict is the accuracy benchmark of package predict (see
// bench/predict_vs_sklearn.sh, bench/predict_philly.sh and the "predict" section of
// BENCHMARKS.md).
//
// Synthetic (-out DIR): it generates a seeded synthetic recurring workload
// (trace.GenerateRecurring), splits it by arrival time (the first 80% of jobs train, the last
// 20% test) and replays it as events in time order: a job arrives (every method predicts it
// from what is known then) and a job finishes (every method learns it). Jobs finish at Arrival
// + Iterations * StepTime, as if they ran at once. The predictor is Fit on the training jobs
// that finished before the first test job arrived; training jobs that finish later are
// observed during the replay like test jobs. Only test jobs are scored.
//
// Real durations (-philly FILE -out DIR): the Philly job file, group = virtual cluster x GPU
// count, replayed online from nothing (every job predicted at its submission, observed when it
// finishes); the last 30% of jobs by submit time are scored, per virtual cluster too. Without
// -out, -philly compares calibration settings (-cal-window, -cal-prior, -cal-step) on the
// training period of the clusters chosen for that (selectionClusters).
//
// Methods:
//   - ours (static): the predictor (default options unless flags say otherwise) with the forest
//     frozen after Fit; history features and calibration still update as jobs finish. This is
//     the protocol scikit-learn gets: the same training rows and the same test vectors
//     (Predictor.TrainingData and Predictor.Encode), exported to CSV.
//   - ours (static), median P50: the same distribution's median instead of its geometric mean.
//   - ours (online): retraining every Options.RetrainEvery observations (Philly: also
//     uncalibrated).
//   - last run of group: the iterations of the group's most recently finished run; a job whose
//     group has none gets the median of all jobs finished so far.
//   - group median: the median of the group's last 16 runs, each scaled by its batch size over
//     the job's when all are known, with the group's empirical quantiles as interval.
//   - malaschitz backend (static), with -malaschitz: BackendMalaschitz, static protocol.
//
// The report (-report) adds scikit-learn's predictions written by sklearn_rf.py and prints
// RMSLE and MdAPE overall, RMSLE on the jobs that were not killed, on jobs whose group had a
// finished run when they arrived and on the others, the coverage of the 50%, 80% and 90%
// central intervals, the 80% coverage of the distribution conditioned on the job's predicted
// median, for the jobs that ran past it, and train and replay times; for Philly, the coverage
// of every virtual cluster.
//
// Usage:
//
//	go run ./bench/predict -out DIR            # replay; write DIR/train.csv, test.csv, ours.json
//	go run ./bench/predict -philly FILE -out DIR   # the same on real durations
//	go run ./bench/predict -report DIR         # print the table (after sklearn_rf.py DIR)
//	go run ./bench/predict -sweep [-sweep-bins 8,16 ...]  # option sweep on a validation split
//	go run ./bench/predict -philly FILE -cal-window 50,200 ...   # calibration settings
//	go run ./bench/predict -intervals FILE -seeds 1,2,3 -variants default,recommended [-weekday] [-out DIR]
//	                                           # online intervals per cluster (intervals.go)
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
	window := flag.Int("window", 0, "Options.Window (0: default)")
	split := flag.String("split", "gini", "CART split criterion: gini or variance")
	sweepBins := flag.String("sweep-bins", "8,16,32,64,128", "Bins values of the sweep")
	sweepTrees := flag.String("sweep-trees", "16,32,64,128", "Trees values of the sweep")
	sweepLeaf := flag.String("sweep-minleaf", "", "MinLeaf values of the sweep (default: -minleaf)")
	sweepMTry := flag.String("sweep-mtry", "", "MTry values of the sweep (default: -mtry)")
	sweepSplit := flag.String("sweep-split", "", "split criteria of the sweep (default: -split)")
	philly := flag.String("philly", "", "real-duration evaluation on this Philly job CSV (with -out: write DIR for -report; without: compare calibration settings)")
	calWindows := flag.String("cal-window", "", "with -philly and no -out: CalibrationWindow values to compare (default: the default)")
	calPriors := flag.String("cal-prior", "", "with -philly and no -out: CalibrationPrior values to compare (default: the default)")
	calSteps := flag.String("cal-step", "", "with -philly and no -out: CalibrationStep values to compare, in thousandths (-1: none)")
	uncal := flag.Bool("uncalibrated", false, "with -philly and no -out: also run the predictor without calibration")
	intervals := flag.String("intervals", "", "interval benchmark on this Philly job CSV: per-cluster coverage, width and interval score against the last-200-of-group baseline")
	hostFeat := flag.Bool("host-features", false, "with -intervals: give jobs the extras a host knows at submission (weekday, the group's gap since its last submission, its and its user's submissions in the last hour, its running jobs)")
	weekday := flag.Bool("weekday", false, "with -intervals: give jobs their day of the week as the numeric extra \"weekday\"")
	seeds := flag.String("seeds", "1", "with -intervals: forest seeds, comma-separated")
	variantNames := flag.String("variants", "default", "with -intervals: predictor variants, comma-separated (see variantOptions)")
	misses := flag.Bool("misses", false, "with -intervals: also print where the 80% intervals missed, by quarter of the test period and by burst")
	flag.StringVar(&dumpPath, "dump", "", "with -philly and no -out: write every job's predictions to this CSV file")
	flag.Parse()

	opts := predict.Options{Bins: *bins, Trees: *trees, MTry: *mtry, MinLeaf: *minLeaf, RetrainEvery: *retrain, Window: *window, Seed: 1}
	switch *split {
	case "gini":
	case "variance":
		opts.Split = predict.SplitVariance
	default:
		log.Fatalf("unknown -split %q", *split)
	}

	switch {
	case *intervals != "":
		var vs []predict.Options
		var names []string
		for _, n := range strings.Split(*variantNames, ",") {
			o, err := variantOptions(n, opts)
			if err != nil {
				log.Fatal(err)
			}
			vs, names = append(vs, o), append(names, n)
		}
		if err := runIntervals(*intervals, vs, names, seedList(*seeds), *hostFeat, *weekday, *out, *misses); err != nil {
			log.Fatal(err)
		}
	case *philly != "" && *out != "":
		if err := runPhilly(*philly, opts, *out); err != nil {
			log.Fatal(err)
		}
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
		if err := runPhillyCompare(*philly, variants, names); err != nil {
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

// cpuSeconds returns the process's user and system CPU time in seconds.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
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
						res, err := replay(recs, first, []*predict.Predictor{p}, []string{"ours"}, false, nil)
						if err != nil {
							return err
						}
						r := res[0]
						rm, _ := predict.RMSLE(r.Pred, actual)
						md, _ := predict.MdAPE(r.Pred, actual)
						cover := coverage(&r, actual, allIdx(len(actual)), 0.8)
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
							rm, md, 100*cover, r.TrainCPU)
					}
				}
			}
		}
	}
	return nil
}
