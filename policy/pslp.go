package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// ErrLP reports a linear program that a PS policy could not solve: unbounded, or a numerical
// failure of the simplex method (lp.ErrSingular, lp.ErrBland, ...). The policies wrap it with
// the job's id and reject that job; the rest are scheduled.
var ErrLP = errors.New("policy: linear program failed")

// psShape is one allocation shape of a PS job: W workers and P shards.
type psShape struct{ W, P int }

// psSrv is what one server has free for a PS job: GPUs, CPU cores and host memory (cores
// math.MaxInt32 and memory +Inf when the server does not account them).
type psSrv struct {
	GPUs int
	CPUs int
	Mem  float64
}

// psPick is a server's local configuration in an allocation: M workers and N shards on it.
type psPick struct{ M, N int }

// psInstance is one job's placement problem at one decision: its shape, its per-task needs
// and the servers' free resources.
type psInstance struct {
	Shape            psShape
	WorkerCPU, PSCPU int
	WorkerMem, PSMem float64
	Servers          []psSrv
}

// cost is the locality objective of a local configuration: the shard-sized units (each P/p
// bytes under an even split) that server's NIC sends per direction and phase, m (p - n) + n
// (w - m): its workers' traffic to remote shards plus its shards' traffic to remote workers.
func (in *psInstance) cost(k psPick) float64 {
	w, p := in.Shape.W, in.Shape.P
	return float64(k.M*(p-k.N) + k.N*(w-k.M))
}

// fits reports whether configuration k fits server s's free resources.
func (in *psInstance) fits(s psSrv, k psPick) bool {
	return k.M <= s.GPUs &&
		k.M*in.WorkerCPU+k.N*in.PSCPU <= s.CPUs &&
		float64(k.M)*in.WorkerMem+float64(k.N)*in.PSMem <= s.Mem*(1+1e-12)
}

