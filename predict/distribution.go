package predict

import (
	"math"
)

// Distribution is a predictive distribution of a job's total iterations: what the predictor
// believes about the job, calibrated on the jobs it has seen finish (see the package
// documentation, "Calibrated uncertainty"). Predictor.Distribution returns one; Given conditions
// it on the iterations a running job has done.
//
// In log-iterations it is continuous: the forest's (or the history's) weighted points, each
// holding its weight around itself, joined by a piecewise-linear distribution function, with
// exponential tails of scale ln(1 + Options.Tail) below the smallest and above the largest
// point (Pareto tails in iterations); and then recalibrated, H = G(F), where G maps the
// uncalibrated probability F to the frequency with which finished jobs of the same group,
// user or any group fell below that probability (a monotone map estimated at 40 levels).
//
// The zero Distribution is not usable; a Distribution is an immutable value, safe for
// concurrent use.
type Distribution struct {
	// The uncalibrated F in log-iterations is piecewise linear through knots: the points of
	// the groups in order, each point of group g at F = c0 + i*m (its weight centred on it).
	grp []dgroup
	s   float64   // scale of the exponential tails, in log-iterations
	g   []float64 // calibration: G's inverse at levels m/calLevels; nil is the identity
	// Conditioning on X > done: tail is true when done lies in the exponential tail where
	// the conditional is closed-form (log X - log done ~ Exp(s)); else q0 = H(log done).
	q0       float64
	tail     bool
	from     float64 // log done (tail)
	survival float64 // H-probability of running past done (1 unconditioned)
	done     float64 // iterations done (0 unconditioned)
	source   Source
}

// dgroup is a group of knots of equal weight.
type dgroup struct {
	x   []float64 // log-iterations, ascending (shared with the model: read only)
	pre []float64 // pre[i] = x[0] + ... + x[i-1] (shared: read only)
	m   float64   // weight of each knot
	c0  float64   // F at x[0]; F at x[i] is c0 + i*m
	// top is the integral of F's quantile function from F at the group's last knot to 1.
	top float64
}

func (g *dgroup) clast() float64 { return g.c0 + float64(len(g.x)-1)*g.m }

// upperAt returns the integral of F's quantile function from the group's knot i to 1.
func (g *dgroup) upperAt(i int) float64 {
	n := len(g.x)
	return g.top + g.m*((g.pre[n]-g.pre[i])-(g.x[i]+g.x[n-1])/2)
}

// calLevels is the number of probability steps at which a calibration map is kept: G's
// inverse is stored at the levels m/calLevels, m = 0..calLevels (every 2.5%, so the 5th, 10th,
// 25th, 50th, 75th, 90th and 95th percentiles are exact empirical quantiles).
const calLevels = 40

// minGroupWeight is the share of the total weight below which a group is ignored (its knots
// would not move the distribution function).
const minGroupWeight = 1e-9

// prefixSums returns pre[i] = x[0] + ... + x[i-1], len(x)+1 values.
func prefixSums(x []float64) []float64 {
	pre := make([]float64, len(x)+1)
	for i, v := range x {
		pre[i+1] = pre[i] + v
	}
	return pre
}

// newDistribution builds the continuous distribution of d's weighted points with tails of
// scale s, calibration g (nil: none) and source src, reusing the slices of buf. It returns
// false when no point has a positive weight.
func newDistribution(d *dist, s float64, g []float64, src Source, buf *Distribution) (Distribution, bool) {
	total := 0.0
	for gi, pts := range d.pts {
		if d.w[gi] > 0 && len(pts) > 0 {
			total += d.w[gi]
		}
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return Distribution{}, false
	}
	out := Distribution{s: s, g: g, survival: 1, source: src, from: math.NaN()}
	if buf != nil {
		out.grp = buf.grp[:0]
	}
	cum := 0.0
	for gi, pts := range d.pts {
		w := d.w[gi] / total
		if !(w > minGroupWeight) || len(pts) == 0 {
			continue
		}
		var pre []float64
		if d.pre != nil {
			pre = d.pre[gi]
		} else {
			pre = prefixSums(pts)
		}
		m := w / float64(len(pts))
		out.grp = append(out.grp, dgroup{x: pts, pre: pre, m: m, c0: cum + m/2})
		cum += w
	}
	if len(out.grp) == 0 {
		return Distribution{}, false
	}
	// The integrals from each group's last knot to 1, from the top down.
	last := &out.grp[len(out.grp)-1]
	b := 1 - last.clast()
	last.top = b * (last.x[len(last.x)-1] + s)
	for k := len(out.grp) - 2; k >= 0; k-- {
		gk, next := &out.grp[k], &out.grp[k+1]
		gk.top = next.upperAt(0) + (next.c0-gk.clast())*(gk.x[len(gk.x)-1]+next.x[0])/2
	}
	return out, true
}

