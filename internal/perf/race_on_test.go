//go:build race

package perf

// raceEnabled tells that the tests run under the race detector, ten times slower: the
// refits of the shared data are left to the normal run.
const raceEnabled = true
