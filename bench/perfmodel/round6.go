package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/perf"
)

// randomSets is the number of random profile sets of round6's table, drawn with seed 1.
const randomSets = 20

// round6 prints the tables of benchmarks/perf.md "Round 6 (branch perf6), 2026-11-28": for
// each model's k profiles, whether the k = 5 misses (median > 8%, worst > 20% on the other
// rows) come from the profiles SelectProfiles picks, from the strength RefineCV refines with,
// or from the model's form: the same rows predicted with the factors refined at each strength
// of perf.RefineStrengths (the least worst of them: an oracle of the strength), with the
// factors RefineCV refines on random sets of k rows (randomSets, seed 1), and with the factors
// refined on every row of the model (in sample: what the form allows with the model's own
// factors); then the worst row. Then syncSplit's table.
func round6(cases []*perf.Case, reps []perf.ModelReport, k int) error {
	fmt.Printf("#### The k = %d misses: profile choice, refinement strength, or the model's form\n\n", k)
	fmt.Println("On each model's rows other than its k profiles (leave-one-model-out constants): median / worst relative error")
	fmt.Println("with the factors `RefineCV` refines on the profiles `SelectProfiles` picks (its strength), with the factors refined")
	fmt.Printf("on those profiles at the strength of `RefineStrengths` whose worst is least (an oracle of the strength), with the\n")
	fmt.Printf("factors `RefineCV` refines on %d random sets of %d of the model's rows (seed 1; median over the sets of their median,\n", randomSets, k)
	fmt.Println("and of their worst; the least worst; how many sets meet both targets), and with the factors refined on every row")
	fmt.Println("of the model (strength 1, in sample: what the model's form reaches with its own factors). Last: the worst row")
	fmt.Println("with `RefineCV`'s factors: placement, global batch, measured, predicted, and its error in sample.")
	fmt.Println()
	fmt.Println("| GPU | model | SelectProfiles + RefineCV | best strength for the worst | random sets: median, worst, least worst, both met | every row, in sample | worst row |")
	fmt.Println("|---|---|---|---|---|---|---|")
	rng := rand.New(rand.NewPCG(1, 0))
	for _, r := range reps {
		var mine []*perf.Case
		for _, c := range cases {
			if c.Model.Name() == r.Model && c.Family() == r.Family {
				mine = append(mine, c)
			}
		}
		isProf := map[int]bool{}
		for _, l := range r.Profiles {
			isProf[l] = true
		}
		var prof, rest []*perf.Case
		for _, c := range mine {
			if isProf[c.Row.Line] {
				prof = append(prof, c)
			} else {
				rest = append(rest, c)
			}
		}
		eff := r.Hardware
		score := func(on []*perf.Case, f graph.ModelFactors) (perf.Accuracy, []float64, error) {
			pred := make([]float64, len(on))
			for i, c := range on {
				b, err := c.Placed.Time(eff, f)
				if err != nil {
					return perf.Accuracy{}, nil, err
				}
				pred[i] = b.Total
			}
			return perf.Score(on, pred), pred, nil
		}
		shipped, shippedPred, err := score(rest, r.Factors)
		if err != nil {
			return err
		}
		bestSt, best := 0.0, perf.Accuracy{Worst: math.Inf(1)}
		for _, st := range perf.RefineStrengths {
			f, err := perf.RefineStrength(prof, eff, graph.ModelFactors{}, st)
			if err != nil {
				return err
			}
			a, _, err := score(rest, f)
			if err != nil {
				return err
			}
			if a.Worst < best.Worst {
				bestSt, best = st, a
			}
		}
		var meds, worsts []float64
		both := 0
		for s := 0; s < randomSets; s++ {
			idx := rng.Perm(len(mine))[:k]
			chosen := map[int]bool{}
			var p, o []*perf.Case
			for _, i := range idx {
				chosen[i] = true
				p = append(p, mine[i])
			}
			for i, c := range mine {
				if !chosen[i] {
					o = append(o, c)
				}
			}
			f, _, err := perf.RefineCV(p, eff, graph.ModelFactors{})
			if err != nil {
				return err
			}
			a, _, err := score(o, f)
			if err != nil {
				return err
			}
			meds, worsts = append(meds, a.Median), append(worsts, a.Worst)
			if a.Median <= 0.08 && a.Worst <= 0.2 {
				both++
			}
		}
		fAll, err := perf.RefineFrom(mine, eff, graph.ModelFactors{})
		if err != nil {
			return err
		}
		all, allPred, err := score(rest, fAll)
		if err != nil {
			return err
		}
		w := 0
		for i, c := range rest {
			if math.Abs(shippedPred[i]/c.Row.StepTime-1) > math.Abs(shippedPred[w]/rest[w].Row.StepTime-1) {
				w = i
			}
		}
		wc := rest[w]
		fmt.Printf("| %s | %s | %s / %s (%g) | %s / %s (%g) | %s, %s, %s, %d of %d | %s / %s | %q %s, batch %d: %.3f s, %.3f s (%+.0f%%), in sample %+.0f%% |\n",
			r.Family, r.Model, pct(shipped.Median), pct(shipped.Worst), r.CV.Strength, pct(best.Median), pct(best.Worst), bestSt,
			pct(perf.Median(meds)), pct(perf.Median(worsts)), pct(slices.Min(worsts)), both, randomSets, pct(all.Median), pct(all.Worst),
			wc.Row.Placement, perf.Kind(wc.Row.Plan), wc.Row.Plan.GlobalBatch, wc.Row.StepTime, shippedPred[w], 100*(shippedPred[w]/wc.Row.StepTime-1),
			100*(allPred[w]/wc.Row.StepTime-1))
	}
	fmt.Println()
	return syncSplit(cases, reps)
}

