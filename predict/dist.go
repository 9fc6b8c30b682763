package predict

import (
	"math"
	"slices"
)

// dist is a discrete distribution of log-iterations: a sequence of groups of support points,
// each group ascending, every point of a group no larger than every point of the next, the
// points of group g sharing the weight w[g] equally. The forest's distribution has one group
// per bin (its representative points, weighted by the bin's vote); the history and prior
// distributions have a single group. newDistribution makes it continuous.
type dist struct {
	pts [][]float64
	w   []float64
	// pre, if set, holds each group's prefix sums (see prefixSums).
	pre [][]float64
}

// firstAbove returns the index of the first element of the ascending slice pts that is
// strictly greater than x.
func firstAbove(pts []float64, x float64) int {
	lo, hi := 0, len(pts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if pts[m] > x {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// pointDist returns the equal-weight distribution of the given log-iterations (sorted in
// place).
func pointDist(v []float64) dist {
	slices.Sort(v)
	return dist{pts: [][]float64{v}, w: []float64{1}}
}

// priorDist returns the configured prior: a log-normal distribution of iterations with median
// m iterations and log-space standard deviation sigma, discretised at 17 equal-weight
// quantiles.
func priorDist(m, sigma float64) dist {
	const n = 17
	v := make([]float64, n)
	for i := range v {
		p := (float64(i) + 0.5) / n
		v[i] = math.Log(m) + sigma*math.Sqrt2*math.Erfinv(2*p-1)
	}
	v[n/2] = math.Log(m) // exactly the median, despite rounding
	return pointDist(v)
}
