// Package teeth checks that a property test can fail: Fails runs a rapid property against a
// deliberately wrong implementation and reports whether rapid finds a counterexample. Tests use
// it to show that their invariants have teeth.
package teeth

import (
	"flag"
	"fmt"

	"pgregory.net/rapid"
)

// Fails reports whether rapid finds a counterexample to prop. It searches deterministically, a
// fixed sequence of 20 seeds with 1,000 cases each, leaves no fail file behind, and does not
// shrink the counterexample it finds (only its existence matters). It changes
// rapid's flags for the duration of the call, so it must not run in parallel with other rapid
// checks of the same test binary.
func Fails(prop func(*rapid.T)) bool {
	for name, val := range map[string]string{"rapid.nofailfile": "true", "rapid.checks": "1000", "rapid.shrinktime": "1ns"} {
		if f := flag.Lookup(name); f != nil {
			old := f.Value.String()
			_ = f.Value.Set(val)
			defer func() { _ = f.Value.Set(old) }()
		}
	}
	seed := flag.Lookup("rapid.seed")
	if seed != nil {
		old := seed.Value.String()
		defer func() { _ = seed.Value.Set(old) }()
	}
	for i := 1; i <= 20; i++ {
		if seed != nil {
			_ = seed.Value.Set(fmt.Sprint(i))
		}
		if failsOnce(prop) {
			return true
		}
	}
	return false
}

func failsOnce(prop func(*rapid.T)) (failed bool) {
	r := &recorder{}
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(stop); !ok {
				panic(e)
			}
		}
		failed = r.failed
	}()
	rapid.Check(r, prop)
	return r.failed
}

type stop struct{}

// recorder is a rapid.TB that records failure instead of failing the test.
type recorder struct{ failed bool }

func (r *recorder) Helper()               {}
func (r *recorder) Name() string          { return "teeth" }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Log(...any)            {}
func (r *recorder) Skipf(string, ...any)  { panic(stop{}) }
func (r *recorder) Skip(...any)           { panic(stop{}) }
func (r *recorder) SkipNow()              { panic(stop{}) }
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Error(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(stop{}) }
func (r *recorder) Fatal(...any)          { r.failed = true; panic(stop{}) }
func (r *recorder) FailNow()              { r.failed = true; panic(stop{}) }
func (r *recorder) Fail()                 { r.failed = true }
func (r *recorder) Failed() bool          { return r.failed }
