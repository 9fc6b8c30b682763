package policy

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/restart"
	"github.com/gpusched/gpusched/internal/teeth"
	"pgregory.net/rapid"
)

// service stands for a learning predictor that the host keeps outside the policy: its answer
// for a job depends on how many jobs it was asked about before (what it has learned since), so
// a policy that asks again about a job after a restart gets another answer than the first.
// Sizes of some jobs are infinite (SJF's state must store them).
type service struct {
	truth map[gpusched.JobID]float64
	asked int
}

func (p *service) iterations(j *gpusched.Job) float64 {
	p.asked++
	n, ok := p.truth[j.ID]
	if !ok {
		n = 100
	}
	return n * float64(1+p.asked%3)
}

func (p *service) size(j *gpusched.Job) float64 {
	h := fnv.New32a()
	h.Write([]byte(j.ID))
	if h.Sum32()%7 == 0 {
		p.asked++
		return math.Inf(1)
	}
	return float64(j.GPUs) * j.StepTime * p.iterations(j)
}

// statefulPolicies are the stateful baselines, by name (sjf-bco-batch: SJF-BCO in batch mode).
var statefulPolicies = []string{"sjf", "srpt-oracle", "tiresias", "sjf-bco", "sjf-bco-batch", "list-scheduling", "random"}

// builder draws the options of the named policy and returns the builder of its runs on sc.
func builder(t *rapid.T, name string, sc *restart.Scene) func() restart.Builder {
	order := rapid.SampledFrom([]Order{DefaultOrder, Strict, Backfill}).Draw(t, "order")
	opt := Options{Order: order}
	truth := sc.Truth()
	switch name {
	case "sjf":
		return func() restart.Builder {
			p := &service{truth: truth}
			return func() (restart.Scheduler, error) { return newSJF(SJFOptions{Options: opt, Size: p.size}) }
		}
	case "srpt-oracle":
		// A cost that charges spreading, so that a job's time per iteration depends on the
		// cluster it was first seen on (the grown one packs it differently).
		for i := range sc.Jobs {
			sc.Jobs[i].Job.Features.Numeric = map[string]float64{ModelBytesFeature: 4e9}
		}
		o := OracleOptions{Options: opt, Cost: BCOCost{Alpha: 0.5},
			Margin:     rapid.SampledFrom([]float64{0, -1, 0.3}).Draw(t, "margin"),
			MinRunTime: rapid.SampledFrom([]float64{0, 20}).Draw(t, "min run time"),
			Iterations: func(id gpusched.JobID) float64 {
				if n, ok := truth[id]; ok {
					return n
				}
				return 100
			}}
		return func() restart.Builder {
			return func() (restart.Scheduler, error) { return newSRPTOracle(o) }
		}
	case "tiresias":
		o := TiresiasOptions{Options: opt, Thresholds: []float64{40, 300},
			PromoteKnob: rapid.SampledFrom([]float64{0, 1, 3}).Draw(t, "promote knob"),
			MinRunTime:  rapid.SampledFrom([]float64{0, 20}).Draw(t, "min run time")}
		return func() restart.Builder {
			return func() (restart.Scheduler, error) { return newTiresias(o) }
		}
	case "sjf-bco", "sjf-bco-batch":
		batch := name == "sjf-bco-batch"
		window := rapid.IntRange(1, 4).Draw(t, "window")
		return func() restart.Builder {
			p := &service{truth: truth}
			return func() (restart.Scheduler, error) {
				return newSJFBCO(SJFBCOOptions{Batch: batch, Window: window, Order: order, Iterations: p.iterations})
			}
		}
	case "list-scheduling":
		return func() restart.Builder {
			return func() (restart.Scheduler, error) { return newListScheduling(opt) }
		}
	case "random":
		seed := rapid.Uint64().Draw(t, "seed")
		return func() restart.Builder {
			return func() (restart.Scheduler, error) { return newRandom(RandomOptions{Order: order, Seed: seed}) }
		}
	}
	t.Fatalf("unknown policy %q", name)
	return nil
}