// bounds returns the first and last knots and the weights of the tails below and above.
func (d *Distribution) bounds() (x0, xl, a, b float64) {
	f, l := &d.grp[0], &d.grp[len(d.grp)-1]
	return f.x[0], l.x[len(l.x)-1], f.c0, 1 - l.clast()
}

// firstAtLeastK returns the group and index of the first knot >= y (y <= the last knot).
func (d *Distribution) firstAtLeastK(y float64) (int, int) {
	g := search(len(d.grp), func(k int) bool { x := d.grp[k].x; return x[len(x)-1] >= y })
	return g, firstAtLeast(d.grp[g].x, y)
}

// lastAtMostK returns the group and index of the last knot <= y (y >= the first knot).
func (d *Distribution) lastAtMostK(y float64) (int, int) {
	g := search(len(d.grp), func(k int) bool { return d.grp[k].x[0] > y }) - 1
	return g, firstAbove(d.grp[g].x, y) - 1
}

// search returns the smallest k in [0, n) with f(k) true (n if none), f monotone.
func search(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// fcdf returns the uncalibrated distribution function at log-iterations y. At a value held
// by several knots (ties) it returns the middle of the jump.
func (d *Distribution) fcdf(y float64) float64 {
	x0, xl, a, b := d.bounds()
	switch {
	case math.IsNaN(y):
		return math.NaN()
	case y < x0:
		return a * math.Exp((y-x0)/d.s)
	case y > xl:
		return 1 - b*math.Exp(-(y-xl)/d.s)
	}
	gf, i := d.firstAtLeastK(y)
	gl, j := d.lastAtMostK(y)
	f, l := &d.grp[gf], &d.grp[gl]
	cf, cl := f.c0+float64(i)*f.m, l.c0+float64(j)*l.m
	if f.x[i] == y { // knots at y: from the first to the last
		return (cf + cl) / 2
	}
	// Between the knots (gl, j) < y < (gf, i).
	return cl + (y-l.x[j])/(f.x[i]-l.x[j])*(cf-cl)
}

// fsurv returns 1 - F(y), accurately in the upper tail.
func (d *Distribution) fsurv(y float64) float64 {
	_, xl, _, b := d.bounds()
	if y > xl {
		return b * math.Exp(-(y-xl)/d.s)
	}
	return 1 - d.fcdf(y)
}

// locate returns, for u strictly between the first and the last knots' probabilities, the
// group g holding the segment of u, the knot index i of its lower end in g (len(g.x)-1: the
// segment to the next group's first knot) and that segment's end points.
func (d *Distribution) locate(u float64) (g, i int, x1, c1, x2, c2 float64) {
	return d.locateFrom(u, -1)
}

// locateFrom is locate searching forward from group g0, at or before u's group (-1: a
// binary search).
func (d *Distribution) locateFrom(u float64, g0 int) (g, i int, x1, c1, x2, c2 float64) {
	if g0 < 0 {
		g = search(len(d.grp), func(k int) bool { return d.grp[k].c0 > u }) - 1
	} else {
		g = g0
		for g+1 < len(d.grp) && d.grp[g+1].c0 <= u {
			g++
		}
	}
	gr := &d.grp[g]
	n := len(gr.x)
	i = min(int((u-gr.c0)/gr.m), n-1)
	if g == len(d.grp)-1 {
		i = min(i, n-2) // u is below the last knot (rounding aside)
	}
	if i < n-1 {
		return g, i, gr.x[i], gr.c0 + float64(i)*gr.m, gr.x[i+1], gr.c0 + float64(i+1)*gr.m
	}
	next := &d.grp[g+1]
	return g, i, gr.x[n-1], gr.clast(), next.x[0], next.c0
}

// finv returns F's quantile function at u in [0, 1] (-Inf at 0, +Inf at 1).
func (d *Distribution) finv(u float64) float64 {
	x0, xl, a, b := d.bounds()
	switch {
	case u <= a:
		return x0 + d.s*math.Log(u/a)
	case u >= 1-b:
		return xl - d.s*math.Log((1-u)/b)
	}
	_, _, x1, c1, x2, c2 := d.locate(u)
	return x1 + (u-c1)/(c2-c1)*(x2-x1)
}

// upper returns the integral of F's quantile function over (u, 1), u in [0, 1].
func (d *Distribution) upper(u float64) float64 {
	v, _ := d.upperFrom(u, -1)
	return v
}

// upperFrom is upper locating u from group g0 on (see locateFrom); it also returns u's group
// (0 in the tails), a hint for a larger u.
func (d *Distribution) upperFrom(u float64, g0 int) (float64, int) {
	x0, xl, a, b := d.bounds()
	switch {
	case u >= 1:
		return 0, max(g0, 0)
	case u >= 1-b:
		t := 1 - u
		return t * (xl + d.s - d.s*math.Log(t/b)), max(g0, 0)
	case u <= a:
		v := d.grp[0].upperAt(0) + (a-u)*x0 - d.s*a
		if u > 0 {
			v += d.s * (u - u*math.Log(u/a))
		}
		return v, max(g0, 0)
	}
	g, i, x1, c1, x2, c2 := d.locateFrom(u, g0)
	xu := x1 + (u-c1)/(c2-c1)*(x2-x1)
	gr := &d.grp[g]
	var at2 float64 // the integral from the segment's upper knot
	if i < len(gr.x)-1 {
		at2 = gr.upperAt(i + 1)
	} else {
		at2 = d.grp[g+1].upperAt(0)
	}
	return at2 + (c2-u)*(xu+x2)/2, g
}

// ginv returns the calibration map's inverse G^-1 at q in [0, 1].
func (d *Distribution) ginv(q float64) float64 {
	if d.g == nil {
		return q
	}
	t := q * calLevels
	m := int(t)
	if m >= calLevels {
		return 1
	}
	if m < 0 {
		return 0
	}
	return d.g[m] + (t-float64(m))*(d.g[m+1]-d.g[m])
}

// gmap returns the calibration map G at u in [0, 1]; where G^-1 is flat, the middle of the
// jump.
func (d *Distribution) gmap(u float64) float64 {
	if d.g == nil {
		return u
	}
	lo := firstAtLeast(d.g, u)
	hi := firstAbove(d.g, u) - 1
	if lo <= hi {
		return float64(lo+hi) / 2 / calLevels
	}
	if lo == 0 || hi >= calLevels {
		return math.Max(0, math.Min(1, u)) // outside [0, 1]
	}
	return (float64(hi) + (u-d.g[hi])/(d.g[lo]-d.g[hi])) / calLevels
}

// hcdf returns the calibrated distribution function H = G(F) at log-iterations y.
func (d *Distribution) hcdf(y float64) float64 { return d.gmap(d.fcdf(y)) }

// hinv returns H's quantile function at q in [0, 1].
func (d *Distribution) hinv(q float64) float64 { return d.finv(d.ginv(q)) }

// hmeanAbove returns the mean log-iterations of H restricted to probabilities above q0 < 1.
func (d *Distribution) hmeanAbove(q0 float64) float64 {
	if d.g == nil {
		return d.upper(q0) / (1 - q0)
	}
	mass := 1 - q0
	sum := 0.0
	m := int(q0 * calLevels)
	u0 := d.ginv(q0)
	up0, hint := d.upperFrom(u0, -1)
	for ; m < calLevels; m++ {
		q1 := float64(m+1) / calLevels
		if q1 <= q0 {
			continue
		}
		u1 := d.g[m+1]
		var up1 float64
		up1, hint = d.upperFrom(u1, hint) // each level's integral serves two segments
		if u1-u0 < 1e-9 {
			sum += (q1 - q0) * d.finv((u0+u1)/2)
		} else {
			sum += (q1 - q0) * (up0 - up1) / (u1 - u0)
		}
		q0, u0, up0 = q1, u1, up1
	}
	return sum / mass
}

// Given returns the distribution of the total iterations of a job that has already run done
// iterations: the unconditioned distribution d came from, restricted to what lies above done
// and renormalised. Its quantiles, Point and Survival are non-decreasing (Survival:
// non-increasing) in done, and its quantiles lie above done. Far in the upper tail the
// remaining work is proportional to the work done: log(X/done) is exponential with the
// tail's scale, so Point is done * (1 + Options.Tail). A done that is NaN or not above 0 gives
// the unconditioned distribution.
func (d Distribution) Given(done float64) Distribution {
	d.q0, d.tail, d.from, d.survival, d.done = 0, false, math.NaN(), 1, 0
	if !(done > 0) || len(d.grp) == 0 {
		return d
	}
	d.done = done
	if math.IsInf(done, 1) {
		d.tail, d.from, d.survival = true, math.Inf(1), 0
		return d
	}
	y := math.Log(done)
	_, xl, _, b := d.bounds()
	top := 1 - b // G is affine on (top, 1): the tail of F is the tail of H
	if d.g != nil {
		top = math.Max(top, d.g[calLevels-1])
	}
	if y > xl && d.fcdf(y) >= top {
		d.tail, d.from = true, y
		rest := 1.0
		if d.g != nil {
			rest = (1.0 / calLevels) / (1 - d.g[calLevels-1])
		}
		d.survival = d.fsurv(y) * rest
		return d
	}
	d.q0 = d.hcdf(y)
	d.survival = 1 - d.q0
	return d
}

// Done returns the iterations the distribution is conditioned on (0: none).
//
// Deprecated: not needed by embedders (what the caller conditioned on); removed in v0.3.0.
func (d Distribution) Done() float64 { return d.done }

// Source returns where the distribution comes from.
func (d Distribution) Source() Source { return d.source }

// Survival returns the probability, under the unconditioned distribution, that the job runs
// past Done (1 when unconditioned).
func (d Distribution) Survival() float64 { return d.survival }

// Quantile returns the q-quantile of the total iterations (q in [0, 1]; 0 gives Done, 1 gives
// +Inf, NaN gives NaN). Below 1 it is finite: at most math.MaxFloat64, even for jobs whose
// observed lengths came near it.
func (d Distribution) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q) || len(d.grp) == 0:
		return math.NaN()
	case q <= 0:
		return d.done
	case q >= 1:
		return math.Inf(1)
	case d.tail:
		return expFinite(d.from - d.s*math.Log1p(-q))
	}
	return expFinite(d.hinv(d.q0 + q*(1-d.q0)))
}

