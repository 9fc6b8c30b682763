package perf

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/graph"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/optimize"
)

// paramSpec is one hardware constant the fit may move: a fraction (fitted as its logit) or a
// positive quantity (fitted as its logarithm).
type paramSpec struct {
	name  string
	frac  bool
	get   func(*graph.Efficiency) *float64
	start float64 // the starting value when the prior's is 0
	use   func(u *usage) bool
}

// usage says which kinds of measurement a set of cases holds, so that only the constants they
// can inform are fitted.
type usage struct {
	fp16, fp32, intra, inter, dp, offload, gpuOpt bool
	// width: the prior has a ComputeWidthExponent (set by fitHardware, never by usageOf): the
	// width term is fitted only when asked for (benchmarks/perf.md, round 5).
	width bool
	// halfDuplex: the fit's ring layout is HalfDuplexPairs (set by fitHardware once the
	// layout is chosen, never by usageOf), so that pair_duplex can matter and the Ethernet
	// links' per-bucket step latency (bucket_step_latency) is fitted with it.
	halfDuplex bool
}

var hardwareParams = []paramSpec{
	{"compute", true, func(e *graph.Efficiency) *float64 { return &e.Compute }, 0.3, func(u *usage) bool { return u.fp16 }},
	{"compute_fp32", true, func(e *graph.Efficiency) *float64 { return &e.ComputeFP32 }, 0.1, func(u *usage) bool { return u.fp32 }},
	{"compute_size_exponent", false, func(e *graph.Efficiency) *float64 { return &e.ComputeSizeExponent }, 0.05, func(u *usage) bool { return u.fp16 || u.fp32 }},
	{"compute_width_exponent", false, func(e *graph.Efficiency) *float64 { return &e.ComputeWidthExponent }, 0.05, func(u *usage) bool { return u.fp16 && u.width }},
	{"layer_overhead", false, func(e *graph.Efficiency) *float64 { return &e.LayerOverhead }, 1e-4, func(*usage) bool { return true }},
	{"intra_comm", true, func(e *graph.Efficiency) *float64 { return &e.IntraComm }, 0.8, func(u *usage) bool { return u.intra }},
	{"inter_comm", true, func(e *graph.Efficiency) *float64 { return &e.InterComm }, 0.5, func(u *usage) bool { return u.inter }},
	{"overlap", true, func(e *graph.Efficiency) *float64 { return &e.Overlap }, 0.5, func(u *usage) bool { return u.dp }},
	{"step_overhead", false, func(e *graph.Efficiency) *float64 { return &e.StepOverhead }, 0.01, func(*usage) bool { return true }},
	{"optimizer_per_param", false, func(e *graph.Efficiency) *float64 { return &e.OptimizerPerParam }, 1e-10, func(u *usage) bool { return u.gpuOpt }},
	{"cpu_optimizer_per_param", false, func(e *graph.Efficiency) *float64 { return &e.CPUOptimizerPerParam }, 3e-9, func(u *usage) bool { return u.offload }},
	{"host_optimizer_per_param", false, func(e *graph.Efficiency) *float64 { return &e.HostOptimizerPerParam }, 3e-10, func(u *usage) bool { return u.offload }},
	{"host_bandwidth", false, func(e *graph.Efficiency) *float64 { return &e.HostBandwidth }, 10e9, func(u *usage) bool { return u.offload }},
	{"bucket_step_latency", false, func(e *graph.Efficiency) *float64 { return &e.BucketStepLatency }, 2e-4, func(u *usage) bool { return u.inter && u.halfDuplex }},
	{"pair_duplex", true, func(e *graph.Efficiency) *float64 { return &e.PairDuplex }, 0.5, func(u *usage) bool { return u.inter && u.halfDuplex }},
}

// nFactors is the number of per-model factors: compute, comm, optimizer, overhead, parallel.
const nFactors = 5

// overheadSlot is the index of the additive overhead among a model's fit coordinates; the
// others are logarithms of factors.
const overheadSlot = 3

// commSlot is the index of the communication factor among a model's fit coordinates.
const commSlot = 1

// overheadScale is the scale of a model's own overhead coordinate: a fraction of its median
// measured step time, so that the prior FactorPrior x v^2 on the coordinate v holds an
// overhead of overheadScale x that step time as dear as a factor of e.
const overheadScale = 0.25

