package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// formRecorder runs a policy for the decision-form property. With full it hides
// View.AcceptsKeepOthers from the policy, which must then answer in the full form; otherwise the
// policy may answer with a delta, which the simulator's host applies as it is. It logs every
// decision in its full form (expand) as a canonical string.
type formRecorder struct {
	inner  gpusched.Scheduler
	full   bool
	expand func(d gpusched.Decision, v gpusched.View) gpusched.Decision
	log    []string
	deltas int // decisions that came as deltas
	stops  int // jobs they stopped
}

func (f *formRecorder) Schedule(v gpusched.View) (gpusched.Decision, error) {
	in := v
	if f.full {
		in.AcceptsKeepOthers = false
	}
	d, err := f.inner.Schedule(in)
	if err != nil {
		return d, err
	}
	if d.KeepOthers {
		if f.full {
			return d, fmt.Errorf("t=%g: a delta decision for a view that does not accept one", v.Now)
		}
		f.deltas++
		f.stops += len(d.Stop)
	}
	f.log = append(f.log, canonDecision(f.expand(d, v)))
	return d, nil
}

func (f *formRecorder) JobCompleted(c gpusched.Completion) {
	if o, ok := f.inner.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

func (f *formRecorder) String() string { return host.SchedulerName(f.inner) }

// canonDecision writes a full-form decision with its assignments and rejections in job order:
// two decisions that ask the same of a host give the same string.
func canonDecision(d gpusched.Decision) string {
	run := make([]string, 0, len(d.Run))
	for _, a := range d.Run {
		run = append(run, fmt.Sprintf("%s@%v/%d", a.Job, a.GPUs, a.PlanChoice))
	}
	slices.Sort(run)
	rej := make([]string, 0, len(d.Rejected))
	for _, r := range d.Rejected {
		rej = append(rej, fmt.Sprintf("%s:%v", r.Job, r.Err))
	}
	slices.Sort(rej)
	return fmt.Sprintf("run %s; rejected %s; wake %v; keep-others %v; stop %v", strings.Join(run, " "), strings.Join(rej, " "), d.WakeAt, d.KeepOthers, d.Stop)
}

// expandStopForgotten is a deliberately wrong Expand: the jobs a delta stops keep running.
func expandStopForgotten(d gpusched.Decision, v gpusched.View) gpusched.Decision {
	d.Stop = nil
	return d.Expand(v)
}

// decisionFormsProperty: over random Philly-like workloads and clusters, a policy drawn from
// those named decides the same whether its host takes deltas or not: call by call, the
// decision it gives a host that takes deltas, expanded (expand), equals the full-form decision
// it gives a host that does not, and the job records of the two simulations are byte-equal.
func decisionFormsProperty(names []string, expand func(gpusched.Decision, gpusched.View) gpusched.Decision) func(*rapid.T) {
	return func(t *rapid.T) {
		name := rapid.SampledFrom(names).Draw(t, "policy")
		w := formsWorkload{
			servers: rapid.IntRange(2, 4).Draw(t, "servers"),
			seed:    rapid.Uint64Range(1, 1<<20).Draw(t, "seed"),
			jobs:    rapid.IntRange(10, 150).Draw(t, "jobs"),
			load:    rapid.Float64Range(0.8, 3).Draw(t, "load"),
		}
		checkDecisionForms(t, w, []string{name}, expand)
	}
}

// formsWorkload is a workload of checkDecisionForms: Philly-like jobs on A100 servers.
type formsWorkload struct {
	servers, jobs int
	seed          uint64
	load          float64
}

// checkDecisionForms checks the property of decisionFormsProperty for each policy named, on
// one workload.
func checkDecisionForms(t interface{ Fatalf(string, ...any) }, w formsWorkload, names []string, expand func(gpusched.Decision, gpusched.View) gpusched.Decision) {
	{
		seed := w.seed
		cfg := trace.DefaultPhillyConfig(w.jobs, seed)
		// Enough servers for the largest job (8 GPUs each).
		plain, err := trace.GeneratePhilly(cfg)
		if err != nil {
			t.Fatalf("%v", err)
		}
		servers := w.servers
		for _, r := range plain {
			servers = max(servers, (r.Job.GPUs+7)/8)
		}
		c, err := topology.Uniform(topology.A100(), servers)
		if err != nil {
			t.Fatalf("%v", err)
		}
		cfg.ArrivalRate = trace.RateForLoad(w.load, c.NumGPUs())
		cfg.Cluster = c
		recs, err := trace.GeneratePhilly(cfg)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for _, p := range policies() {
			if !slices.Contains(names, p.Name) {
				continue
			}
			var logs [2][]string
			var csvs [2]bytes.Buffer
			var rec [2]*formRecorder
			for k, full := range []bool{false, true} {
				s, err := p.New(policyEnv{Cluster: c, Jobs: recs, Cost: gpusched.DefaultCost(), Seed: seed, Restore: 30})
				if err != nil {
					t.Fatalf("%s: %v", p.Name, err)
				}
				ex := expand
				if full {
					ex = gpusched.Decision.Expand
				}
				rec[k] = &formRecorder{inner: s, full: full, expand: ex}
				res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: rec[k], Cost: gpusched.DefaultCost(), RestoreTime: 30})
				if err != nil {
					t.Fatalf("%s (full form %v): %v", p.Name, full, err)
				}
				if err := res.WriteCSV(&csvs[k]); err != nil {
					t.Fatalf("%v", err)
				}
				logs[k] = rec[k].log
			}
			for i := range min(len(logs[0]), len(logs[1])) {
				if logs[0][i] != logs[1][i] {
					t.Fatalf("%s: call %d: expanded delta\n%s\nfull form\n%s", p.Name, i, logs[0][i], logs[1][i])
				}
			}
			if len(logs[0]) != len(logs[1]) {
				t.Fatalf("%s: %d calls with deltas, %d in the full form", p.Name, len(logs[0]), len(logs[1]))
			}
			if !bytes.Equal(csvs[0].Bytes(), csvs[1].Bytes()) {
				t.Fatalf("%s: job records differ between the forms", p.Name)
			}
		}
	}
}

