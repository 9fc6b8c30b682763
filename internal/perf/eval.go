package perf

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpusched/gpusched/graph"
)

// Kind names the kind of a row's plan, for choosing profiles: "3d" for tensor or pipeline
// parallelism, else "dp"; then "+zero<stage>", "+offload" and "+ckpt" as set.
func Kind(p graph.Plan) string {
	var b strings.Builder
	if p.TP > 1 || p.PP > 1 {
		b.WriteString("3d")
	} else {
		b.WriteString("dp")
	}
	if p.ZeRO > 0 {
		fmt.Fprintf(&b, "+zero%d", p.ZeRO)
	}
	if p.Offload {
		b.WriteString("+offload")
	}
	if p.Checkpointing {
		b.WriteString("+ckpt")
	}
	return b.String()
}

// SelectProfiles returns the indices of the k cases (of one model) to measure as its profiles,
// by a rule that a user with a few profiling runs to spend can follow: the cheapest run of
// each kind of plan, then the cheapest multi-server run, then the largest run inside one
// server, then the widest multi-server run, then more of the same. The first measure the model's compute and its plan-specific
// terms (ZeRO, offload, checkpointing, tensor and pipeline parallelism), the multi-server run
// its traffic between servers, the largest run how its compute and fixed costs scale.
// Precisely:
//
//  1. Kinds (see Kind) are ordered by how many cases they have, most first, ties in order of
//     first appearance; the first is the main kind.
//  2. In turn, skipping a pick that is missing or taken already: (a) each kind's smallest
//     case (fewest GPUs, then servers, then smallest global batch, then file order), in kind
//     order; (b) if no case taken so far spans servers, the smallest multi-server case of any
//     kind (fewest GPUs, then servers, then smallest global batch, where communication shows
//     most, then file order); (c) the main kind's largest case on one server (most GPUs; of those,
//     the median global batch, the upper one of an even count, file order among equal
//     batches): a batch typical of the model's runs rather than its largest, which with the
//     smallest case already taken made the refined factors fit two extremes (T4 ResNet-18 at
//     k = 5: 11.0% on its other rows against 9.8% with no profile; 8.8% with the median);
//     (d) the main kind's widest multi-server case (most servers, then GPUs, then largest
//     global batch, then file order), which tells how
//     its traffic between servers scales (without it, T4 BERT-base refined on four
//     single-server runs and one two-server run predicted its other rows worse than with no
//     profile: 27% against 18%).
//  3. Then kinds are visited in turn (round robin), each giving its smallest case not taken,
//     cases of equal GPUs and servers ordered by how far (by ratio) their global batch is from
//     the batches already taken of that kind, farthest first.
//
// It returns min(k, len(cases)) indices, in the order taken.
func SelectProfiles(cases []*Case, k int) []int {
	if k <= 0 || len(cases) == 0 {
		return nil
	}
	var kinds []string
	byKind := map[string][]int{}
	for i, c := range cases {
		kd := Kind(c.Row.Plan)
		if _, ok := byKind[kd]; !ok {
			kinds = append(kinds, kd)
		}
		byKind[kd] = append(byKind[kd], i)
	}
	slices.SortStableFunc(kinds, func(a, b string) int { return len(byKind[b]) - len(byKind[a]) })
	row := func(i int) Row { return cases[i].Row }
	smaller := func(a, b int) int { // fewest GPUs, servers, smallest batch, file order
		if d := row(a).GPUs() - row(b).GPUs(); d != 0 {
			return d
		}
		if d := row(a).Servers() - row(b).Servers(); d != 0 {
			return d
		}
		if d := row(a).Plan.GlobalBatch - row(b).Plan.GlobalBatch; d != 0 {
			return d
		}
		return a - b
	}
	for _, kd := range kinds {
		slices.SortStableFunc(byKind[kd], smaller)
	}
	taken := make([]bool, len(cases))
	batches := map[string][]float64{}
	var out []int
	take := func(i int) {
		if i < 0 || taken[i] || len(out) >= k {
			return
		}
		taken[i] = true
		out = append(out, i)
		kd := Kind(row(i).Plan)
		batches[kd] = append(batches[kd], float64(row(i).Plan.GlobalBatch))
	}
	first := func(idx []int, ok func(int) bool, better func(a, b int) bool) int {
		best := -1
		for _, i := range idx {
			if !taken[i] && ok(i) && (best < 0 || better(i, best)) {
				best = i
			}
		}
		return best
	}
	all := make([]int, len(cases))
	for i := range all {
		all[i] = i
	}
	main := byKind[kinds[0]]
	any := func(int) bool { return true }
	isSmaller := func(a, b int) bool { return smaller(a, b) < 0 }
	for _, kd := range kinds {
		take(first(byKind[kd], any, isSmaller))
	}
	multi := false
	for _, i := range out {
		multi = multi || row(i).Servers() > 1
	}
	if !multi {
		take(first(all, func(i int) bool { return row(i).Servers() > 1 }, isSmaller))
	}
	// The main kind's largest case on one server: most GPUs, at the median of their batches.
	var widest []int
	for _, i := range main {
		if taken[i] || row(i).Servers() != 1 {
			continue
		}
		if len(widest) > 0 && row(i).GPUs() > row(widest[0]).GPUs() {
			widest = widest[:0]
		}
		if len(widest) == 0 || row(i).GPUs() == row(widest[0]).GPUs() {
			widest = append(widest, i)
		}
	}
	if len(widest) > 0 {
		slices.SortStableFunc(widest, func(a, b int) int { return row(a).Plan.GlobalBatch - row(b).Plan.GlobalBatch })
		take(widest[len(widest)/2])
	}
	// The main kind's widest multi-server case: most servers, then GPUs, then largest batch.
	take(first(main, func(i int) bool { return row(i).Servers() > 1 }, func(a, b int) bool {
		if row(a).Servers() != row(b).Servers() {
			return row(a).Servers() > row(b).Servers()
		}
		if row(a).GPUs() != row(b).GPUs() {
			return row(a).GPUs() > row(b).GPUs()
		}
		if row(a).Plan.GlobalBatch != row(b).Plan.GlobalBatch {
			return row(a).Plan.GlobalBatch > row(b).Plan.GlobalBatch
		}
		return a < b
	}))
	// next returns the kind's next case: the first not taken by GPUs and servers, ties broken
	// by the farthest batch.
	next := func(kd string) int {
		best, bestD := -1, -1.0
		for _, i := range byKind[kd] {
			if taken[i] {
				continue
			}
			if best >= 0 && (row(i).GPUs() != row(best).GPUs() || row(i).Servers() != row(best).Servers()) {
				break
			}
			d := math.Inf(1)
			for _, b := range batches[kd] {
				d = math.Min(d, math.Abs(math.Log(float64(row(i).Plan.GlobalBatch)/b)))
			}
			if d > bestD {
				best, bestD = i, d
			}
		}
		return best
	}
	for len(out) < k && len(out) < len(cases) {
		before := len(out)
		for _, kd := range kinds {
			take(next(kd))
		}
		if len(out) == before {
			break
		}
	}
	return out
}