// Prior strengths of the fit (see FitHardware and Refine). A model's factor f costs
// FactorPrior x (log f)^2, as much as a relative error of |log f| x sqrt(FactorPrior) on one
// row: with 0.03, a 30% factor costs what a 5% error on one row does. Its communication
// factor costs CommPrior x (log f)^2: the bytes a model moves are known from its description
// and the links' speed belongs to the hardware, so its communication should stray less than its
// compute. A hardware constant moved from its prior by d (in logit or log units) costs
// HardwarePrior x d^2.
const (
	// FactorPrior weighs (log f)^2 of a model's compute, optimizer and parallel factors, and
	// of its overhead coordinate.
	FactorPrior = 0.03
	// CommPrior weighs (log f)^2 of a model's communication factor.
	CommPrior = 0.5
	// HardwarePrior weighs a hardware constant's squared distance from its prior.
	HardwarePrior = 1e-3
	// JointFactorStrength multiplies FactorPrior and CommPrior in a joint hardware fit
	// (FitHardware): there each model's factors are held ten times as firmly near 1 as in a
	// refinement, so that the hardware constants, not the factors, carry what the models have
	// in common, and predict a model none of the fit saw. Chosen by leave-one-model-out on both
	// GPU types of ../shared/data from 1, 3, 10, 30 and 100 (benchmarks/perf.md): 10 is best
	// on both, one figure for every model and type.
	JointFactorStrength = 10
	// modelRows is the weight of each model in a joint fit, in rows: a model with n rows has
	// each row weighted modelRows / n, so that every model counts alike.
	modelRows = 20
)

func logit(p float64) float64   { return math.Log(p / (1 - p)) }
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// problem is a fit: the hardware constants of one GPU family (the active ones) and, optionally,
// the factors of each model, against the step times of cases.
type problem struct {
	cases   []*Case
	weight  []float64 // per case
	modelOf []int     // per case, into models
	models  []string
	active  []paramSpec
	base    graph.Efficiency // prior (and the inactive constants)
	x0      []float64        // prior of the active constants, transformed
	fitHW   bool
	fixed   []graph.ModelFactors // per model when factors are not fitted
	fitF    bool
	factor0 [][nFactors]float64 // per model, the prior of its coordinates
	ohScale []float64           // per model, seconds per unit of its overhead coordinate
	robust  bool                // Cauchy loss (see robustScale) instead of squares
	// strength multiplies the factors' priors (FactorPrior, CommPrior); 0 means 1.
	strength float64
	jobs     []*graph.Placed      // per case
	fbuf     []graph.ModelFactors // per case, scratch
	tbuf     []float64            // per case, scratch
	bbuf     []graph.Breakdown    // per case, scratch (when some case has a measured sync time)
	hasSync  bool                 // some case has a measured sync time
	evals    int
}

// SyncWeight weighs a row's measured synchronisation time (Row.SyncTime, where it is measured)
// against its step time in the fits: the squared log error of the predicted exposed
// synchronisation (graph.Breakdown.DP) counts SyncWeight times a step time's. With it the
// fits split a step between compute and communication as measured, instead of trading one
// for the other.
const SyncWeight = 0.5

// syncFloor is the floor of a synchronisation time in the sync term, as a fraction of the step.
const syncFloor = 0.05

// robustScale is the scale of the Cauchy loss of a joint hardware fit, in log error: errors
// well under 20% count as squares, far larger ones much less.
const robustScale = 0.2

// decode maps a fit vector to constants and factors.
func (p *problem) decode(x []float64) (graph.Efficiency, []graph.ModelFactors) {
	e := p.base
	k := 0
	if p.fitHW {
		for _, ps := range p.active {
			v := x[k]
			if ps.frac {
				*ps.get(&e) = sigmoid(v)
			} else {
				*ps.get(&e) = math.Exp(v)
			}
			k++
		}
	}
	fs := p.fixed
	if p.fitF {
		fs = make([]graph.ModelFactors, len(p.models))
		for m := range fs {
			v := x[k : k+nFactors]
			fs[m] = graph.ModelFactors{Compute: math.Exp(v[0]), Comm: math.Exp(v[1]), Optimizer: math.Exp(v[2]),
				Overhead: v[overheadSlot] * p.ohScale[m], Parallel: math.Exp(v[4])}
			k += nFactors
		}
	}
	return e, fs
}

// start returns the prior as a fit vector.
func (p *problem) start() []float64 {
	var x []float64
	if p.fitHW {
		x = append(x, p.x0...)
	}
	if p.fitF {
		for _, f := range p.factor0 {
			x = append(x, f[:]...)
		}
	}
	return x
}

