package host_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/predict"
	"github.com/gpusched/gpusched/topology"
)

// TestDeltaSizeLinear: the delta of a runtime (A-SRPT with its forest, 1,000 live jobs) after
// N steps (a job finishes, one arrives, A-SRPT decides) has size O(N): at most 20 KB a step
// beyond the delta of no step, which is under 40 KB (the estimator's accuracy record, global
// histories and calibration windows, written whole) or a twentieth of the base. A runtime
// whose base mark forgets its jobs (every held job written again) is caught.
func TestDeltaSizeLinear(t *testing.T) {
	if err := deltaGrowth(t, false); err != nil {
		t.Fatal(err)
	}
	if err := deltaGrowth(t, true); err == nil {
		t.Fatal("a delta that writes every held job again passed the size check")
	}
}

func deltaGrowth(t *testing.T, broken bool) error {
	c := cluster(t, topology.A100(), 64)
	f, err := asrpt.NewForest(predict.Options{Seed: 1, Trees: 4, MinSamples: 200, RetrainEvery: 1 << 30, Window: 500, MaxPending: 2000})
	if err != nil {
		t.Fatal(err)
	}
	s, err := asrpt.New(asrpt.Options{Estimator: f, Backfill: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	job := func(i int, at float64) gpusched.Job {
		g := rng.IntN(30)
		return gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: at, GPUs: 1 + rng.IntN(8), StepTime: 0.1 + rng.Float64(),
			Features: gpusched.Features{Group: fmt.Sprint("g", g), User: fmt.Sprint("u", g%7)}}
	}
	for i := range 600 {
		j := job(-1-i, 0)
		if err := f.Observe(&j, float64(100+rng.IntN(10000))); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := host.New(host.Options{Cluster: c, Scheduler: s, RestoreTime: 30, CheckpointEvery: 600})
	if err != nil {
		t.Fatal(err)
	}
	now, next := 0.0, 0
	submit := func() {
		if _, err := rt.Submit(job(next, now), float64(100+rng.IntN(10000))); err != nil {
			t.Fatal(err)
		}
		next++
	}
	decide := func() {
		rt.Deliver()
		if _, err := rt.Schedule(now); err != nil {
			t.Fatal(err)
		}
		for _, e := range rt.TakeDirty() {
			if err := rt.SetRate(e, now, gpusched.StepCost{Time: e.Job().StepTime}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 1000 {
		submit()
	}
	decide()
	var base bytes.Buffer
	if _, err := rt.SaveBase(&base); err != nil {
		t.Fatal(err)
	}
	if broken {
		host.ForgetBooks(rt)
	}
	size := func() int {
		var d bytes.Buffer
		if _, err := rt.SaveDelta(&d); err != nil {
			t.Fatal(err)
		}
		return d.Len()
	}
	empty := size()
	const perStep = 20000
	done := 0
	for _, n := range []int{0, 1, 10, 40} {
		for ; done < n; done++ {
			now++
			if err := rt.Finish(rt.Running()[0].ID(), now, float64(100+rng.IntN(10000)), false); err != nil {
				t.Fatal(err)
			}
			submit()
			decide()
		}
		d := size()
		t.Logf("%d steps: delta %d bytes (none: %d, base %d)", n, d, empty, base.Len())
		if d > empty+perStep*n || empty > max(base.Len()/20, 40000) {
			return fmt.Errorf("after %d steps the delta is %d bytes (%d with none; base %d bytes)", n, d, empty, base.Len())
		}
	}
	return nil
}