// TestPropertyDecisionForms runs decisionFormsProperty over every policy of the registry (one
// drawn per case, and each on one case of its own), and checks that asrpt does answer with
// deltas that stop jobs (so the property exercises both parts of the delta form).
func TestPropertyDecisionForms(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates policies twice per case")
	}
	checkDecisionForms(t, formsWorkload{servers: 2, jobs: 80, seed: 7, load: 2}, policyNames(), gpusched.Decision.Expand)
	rapid.Check(t, decisionFormsProperty(policyNames(), gpusched.Decision.Expand))
	c, err := topology.Uniform(topology.A100(), 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := trace.DefaultPhillyConfig(80, 7)
	cfg.ArrivalRate = trace.RateForLoad(2, c.NumGPUs())
	cfg.Cluster = c
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := asrptPolicy(t).New(policyEnv{Cluster: c, Jobs: recs, Cost: gpusched.DefaultCost(), Seed: 7, Restore: 30})
	if err != nil {
		t.Fatal(err)
	}
	r := &formRecorder{inner: s, expand: gpusched.Decision.Expand}
	if _, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: r, Cost: gpusched.DefaultCost(), RestoreTime: 30}); err != nil {
		t.Fatal(err)
	}
	if r.deltas == 0 || r.stops == 0 {
		t.Errorf("asrpt gave %d deltas stopping %d jobs in %d calls: the property does not exercise Stop", r.deltas, r.stops, len(r.log))
	}
}

// TestDecisionFormsCatchAForgottenStop: an Expand that forgets the jobs a delta stops is
// caught by the property (on asrpt, which answers hosts that take deltas with deltas).
func TestDecisionFormsCatchAForgottenStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the property until it fails")
	}
	if !teeth.Fails(decisionFormsProperty([]string{"asrpt"}, expandStopForgotten)) {
		t.Fatal("the decision-form property does not catch an Expand that forgets Stop")
	}
}

func asrptPolicy(t *testing.T) policySpec {
	for _, p := range policies() {
		if p.Name == "asrpt" {
			return p
		}
	}
	t.Fatal("no asrpt in the registry")
	return policySpec{}
}
