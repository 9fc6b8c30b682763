package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/trace"
)

// runReplay is the synthetic evaluation: a seeded recurring workload, the first 80% of jobs
// by arrival to train (Fit on those finished before the first test job arrived), the last 20%
// to test, replayed online. It writes DIR/train.csv and DIR/test.csv (the static predictor's
// training rows and test vectors, for sklearn_rf.py) and DIR/ours.json (for -report).
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
	res, err := replay(recs, first, ps, names, true, func(i int, x []float64) { testX[i] = x })
	if err != nil {
		return err
	}
	// The point estimate is the geometric mean; show the median too.
	med := res[0]
	med.Name, med.Quant, med.CondQuant = "ours (static), median P50", nil, nil
	med.TrainS, med.TrainCPU, med.ReplayS, med.ReplayCPU = 0, 0, 0, 0
	med.Pred = make([]float64, len(res[0].Pred))
	for j, q := range res[0].Quant {
		med.Pred[j] = q[level(0.5)]
	}
	res = slices.Insert(res, 1, med)
	if err := exportForSklearn(dir, sp, testX, recs[first:]); err != nil {
		return err
	}
	cols, X, _ := sp.TrainingData()
	bf := benchFile{Workload: fmt.Sprintf("synthetic workload trace.DefaultRecurringConfig(%d, %d)", jobs, seed),
		TrainJobs: first, TestJobs: len(recs) - first, FitRows: len(X), Features: len(cols), Options: sp.Options(),
		HasGroup: res[len(res)-2].hasGroup, Results: res}
	for _, r := range recs[first:] {
		bf.Actual = append(bf.Actual, r.Iterations)
		bf.Killed = append(bf.Killed, r.Killed)
	}
	return writeBenchFile(dir, &bf)
}

// exportForSklearn writes the static predictor's training rows (DIR/train.csv, with the log
// of iterations) and the scored jobs' vectors (DIR/test.csv, with their iterations).
func exportForSklearn(dir string, sp *predict.Predictor, testX [][]float64, test []trace.Record) error {
	cols, X, y := sp.TrainingData()
	if err := writeCSV(filepath.Join(dir, "train.csv"), append(slices.Clone(cols), "log_iterations"), X, y); err != nil {
		return err
	}
	actual := make([]float64, len(test))
	for i := range test {
		actual[i] = test[i].Iterations
	}
	return writeCSV(filepath.Join(dir, "test.csv"), append(slices.Clone(cols), "iterations"), testX, actual)
}