// syncSplit prints, for each model with measured sync times, per number of servers (4: four
// or more), the k = 0 mean signed error of the step time and the ratios of predicted to
// measured exposed synchronisation (graph.Breakdown.DP against sync_time) and of the rest of
// the step, summed over the rows: the cause 5 (its figures: sync 0.14-0.89x, compute
// 1.1-1.5x).
func syncSplit(cases []*perf.Case, reps []perf.ModelReport) error {
	fmt.Println("#### The split between compute and synchronisation on the T4, by number of servers (k = 0)")
	fmt.Println()
	fmt.Println("Leave-one-model-out constants, every row of the model: rows, mean signed error of the step time, predicted /")
	fmt.Println("measured exposed synchronisation (`Breakdown.DP` against `sync_time`, sums over the rows), predicted / measured rest")
	fmt.Println("of the step (step - sync), and the measured share of sync in the step.")
	fmt.Println()
	fmt.Println("| model | 1 server | 2 servers | 3 servers | 4 servers |")
	fmt.Println("|---|---|---|---|---|")
	type agg struct{ n, signed, sync, psync, rest, prest float64 }
	for _, r := range reps {
		var by [5]agg
		any := false
		for _, c := range cases {
			if r.Family != "t4" || c.Model.Name() != r.Model || c.Family() != r.Family || !(c.Row.SyncTime > 0) {
				continue
			}
			any = true
			b, err := c.Placed.Time(r.Hardware, graph.ModelFactors{})
			if err != nil {
				return err
			}
			a := &by[min(c.Row.Servers(), 4)]
			a.n++
			a.signed += b.Total/c.Row.StepTime - 1
			a.sync += c.Row.SyncTime
			a.psync += b.DP
			a.rest += c.Row.StepTime - c.Row.SyncTime
			a.prest += b.Total - b.DP
		}
		if !any {
			continue
		}
		fmt.Printf("| %s |", r.Model)
		for s := 1; s <= 4; s++ {
			a := by[s]
			if a.n == 0 {
				fmt.Print(" - |")
				continue
			}
			fmt.Printf(" %.0f rows, %+.0f%%, sync x%.2f, rest x%.2f, share %.2f |", a.n, 100*a.signed/a.n, a.psync/a.sync, a.prest/a.rest, a.sync/(a.sync+a.rest))
		}
		fmt.Println()
	}
	fmt.Println()
	return nil
}

// onlyRound6 prints round6's table alone, from every model of the shared data.
func onlyRound6(dir string, k int) error {
	a800, err := readA800(dir, -1, "")
	if err != nil {
		return err
	}
	t4, err := readT4(dir)
	if err != nil {
		return err
	}
	all := append(append([]*perf.Case{}, a800...), t4...)
	reps, err := perf.Evaluate(all, graph.DefaultEfficiency(), k)
	if err != nil {
		return err
	}
	return round6(all, reps, k)
}
