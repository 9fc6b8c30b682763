package trace

// NewTextReaderForTest exposes newTextReader to the external tests.
var NewTextReaderForTest = newTextReader

// What the deprecated wrappers of deprecated.go forward to, for the external tests (the
// wrappers go in v0.3.0).
var (
	MapJobForTest            = mapJob
	MapModelJobForTest       = mapModelJob
	PhillyFittedForTest      = phillyFitted
	PhillyMeanGPUTimeForTest = phillyMeanGPUTime
)

// The deprecated constants' values, for the external tests.
const (
	PhillyArrivalRateForTest = phillyArrivalRate
	PhillyTimeLayoutForTest  = phillyTimeLayout
)
