package predict

import (
	"math"
	"slices"
)

// dist is a discrete distribution of log-iterations: a sequence of groups of support points,
// each group ascending, every point of a group no larger than every point of the next, the
// points of group g sharing the weight w[g] equally. The forest's distribution has one group
// per bin (its representative points, weighted by the bin's vote); the history and prior
// distributions have a single group.
type dist struct {
	pts [][]float64
	w   []float64
	// median selects the point functional: the weighted median (history and prior sources)
	// rather than the weighted mean of log-iterations (the forest's vote-weighted estimate).
	median bool
}

// summary describes the distribution truncated to the points strictly above after (a
// log-iteration; -Inf for no truncation): its total mass there, its point estimate and its
// 10th, 50th and 90th percentiles, all in log-iterations. The mass is 0 when no point lies
// above after; the other fields are then meaningless.
type summary struct {
	mass, point, p10, p50, p90 float64
}

// summarize computes the summary of d above after. The conditional mean of a distribution
// above a threshold, and each of its conditional quantiles, is non-decreasing in the
// threshold; so are these (up to rounding).
func (d *dist) summarize(after float64) summary {
	var s summary
	var sum float64
	for g, pts := range d.pts {
		if d.w[g] <= 0 || len(pts) == 0 {
			continue
		}
		k := firstAbove(pts, after)
		if k == len(pts) {
			continue
		}
		u := d.w[g] / float64(len(pts))
		s.mass += u * float64(len(pts)-k)
		for _, v := range pts[k:] {
			sum += u * v
		}
	}
	if !(s.mass > 0) {
		return summary{}
	}
	s.p10 = d.quantile(after, 0.1*s.mass)
	s.p50 = d.quantile(after, 0.5*s.mass)
	s.p90 = d.quantile(after, 0.9*s.mass)
	if d.median {
		s.point = s.p50
	} else {
		s.point = sum / s.mass
		// Keep the mean inside the support despite rounding.
		lo, hi := d.bounds(after)
		s.point = min(max(s.point, lo), hi)
	}
	return s
}

// quantile returns the smallest point above after at which the cumulative weight of the
// points above after reaches target (a weight, not a fraction).
func (d *dist) quantile(after, target float64) float64 {
	cum := 0.0
	last := math.NaN()
	const eps = 1e-12
	for g, pts := range d.pts {
		if d.w[g] <= 0 || len(pts) == 0 {
			continue
		}
		u := d.w[g] / float64(len(pts))
		for _, v := range pts[firstAbove(pts, after):] {
			cum += u
			last = v
			if cum >= target-eps*math.Max(1, target) {
				return v
			}
		}
	}
	return last
}

// bounds returns the smallest and largest weighted points above after.
func (d *dist) bounds(after float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for g, pts := range d.pts {
		if d.w[g] <= 0 || len(pts) == 0 || pts[len(pts)-1] <= after {
			continue
		}
		lo = min(lo, pts[firstAbove(pts, after)])
		hi = max(hi, pts[len(pts)-1])
	}
	return lo, hi
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
// place), summarised by its median.
func pointDist(v []float64) dist {
	slices.Sort(v)
	return dist{pts: [][]float64{v}, w: []float64{1}, median: true}
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
