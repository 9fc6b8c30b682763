package policy

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// The Gittins index against its definition evaluated by brute force over the sample.
func TestPropertyGittinsIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := &gittins{delta: rapid.Float64Range(0.5, 500).Draw(t, "delta")}
		sample := rapid.SliceOfN(rapid.Float64Range(1, 1000), 0, 60).Draw(t, "sample")
		half := len(sample) / 2
		for _, s := range sample[:half] {
			g.add(s)
		}
		g.merge()
		for _, s := range sample[half:] { // a second batch merges into the first
			g.add(s)
		}
		g.merge()
		a := rapid.Float64Range(0, 1100).Draw(t, "attained")
		var alive, done, cost float64
		for _, s := range sample {
			if s > a {
				alive++
				if s-a <= g.delta {
					done++
				}
				cost += math.Min(s-a, g.delta)
			}
		}
		want := 0.0
		if alive > 0 {
			want = (done / alive) / (cost / alive)
		}
		if got := g.index(a); math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("index(%v) = %v, want %v (sample %v, delta %v)", a, got, want, sample, g.delta)
		}
	})
}

// 2D-Gittins puts first, within a queue, the job likeliest to finish soon per unit of
// service: with half the jobs of size 100 and half of size 100,000 and Δ = 200, a job that
// has run 50 GPU-seconds (index 0.5/125) goes before one that has not run (0.5/150), though
// it arrived later; 2D-LAS serves the queue first come, first served.
func TestTiresiasGittinsOrder(t *testing.T) {
	c := cluster(t, 1)
	x, y := job("x", 1, 0, 1), job("y", 1, 5, 1)
	v := gpusched.View{Now: 10, Cluster: c, Pending: []gpusched.JobStatus{waiting(x), waiting(y)}}
	v.Pending[1].Attained, v.Pending[1].Executed, v.Pending[1].Started = 50, 50, true
	var sample []float64
	for range 10 {
		sample = append(sample, 100, 1e5)
	}
	gi, err := newTiresias(TiresiasOptions{Gittins: true, GittinsDelta: 200, GittinsSample: sample, Thresholds: []float64{1e6}})
	if err != nil {
		t.Fatal(err)
	}
	las, _ := newTiresias(TiresiasOptions{Thresholds: []float64{1e6}})
	if got := runs(decide(t, gi, v)); len(got) != 1 || got[0] != "y" {
		t.Errorf("2D-Gittins runs %v, want y", got)
	}
	if got := runs(decide(t, las, v)); len(got) != 1 || got[0] != "x" {
		t.Errorf("2D-LAS runs %v, want x", got)
	}
	// Learned from completions: with no prior sample every index is 0 until jobs finish.
	learn, _ := newTiresias(TiresiasOptions{Gittins: true, GittinsDelta: 200, Thresholds: []float64{1e6}})
	if got := runs(decide(t, learn, v)); len(got) != 1 || got[0] != "x" {
		t.Errorf("2D-Gittins without a sample runs %v, want x (arrival order)", got)
	}
	for range 10 {
		learn.JobCompleted(gpusched.Completion{Job: job("s", 1, 0, 1), Iterations: 100, StepTime: 1})
		learn.JobCompleted(gpusched.Completion{Job: job("l", 1, 0, 1), Iterations: 1e5, StepTime: 1})
	}
	if got := runs(decide(t, learn, v)); len(got) != 1 || got[0] != "y" {
		t.Errorf("2D-Gittins after 20 completions runs %v, want y", got)
	}
}

func TestTiresiasGittinsOptions(t *testing.T) {
	for _, opt := range []TiresiasOptions{
		{Gittins: true, GittinsDelta: -1},
		{Gittins: true, GittinsDelta: math.Inf(1)},
		{Gittins: true, GittinsSample: []float64{1, math.NaN()}},
		{GittinsDelta: 5},
	} {
		if _, err := newTiresias(opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
}

// 2D-Gittins through the mini host: valid decisions, every job finishes.
func TestPropertyTiresiasGittinsHost(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance(t, 12)
		s, err := newTiresias(TiresiasOptions{Gittins: true, Thresholds: []float64{20, 300}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := runHost(in.c, in.jobs, s, 100*len(in.jobs)+100)
		if err := checkRun(s, len(in.jobs), st, err, false); err != nil {
			t.Fatal(err)
		}
	})
}

// The learned distribution survives SaveState and RestoreState; a 2D-LAS scheduler refuses
// it, and a 2D-LAS state is unchanged by the new field.
func TestTiresiasGittinsState(t *testing.T) {
	a, _ := newTiresias(TiresiasOptions{Gittins: true, GittinsSample: []float64{5, 1}})
	a.JobCompleted(gpusched.Completion{Job: job("s", 2, 0, 1), Iterations: 10, StepTime: 1.5})
	b, _ := newTiresias(TiresiasOptions{Gittins: true})
	if err := b.RestoreState(bytes.NewReader(save(t, a))); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 5, 30}; !slices.Equal(b.gittins.sample, want) {
		t.Errorf("restored sample %v, want %v", b.gittins.sample, want)
	}
	las, _ := newTiresias(TiresiasOptions{})
	if err := las.RestoreState(bytes.NewReader(save(t, a))); err == nil {
		t.Error("a 2D-LAS scheduler took a Gittins state")
	}
	if bytes.Contains(save(t, las), []byte("gittins")) {
		t.Error("a 2D-LAS state mentions Gittins")
	}
}