// Accuracy summarises how close predictions come to measurements of one model.
type Accuracy struct {
	// Rows is the number of measurements compared.
	Rows int `json:"rows"`
	// MAPE is the mean of |predicted - measured| / measured step time.
	MAPE float64 `json:"mape"`
	// Worst is the largest of those relative errors.
	Worst float64 `json:"worst"`
	// Median is their median.
	Median float64 `json:"median"`
	// PlacementSpearman is the rank correlation of predicted and measured step times across the
	// placements measured at one per-replica batch with one kind of plan (tensor and pipeline
	// degrees, ZeRO, offload, checkpointing alike; any number of GPUs), averaged over the groups
	// of at least three placements, weighted by their counts; NaN when none.
	PlacementSpearman float64 `json:"placement_spearman"`
	// Spearman is the rank correlation of predicted and measured step times across the
	// configurations of each global batch size (plans and placements), averaged over the batch
	// sizes with at least three configurations, weighted by their counts; NaN when none.
	Spearman float64 `json:"spearman"`
	// Regret is, over the groups of configurations with the same number of GPUs and global
	// batch (at least two), the largest measured slowdown of the configuration predicted
	// fastest against the measured fastest: measured(predicted best) / measured(best) - 1; NaN
	// when there is no such group.
	Regret float64 `json:"regret"`
	// Groups is the number of those groups.
	Groups int `json:"groups"`
	// SpeedUps lists, per plan kind measured on 1 GPU and on 8 GPUs of one server at the same
	// global batch, the measured and predicted speed-up t(1) / t(8).
	SpeedUps []SpeedUp `json:"speed_ups,omitempty"`
}

