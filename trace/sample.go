package trace

import (
	"math"
	"math/rand/v2"
)

// The generators' discrete sampling, shared by GeneratePhilly and GenerateRecurring.

// zipfCumulative returns the cumulative weights of (k+1)^-s for k < n.
func zipfCumulative(n int, s float64) []float64 {
	w := make([]float64, n)
	for k := range w {
		w[k] = math.Pow(float64(k+1), -s)
	}
	return cumulative(w)
}

// cumulative returns the running sums of w.
func cumulative(w []float64) []float64 {
	c := make([]float64, len(w))
	s := 0.0
	for i, x := range w {
		s += x
		c[i] = s
	}
	return c
}

// pick draws an index with probability proportional to the weights whose running sums are
// cum (binary search).
func pick(rng *rand.Rand, cum []float64) int {
	x := rng.Float64() * cum[len(cum)-1]
	lo, hi := 0, len(cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if cum[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