// restartProp: the named policy ("" draws one), saved at any host call and restored into a
// fresh one built with the same options, decides from then on as the uninterrupted one.
func restartProp(name string, restore restart.Restore) func(*rapid.T) {
	return func(t *rapid.T) {
		name := name
		if name == "" {
			name = rapid.SampledFrom(statefulPolicies).Draw(t, "policy")
		}
		sc := restart.Draw(t, restart.DrawOptions{})
		restart.Check(t, sc, builder(t, name, sc), restore)
	}
}

// Saved at any event and restored, every stateful baseline makes every later decision as the
// uninterrupted run does (rejected jobs, drained GPUs and a changing cluster included).
func TestRestartProperty(t *testing.T) {
	rapid.Check(t, restartProp("", restart.Reload))
}

// For each stateful baseline, a fresh policy that does not restore the state is caught.
func TestRestartPropertyHasTeeth(t *testing.T) {
	fresh := func(old, fresh restart.Scheduler) error { return nil }
	for _, name := range statefulPolicies {
		if !teeth.Fails(restartProp(name, fresh)) {
			t.Errorf("%s: a restart without the state was not caught", name)
		}
	}
}

// save returns s's saved state.
func save(t testing.TB, s gpusched.Stateful) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.SaveState(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Infinite sizes and Tiresias' "no first run yet" (NaN) are written as strings and read back.
func TestStateNonFiniteValues(t *testing.T) {
	s, _ := newSJF(SJFOptions{Size: func(j *gpusched.Job) float64 { return math.Inf(1) }})
	c := cluster(t, 4)
	v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: job("a", 4, 0, 1)}, {Job: job("b", 4, 0, 1)}}}
	if _, err := s.Schedule(v); err != nil {
		t.Fatal(err)
	}
	data := save(t, s)
	if !strings.Contains(string(data), `"+Inf"`) {
		t.Errorf("SJF state %s lacks +Inf", data)
	}
	r, _ := newSJF(SJFOptions{})
	if err := r.RestoreState(bytes.NewReader(data)); err != nil || r.sizes["a"] != math.Inf(1) {
		t.Errorf("restored sizes %v, %v", r.sizes, err)
	}
	ti, _ := newTiresias(TiresiasOptions{})
	if _, err := ti.Schedule(v); err != nil {
		t.Fatal(err)
	}
	data = save(t, ti)
	if !strings.Contains(string(data), `"NaN"`) {
		t.Errorf("Tiresias state %s lacks NaN", data)
	}
	tr, _ := newTiresias(TiresiasOptions{})
	if err := tr.RestoreState(bytes.NewReader(data)); err != nil || !math.IsNaN(tr.jobs["a"].firstRun) {
		t.Errorf("restored Tiresias: %v", err)
	}
}

// statefulNew returns a new policy of each stateful kind, as gpusched.Stateful.
func statefulNew() map[string]gpusched.Stateful {
	sjf, _ := newSJF(SJFOptions{})
	orc, _ := newSRPTOracle(OracleOptions{Iterations: func(gpusched.JobID) float64 { return 10 }})
	tir, _ := newTiresias(TiresiasOptions{})
	bco, _ := newSJFBCO(SJFBCOOptions{})
	batch, _ := newSJFBCO(SJFBCOOptions{Batch: true})
	ls, _ := newListScheduling(Options{})
	rnd, _ := newRandom(RandomOptions{Seed: 3})
	return map[string]gpusched.Stateful{"sjf": sjf, "srpt-oracle": orc, "tiresias": tir, "sjf-bco": bco,
		"sjf-bco-batch": batch, "list-scheduling": ls, "random": rnd}
}

// busy runs a policy for a few calls so that it has state to save.
func busy(t tb, s gpusched.Stateful) {
	c := cluster(t, 4, 4)
	a, b, d := job("a", 2, 0, 1), job("b", 4, 0, 1), job("d", 8, 5, 1)
	views := []gpusched.View{
		{Now: 0, Cluster: c, Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}},
		{Now: 100, Cluster: c, Running: []gpusched.JobStatus{{Job: a, GPUs: c.AllGPUs().Slice()[:2], Attained: 200, Executed: 100, Started: true, Iterations: 100}},
			Pending: []gpusched.JobStatus{{Job: b}, {Job: d}}},
	}
	for _, v := range views {
		if _, err := s.(gpusched.Scheduler).Schedule(v); err != nil {
			t.Fatal(err)
		}
	}
}