// loss is the weighted sum of squared log errors of the step times, plus the priors.
func (p *problem) loss(x []float64) float64 {
	p.evals++
	e, fs := p.decode(x)
	if p.jobs == nil {
		p.jobs = make([]*graph.Placed, len(p.cases))
		for i, c := range p.cases {
			p.jobs[i] = c.Placed
		}
		p.fbuf = make([]graph.ModelFactors, len(p.cases))
		p.tbuf = make([]float64, len(p.cases))
	}
	for i := range p.cases {
		p.fbuf[i] = fs[p.modelOf[i]]
	}
	if p.bbuf == nil {
		for _, c := range p.cases {
			p.hasSync = p.hasSync || !math.IsNaN(c.Row.SyncTime)
		}
		if p.hasSync {
			p.bbuf = make([]graph.Breakdown, len(p.cases))
		}
	}
	if p.hasSync {
		if graph.BreakdownAll(p.jobs, e, p.fbuf, p.bbuf) != nil {
			return math.Inf(1)
		}
		for i := range p.bbuf {
			p.tbuf[i] = p.bbuf[i].Total
		}
	} else if graph.TimeAll(p.jobs, e, p.fbuf, p.tbuf) != nil {
		return math.Inf(1)
	}
	// Cauchy loss when robust: like r^2 for small errors, growing only logarithmically for the
	// large ones that no constant can explain, so they do not drag the others.
	penalty := func(r float64) float64 {
		if p.robust {
			return robustScale * robustScale * math.Log1p(r*r/(robustScale*robustScale))
		}
		return r * r
	}
	l := 0.0
	for i, c := range p.cases {
		t := p.tbuf[i]
		if !(t > 0) {
			return math.Inf(1)
		}
		r := math.Log(t / c.Row.StepTime)
		if p.robust {
			l += p.weight[i] * robustScale * robustScale * math.Log1p(r*r/(robustScale*robustScale))
		} else {
			l += p.weight[i] * r * r
		}
		if s := c.Row.SyncTime; p.hasSync && !math.IsNaN(s) {
			// The measured synchronisation against the predicted exposed one (Breakdown.DP),
			// each with a floor of syncFloor of the step, so that syncs of a few
			// milliseconds, mostly noise, weigh little.
			fl := syncFloor * c.Row.StepTime
			l += SyncWeight * p.weight[i] * penalty(math.Log((p.bbuf[i].DP+fl)/(s+fl)))
		}
	}
	k := 0
	if p.fitHW {
		for i := range p.active {
			d := x[k] - p.x0[i]
			l += HardwarePrior * d * d
			k++
		}
	}
	if p.fitF {
		st := p.strength
		if st == 0 {
			st = 1
		}
		for m := range p.models {
			for j := 0; j < nFactors; j++ {
				d := x[k] - p.factor0[m][j]
				w := FactorPrior * st
				if j == commSlot {
					w = CommPrior * st
				}
				l += w * d * d
				k++
			}
		}
	}
	return l
}

// minimize runs L-BFGS with central-difference gradients from x0, then Nelder-Mead from its
// best point, and returns the best point. Both are deterministic.
func minimize(f func([]float64) float64, x0 []float64) []float64 {
	if len(x0) == 0 {
		return x0
	}
	grad := func(dst, x []float64) {
		fd.Gradient(dst, f, x, &fd.Settings{Formula: fd.Forward, Step: 1e-6})
	}
	best, bestF := slices.Clone(x0), f(x0)
	try := func(method optimize.Method, x []float64, iters int) {
		res, err := optimize.Minimize(optimize.Problem{Func: f, Grad: grad}, x, &optimize.Settings{
			MajorIterations: iters,
			Converger:       &optimize.FunctionConverge{Absolute: 1e-7, Relative: 1e-6, Iterations: 10},
		}, method)
		if res != nil && res.F < bestF && !math.IsNaN(res.F) {
			best, bestF = slices.Clone(res.X), res.F
		}
		_ = err // a failed line search still reports its best location
	}
	try(&optimize.LBFGS{}, best, 150)
	try(&optimize.NelderMead{SimplexSize: 0.2}, best, 2000)
	try(&optimize.LBFGS{}, best, 100)
	return best
}

// usageOf says what a set of cases measures.
func usageOf(cases []*Case) usage {
	var u usage
	for _, c := range cases {
		p := c.Row.Plan
		if c.Model.DTypeBytes() >= 4 {
			u.fp32 = true
		} else {
			u.fp16 = true
		}
		if c.Row.Servers() > 1 {
			u.inter = true
		}
		if c.Row.GPUs() > c.Row.Servers() {
			u.intra = true
		}
		if p.DP > 1 {
			u.dp = true
		}
		if p.Offload {
			u.offload = true
		} else {
			u.gpuOpt = true
		}
	}
	return u
}

// modelIndex groups cases by model name, in order of first appearance.
func modelIndex(cases []*Case) (names []string, of []int) {
	idx := map[string]int{}
	of = make([]int, len(cases))
	for i, c := range cases {
		n := c.Model.Name()
		k, ok := idx[n]
		if !ok {
			k = len(names)
			idx[n] = k
			names = append(names, n)
		}
		of[i] = k
	}
	return names, of
}

// HardwareFit is the result of fitting one GPU family's constants.
type HardwareFit struct {
	// Family is the GPU family (graph.GPUFamily).
	Family string `json:"family"`
	// Efficiency holds the fitted constants.
	Efficiency graph.Efficiency `json:"efficiency"`
	// Fitted lists the constants that were fitted (the others kept their prior values: no
	// measurement informs them).
	Fitted []string `json:"fitted"`
	// Models lists the models the fit used, with the factors fitted to each alongside.
	Models map[string]graph.ModelFactors `json:"models"`
	// Rows is the number of measurements.
	Rows int `json:"rows"`
	// Loss is the fit's objective at the optimum.
	Loss float64 `json:"loss"`
}