// configs lists the local configurations a server admits: 1 <= M <= min(free GPUs, W) workers
// and 0 <= N <= min(M, P) shards (a shard runs beside a worker of its job:
// ps.Placement), within its cores and memory.
func (in *psInstance) configs(s psSrv) []psPick {
	var out []psPick
	for m := 1; m <= min(s.GPUs, in.Shape.W); m++ {
		for n := 0; n <= min(m, in.Shape.P); n++ {
			if k := (psPick{m, n}); in.fits(s, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// psClass is a group of servers with the same free resources: interchangeable in the program.
type psClass struct {
	srv     psSrv
	members []int // server positions in psInstance.Servers
	picks   []psPick
}

// psLP is the LP relaxation of one job's placement program and its solution.
type psLP struct {
	classes []psClass
	// y[c][i] is the (fractional) number of servers of class c that take classes[c].picks[i].
	y [][]float64
	// Bound is the optimum of the relaxation: a lower bound on the integer program's.
	Bound float64
}

// errInfeasible is the relaxation's verdict that the shape does not fit the free resources
// (not an error of the job: it waits).
var errInfeasible = errors.New("policy: no fractional placement of the shape")

// solveLP builds and solves the relaxation of the mixed packing and covering program
//
//	minimise  sum_{c,k} cost(k) y_{c,k}
//	s.t.      sum_k y_{c,k} <= |c|          for every server class c  (packing)
//	          sum_{c,k} M_k y_{c,k} = W                               (cover the workers)
//	          sum_{c,k} N_k y_{c,k} = P                               (cover the shards)
//	          y >= 0,
//
// whose integer points are exactly the placements of the shape (servers grouped by their free
// resources, each taking at most one local configuration). It returns errInfeasible when no
// fractional placement exists, and an error wrapping ErrLP for unbounded or numerical
// failures.
func solveLP(in *psInstance) (*psLP, error) {
	if in.Shape.W < 1 || in.Shape.P < 1 {
		return nil, fmt.Errorf("%w: shape %d workers x %d shards", ErrLP, in.Shape.W, in.Shape.P)
	}
	var classes []psClass
	index := make(map[psSrv]int)
	for i, s := range in.Servers {
		if s.GPUs < 1 {
			continue
		}
		c, ok := index[s]
		if !ok {
			picks := in.configs(s)
			if len(picks) == 0 {
				continue
			}
			c = len(classes)
			index[s] = c
			classes = append(classes, psClass{srv: s, picks: picks})
		}
		classes[c].members = append(classes[c].members, i)
	}
	// Quick aggregate test: enough workers and shards in all.
	capW, capN := 0, 0
	for _, c := range classes {
		bm, bn := 0, 0
		for _, k := range c.picks {
			bm, bn = max(bm, k.M), max(bn, k.N)
		}
		capW += bm * len(c.members)
		capN += bn * len(c.members)
	}
	if capW < in.Shape.W || capN < in.Shape.P {
		return nil, errInfeasible
	}
	nv := 0
	for _, c := range classes {
		nv += len(c.picks)
	}
	// Standard form: y, one slack per class row, and one artificial variable per cover row
	// with a cost M larger than any placement's, so that the slacks and the artificials are
	// a feasible starting basis (the simplex skips its search for one) and the optimum drives
	// the artificials to zero whenever the cover can be met (big-M method).
	rows := len(classes) + 2
	cols := nv + len(classes) + 2
	A := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	cost := make([]float64, cols)
	v := 0
	big := 1.0
	for ci, c := range classes {
		for _, k := range c.picks {
			cost[v] = in.cost(k)
			big = max(big, cost[v])
			A.Set(ci, v, 1)
			A.Set(len(classes), v, float64(k.M))
			A.Set(len(classes)+1, v, float64(k.N))
			v++
		}
		A.Set(ci, nv+ci, 1)
		b[ci] = float64(len(c.members))
	}
	b[len(classes)] = float64(in.Shape.W)
	b[len(classes)+1] = float64(in.Shape.P)
	artW, artP := nv+len(classes), nv+len(classes)+1
	A.Set(len(classes), artW, 1)
	A.Set(len(classes)+1, artP, 1)
	// Every unit of cover costs at most big per server and a server covers at least one unit.
	M := 1e3 * big * float64(len(in.Servers)+1)
	cost[artW], cost[artP] = M, M
	basic := make([]int, 0, rows)
	for ci := range classes {
		basic = append(basic, nv+ci)
	}
	basic = append(basic, artW, artP)
	opt, x, err := simplexFrom(cost, A, b, basic)
	if err != nil {
		return nil, err
	}
	if x[artW] > 1e-7 || x[artP] > 1e-7 {
		return nil, errInfeasible
	}
	out := &psLP{classes: classes, Bound: max(opt, 0)}
	v = 0
	for _, c := range classes {
		row := make([]float64, len(c.picks))
		for i := range c.picks {
			row[i] = max(x[v], 0)
			v++
		}
		out.y = append(out.y, row)
	}
	return out, nil
}

// simplex solves min c.x, A x = b, x >= 0 with gonum's simplex method, turning its panics on
// degenerate input into errors and its errors into errInfeasible or ErrLP.
func simplex(c []float64, A mat.Matrix, b []float64) (opt float64, x []float64, err error) {
	return simplexFrom(c, A, b, nil)
}

// simplexFrom is simplex from a given feasible basis (nil: the solver finds one).
func simplexFrom(c []float64, A mat.Matrix, b []float64, basic []int) (opt float64, x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			opt, x, err = 0, nil, fmt.Errorf("%w: %v", ErrLP, r)
		}
	}()
	opt, x, err = lp.Simplex(c, A, b, 0, basic)
	switch {
	case errors.Is(err, lp.ErrInfeasible):
		return 0, nil, errInfeasible
	case err != nil:
		return 0, nil, fmt.Errorf("%w: %w", ErrLP, err)
	case math.IsNaN(opt) || math.IsInf(opt, 0):
		return 0, nil, fmt.Errorf("%w: optimum %v", ErrLP, opt)
	}
	return opt, x, nil
}

// marginals returns, for one server of class c, the probability of each local configuration
// under the randomized rounding: y_{c,k} / |c| (and 1 minus their sum for none), so that the
// expected number of servers of the class taking k is exactly y_{c,k}, and the expected
// locality cost of the rounded placement is the LP bound.
func (s *psLP) marginals(c int) []float64 {
	n := float64(len(s.classes[c].members))
	out := make([]float64, len(s.y[c]))
	sum := 0.0
	for i, y := range s.y[c] {
		out[i] = y / n
		sum += out[i]
	}
	if sum > 1 { // rounding error of the simplex
		for i := range out {
			out[i] /= sum
		}
	}
	return out
}

// round draws every server's local configuration independently from its class's marginals
// (randomized rounding). The result, indexed like psInstance.Servers, honours every packing
// constraint (one configuration per server, each within the server's resources) and covers
// the workers and shards in expectation.
func (s *psLP) round(in *psInstance, rng *rand.Rand) []psPick {
	picks := make([]psPick, len(in.Servers))
	for c := range s.classes {
		pr := s.marginals(c)
		for _, srv := range s.classes[c].members {
			u := rng.Float64()
			for i, q := range pr {
				if u < q {
					picks[srv] = s.classes[c].picks[i]
					break
				}
				u -= q
			}
		}
	}
	return picks
}

// repair turns a rounded placement into one with exactly W workers and P shards, keeping every
// server within its free resources: surplus workers leave the servers with the fewest (a worker
// hosting a shard last), surplus shards leave the servers where they cost the most; missing
// workers go to the servers with the most already (then to the emptiest free servers, most free
// GPUs first), missing shards to the servers with the most workers. It reports false when the
// shape cannot be completed.
func repair(in *psInstance, picks []psPick) bool {
	W, P := in.Shape.W, in.Shape.P
	tot := func() (m, n int) {
		for _, k := range picks {
			m += k.M
			n += k.N
		}
		return
	}
	order := make([]int, len(picks))
	for i := range order {
		order[i] = i
	}
	m, n := tot()
	// Too many workers: take them from the servers with the fewest workers.
	for m > W {
		best := -1
		for _, i := range order {
			if picks[i].M > 0 && (best < 0 || picks[i].M < picks[best].M) {
				best = i
			}
		}
		picks[best].M--
		if picks[best].N > picks[best].M {
			picks[best].N--
			n--
		}
		m--
	}
	// Too many shards: drop the one whose removal lowers the cost most.
	for n > P {
		best, bestGain := -1, math.Inf(-1)
		for _, i := range order {
			if picks[i].N == 0 {
				continue
			}
			g := in.cost(picks[i]) - in.cost(psPick{picks[i].M, picks[i].N - 1})
			if g > bestGain {
				best, bestGain = i, g
			}
		}
		picks[best].N--
		n--
	}
	// Too few workers: first beside the workers already placed (largest groups first), then on
	// new servers with the most free GPUs.
	for m < W {
		best := -1
		for _, i := range order {
			k := psPick{picks[i].M + 1, picks[i].N}
			if !in.fits(in.Servers[i], k) {
				continue
			}
			if best < 0 || picks[i].M > picks[best].M ||
				(picks[i].M == picks[best].M && in.Servers[i].GPUs > in.Servers[best].GPUs) {
				best = i
			}
		}
		if best < 0 {
			return false
		}
		picks[best].M++
		m++
	}
	// Too few shards: beside the largest groups of workers.
	for n < P {
		best := -1
		for _, i := range order {
			k := psPick{picks[i].M, picks[i].N + 1}
			if picks[i].M == 0 || k.N > k.M || !in.fits(in.Servers[i], k) {
				continue
			}
			if best < 0 || in.cost(k)-in.cost(picks[i]) < in.cost(psPick{picks[best].M, picks[best].N + 1})-in.cost(picks[best]) {
				best = i
			}
		}
		if best < 0 {
			return false
		}
		picks[best].N++
		n++
	}
	return true
}

// totalCost is the locality objective of a placement.
func (in *psInstance) totalCost(picks []psPick) float64 {
	c := 0.0
	for _, k := range picks {
		if k.M > 0 || k.N > 0 {
			c += in.cost(k)
		}
	}
	return c
}

// bruteForce returns the integer program's optimum by enumeration (tiny instances only, for
// tests): every assignment of a local configuration or none to every server with exactly W
// workers and P shards. ok is false when there is none.
func bruteForce(in *psInstance) (best float64, ok bool) {
	best = math.Inf(1)
	var rec func(i, m, n int, c float64)
	rec = func(i, m, n int, c float64) {
		if m > in.Shape.W || n > in.Shape.P {
			return
		}
		if i == len(in.Servers) {
			if m == in.Shape.W && n == in.Shape.P && c < best {
				best, ok = c, true
			}
			return
		}
		rec(i+1, m, n, c)
		for _, k := range in.configs(in.Servers[i]) {
			rec(i+1, m+k.M, n+k.N, c+in.cost(k))
		}
	}
	rec(0, 0, 0, 0)
	return best, ok
}