// SpeedUp is a measured and a predicted speed-up of one plan kind from 1 to 8 GPUs.
type SpeedUp struct {
	// Kind is the plan kind (see Kind).
	Kind string `json:"kind"`
	// Measured is the measured t(1 GPU) / t(8 GPUs).
	Measured float64 `json:"measured"`
	// Predicted is the predicted t(1 GPU) / t(8 GPUs).
	Predicted float64 `json:"predicted"`
}

// Error returns the relative error of the predicted speed-up.
func (s SpeedUp) Error() float64 { return s.Predicted/s.Measured - 1 }

// Score compares predicted step times (pred[i] for cases[i]) with the measured ones.
func Score(cases []*Case, pred []float64) Accuracy {
	var a Accuracy
	a.Rows = len(cases)
	if len(cases) == 0 {
		a.MAPE, a.Worst, a.Spearman, a.Regret, a.Median, a.PlacementSpearman = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return a
	}
	errs := make([]float64, len(cases))
	for i, c := range cases {
		e := math.Abs(pred[i]-c.Row.StepTime) / c.Row.StepTime
		errs[i] = e
		a.MAPE += e
		a.Worst = math.Max(a.Worst, e)
	}
	a.MAPE /= float64(len(cases))
	a.Median = Median(errs)
	a.PlacementSpearman = placementSpearman(cases, pred)
	// Spearman per global batch.
	byBatch := map[int][]int{}
	for i, c := range cases {
		byBatch[c.Row.Plan.GlobalBatch] = append(byBatch[c.Row.Plan.GlobalBatch], i)
	}
	sum, n := 0.0, 0
	for _, idx := range byBatch {
		if len(idx) < 3 {
			continue
		}
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			x[k], y[k] = pred[i], cases[i].Row.StepTime
		}
		sum += float64(len(idx)) * Spearman(x, y)
		n += len(idx)
	}
	a.Spearman = math.NaN()
	if n > 0 {
		a.Spearman = sum / float64(n)
	}
	// Regret per (GPUs, global batch).
	type key struct{ gpus, batch int }
	groups := map[key][]int{}
	for i, c := range cases {
		k := key{c.Row.GPUs(), c.Row.Plan.GlobalBatch}
		groups[k] = append(groups[k], i)
	}
	a.Regret = math.NaN()
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		best, pick := idx[0], idx[0]
		for _, i := range idx {
			if cases[i].Row.StepTime < cases[best].Row.StepTime {
				best = i
			}
			if pred[i] < pred[pick] {
				pick = i
			}
		}
		r := cases[pick].Row.StepTime/cases[best].Row.StepTime - 1
		if a.Groups == 0 || r > a.Regret {
			a.Regret = r
		}
		a.Groups++
	}
	// Speed-ups 1 -> 8 GPUs on one server.
	type end struct{ one, eight int }
	ends := map[string]*end{}
	var order []string
	for i, c := range cases {
		kd := Kind(c.Row.Plan)
		if c.Row.Placement != "1" && c.Row.Placement != "8" {
			continue
		}
		e, ok := ends[kd]
		if !ok {
			e = &end{-1, -1}
			ends[kd] = e
			order = append(order, kd)
		}
		if c.Row.Placement == "1" {
			e.one = i
		} else {
			e.eight = i
		}
	}
	for _, kd := range order {
		e := ends[kd]
		if e.one < 0 || e.eight < 0 || cases[e.one].Row.Plan.GlobalBatch != cases[e.eight].Row.Plan.GlobalBatch {
			continue
		}
		a.SpeedUps = append(a.SpeedUps, SpeedUp{Kind: kd,
			Measured:  cases[e.one].Row.StepTime / cases[e.eight].Row.StepTime,
			Predicted: pred[e.one] / pred[e.eight]})
	}
	return a
}

