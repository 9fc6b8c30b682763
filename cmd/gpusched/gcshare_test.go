package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// sharedGCPercent keeps the heap goal of k simulations running at once within gcShareSlack of
// one simulation's at -gc-percent (unless that would take the target below Go's default, or
// -gc-percent if lower), is -gc-percent itself for one, and never rises as more run; two at
// the default meet issue #33's 1.2x.
func TestSharedGCPercent(t *testing.T) {
	if err := checkSharedGC(sharedGCPercent); err != "" {
		t.Error(err)
	}
	// A target that does not shrink with the simulations running is caught.
	if checkSharedGC(func(gc, _ int) int { return gc }) == "" {
		t.Error("a target that ignores the simulations running at once was not caught")
	}
}

func checkSharedGC(f func(gc, active int) int) string {
	for _, gc := range []int{minGCPercent, 50, 100, 200, 400, 1000, maxGCPercent} {
		if g := f(gc, 1); g != gc {
			return "one simulation: target changed"
		}
		prev := gc
		for k := 1; k <= 64; k++ {
			g := f(gc, k)
			floor := min(gc, sharedGCFloor)
			if g < floor || g > prev {
				return "target out of range or rising"
			}
			if g > floor && (100+g)*k*10 > gcShareSlack*(100+gc) {
				return "heap goal of the simulations together over the slack"
			}
			prev = g
		}
	}
	if g := f(defaultGCPercent, 2); (100+g)*2*10 > 12*(100+defaultGCPercent) {
		return "two simulations at the default over 1.2x one's heap goal"
	}
	return ""
}

// gcShare sets the target of the simulations running at once while -gc-percent applies, puts
// -gc-percent back when one runs (or none), and leaves a GOGC setting alone.
func TestGCShare(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	current := func() int {
		g := debug.SetGCPercent(-1)
		debug.SetGCPercent(g)
		return g
	}
	o := &options{gcPercent: 400, gcApplied: true, workers: 2}
	debug.SetGCPercent(400)
	g := gcShare{o: o}
	g.begin()
	if c := current(); c != 400 {
		t.Fatalf("one simulation: target %d, want 400", c)
	}
	g.begin()
	if c, want := current(), sharedGCPercent(400, 2); c != want {
		t.Fatalf("two simulations: target %d, want %d", c, want)
	}
	g.end()
	if c := current(); c != 400 {
		t.Fatalf("one simulation again: target %d, want 400", c)
	}
	g.end()
	if c := current(); c != 400 {
		t.Fatalf("none running: target %d, want 400", c)
	}
	debug.SetGCPercent(150) // as a GOGC variable sets it
	g = gcShare{o: &options{gcPercent: 400, workers: 2}}
	g.begin()
	g.begin()
	if c := current(); c != 150 {
		t.Fatalf("without -gc-percent applied: target %d, want GOGC's 150", c)
	}
}

// When a worker exits while another still simulates, gcShare collects before it raises the
// target: Go applies a new target to the heap its last collection marked, which still held the
// finished simulation's state, so the heap goal would otherwise be -gc-percent over both
// simulations' live heaps (how the merged main's compare -workers 2 peaked at 1.34-1.45x its
// largest single run: the last simulation grew to 5 x the pair's live heap).
func TestGCShareCollectsBeforeRaising(t *testing.T) {
	old := debug.SetGCPercent(400)
	defer debug.SetGCPercent(old)
	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	g := gcShare{o: &options{gcPercent: 400, gcApplied: true, workers: 2}}
	g.begin()
	g.begin()
	const finished = 128 << 20 // the finished simulation's state, marked live by the last collection
	func() {
		state := make([]byte, finished)
		for i := range state {
			state[i] = byte(i)
		}
		runtime.GC()
		runtime.KeepAlive(state)
	}()
	g.end()
	if got := goal(); got >= finished {
		t.Fatalf("heap goal %d MB after a worker left, want under the finished simulation's %d MB (collect before raising the target)", got>>20, finished>>20)
	}
	g.end()
}
