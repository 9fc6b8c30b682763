package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/predict"
)

// benchFile is what a replay writes for the report (ours.json).
type benchFile struct {
	Workload  string          `json:"workload"` // a line describing the workload and the split
	TrainJobs int             `json:"train_jobs"`
	TestJobs  int             `json:"test_jobs"`
	FitRows   int             `json:"fit_rows"`
	Features  int             `json:"features"`
	Options   predict.Options `json:"options"`
	Actual    []float64       `json:"actual"`
	Killed    []bool          `json:"killed"`
	HasGroup  []bool          `json:"has_group"`
	Cluster   []string        `json:"cluster,omitempty"` // the test jobs' virtual clusters (Philly)
	Batch     []int           `json:"batch,omitempty"`   // the test jobs' batches (Philly; see batchesOf)
	// AllJobs holds, per virtual cluster, the coverage over all its jobs (Philly).
	AllJobs []clusterCoverage `json:"all_jobs,omitempty"`
	Results []result          `json:"results"`
}

func writeBenchFile(dir string, bf *benchFile) error {
	b, err := json.Marshal(bf)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ours.json"), b, 0o644)
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

// coverage returns the share of the jobs idx whose actual value lies within r's central
// interval of probability w (0.5, 0.8 or 0.9), ends included.
func coverage(r *result, actual []float64, idx []int, w float64) float64 {
	lo, hi := level((1-w)/2), level((1+w)/2)
	in := 0
	for _, i := range idx {
		q := r.Quant[i]
		if actual[i] >= q[lo] && actual[i] <= q[hi] {
			in++
		}
	}
	return float64(in) / float64(len(idx))
}

// widthFactor returns the median ratio P90/P10 of r over the jobs idx: how wide its 80%
// intervals are.
func widthFactor(r *result, idx []int) float64 {
	lo, hi := level(0.1), level(0.9)
	v := make([]float64, 0, len(idx))
	for _, i := range idx {
		v = append(v, r.Quant[i][hi]/math.Max(r.Quant[i][lo], 1e-300))
	}
	slices.Sort(v)
	return quantileOf(v, 0.5)
}

func allIdx(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// printReport prints the accuracy table of the replay in dir, with scikit-learn's predictions
// if sklearn_rf.py wrote them, and for Philly the coverage of every virtual cluster.
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
	fmt.Printf("%s: %d train / %d test by arrival (%d test jobs killed, %d with a finished run of their group);\n",
		bf.Workload, bf.TrainJobs, bf.TestJobs, nKilled, nGroup)
	fmt.Printf("static forest fit on %d rows x %d features; options %+v\n\n", bf.FitRows, bf.Features, bf.Options)
	fmt.Println("| method | RMSLE | MdAPE | RMSLE, jobs not killed | RMSLE, group seen | RMSLE, group new | 50% / 80% / 90% interval coverage | P90/P10 (median) | 80% coverage given the median was passed | train wall / CPU | replay CPU |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	all := allIdx(len(a))
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
		cover, width, cond, train, rep := "-", "-", "-", "-", "-"
		if r.CondQuant != nil {
			in, n := 0, 0
			lo, hi := level(0.1), level(0.9)
			for j, q := range r.CondQuant {
				if q != nil {
					n++
					if a[j] >= q[lo] && a[j] <= q[hi] {
						in++
					}
				}
			}
			cond = fmt.Sprintf("%.1f%% (%d jobs)", 100*float64(in)/float64(n), n)
		}
		if r.Quant != nil {
			cover = fmt.Sprintf("%.1f%% / %.1f%% / %.1f%%", 100*coverage(&r, a, all, 0.5),
				100*coverage(&r, a, all, 0.8), 100*coverage(&r, a, all, 0.9))
			width = fmt.Sprintf("%.1f", widthFactor(&r, all))
		}
		if r.TrainS > 0 {
			train = fmt.Sprintf("%.2f s / %.2f s", r.TrainS, r.TrainCPU)
		}
		if r.ReplayCPU > 0 {
			rep = fmt.Sprintf("%.1f s", r.ReplayCPU)
		}
		fmt.Printf("| %s | %.4f | %.1f%% | %.4f | %.4f | %.4f | %s | %s | %s | %s | %s |\n", r.Name, rm, md,
			subsetRMSLE(r.Pred, a, func(i int) bool { return !bf.Killed[i] }),
			subsetRMSLE(r.Pred, a, func(i int) bool { return bf.HasGroup[i] }),
			subsetRMSLE(r.Pred, a, func(i int) bool { return !bf.HasGroup[i] }),
			cover, width, cond, train, rep)
	}
	if bf.Cluster != nil {
		printClusters(&bf, results)
	}
	if bf.AllJobs != nil {
		var names []string
		for name := range bf.AllJobs[0].Coverage {
			names = append(names, name)
		}
		slices.Sort(names)
		fmt.Println()
		fmt.Printf("| cluster | settings | all jobs (batches, effective) |")
		for _, n := range names {
			fmt.Printf(" %s: 80%% coverage |", n)
		}
		fmt.Println()
		fmt.Println("|---|---|---:|" + strings.Repeat("---:|", len(names)))
		for _, c := range bf.AllJobs {
			set := "held out"
			if selectionClusters[c.Cluster] {
				set = "chosen on"
			}
			fmt.Printf("| %s | %s | %d (%d, %.0f) |", c.Cluster, set, c.Jobs, c.Batches, c.Effective)
			for _, n := range names {
				fmt.Printf(" %.1f%% |", 100*c.Coverage[n])
			}
			fmt.Println()
		}
	}
	return nil
}

// clusterCoverage is one virtual cluster's interval coverage over all its jobs.
type clusterCoverage struct {
	Cluster   string             `json:"cluster"`
	Jobs      int                `json:"jobs"`
	Batches   int                `json:"batches"`
	Effective float64            `json:"effective"` // (sum of batch sizes)^2 / sum of squares
	Coverage  map[string]float64 `json:"coverage"`  // method -> 80% coverage
}

// printClusters prints, per virtual cluster, the test jobs, the effective number of
// independent batches among them (see clusterBatches) and each interval method's 80%
// coverage and RMSLE.
func printClusters(bf *benchFile, results []result) {
	byCluster := map[string][]int{}
	for i, c := range bf.Cluster {
		byCluster[c] = append(byCluster[c], i)
	}
	names := make([]string, 0, len(byCluster))
	for c := range byCluster {
		names = append(names, c)
	}
	slices.SortFunc(names, func(x, y string) int {
		return cmp.Or(cmp.Compare(len(byCluster[y]), len(byCluster[x])), cmp.Compare(x, y))
	})
	fmt.Println()
	hdr, sep := "| cluster | settings | test jobs (batches, effective) | 2 s.d. of a calibrated 80% |", "|---|---|---:|---:|"
	for _, r := range results {
		if r.Quant != nil {
			hdr += " " + r.Name + ": 80% coverage, RMSLE |"
			sep += "---:|"
		}
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for _, c := range names {
		idx := byCluster[c]
		set := "held out"
		if selectionClusters[c] {
			set = "chosen on"
		}
		size := map[int]int{}
		for _, i := range idx {
			size[bf.Batch[i]]++
		}
		sq := 0
		for _, n := range size {
			sq += n * n
		}
		neff := float64(len(idx)*len(idx)) / float64(sq)
		line := fmt.Sprintf("| %s | %s | %d (%d, %.0f) | %.1f |", c, set, len(idx), len(size), neff, 200*math.Sqrt(0.16/neff))
		for _, r := range results {
			if r.Quant == nil {
				continue
			}
			p := make([]float64, len(idx))
			act := make([]float64, len(idx))
			for k, i := range idx {
				p[k], act[k] = r.Pred[i], bf.Actual[i]
			}
			rm, _ := predict.RMSLE(p, act)
			line += fmt.Sprintf(" %.1f%%, %.2f |", 100*coverage(&r, bf.Actual, idx, 0.8), rm)
		}
		fmt.Println(line)
	}
}