// Bad, foreign and other-version data is refused with ErrBadState and changes nothing.
func TestRestoreStateRejects(t *testing.T) {
	for name, s := range statefulNew() {
		busy(t, s)
		before := save(t, s)
		good := string(before)
		bad := map[string]string{
			"empty":         "",
			"garbage":       "{kind",
			"no kind":       `{"version": 1}`,
			"foreign":       `{"kind": "asrpt", "version": 1}`,
			"old version":   strings.Replace(good, `"version":1`, `"version":0`, 1),
			"next version":  strings.Replace(good, `"version":1`, `"version":2`, 1),
			"unknown field": strings.Replace(good, `"version":1`, `"version":1,"extra":true`, 1),
			"trailing data": good + "{}",
		}
		for what, data := range map[string]string{
			"sjf":             `"sizes":["NaN"],"ids":["a"]`,
			"srpt-oracle":     `"step_times":[0],"ids":["a"]`,
			"tiresias":        `"ids":["a"],"queues":[7],"entered":[0],"base_attained":[0],"base_executed":[0],"first_run":["NaN"],"promotions":[0]`,
			"sjf-bco":         `"mode":"batch","ids":[],"iterations":[]`,
			"sjf-bco-batch":   `"mode":"batch","ids":["a","a"],"iterations":[1,1]`,
			"list-scheduling": `"load":[-1],"last":0,"previous":[]`,
			"random":          `"source":"AAAA"`,
		} {
			if what == name {
				kind := strings.TrimSuffix(name, "-batch")
				bad["inconsistent"] = fmt.Sprintf(`{"kind":%q,"version":1,%s}`, kind, data)
			}
		}
		bad["columns"] = strings.Replace(good, `"ids":[`, `"ids":["zz",`, 1)
		if !strings.Contains(good, `"ids":[`) {
			delete(bad, "columns")
		}
		for what, data := range bad {
			err := s.RestoreState(strings.NewReader(data))
			if !errors.Is(err, gpusched.ErrBadState) {
				t.Errorf("%s, %s: got %v, want ErrBadState", name, what, err)
			}
			if after := save(t, s); !bytes.Equal(after, before) {
				t.Errorf("%s, %s: a failed restore changed the state", name, what)
			}
		}
		if err := s.RestoreState(strings.NewReader(good)); err != nil {
			t.Errorf("%s: its own state: %v", name, err)
		}
	}
}

// FuzzRestoreState: any bytes given to a stateful baseline's RestoreState are refused with
// ErrBadState or give a policy that schedules (valid decisions or errors, never a panic) and
// saves again.
func FuzzRestoreState(f *testing.F) {
	for name, s := range statefulNew() {
		busy(f, s)
		var b bytes.Buffer
		if err := s.SaveState(&b); err != nil {
			f.Fatal(name, err)
		}
		f.Add(b.Bytes())
	}
	c := cluster(f, 4, 4)
	a, b := job("a", 2, 0, 1), job("b", 4, 0, 1)
	views := []gpusched.View{
		{Now: 200, Cluster: c, Running: []gpusched.JobStatus{{Job: a, GPUs: c.AllGPUs().Slice()[2:4], Attained: 400, Executed: 200, Started: true, Iterations: 200}},
			Pending: []gpusched.JobStatus{{Job: b}}},
		{Now: 300, Cluster: cluster(f, 8), Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, s := range statefulNew() {
			if err := s.RestoreState(bytes.NewReader(data)); err != nil {
				if !errors.Is(err, gpusched.ErrBadState) {
					t.Fatalf("%s: error without ErrBadState: %v", name, err)
				}
				continue
			}
			for _, v := range views {
				d, err := s.(gpusched.Scheduler).Schedule(v)
				if err == nil {
					if err := d.Validate(v); err != nil {
						t.Fatalf("%s, t=%v: invalid decision: %v", name, v.Now, err)
					}
				}
			}
			if err := s.SaveState(io.Discard); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}
