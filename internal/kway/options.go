package kway

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Mode selects how Options.Capacities constrain the part weights.
type Mode int

const (
	// Balanced treats Capacities as relative shares (nil: equal shares).
	// Part i aims at weight W*c_i/sum(c) and may exceed it by the fraction
	// Options.Imbalance; see Options for the exact limit. This is METIS's
	// balance model (ufactor=30 is Imbalance 0.03, tpwgts are the shares).
	Balanced Mode = iota

	// Hard treats Capacities as absolute maxima: part i never weighs more
	// than Capacities[i], and Imbalance is ignored. Parts may stay empty.
	// This is the placement model: parts are servers, capacities are their
	// free GPUs, vertices are workers of weight 1.
	Hard
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Balanced:
		return "balanced"
	case Hard:
		return "hard"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Method selects the partitioning algorithm.
type Method int

const (
	// KWay is multilevel k-way partitioning (the default): coarsen the whole
	// graph once, split the coarsest graph by recursive bisection, then
	// refine all k parts together with k-way FM at every level.
	KWay Method = iota

	// RecursiveBisection splits the graph in two with a full multilevel
	// bisection (2-way FM at every level), recurses on both halves, and
	// polishes the result with k-way FM on the original graph.
	RecursiveBisection
)

// String returns the method's name.
func (m Method) String() string {
	switch m {
	case KWay:
		return "kway"
	case RecursiveBisection:
		return "rb"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Options configures Partition and Exact. The zero value is not usable: K
// must be at least 1.
type Options struct {
	// K is the number of parts, at least 1.
	K int

	// Capacities has one entry per part, or is nil. In Balanced mode the
	// entries are relative shares (nil: all equal); in Hard mode they are
	// absolute maximum part weights and are required. Entries must be >= 0.
	Capacities []int64

	// Mode says how Capacities are read; the default is Balanced.
	Mode Mode

	// Imbalance is the tolerance of Balanced mode, as a fraction: with
	// total vertex weight W and shares c, part i may weigh at most
	//
	//	max(floor((1+Imbalance) * W*c_i/sum(c)), ceil(W*c_i/sum(c)) + w_max - 1)
	//
	// (floor taken with a relative tolerance of 1e-9 against rounding)
	//
	// where w_max is the largest vertex weight (a part with share 0 may
	// weigh 0). The second term keeps every input feasible: with it, any
	// vertex that does not fit in its part fits in some other. 0.03
	// matches METIS's default (ufactor=30); 0 asks for the tightest
	// balance. Ignored in Hard mode. With K = 2 a tolerance never gives a
	// larger cut than Imbalance 0 with the same Seed, Method and Quick:
	// Partition computes that balanced partition too and keeps the better.
	Imbalance float64

	// Seed drives every random choice; equal inputs and seeds give equal
	// results.
	Seed uint64

	// Method selects the algorithm; the default is KWay.
	Method Method

	// Trials is the number of independent multilevel runs (seeds derived
	// from Seed); the best cut is kept. 0 means 1.
	Trials int

	// Quick trades cut quality for speed, for latency-bound callers such
	// as online placement: KWay coarsens further, tries one multilevel
	// bisection per split of the initial partitioning instead of four,
	// and fewer greedy-growing starts. BENCHMARKS.md gives both.
	Quick bool

	// VCycles is the number of V-cycles run after the multilevel
	// partitioning (0: none, the default): each coarsens the graph again
	// without merging vertices of different parts, so that the coarsest
	// graph carries the current partition, and refines it at every level
	// on the way back (KaHIP's iterated multilevel scheme). A cycle never
	// makes the partition worse (its result is kept only where it is
	// better), and the cycles stop after one that does not improve it.
	// Each costs about a coarsening and a refinement of the whole graph;
	// BENCHMARKS.md gives the trade of time for cut.
	VCycles int

	// FlowRefinement, in Balanced mode, finishes the partition with
	// flow-based refinement (KaHIP's): for every pair of adjacent parts,
	// a region around their common boundary, as large as the tolerance
	// lets move between them, is cut again by a minimum cut (maximum
	// flow); the cut is applied where it respects the limits and cuts
	// less, and FM refinement follows. It never increases the cut, and is
	// ignored in Hard mode. It finds cuts FM cannot reach (up to a
	// quarter smaller on random geometric graphs into two parts) for
	// several times the CPU time on large graphs; BENCHMARKS.md gives the
	// trade.
	FlowRefinement bool
}

// Result is a partition of a graph.
type Result struct {
	// Part[v] is the part, in 0..K-1, of vertex v.
	Part []int
	// Cut is the total weight of the edges whose endpoints lie in
	// different parts.
	Cut int64
	// PartWeights[i] is the total vertex weight assigned to part i.
	PartWeights []int64
	// MaxWeights[i] is the largest weight part i was allowed (see
	// Options.Imbalance and Mode); PartWeights[i] <= MaxWeights[i].
	MaxWeights []int64
}

// maxParts bounds K to keep per-part arrays reasonable.
const maxParts = 1 << 20

// constraints are the validated per-part limits and targets.
type constraints struct {
	k       int
	limit   []int64   // hard maximum weight per part
	target  []float64 // desired weight per part; sums to total weight
	balance bool      // Balanced mode
	eps     float64   // Balanced tolerance
	quick   bool      // Options.Quick
	vcycles int       // Options.VCycles
	flow    bool      // Options.FlowRefinement
}

// checkOptions validates opts against g and derives the per-part limits
// and targets.
func checkOptions(g *Graph, opts Options) (constraints, error) {
	var c constraints
	k := opts.K
	if k < 1 || k > maxParts {
		return c, fmt.Errorf("%w: K = %d, want 1..%d", ErrInvalidOptions, k, maxParts)
	}
	if opts.Capacities != nil && len(opts.Capacities) != k {
		return c, fmt.Errorf("%w: %d capacities for K = %d parts", ErrInvalidOptions, len(opts.Capacities), k)
	}
	if opts.Trials < 0 {
		return c, fmt.Errorf("%w: Trials = %d is negative", ErrInvalidOptions, opts.Trials)
	}
	if opts.VCycles < 0 {
		return c, fmt.Errorf("%w: VCycles = %d is negative", ErrInvalidOptions, opts.VCycles)
	}
	if opts.Method != KWay && opts.Method != RecursiveBisection {
		return c, fmt.Errorf("%w: unknown method %v", ErrInvalidOptions, opts.Method)
	}
	var sumCap int64
	for i, cp := range opts.Capacities {
		if cp < 0 {
			return c, fmt.Errorf("%w: part %d has negative capacity %d", ErrInvalidOptions, i, cp)
		}
		if sumCap+cp < sumCap {
			return c, fmt.Errorf("%w: capacities overflow int64 at part %d", ErrInvalidOptions, i)
		}
		sumCap += cp
	}
	W := g.totalVW
	c.k = k
	c.quick = opts.Quick
	c.vcycles = opts.VCycles
	c.flow = opts.FlowRefinement
	c.limit = make([]int64, k)
	c.target = make([]float64, k)
	switch opts.Mode {
	case Balanced:
		eps := opts.Imbalance
		if math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 {
			return c, fmt.Errorf("%w: imbalance %v, want a finite value >= 0", ErrInvalidOptions, eps)
		}
		c.balance, c.eps = true, eps
		share := func(i int) float64 { return 1 / float64(k) }
		if opts.Capacities != nil {
			if sumCap == 0 {
				return c, fmt.Errorf("%w: all %d capacity shares are zero", ErrInvalidOptions, k)
			}
			share = func(i int) float64 { return float64(opts.Capacities[i]) / float64(sumCap) }
		}
		for i := range k {
			if s := share(i); s > 0 {
				c.target[i] = float64(W) * s
			}
		}
		balancedLimits(c.limit, c.target, eps, g.maxVW)
	case Hard:
		if opts.Capacities == nil {
			return c, fmt.Errorf("%w: Hard mode needs Capacities", ErrInvalidOptions)
		}
		if W > sumCap {
			return c, fmt.Errorf("%w: total vertex weight %d, total capacity %d", ErrCapacity, W, sumCap)
		}
		maxCap := slices.Max(opts.Capacities)
		for v, w := range g.vw {
			if w > maxCap {
				return c, fmt.Errorf("%w: vertex %d weighs %d, more than the largest capacity %d", ErrInfeasible, v, w, maxCap)
			}
		}
		copy(c.limit, opts.Capacities)
		// Targets: fill the largest parts first, so the initial split
		// uses as few parts as possible (fewer parts, smaller cut).
		order := make([]int, k)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(opts.Capacities[b], opts.Capacities[a]) })
		rem := W
		for _, i := range order {
			t := min(rem, opts.Capacities[i])
			c.target[i] = float64(t)
			rem -= t
		}
	default:
		return c, fmt.Errorf("%w: unknown mode %v", ErrInvalidOptions, opts.Mode)
	}
	return c, nil
}

// balancedLimits sets the limit of every part of Balanced mode from its
// target (0 for a part with share 0), the tolerance eps and the largest
// vertex weight; see Options.Imbalance.
func balancedLimits(limit []int64, target []float64, eps float64, maxVW int64) {
	for i, t := range target {
		if t == 0 {
			limit[i] = 0
			continue
		}
		lim := floorTol((1 + eps) * t)
		lim = math.Max(lim, math.Ceil(t)+float64(maxVW)-1)
		if lim >= math.MaxInt64/2 {
			limit[i] = math.MaxInt64 / 2
		} else {
			limit[i] = max(int64(lim), 0)
		}
	}
}

// balancedTwin returns, for K = 2 in Balanced mode with a tolerance, the
// same constraints with Imbalance 0: the balanced partition that
// Partition computes beside the relaxed one, keeping the better (see
// partitionOnce). loosens says whether the tolerance loosens some limit;
// where it does not, Partition runs with the balanced constraints alone,
// exactly as Imbalance 0 would. ok is false for other constraints.
func (c constraints) balancedTwin(maxVW int64) (bal constraints, loosens, ok bool) {
	if c.k != 2 || !c.balance || c.eps == 0 {
		return c, false, false
	}
	bal = c
	bal.eps = 0
	bal.limit = make([]int64, c.k)
	balancedLimits(bal.limit, c.target, 0, maxVW)
	return bal, !slices.Equal(bal.limit, c.limit), true
}

// floorTol is math.Floor with a relative tolerance of 1e-9, so that a limit that is a whole
// number in exact arithmetic (say 1.5 x 50/3 = 25) does not lose one to floating-point rounding
// depending on the order of the operations.
func floorTol(x float64) float64 {
	return math.Floor(x + 1e-9*math.Max(1, math.Abs(x)))
}
