package predict

import (
	"fmt"
	"math"
)

// RMSLE returns the root mean squared logarithmic error of predictions against actual values:
// sqrt(mean((ln(1+pred) - ln(1+actual))^2)). It returns an error for slices of different or
// zero length, or a value that is negative, NaN or infinite.
func RMSLE(pred, actual []float64) (float64, error) {
	if err := checkMetricInput(pred, actual); err != nil {
		return 0, fmt.Errorf("RMSLE: %w", err)
	}
	s := 0.0
	for i := range pred {
		d := math.Log1p(pred[i]) - math.Log1p(actual[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(pred))), nil
}

// MdAPE returns the median absolute percentage error of predictions against actual values:
// the median of 100 * |pred - actual| / actual, in percent. It returns an error for slices of
// different or zero length, or a value that is negative, NaN or infinite, or an actual value
// of zero.
func MdAPE(pred, actual []float64) (float64, error) {
	if err := checkMetricInput(pred, actual); err != nil {
		return 0, fmt.Errorf("MdAPE: %w", err)
	}
	ape := make([]float64, len(pred))
	for i := range pred {
		if actual[i] == 0 {
			return 0, fmt.Errorf("MdAPE: actual value %d is zero", i)
		}
		ape[i] = 100 * math.Abs(pred[i]-actual[i]) / actual[i]
	}
	return median(ape), nil
}

func checkMetricInput(pred, actual []float64) error {
	if len(pred) != len(actual) || len(pred) == 0 {
		return fmt.Errorf("%d predictions for %d actual values (need the same, non-zero number)", len(pred), len(actual))
	}
	for i := range pred {
		for _, v := range [2]float64{pred[i], actual[i]} {
			if !finite(v) || v < 0 {
				return fmt.Errorf("value %d: %v is not a finite number >= 0", i, v)
			}
		}
	}
	return nil
}
