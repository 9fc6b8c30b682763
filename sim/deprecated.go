package sim

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// Percentile returns the p-quantile (p in [0, 1]) of the ascending values, interpolating
// linearly between order statistics. It returns 0 for no values.
//
// Deprecated: not needed by embedders (Summary holds the percentiles the simulator reports;
// gonum.org/v1/gonum/stat.Quantile computes others); removed in v0.3.0.
func Percentile(sorted []float64, p float64) float64 { return percentile(sorted, p) }

// BusyIntegral returns the integral of busy GPUs over the timeline, in GPU-seconds.
//
// Deprecated: use Summary.BusyGPUSeconds; removed in v0.3.0.
func (r *Result) BusyIntegral() float64 { return r.busyIntegral() }
