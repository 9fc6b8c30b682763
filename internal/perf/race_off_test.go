//go:build !race

package perf

// raceEnabled tells that the tests run under the race detector.
const raceEnabled = false
