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
	// sums, if set, holds the sum of each group's points.
	sums []float64
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
// threshold; so are these (up to rounding). Groups wholly above after cost O(1) when d.sums is
// set, so a forest's summary costs O(bins + points per bin).
func (d *dist) summarize(after float64) summary {
	var s summary
	var sum float64
	for g, pts := range d.pts {
		k := d.first(g, after)
		if k == len(pts) || d.w[g] <= 0 {
			continue
		}
		u := d.w[g] / float64(len(pts))
		s.mass += u * float64(len(pts)-k)
		sum += u * d.sumFrom(g, k)
	}
	if !(s.mass > 0) {
		return summary{}
	}
	// One walk for the three percentiles: the smallest point at which the cumulative weight
	// reaches the target.
	targets := [3]float64{0.1 * s.mass, 0.5 * s.mass, 0.9 * s.mass}
	var out [3]float64
	t := 0
	cum := 0.0
	for g, pts := range d.pts {
		k := d.first(g, after)
		if k == len(pts) || d.w[g] <= 0 {
			continue
		}
		u := d.w[g] / float64(len(pts))
		n := len(pts) - k
		for t < 3 {
			// Points of this group needed to reach the target (at least 1).
			c := int(math.Ceil((targets[t]-cum)/u - 1e-9))
			if c > n {
				break
			}
			out[t] = pts[k+max(c, 1)-1]
			t++
		}
		if t == 3 {
			break
		}
		cum += u * float64(n)
	}
	for ; t < 3; t++ { // rounding left a target unreached: the largest point
		_, out[t] = d.bounds(after)
	}
	s.p10, s.p50, s.p90 = out[0], out[1], out[2]
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

// first returns the index of group g's first point strictly above after.
func (d *dist) first(g int, after float64) int {
	pts := d.pts[g]
	if len(pts) == 0 || pts[0] > after {
		return 0
	}
	return firstAbove(pts, after)
}

// sumFrom returns the sum of group g's points from index k on.
func (d *dist) sumFrom(g, k int) float64 {
	if k == 0 && d.sums != nil {
		return d.sums[g]
	}
	v := 0.0
	for _, x := range d.pts[g][k:] {
		v += x
	}
	return v
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