// FitHardware fits the hardware constants of one GPU family jointly across the models of the
// cases (all of that family), each model with its own factors (graph.ModelFactors) held near 1
// by a prior: the constants describe what the models have in common. The objective is the sum
// of squared log errors of the step times, each model's rows weighted to count alike
// (modelRows in all), plus JointFactorStrength x FactorPrior x (log factor)^2 per factor
// (CommPrior for the communication factor) and HardwarePrior x
// (distance from the prior)^2 per constant. Only the constants the cases inform are fitted
// (compute_fp32 needs fp32 rows, inter_comm multi-server rows, the offload constants offload
// rows, ...); the others keep the prior's values. prior is the starting point (its zero
// constants start from typical values); with layouts, every ring layout is tried and the best
// kept, else the prior's is used. When the layout kept is HalfDuplexPairs and some rows span
// servers, graph.Efficiency.PairDuplex and graph.Efficiency.BucketStepLatency are then fitted
// with the other constants, from that layout's fit (the prior's values, or 0.5 and 0.2 ms, to
// start). graph.Efficiency.ComputeWidthExponent is fitted (on 16-bit rows) only when the
// prior's is above 0, from that value: an opt-in, since on ../shared/data it helps LLaMA-7B
// left out and hurts others (benchmarks/perf.md, round 5). The fit uses gonum's L-BFGS and
// Nelder-Mead and is deterministic. Errors wrap ErrTooFewRows (fewer rows than constants) or ErrBadRow (cases of
// several families).
func FitHardware(cases []*Case, prior graph.Efficiency, layouts bool) (HardwareFit, error) {
	return fitHardware(cases, prior, layouts, JointFactorStrength)
}

// fitHardware is FitHardware with the factors' priors multiplied by strength.
func fitHardware(cases []*Case, prior graph.Efficiency, layouts bool, strength float64) (HardwareFit, error) {
	if len(cases) == 0 {
		return HardwareFit{}, fmt.Errorf("%w: no measurements to fit hardware constants to", ErrTooFewRows)
	}
	fam := cases[0].Family()
	for _, c := range cases {
		if c.Family() != fam {
			return HardwareFit{}, fmt.Errorf("%w: %s: GPU family %q among %q: fit one family at a time", ErrBadRow, c.Row.where(), c.Family(), fam)
		}
	}
	u := usageOf(cases)
	u.width = prior.ComputeWidthExponent > 0
	var active []paramSpec
	for _, ps := range hardwareParams {
		if ps.use(&u) {
			active = append(active, ps)
		}
	}
	if len(cases) < len(active)+1 {
		return HardwareFit{}, fmt.Errorf("%w: %d measurements of %s for %d hardware constants: measure at least %d configurations",
			ErrTooFewRows, len(cases), fam, len(active), len(active)+1)
	}
	names, of := modelIndex(cases)
	count := make([]int, len(names))
	for _, m := range of {
		count[m]++
	}
	p := &problem{cases: cases, modelOf: of, models: names, active: active, base: prior, fitHW: true, fitF: len(names) > 1, robust: true}
	p.ohScale = overheadScales(cases, of, len(names))
	p.strength = strength
	p.weight = make([]float64, len(cases))
	for i, m := range of {
		p.weight[i] = modelRows / float64(count[m])
	}
	p.x0 = priorVector(active, &p.base)
	p.factor0 = make([][nFactors]float64, len(names))
	p.fixed = make([]graph.ModelFactors, len(names))
	ringLayouts := []graph.RingLayout{prior.RingLayout}
	if layouts && u.inter {
		ringLayouts = []graph.RingLayout{graph.ServerGrouped, graph.HalfDuplexPairs}
	}
	var best HardwareFit
	var bestX []float64
	best.Loss = math.Inf(1)
	bestRank := math.Inf(-1)
	for _, rl := range ringLayouts {
		p.base.RingLayout = rl
		x := minimize(p.loss, p.start())
		l := p.loss(x)
		e, fs := p.decode(x)
		// The layout is a property of the links: where rows measure the synchronisation, the
		// layout whose predicted synchronisation ranks them best across placements wins (ties
		// and rows without sync times: the lower loss). With BERT-base held out of the T4
		// rows, the ResNets' losses pick server-grouped by 4% while their sync ranks pick
		// half-duplex-pairs, as every fit with BERT-base does (benchmarks/perf.md).
		rank := syncRankScore(cases, of, e, fs)
		if rank > bestRank+1e-9 || (rank > bestRank-1e-9 && l < best.Loss) {
			bestRank = rank
			best = HardwareFit{Family: fam, Efficiency: e, Rows: len(cases), Loss: l, Models: map[string]graph.ModelFactors{}}
			for m, n := range names {
				best.Models[n] = fs[m]
			}
			bestX = x
		}
	}
	if u.halfDuplex = best.Efficiency.RingLayout == graph.HalfDuplexPairs; u.inter && u.halfDuplex {
		// Under HalfDuplexPairs, how much of a two-server path each direction keeps
		// (Efficiency.PairDuplex) is fitted with the others, from the layout's fit: the
		// Pollux T4 rows halve the two-server rings' bandwidth less than the full halving
		// (benchmarks/perf.md, round 3). So is the per-bucket step latency of the gradient
		// all-reduce over servers (Efficiency.BucketStepLatency): the T4 testbed's Ethernet
		// adds about half a millisecond per ring step and 25 MiB bucket, fitted alike by any
		// two of its three models (round 4). Fitted after the layout is chosen, so that the
		// choice and the fits that keep ServerGrouped (the A800's: RDMA, microseconds) are as
		// before.
		var pd []paramSpec
		for _, ps := range hardwareParams {
			if ps.use(&u) {
				pd = append(pd, ps)
			}
		}
		p.active, p.base, p.x0 = pd, best.Efficiency, priorVector(pd, &prior)
		start := slices.Clone(p.x0) // pair_duplex and bucket_step_latency from the prior's (or their typical values)
		for i, ps := range pd {
			if j := slices.IndexFunc(active, func(a paramSpec) bool { return a.name == ps.name }); j >= 0 {
				start[i] = bestX[j] // the others from the layout's fit
			}
		}
		start = append(start, bestX[len(active):]...)
		x := minimize(p.loss, start)
		if l := p.loss(x); l < best.Loss {
			e, fs := p.decode(x)
			best.Efficiency, best.Loss = e, l
			for m, n := range names {
				best.Models[n] = fs[m]
			}
			active = pd
		}
	}
	for _, ps := range active {
		best.Fitted = append(best.Fitted, ps.name)
	}
	return best, nil
}

