package predict

import (
	"math"
	"slices"
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
	// Knots of the uncalibrated F in log-iterations: x ascending, c[k] = F(x[k]) strictly
	// ascending in (0, 1), top[k] the integral of F's quantile function over (c[k], 1).
	x, c, top []float64
	s         float64   // scale of the exponential tails, in log-iterations
	g         []float64 // calibration: G's inverse at levels m/calLevels; nil is the identity
	// Conditioning on X > done: tail is true when done lies in the exponential tail where
	// the conditional is closed-form (log X - log done ~ Exp(s)); else q0 = H(log done).
	q0       float64
	tail     bool
	from     float64 // log done (tail)
	survival float64 // H-probability of running past done (1 unconditioned)
	done     float64 // iterations done (0 unconditioned)
	source   Source
}

// calLevels is the number of probability steps at which a calibration map is kept: G's
// inverse is stored at the levels m/calLevels, m = 0..calLevels (every 2.5%, so the 5th, 10th,
// 25th, 50th, 75th, 90th and 95th percentiles are exact empirical quantiles).
const calLevels = 40

// newDistribution builds the continuous distribution of d's weighted points with tails of
// scale s, calibration g (nil: none) and source src, reusing the slices of buf. It returns
// false when no point has a positive weight.
func newDistribution(d *dist, s float64, g []float64, src Source, buf *Distribution) (Distribution, bool) {
	total := 0.0
	n := 0
	for gi, pts := range d.pts {
		if d.w[gi] > 0 && len(pts) > 0 {
			total += d.w[gi]
			n += len(pts)
		}
	}
	if !(total > 0) || math.IsInf(total, 0) || n == 0 {
		return Distribution{}, false
	}
	out := Distribution{s: s, g: g, survival: 1, source: src, from: math.NaN()}
	if buf != nil {
		out.x, out.c, out.top = buf.x[:0], buf.c[:0], buf.top[:0]
	}
	cum := 0.0
	for gi, pts := range d.pts {
		if !(d.w[gi] > 0) || len(pts) == 0 {
			continue
		}
		m := d.w[gi] / total / float64(len(pts))
		for _, v := range pts {
			c := cum + m/2
			cum += m
			prev := 0.0
			if k := len(out.c) - 1; k >= 0 {
				prev = out.c[k]
			}
			if !(c > prev && c < 1) {
				continue // a weight too small to move the distribution function: drop it
			}
			out.x = append(out.x, v)
			out.c = append(out.c, c)
		}
	}
	K := len(out.x)
	if K == 0 {
		return Distribution{}, false
	}
	out.top = slices.Grow(out.top, K)[:K]
	b := 1 - out.c[K-1]
	out.top[K-1] = b * (out.x[K-1] + s)
	for k := K - 2; k >= 0; k-- {
		out.top[k] = out.top[k+1] + (out.c[k+1]-out.c[k])*(out.x[k]+out.x[k+1])/2
	}
	return out, true
}

// fcdf returns the uncalibrated distribution function at log-iterations y. At a value held
// by several knots (ties) it returns the middle of the jump.
func (d *Distribution) fcdf(y float64) float64 {
	K := len(d.x)
	switch {
	case math.IsNaN(y):
		return math.NaN()
	case y < d.x[0]:
		return d.c[0] * math.Exp((y-d.x[0])/d.s)
	case y > d.x[K-1]:
		return 1 - (1-d.c[K-1])*math.Exp(-(y-d.x[K-1])/d.s)
	}
	lo := firstAtLeast(d.x, y) // first knot >= y
	hi := firstAbove(d.x, y) - 1
	if lo <= hi {
		return (d.c[lo] + d.c[hi]) / 2
	}
	// x[hi] < y < x[lo], hi = lo - 1.
	return d.c[hi] + (y-d.x[hi])/(d.x[lo]-d.x[hi])*(d.c[lo]-d.c[hi])
}

// fsurv returns 1 - F(y), accurately in the upper tail.
func (d *Distribution) fsurv(y float64) float64 {
	K := len(d.x)
	if y > d.x[K-1] {
		return (1 - d.c[K-1]) * math.Exp(-(y-d.x[K-1])/d.s)
	}
	return 1 - d.fcdf(y)
}

