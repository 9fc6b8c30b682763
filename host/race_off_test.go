//go:build !race

package host_test

// raceEnabled tells that the tests run under the race detector (see race_on_test.go).
const raceEnabled = false
