package predict

import (
	"slices"
)

// binPoints is the number of representative points kept per bin: the within-bin quantiles
// (j + 1/2)/16 of the training targets that fell in the bin.
const binPoints = 16

// binning maps log-iterations to classes: quantile bins of the training targets.
type binning struct {
	// edges are the lower edges of bins 1..B-1: y is in bin c when edges[c-1] <= y <
	// edges[c]. Every bin holds at least one training target.
	edges []float64
	// points[c] are bin c's representative log-iterations, ascending.
	points [][]float64
	// pre[c] are the prefix sums of points[c] (see prefixSums).
	pre [][]float64
}

// fitBins cuts the targets y (log-iterations) into at most n bins at their quantiles k/n
// (fewer when targets tie) and keeps binPoints within-bin quantiles of each bin.
func fitBins(y []float64, n int) binning {
	s := slices.Clone(y)
	slices.Sort(s)
	var b binning
	for k := 1; k < n; k++ {
		e := s[k*len(s)/n]
		if e > s[0] && (len(b.edges) == 0 || e > b.edges[len(b.edges)-1]) {
			b.edges = append(b.edges, e)
		}
	}
	lo := 0
	for c := 0; c <= len(b.edges); c++ {
		hi := len(s)
		if c < len(b.edges) {
			hi = firstAtLeast(s, b.edges[c])
		}
		in := s[lo:hi]
		var pts []float64
		if len(in) <= binPoints {
			pts = slices.Clone(in)
		} else {
			pts = make([]float64, binPoints)
			for j := range pts {
				pts[j] = in[(2*j+1)*len(in)/(2*binPoints)]
			}
		}
		b.points = append(b.points, pts)
		b.pre = append(b.pre, prefixSums(pts))
		lo = hi
	}
	return b
}

// classes returns the number of bins.
func (b *binning) classes() int { return len(b.points) }

// class returns the bin of log-iterations y.
func (b *binning) class(y float64) int {
	return firstAbove(b.edges, y)
}

// firstAtLeast returns the index of the first element of the ascending slice s that is >= x.
func firstAtLeast(s []float64, x float64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