// finv returns F's quantile function at u in [0, 1] (-Inf at 0, +Inf at 1).
func (d *Distribution) finv(u float64) float64 {
	K := len(d.x)
	switch {
	case u <= d.c[0]:
		return d.x[0] + d.s*math.Log(u/d.c[0])
	case u >= d.c[K-1]:
		return d.x[K-1] - d.s*math.Log((1-u)/(1-d.c[K-1]))
	}
	k := firstAbove(d.c, u) - 1 // c[k] <= u < c[k+1]
	return d.x[k] + (u-d.c[k])/(d.c[k+1]-d.c[k])*(d.x[k+1]-d.x[k])
}

// upper returns the integral of F's quantile function over (u, 1), u in [0, 1].
func (d *Distribution) upper(u float64) float64 {
	K := len(d.x)
	switch {
	case u >= 1:
		return 0
	case u >= d.c[K-1]:
		t := 1 - u
		return t * (d.x[K-1] + d.s - d.s*math.Log(t/(1-d.c[K-1])))
	case u <= d.c[0]:
		a := d.c[0]
		v := d.top[0] + (a-u)*d.x[0] - d.s*a
		if u > 0 {
			v += d.s * (u - u*math.Log(u/a))
		}
		return v
	}
	k := firstAbove(d.c, u) - 1
	xu := d.x[k] + (u-d.c[k])/(d.c[k+1]-d.c[k])*(d.x[k+1]-d.x[k])
	return d.top[k+1] + (d.c[k+1]-u)*(xu+d.x[k+1])/2
}

// segMean returns the mean of F's quantile function over (u1, u2), u1 <= u2.
func (d *Distribution) segMean(u1, u2 float64) float64 {
	if u2-u1 < 1e-9 {
		return d.finv((u1 + u2) / 2)
	}
	return (d.upper(u1) - d.upper(u2)) / (u2 - u1)
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
	for ; m < calLevels; m++ {
		q1 := float64(m+1) / calLevels
		if q1 <= q0 {
			continue
		}
		u1 := d.g[m+1]
		sum += (q1 - q0) * d.segMean(u0, u1)
		q0, u0 = q1, u1
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
	if !(done > 0) || len(d.x) == 0 {
		return d
	}
	d.done = done
	if math.IsInf(done, 1) {
		d.tail, d.from, d.survival = true, math.Inf(1), 0
		return d
	}
	y := math.Log(done)
	K := len(d.x)
	top := d.c[K-1] // G is affine on (top, 1): the tail of F is the tail of H
	if d.g != nil {
		top = math.Max(top, d.g[calLevels-1])
	}
	if y > d.x[K-1] && d.fcdf(y) >= top {
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
func (d Distribution) Done() float64 { return d.done }

// Source returns where the distribution comes from.
func (d Distribution) Source() Source { return d.source }

// Survival returns the probability, under the unconditioned distribution, that the job runs
// past Done (1 when unconditioned).
func (d Distribution) Survival() float64 { return d.survival }

// Quantile returns the q-quantile of the total iterations (q in [0, 1]; 0 gives Done, 1 gives
// +Inf, NaN gives NaN).
func (d Distribution) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q) || len(d.x) == 0:
		return math.NaN()
	case q <= 0:
		return d.done
	case q >= 1:
		return math.Inf(1)
	case d.tail:
		return math.Exp(d.from - d.s*math.Log1p(-q))
	}
	return math.Exp(d.hinv(d.q0 + q*(1-d.q0)))
}

// CDF returns the probability that the job's total iterations are at most iterations.
func (d Distribution) CDF(iterations float64) float64 {
	switch {
	case math.IsNaN(iterations) || len(d.x) == 0:
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
// expected squared log error.
func (d Distribution) Point() float64 {
	if len(d.x) == 0 {
		return math.NaN()
	}
	if d.tail {
		return math.Exp(d.from + d.s)
	}
	return math.Exp(d.hmeanAbove(d.q0))
}

// pit returns the probability integral transform of a total of iterations under the
// uncalibrated distribution: F(ln iterations), kept inside [pitEps, 1 - pitEps].
func (d *Distribution) pit(iterations float64) float64 {
	return math.Min(1-pitEps, math.Max(pitEps, d.fcdf(logIters(iterations))))
}

// pitEps bounds the PITs away from 0 and 1.
const pitEps = 1e-9
