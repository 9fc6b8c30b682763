//go:build race

package host_test

// raceEnabled tells that the tests run under the race detector (about ten times slower): the
// long property and leak tests then use smaller instances.
const raceEnabled = true