// priorVector returns the fit coordinates of the active constants of prior: logits of the
// fractions, logarithms of the others; a zero constant (or a fraction of 1) starts from its
// typical value.
func priorVector(active []paramSpec, prior *graph.Efficiency) []float64 {
	var x []float64
	for _, ps := range active {
		v := *ps.get(prior)
		if v == 0 || (ps.frac && v >= 1) {
			v = ps.start
		}
		if ps.frac {
			v = math.Min(math.Max(v, 1e-4), 1-1e-4)
			x = append(x, logit(v))
		} else {
			x = append(x, math.Log(v))
		}
	}
	return x
}

// syncRankScore is the mean, over the groups of at least three cases of one model and
// per-replica batch with a measured sync time, of Spearman's rank correlation of the predicted
// exposed synchronisation (graph.Breakdown.DP) with the measured one, with constants e and the
// factors fs of each model (of maps cases to them); 0 when there is no such group or a case
// cannot be predicted.
func syncRankScore(cases []*Case, of []int, e graph.Efficiency, fs []graph.ModelFactors) float64 {
	type key struct{ model, local int }
	groups := map[key][]int{}
	var order []key
	for i, c := range cases {
		if math.IsNaN(c.Row.SyncTime) || c.Row.Plan.DP < 1 {
			continue
		}
		k := key{of[i], c.Row.Plan.GlobalBatch / c.Row.Plan.DP}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	sum, n := 0.0, 0
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 3 {
			continue
		}
		x, y := make([]float64, len(idx)), make([]float64, len(idx))
		for j, i := range idx {
			b, err := cases[i].Placed.Time(e, fs[of[i]])
			if err != nil {
				return 0
			}
			x[j], y[j] = b.DP, cases[i].Row.SyncTime
		}
		sum += Spearman(x, y)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Refine fits one model's factors (graph.ModelFactors) to k measured configurations of it with
// the hardware constants fixed, from factors of 1: RefineFrom with the zero prior.
func Refine(cases []*Case, eff graph.Efficiency) (graph.ModelFactors, error) {
	return RefineFrom(cases, eff, graph.ModelFactors{})
}

// RefineOverheadScale is the scale, in seconds, of a model's own overhead in a refinement: an
// overhead of RefineOverheadScale away from the prior's costs as much as a factor of e. It is
// absolute, so that slow profiles (ZeRO-Offload runs of seconds) do not license an overhead of
// seconds on the model's fast plans.
const RefineOverheadScale = 0.05

// RefineFrom fits one model's factors to measured configurations of it (cases, all of one
// model and GPU family) with the hardware constants fixed, as a regularised update of prior
// (the factors a calibration already holds for the model; the zero value means factors of 1
// and no overhead): the sum of squared log errors of the step times plus FactorPrior x
// (log(f / prior f))^2 per factor (CommPrior for the communication factor) and FactorPrior x
// ((overhead - prior overhead) / RefineOverheadScale)^2, starting from prior. With no rows it
// returns prior. It uses gonum's L-BFGS and Nelder-Mead, is deterministic, and takes
// milliseconds for tens of rows.
func RefineFrom(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors) (graph.ModelFactors, error) {
	return refine(cases, eff, prior, 1)
}

// RefineStrength is RefineFrom with the priors' strength multiplied by strength (one of
// RefineStrengths, or any positive number; math.Inf(1) returns prior): what RefineCV refines
// with once it has chosen the strength. A strength that is not a positive number is an error
// wrapping graph.ErrInvalidOptions.
func RefineStrength(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors, strength float64) (graph.ModelFactors, error) {
	if !(strength > 0) {
		return graph.ModelFactors{}, fmt.Errorf("%w: refinement strength %v must be a positive number", graph.ErrInvalidOptions, strength)
	}
	return refine(cases, eff, prior, strength)
}

// refine is RefineFrom with the priors' strength multiplied by strength (math.Inf(1): prior).
func refine(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors, strength float64) (graph.ModelFactors, error) {
	if len(cases) == 0 || math.IsInf(strength, 1) {
		return prior, nil
	}
	if err := eff.Validate(); err != nil {
		return graph.ModelFactors{}, err
	}
	if err := prior.Validate(); err != nil {
		return graph.ModelFactors{}, err
	}
	name := cases[0].Model.Name()
	for _, c := range cases {
		if c.Model.Name() != name {
			return graph.ModelFactors{}, fmt.Errorf("%w: %s: model %q among %q: refine one model at a time", ErrBadRow, c.Row.where(), c.Model.Name(), name)
		}
	}
	p := &problem{cases: cases, modelOf: make([]int, len(cases)), models: []string{name}, base: eff, fitF: true,
		factor0: make([][nFactors]float64, 1), weight: make([]float64, len(cases)), strength: strength}
	p.ohScale = []float64{RefineOverheadScale}
	p.factor0[0] = priorCoords(prior, RefineOverheadScale)
	for i := range p.weight {
		p.weight[i] = 1
	}
	_, fs := p.decode(minimize(p.loss, p.start()))
	return fs[0], nil
}

// priorCoords returns the fit coordinates of factors (zero factors mean 1).
func priorCoords(f graph.ModelFactors, ohScale float64) [nFactors]float64 {
	l := func(v float64) float64 {
		if v == 0 {
			return 0
		}
		return math.Log(v)
	}
	var c [nFactors]float64
	c[0], c[1], c[2], c[4] = l(f.Compute), l(f.Comm), l(f.Optimizer), l(f.Parallel)
	c[overheadSlot] = f.Overhead / ohScale
	return c
}

// overheadScales returns, per model, overheadScale x the median measured step time of its
// cases.
func overheadScales(cases []*Case, of []int, models int) []float64 {
	times := make([][]float64, models)
	for i, c := range cases {
		times[of[i]] = append(times[of[i]], c.Row.StepTime)
	}
	out := make([]float64, models)
	for m, t := range times {
		slices.Sort(t)
		out[m] = overheadScale * t[len(t)/2]
	}
	return out
}

// CrossValidation is how well a model's refinement predicts rows it was not refined on.
type CrossValidation struct {
	// Method is "leave-one-out" (every row predicted by the factors refined on the others) or
	// "5-fold" (for more than MaxLeaveOneOut rows: rows i, i+5, ... held out together).
	Method string `json:"method"`
	// MAPE is the mean relative error of the held-out rows' step times; NaN for fewer than two
	// rows.
	MAPE float64 `json:"mape"`
	// Worst is the largest of those errors; NaN for fewer than two rows.
	Worst float64 `json:"worst"`
	// Strength is the multiplier of the factors' priors the refinement used: chosen among
	// RefineStrengths by the median leave-one-out error when there are 2 to MaxLeaveOneOut
	// rows, 1 otherwise; +Inf means the prior's factors were kept: no refinement predicted the
	// held-out rows better than the prior by more than the standard error of the difference
	// (see RefineCV). MAPE, Median and Worst are then the prior's errors on the rows.
	Strength float64 `json:"strength"`
	// PriorMAPE is the mean relative error of the rows with the prior's factors.
	PriorMAPE float64 `json:"prior_mape"`
	// Median is the median of the held-out rows' relative errors (the prior's when it is
	// kept); NaN for fewer than two rows.
	Median float64 `json:"median"`
}

// CVWarn is the cross-validated error above which a refinement deserves a warning: the
// factors fitted to a model's profiles do not predict its other profiles to 15%.
const CVWarn = 0.15

// MaxLeaveOneOut is the most rows for which RefineCV holds out one row at a time and chooses
// the priors' strength; above it, the rows are plenty, the strength is 1 and the error is
// 5-fold.
const MaxLeaveOneOut = 20

// RefineStrengths are the multipliers of the factors' priors RefineCV chooses among, strongest
// first (+Inf keeps the prior's factors).
var RefineStrengths = []float64{math.Inf(1), 16, 4, 1, 0.25}

// RefineCV refines a model's factors on its rows (cases) as a regularised update of prior
// (RefineFrom), choosing how strongly the prior holds by leave-one-profile-out, and falls back
// to the prior's factors unless refinement predicts held-out rows clearly better:
//
//   - With 2 to MaxLeaveOneOut rows, for each finite strength of RefineStrengths every row is
//     predicted with the factors refined on the others, and the strength with the least
//     median relative error wins (ties to the stronger prior). The median, not the mean: the
//     few profiles SelectProfiles picks are extremes, one of which no strength predicts from
//     the others (a T5 3D run, 54-57% at every strength; a ResNet-18 two-server run, 18-31%),
//     and with the mean that one profile's small swings decided the strength
//     (benchmarks/perf.md, round 6). With more rows, strength 1 is scored 5-fold (rows i,
//     i+5, ... held out together).
//   - The prior is kept (Strength +Inf) unless the winner's held-out errors improve on the
//     prior's errors of the same rows by more than one standard error of their paired
//     difference: mean(d) > sd(d)/sqrt(n), d_i the prior's error on row i minus the held-out
//     one. A few profiles that refinement fits in turn can still mislead it (the five extreme
//     runs SelectProfiles picks): a gain within the noise of their leave-one-out errors does
//     not license moving away from the prior (benchmarks/perf.md, round 3).
//
// It returns the factors refined on every row at the chosen strength (prior when kept) and
// the cross-validated error (the prior's error of the rows when it is kept).
func RefineCV(cases []*Case, eff graph.Efficiency, prior graph.ModelFactors) (graph.ModelFactors, CrossValidation, error) {
	cv := CrossValidation{Method: "leave-one-out", MAPE: math.NaN(), Worst: math.NaN(), Strength: 1, PriorMAPE: math.NaN(), Median: math.NaN()}
	if len(cases) == 0 {
		return prior, cv, nil
	}
	if err := eff.Validate(); err != nil {
		return graph.ModelFactors{}, cv, err
	}
	predErr := func(c *Case, f graph.ModelFactors) (float64, error) {
		b, err := c.Placed.Time(eff, f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", c.Row.where(), err)
		}
		return math.Abs(b.Total/c.Row.StepTime - 1), nil
	}
	priorErrs := make([]float64, len(cases))
	for i, c := range cases {
		var err error
		if priorErrs[i], err = predErr(c, prior); err != nil {
			return graph.ModelFactors{}, cv, err
		}
	}
	cv.PriorMAPE, _ = errSummary(priorErrs)
	// heldOut returns the errors of the rows held out fold by fold.
	heldOut := func(strength float64, folds int) ([]float64, error) {
		errs := make([]float64, len(cases))
		for k := 0; k < folds; k++ {
			var train, test []int
			for i := range cases {
				if i%folds == k {
					test = append(test, i)
				} else {
					train = append(train, i)
				}
			}
			sub := make([]*Case, len(train))
			for j, i := range train {
				sub[j] = cases[i]
			}
			f, err := refine(sub, eff, prior, strength)
			if err != nil {
				return nil, err
			}
			for _, i := range test {
				if errs[i], err = predErr(cases[i], f); err != nil {
					return nil, err
				}
			}
		}
		return errs, nil
	}
	var best []float64 // the chosen strength's held-out errors
	switch n := len(cases); {
	case n < 2:
	case n <= MaxLeaveOneOut:
		var strengths []float64
		var errs [][]float64
		for _, st := range RefineStrengths {
			if math.IsInf(st, 1) {
				continue // the prior: weighed against the winner below
			}
			e, err := heldOut(st, n)
			if err != nil {
				return graph.ModelFactors{}, cv, err
			}
			strengths, errs = append(strengths, st), append(errs, e)
		}
		if i := leastMedian(errs); i >= 0 {
			cv.Strength, best = strengths[i], errs[i]
		}
	default:
		cv.Method = "5-fold"
		errs, err := heldOut(1, 5)
		if err != nil {
			return graph.ModelFactors{}, cv, err
		}
		best = errs
	}
	if best != nil && !clearlyBetter(priorErrs, best) {
		cv.Strength = math.Inf(1)
		best = priorErrs
	}
	if best != nil {
		cv.MAPE, cv.Worst = errSummary(best)
		cv.Median = Median(best)
	}
	f, err := refine(cases, eff, prior, cv.Strength)
	return f, cv, err
}

// errSummary returns the mean and the largest of errs.
func errSummary(errs []float64) (mean, worst float64) {
	for _, e := range errs {
		mean += e
		worst = math.Max(worst, e)
	}
	return mean / float64(len(errs)), worst
}

// leastMedian returns the index of the candidate (held-out errors per candidate strength,
// strongest prior first) with the least median error, ties (within 1e-9) to the first; -1
// when there is none.
func leastMedian(errs [][]float64) int {
	best, bestMedian := -1, math.Inf(1)
	for i, e := range errs {
		if med := Median(e); med < bestMedian-1e-9 {
			best, bestMedian = i, med
		}
	}
	return best
}

// Median returns the median of errs (the mean of the middle two for an even count), leaving
// errs as it is.
func Median(errs []float64) float64 {
	s := slices.Clone(errs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// clearlyBetter reports whether the errors b improve on the errors a of the same rows by more
// than one standard error of the paired difference a_i - b_i (at least two rows).
func clearlyBetter(a, b []float64) bool {
	n := float64(len(a))
	d := make([]float64, len(a))
	m := 0.0
	for i := range a {
		d[i] = a[i] - b[i]
		m += d[i]
	}
	m /= n
	ss := 0.0
	for _, v := range d {
		ss += (v - m) * (v - m)
	}
	se := math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	return m > se
}

// ConstantsDiffer returns the names of the constants among fitted (HardwareFit.Fitted) in which
// got and want differ by more than tol relatively, and "ring_layout" when their ring layouts
// differ.
func ConstantsDiffer(got, want graph.Efficiency, fitted []string, tol float64) []string {
	var out []string
	for _, name := range fitted {
		for _, ps := range hardwareParams {
			if ps.name == name {
				if g, w := *ps.get(&got), *ps.get(&want); math.Abs(g-w) > tol*math.Abs(w) {
					out = append(out, name)
				}
			}
		}
	}
	if got.RingLayout != want.RingLayout {
		out = append(out, "ring_layout")
	}
	return out
}

// WithMicroBatchSize returns rows with the plans of their tensor- or pipeline-parallel rows
// re-derived for micro-batches of s samples (0: one micro-batch per replica; s is cut to the
// replica's batch), for data that do not record it (the Rubick artifact's). Rows without
// tensor or pipeline parallelism are returned as they are. Errors wrap ErrBadRow.
func WithMicroBatchSize(rows []Row, s int) ([]Row, error) {
	if s < 0 {
		return nil, fmt.Errorf("%w: micro-batch size %d", ErrBadRow, s)
	}
	out := slices.Clone(rows)
	for i := range out {
		p := &out[i].Plan
		if p.TP <= 1 && p.PP <= 1 {
			continue
		}
		local := p.GlobalBatch / max(p.DP, 1)
		p.MicroBatches = 1
		if s > 0 && s < local {
			if local%s != 0 {
				return nil, fmt.Errorf("%w: %s: micro-batches of %d samples do not divide the %d samples of a replica", ErrBadRow, out[i].where(), s, local)
			}
			p.MicroBatches = local / s
		}
	}
	return out, nil
}

// FitMicroBatchSize chooses, among candidates (0 meaning one micro-batch per replica), the
// micro-batch size of a model's tensor- and pipeline-parallel runs that its profiles (rows, of
// one model) bear out best: for each, the plans are re-derived (WithMicroBatchSize), the model's
// factors refined from prior (RefineCV) and scored by their cross-validated error (in-sample
// for fewer than three rows); ties go to the earlier candidate. It returns the size and the
// prepared cases.
func FitMicroBatchSize(rows []Row, eff graph.Efficiency, prior graph.ModelFactors, candidates []int) (int, []*Case, error) {
	if len(candidates) == 0 {
		candidates = []int{0}
	}
	best, bestErr := -1, math.Inf(1)
	var bestCases []*Case
	for _, s := range candidates {
		rs, err := WithMicroBatchSize(rows, s)
		if err != nil {
			continue // a size that does not divide some replica's batch is not a candidate
		}
		cases, err := Prepare(rs)
		if err != nil {
			return 0, nil, err
		}
		f, cv, err := RefineCV(cases, eff, prior)
		if err != nil {
			return 0, nil, err
		}
		score := cv.MAPE
		if len(cases) < 3 || math.IsNaN(score) {
			score = 0
			for _, c := range cases {
				b, err := c.Placed.Time(eff, f)
				if err != nil {
					return 0, nil, err
				}
				score += math.Abs(b.Total/c.Row.StepTime - 1)
			}
			score /= float64(len(cases))
		}
		if score < bestErr-1e-9 {
			best, bestErr, bestCases = s, score, cases
		}
	}
	if best < 0 {
		return 0, nil, fmt.Errorf("%w: no candidate micro-batch size %v divides the replicas' batches", ErrBadRow, candidates)
	}
	return best, bestCases, nil
}
