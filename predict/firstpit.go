package predict

import "math"

// Calibration on the first estimate (Options.CalibrationAtArrival): the predictor keeps, for
// every remembered job, the quantiles of the uncalibrated distribution it gave the job at its
// first prediction, and when the job finishes the calibration learns where its length fell in
// that distribution (what a scheduler acted on), instead of in the one the predictor would
// give it by then (which has seen the job's batch-mates finish, and is sharper for it).

// firstLevels are the levels at which a job's first uncalibrated distribution is kept: 0.005,
// the calibration levels m/calLevels (0 < m < calLevels) and 0.995.
var firstLevels = func() [calLevels + 1]float64 {
	var l [calLevels + 1]float64
	l[0], l[calLevels] = 0.005, 0.995
	for m := 1; m < calLevels; m++ {
		l[m] = float64(m) / calLevels
	}
	return l
}()

// firstQuantiles returns d's uncalibrated quantiles in log-iterations at firstLevels.
func firstQuantiles(d *Distribution) []float32 {
	q := make([]float32, len(firstLevels))
	for k, l := range firstLevels {
		q[k] = float32(d.finv(l))
	}
	return q
}

// firstPIT returns the probability integral transform of y (log-iterations) under the
// distribution whose quantiles at firstLevels are q: linear between them, with exponential
// tails of scale s beyond (those of a Distribution), inside [pitEps, 1 - pitEps]. It returns
// NaN for a malformed q (wrong length, not ascending, not finite) or a NaN y.
func firstPIT(q []float32, y, s float64) float64 {
	n := len(q)
	if n != len(firstLevels) || math.IsNaN(y) || !(s > 0) {
		return math.NaN()
	}
	for k, v := range q {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || k > 0 && v < q[k-1] {
			return math.NaN()
		}
	}
	var u float64
	switch lo, hi := float64(q[0]), float64(q[n-1]); {
	case y < lo:
		u = firstLevels[0] * math.Exp((y-lo)/s)
	case y > hi:
		u = 1 - (1-firstLevels[n-1])*math.Exp(-(y-hi)/s)
	default:
		// q[i] is the first quantile at or above y, q[j] the last at or below it: y lies
		// between two levels (j = i - 1), or on a run of equal quantiles (j >= i), whose
		// middle level it takes.
		i := 0
		for float64(q[i]) < y {
			i++
		}
		j := n - 1
		for float64(q[j]) > y {
			j--
		}
		if j >= i {
			u = (firstLevels[i] + firstLevels[j]) / 2
		} else {
			a, b := float64(q[j]), float64(q[i])
			u = firstLevels[j] + (y-a)/(b-a)*(firstLevels[i]-firstLevels[j])
		}
	}
	return math.Min(1-pitEps, math.Max(pitEps, u))
}