// CDF returns the probability that the job's total iterations are at most iterations.
func (d Distribution) CDF(iterations float64) float64 {
	switch {
	case math.IsNaN(iterations) || len(d.grp) == 0:
		return math.NaN()
	case iterations <= d.done || iterations <= 0:
		return 0
	case math.IsInf(iterations, 1):
		return 1
	}
	y := math.Log(iterations)
	if d.tail {
		return -math.Expm1(-(y - d.from) / d.s)
	}
	return math.Max(0, (d.hcdf(y)-d.q0)/(1-d.q0))
}

// Point returns the point estimate: the geometric mean exp(E[ln X]), what minimises the
// expected squared log error; finite (at most math.MaxFloat64) unless given +Inf done.
func (d Distribution) Point() float64 {
	if len(d.grp) == 0 {
		return math.NaN()
	}
	if d.tail {
		return expFinite(d.from + d.s)
	}
	return expFinite(d.hmeanAbove(d.q0))
}

// expFinite returns e^x, at most math.MaxFloat64 for a finite x (+Inf for +Inf: a job given
// to have run forever; NaN for NaN).
func expFinite(x float64) float64 {
	if math.IsInf(x, 1) {
		return x
	}
	return math.Min(math.Exp(x), math.MaxFloat64)
}

// pit returns the probability integral transform of a total of iterations under the
// uncalibrated distribution: F(ln iterations), kept inside [pitEps, 1 - pitEps].
func (d *Distribution) pit(iterations float64) float64 {
	return math.Min(1-pitEps, math.Max(pitEps, d.fcdf(logIters(iterations))))
}

// pitEps bounds the PITs away from 0 and 1.
const pitEps = 1e-9