// placementSpearman is Accuracy.PlacementSpearman.
func placementSpearman(cases []*Case, pred []float64) float64 {
	type key struct {
		local, tp, pp, zero int
		offload, ckpt       bool
	}
	groups := map[key][]int{}
	for i, c := range cases {
		p := c.Row.Plan
		k := key{p.GlobalBatch / max(p.DP, 1), p.TP, p.PP, p.ZeRO, p.Offload, p.Checkpointing}
		groups[k] = append(groups[k], i)
	}
	sum, n := 0.0, 0
	for _, idx := range groups {
		if len(idx) < 3 {
			continue
		}
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			x[k], y[k] = pred[i], cases[i].Row.StepTime
		}
		sum += float64(len(idx)) * Spearman(x, y)
		n += len(idx)
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Spearman returns Spearman's rank correlation of x and y (equal lengths): the Pearson
// correlation of their ranks, ties getting the average of the ranks they span. It returns 0
// when either has no spread or fewer than two values, and NaN for unequal lengths.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	if len(x) < 2 {
		return 0
	}
	rx, ry := ranks(x), ranks(y)
	mx, my := mean(rx), mean(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// ModelReport is the out-of-sample evaluation of one model (see Evaluate).
type ModelReport struct {
	// Model is the model's name.
	Model string `json:"model"`
	// Family is its GPU family.
	Family string `json:"family"`
	// Hardware holds the constants fitted on the family's other models.
	Hardware graph.Efficiency `json:"hardware"`
	// Prior is the accuracy over every row of the model with those constants alone (k = 0).
	Prior Accuracy `json:"prior"`
	// PriorPredictions holds the predicted step time in seconds of each of the model's rows
	// with those constants alone (k = 0), in the order of the cases.
	PriorPredictions []float64 `json:"prior_predictions"`
	// Profiles lists the lines of the rows used as profiles (see SelectProfiles).
	Profiles []int `json:"profiles"`
	// Factors holds the model's factors refined on the profiles.
	Factors graph.ModelFactors `json:"factors"`
	// CV is the leave-one-profile-out error of the refinement on the profiles (see RefineCV).
	CV CrossValidation `json:"cv"`
	// Refined is the accuracy over the model's other rows with the refined factors.
	Refined Accuracy `json:"refined"`
	// PriorRest is the accuracy over the same rows (all but the profiles) with the constants
	// alone (k = 0): what the refinement must not be worse than.
	PriorRest Accuracy `json:"prior_rest"`
	// All is the accuracy over every row of the model, profiles included, with the refined
	// factors: the ranking a scheduler choosing among plans and placements would see.
	All Accuracy `json:"all"`
}

// Evaluate runs the out-of-sample evaluation of every model of the cases: for each GPU family
// and each model of it, the family's hardware constants are fitted on its other models
// (FitHardware from prior), the model is predicted with them alone (k = 0, every row), then
// its factors are refined (RefineCV, from factors of 1) on k profiles chosen by SelectProfiles and the rest of its
// rows are predicted. A family with one model is fitted on that model itself for the k = 0
// figures, which are then in sample. Models are reported in order of first appearance. A prior
// with a ComputeWidthExponent above 0 has every fit fit that term too (see FitHardware).
func Evaluate(cases []*Case, prior graph.Efficiency, k int) ([]ModelReport, error) {
	return EvaluateWith(cases, prior, k, EvaluateOptions{})
}

// EvaluateOptions parameterises EvaluateWith.
type EvaluateOptions struct {
	// JointFactorStrength replaces the package's JointFactorStrength in the hardware fits (0:
	// keep it), so that its choice can be checked by leave-one-model-out.
	JointFactorStrength float64
}

// EvaluateWith is Evaluate with options. A negative or non-finite JointFactorStrength is an
// error wrapping graph.ErrInvalidOptions.
func EvaluateWith(cases []*Case, prior graph.Efficiency, k int, opt EvaluateOptions) ([]ModelReport, error) {
	strength := opt.JointFactorStrength
	if strength == 0 {
		strength = JointFactorStrength
	}
	if !(strength > 0) || math.IsInf(strength, 1) {
		return nil, fmt.Errorf("%w: joint factor strength %v must be a positive finite number", graph.ErrInvalidOptions, opt.JointFactorStrength)
	}
	byFamily := map[string][]*Case{}
	var fams []string
	for _, c := range cases {
		f := c.Family()
		if _, ok := byFamily[f]; !ok {
			fams = append(fams, f)
		}
		byFamily[f] = append(byFamily[f], c)
	}
	var out []ModelReport
	for _, fam := range fams {
		fc := byFamily[fam]
		names, of := modelIndex(fc)
		for m, name := range names {
			var mine, others []*Case
			for i, c := range fc {
				if of[i] == m {
					mine = append(mine, c)
				} else {
					others = append(others, c)
				}
			}
			if len(others) == 0 {
				others = mine
			}
			hf, err := fitHardware(others, prior, true, strength)
			if err != nil {
				return nil, fmt.Errorf("model %s: %w", name, err)
			}
			rep := ModelReport{Model: name, Family: fam, Hardware: hf.Efficiency}
			pred := make([]float64, len(mine))
			for i, c := range mine {
				b, err := c.Placed.Time(hf.Efficiency, graph.ModelFactors{})
				if err != nil {
					return nil, err
				}
				pred[i] = b.Total
			}
			rep.Prior = Score(mine, pred)
			rep.PriorPredictions = slices.Clone(pred)
			sel := SelectProfiles(mine, k)
			var prof, rest []*Case
			chosen := make([]bool, len(mine))
			for _, i := range sel {
				chosen[i] = true
				prof = append(prof, mine[i])
				rep.Profiles = append(rep.Profiles, mine[i].Row.Line)
			}
			for i, c := range mine {
				if !chosen[i] {
					rest = append(rest, c)
				}
			}
			if rep.Factors, rep.CV, err = RefineCV(prof, hf.Efficiency, graph.ModelFactors{}); err != nil {
				return nil, err
			}
			restPrior := make([]float64, 0, len(rest))
			for i := range mine {
				if !chosen[i] {
					restPrior = append(restPrior, pred[i])
				}
			}
			rep.PriorRest = Score(rest, restPrior)
			pred = make([]float64, 0, len(rest))
			for _, c := range rest {
				b, err := c.Placed.Time(hf.Efficiency, rep.Factors)
				if err != nil {
					return nil, err
				}
				pred = append(pred, b.Total)
			}
			rep.Refined = Score(rest, pred)
			all := make([]float64, len(mine))
			for i, c := range mine {
				b, err := c.Placed.Time(hf.Efficiency, rep.Factors)
				if err != nil {
					return nil, err
				}
				all[i] = b.Total
			}
			rep.All = Score(mine, all)
			out = append(out, rep)
		}
	}
	return out, nil
}

// SyncRank is the rank correlation of predicted and measured synchronisation times of one
// model across the placements measured at one per-GPU batch size.
type SyncRank struct {
	// Model is the model's name.
	Model string `json:"model"`
	// LocalBatch is the per-replica batch in samples.
	LocalBatch int `json:"local_batch"`
	// Placements is the number of placements measured at that size.
	Placements int `json:"placements"`
	// Rho is Spearman's rank correlation of the predicted exposed synchronisation
	// (graph.Breakdown.DP) and the measured sync time.
	Rho float64 `json:"rho"`
}

// SyncRanks returns, for every model and per-replica batch of the cases with a measured sync
// time and at least three placements, the rank correlation of predicted and measured sync time
// with the calibration (nil: shipped constants), in order of first appearance.
func SyncRanks(cases []*Case, cal *graph.Calibration) ([]SyncRank, error) {
	type key struct {
		model string
		local int
	}
	groups := map[key][]int{}
	var order []key
	for i, c := range cases {
		if math.IsNaN(c.Row.SyncTime) {
			continue
		}
		k := key{c.Model.Name(), c.Row.Plan.GlobalBatch / c.Row.Plan.DP}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out []SyncRank
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 3 {
			continue
		}
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for j, i := range idx {
			b, err := cases[i].Predict(cal)
			if err != nil {
				return nil, err
			}
			x[j], y[j] = b.DP, cases[i].Row.SyncTime
		}
		out = append(out, SyncRank{Model: k.model, LocalBatch: k.local, Placements: len(idx), Rho: Spearman(x, y)})
	}
	return out, nil
}
