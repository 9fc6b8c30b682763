// Package perf calibrates gpusched's performance model (package graph) to measured step times,
// from Go: Calibrate reads measurements (one row per measured configuration: model, GPU type,
// placement, parallel plan, step time; the CSV format of `gpusched perf`) and fits each GPU
// type's hardware constants and each model's factors into a graph.Calibration, which
// gpusched.NewCalibratedCost uses to time jobs and graph.ReadCalibration reads back from its
// JSON:
//
//	f, err := os.Open("measured.csv")
//	cal, err := perf.Calibrate(f, "measured.csv", nil)
//	cost := gpusched.NewCalibratedCost(cal)
//
// The model, what is fitted and how (the joint hardware fit, the regularised refinement of a
// model's factors and its cross-validation), the readers of the two public data sets and the
// evaluation are the tooling behind `gpusched perf` (fit, predict, evaluate, with its report
// per model); it lives in an internal package of the module, and its other exported names here
// are deprecated. `gpusched perf -h` and benchmarks/perf.md describe it.
package perf
