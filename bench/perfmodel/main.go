// Command perfmodel evaluates the performance model on the measurements beside the project
// (../shared/data) and prints the tables of BENCHMARKS.md's performance-model section in
// Markdown: the shipped hardware constants refitted, leave-one-model-out accuracy with the
// hardware constants alone (k = 0) and after refining each model on k profiles, speed-ups,
// the rank of sync times across placements on the T4 data, and the Rubick artifact's own
// profiles as the k profiles. Run it through bench/perf_model.sh.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/perf"
)

func main() {
	data := flag.String("data", "../shared/data", "the shared data directory")
	k := flag.Int("k", 5, "profiles per model")
	flag.Parse()
	if err := run(*data, *k); err != nil {
		fmt.Fprintln(os.Stderr, "perfmodel:", err)
		os.Exit(1)
	}
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

func run(dir string, k int) error {
	var t4rows, a800rows []perf.Row
	for _, ds := range []string{"bert", "cifar10", "imagenet"} {
		r, err := perf.ReadPolluxFile(filepath.Join(dir, "placements", ds+".csv"))
		if err != nil {
			return err
		}
		t4rows = append(t4rows, r...)
	}
	for _, app := range []string{"bert", "gpt2", "llama7", "t5", "vit"} {
		r, err := perf.ReadRubickFile(filepath.Join(dir, "rubick", "placements", app+".csv"))
		if err != nil {
			return err
		}
		a800rows = append(a800rows, r...)
	}
	t4, err := perf.Prepare(t4rows)
	if err != nil {
		return err
	}
	a800, err := perf.Prepare(a800rows)
	if err != nil {
		return err
	}
	all := append(append([]*perf.Case{}, a800...), t4...)

	fmt.Println("#### Hardware constants fitted on every model of a GPU type (the shipped ones), by `perf.Fit` as `gpusched perf fit` runs it; every fitted constant compared with the shipped one (1%)")
	fmt.Println()
	fmt.Println("| GPU | rows | models | compute | compute fp32 | layer overhead | intra | inter | overlap | step overhead | optimizer /param | CPU optimizer /param/thread | host optimizer /param | host bandwidth | ring layout | fit time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, set := range [][]*perf.Case{a800, t4} {
		start := time.Now()
		// What `gpusched perf fit -in <the type's files>` runs.
		cal, fitRep, err := perf.Fit(set, perf.FitOptions{})
		if err != nil {
			return err
		}
		if len(fitRep.Hardware) != 1 {
			return fmt.Errorf("perf.Fit fitted %d GPU types", len(fitRep.Hardware))
		}
		hf := fitRep.Hardware[0]
		e := cal.Hardware[hf.Family]
		var shipped graph.Efficiency
		for _, h := range graph.ShippedHardware() {
			if h.Family == hf.Family {
				shipped = h.Efficiency
			}
		}
		match := "matches shipped"
		if d := perf.ConstantsDiffer(e, shipped, hf.Fitted, 0.01); len(d) > 0 {
			match = "DIFFERS from shipped: " + strings.Join(d, ", ")
		}
		fmt.Printf("| %s | %d | %d | %.4g | %.4g | %.3g s | %.3g | %.3g | %.3g | %.3g s | %.3g s | %.3g s | %.3g s | %.3g GB/s | %s | %.1f s (%s) |\n",
			hf.Family, hf.Rows, len(hf.Models), e.Compute, e.ComputeFP32, e.LayerOverhead, e.IntraComm, e.InterComm, e.Overlap, e.StepOverhead,
			e.OptimizerPerParam, e.CPUOptimizerPerParam, e.HostOptimizerPerParam, e.HostBandwidth/1e9, e.RingLayout, time.Since(start).Seconds(), match)
	}
	fmt.Println()
	fmt.Println("Constants a type's rows do not inform keep the textbook values (T4: 16-bit compute, offload); graph ships them carried over from the A800, see `graph.ShippedHardware`.")
	fmt.Println()

	start := time.Now()
	reps, err := perf.Evaluate(all, graph.DefaultEfficiency(), k)
	if err != nil {
		return err
	}
	evalTime := time.Since(start)
	fmt.Printf("#### Leave one model out (k = 0) and k = %d profiles\n\n", k)
	fmt.Println("Hardware constants fitted on the other models of the same GPU type (from the textbook constants), then:")
	fmt.Println("k = 0, every row of the model predicted with them alone; k = 5, the model's factors refined on the profiles")
	fmt.Println("`perf.SelectProfiles` picks (their file lines listed), the other rows predicted. MAPE and worst row of the")
	fmt.Println("step time; Spearman over the configurations of one global batch; regret of the predicted-fastest")
	fmt.Println("configuration per (GPUs, batch), worst group (\"all\": every row with the refined factors).")
	fmt.Println()
	fmt.Println("| GPU | model | rows | k=0 MAPE | k=0 worst | k=0 Spearman | k=0 placement Spearman | k=0 regret | profiles (lines) | leave-one-profile-out (prior strength) | k=0 on the other rows: MAPE, median | k=5 MAPE (other rows) | k=5 median | k=5 worst | all: Spearman | all: placement Spearman | all: regret | factors (compute, comm, optimizer, parallel, overhead s) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range reps {
		f := r.Factors
		fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s | %v | %s (%g) | %s, %s | %s | %s | %s | %s | %s | %s | %.2f, %.2f, %.2f, %.2f, %.3g |\n",
			r.Family, r.Model, r.Prior.Rows, pct(r.Prior.MAPE), pct(r.Prior.Worst), f2(r.Prior.Spearman), f2(r.Prior.PlacementSpearman), pct(r.Prior.Regret), r.Profiles,
			pct(r.CV.MAPE), r.CV.Strength, pct(r.PriorRest.MAPE), pct(r.PriorRest.Median),
			pct(r.Refined.MAPE), pct(r.Refined.Median), pct(r.Refined.Worst), f2(r.All.Spearman), f2(r.All.PlacementSpearman), pct(r.All.Regret), f.Compute, f.Comm, f.Optimizer, f.Parallel, f.Overhead)
	}
	fmt.Printf("\n(evaluation: %.1f s for %d models)\n\n", evalTime.Seconds(), len(reps))

	fmt.Println("#### Speed-up from 1 to 8 GPUs of one server, per plan kind")
	fmt.Println()
	fmt.Println("| model | plan kind | measured | predicted k=0 | error | predicted k=5 | error |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range reps {
		for i, s := range r.Prior.SpeedUps {
			s5 := r.All.SpeedUps[i]
			fmt.Printf("| %s | %s | x%.2f | x%.2f | %s | x%.2f | %s |\n", r.Model, s.Kind, s.Measured, s.Predicted, pct(s.Error()), s5.Predicted, pct(s5.Error()))
		}
	}
	fmt.Println()

	// Sync ranks on the T4 data: shipped constants, each model's factors fitted on all its rows.
	cal, _, err := perf.Fit(t4, perf.FitOptions{Hardware: perf.HardwareKeep})
	if err != nil {
		return err
	}
	ranks, err := perf.SyncRanks(t4, cal)
	if err != nil {
		return err
	}
	fmt.Println("#### Rank of sync time across placements (T4 data)")
	fmt.Println()
	fmt.Println("Spearman of predicted exposed synchronisation (`Breakdown.DP`) and measured `sync_time` across the placements")
	fmt.Println("measured at one per-GPU batch size; shipped T4 constants, each model's factors fitted on all its rows.")
	fmt.Println()
	fmt.Println("| model | batch sizes | mean | min | per batch size |")
	fmt.Println("|---|---|---|---|---|")
	byModel := map[string][]perf.SyncRank{}
	var models []string
	for _, r := range ranks {
		if _, ok := byModel[r.Model]; !ok {
			models = append(models, r.Model)
		}
		byModel[r.Model] = append(byModel[r.Model], r)
	}
	for _, m := range models {
		rs := byModel[m]
		sort.Slice(rs, func(a, b int) bool { return rs[a].LocalBatch < rs[b].LocalBatch })
		sum, lo := 0.0, math.Inf(1)
		var per []string
		for _, r := range rs {
			sum += r.Rho
			lo = math.Min(lo, r.Rho)
			per = append(per, fmt.Sprintf("%d: %.2f", r.LocalBatch, r.Rho))
		}
		fmt.Printf("| %s | %d | %.3f | %.3f | %s |\n", m, len(rs), sum/float64(len(rs)), lo, strings.Join(per, ", "))
	}
	fmt.Println()

	// The Rubick artifact's own profiles as the k profiles.
	fmt.Println("#### The Rubick artifact's own profiling runs as the profiles")
	fmt.Println()
	fmt.Println("Each model refined on the runs of `rubick/profile/<app>` (single-server, 3 to 7 runs), with the A800")
	fmt.Println("constants fitted on the other models; predicted: every row of its placements file.")
	fmt.Println()
	fmt.Println("| model | profiles | MAPE | worst | Spearman | regret |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, app := range [][2]string{{"bert", "bert"}, {"gpt2", "gpt2"}, {"llama7b", "llama7"}, {"t5", "t5"}, {"vit", "vit"}} {
		prow, err := perf.ReadRubickProfileDir(filepath.Join(dir, "rubick", "profile", app[0]))
		if err != nil {
			return err
		}
		prof, err := perf.Prepare(prow)
		if err != nil {
			return err
		}
		name := prof[0].Model.Name()
		var mine, others []*perf.Case
		for _, c := range a800 {
			if c.Model.Name() == name {
				mine = append(mine, c)
			} else {
				others = append(others, c)
			}
		}
		hf, err := perf.FitHardware(others, graph.DefaultEfficiency(), true)
		if err != nil {
			return err
		}
		f, err := perf.Refine(prof, hf.Efficiency)
		if err != nil {
			return err
		}
		pred := make([]float64, len(mine))
		for i, c := range mine {
			b, err := c.Placed.Time(hf.Efficiency, f)
			if err != nil {
				return err
			}
			pred[i] = b.Total
		}
		a := perf.Score(mine, pred)
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", name, len(prof), pct(a.MAPE), pct(a.Worst), f2(a.Spearman), pct(a.Regret))
	}
	fmt.Println()

	// Refinement time.
	var many []*perf.Case
	for len(many) < 300 {
		many = append(many, t4[len(many)%len(t4)])
	}
	eff, _ := graph.HardwareConstants("t4")
	start = time.Now()
	for i := 0; i < 5; i++ {
		if _, err := perf.Refine(many[:300], eff); err != nil {
			return err
		}
	}
	fmt.Printf("Refine on 300 rows: %.0f ms per call (mean of 5, wall)\n", time.Since(start).Seconds()*1000/5)
	return nil
}
