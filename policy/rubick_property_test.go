package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// rubickTemplate is a reconfigurable job shape: a model, its own plan and the plans it
// allows. Some allowed plans do not fit an A800's memory (llama-7b unsharded on one GPU):
// Rubick must never choose them.
type rubickTemplate struct {
	model *graph.Model
	own   graph.Plan
	plans []graph.Plan
}

func rubickTemplates(t testing.TB) []rubickTemplate {
	t.Helper()
	zoo := func(name string) *graph.Model {
		m, err := graph.ZooModel(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// dp is a data-parallel plan of n replicas, each with per samples per micro-batch.
	dp := func(n, batch, per, zero int) graph.Plan {
		return graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: batch / n / per, GlobalBatch: batch, ZeRO: zero}
	}
	tp4 := func(n, batch int) graph.Plan {
		return graph.Plan{DP: n, TP: 4, PP: 1, MicroBatches: batch / n, GlobalBatch: batch}
	}
	bert, llama := zoo("bert-large"), zoo("llama-7b")
	return []rubickTemplate{
		{model: bert, own: dp(2, 64, 32, 0), plans: []graph.Plan{dp(1, 64, 32, 0), dp(4, 64, 16, 0), dp(4, 64, 16, 2), dp(8, 64, 8, 0)}},
		{model: llama, own: dp(4, 16, 1, 3), plans: []graph.Plan{
			dp(1, 16, 1, 0), // 7B parameters and Adam states unsharded: past 80 GB
			dp(2, 16, 1, 0), // still past it
			dp(8, 16, 1, 3),
			tp4(1, 16),
			tp4(2, 16),
		}},
	}
}

// rubickCase is a generated call: a cluster with CPU cores and host memory, and jobs.
type rubickCase struct {
	c       *topology.Cluster
	first   []gpusched.JobStatus // pending at the first call
	second  []gpusched.JobStatus // arriving before the second call
	secondT float64
}

func genRubickCase(t *rapid.T, tmpl []rubickTemplate) rubickCase {
	spec := topology.A800()
	spec.GPUs = rapid.SampledFrom([]int{4, 8}).Draw(t, "gpus")
	spec.CPUs = rapid.SampledFrom([]int{8, 16, 96}).Draw(t, "cpus")
	spec.HostMemory = rapid.SampledFrom([]float64{200e9, 1.6e12}).Draw(t, "memory")
	c, err := topology.Uniform(spec, rapid.IntRange(1, 3).Draw(t, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	host := func(label string) (int, float64) {
		return rapid.IntRange(0, 12).Draw(t, label+" cpus"), rapid.SampledFrom([]float64{0, 10e9, 60e9}).Draw(t, label+" memory")
	}
	job := func(i int, at float64) gpusched.JobStatus {
		tp := tmpl[rapid.IntRange(0, len(tmpl)-1).Draw(t, "model")]
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%02d", i)), Arrival: at, Model: tp.model, Plan: tp.own,
			GPUs: tp.own.Workers(), Guaranteed: rapid.Bool().Draw(t, "guaranteed")}
		j.CPUs, j.HostMemory = host("own")
		if rapid.IntRange(0, 4).Draw(t, "reconfigurable") > 0 {
			for _, p := range tp.plans {
				o := gpusched.PlanOption{Plan: p}
				o.CPUs, o.HostMemory = host("option")
				j.Plans = append(j.Plans, o)
			}
		}
		return gpusched.JobStatus{Job: j}
	}
	var rc rubickCase
	n1, n2 := rapid.IntRange(1, 6).Draw(t, "first"), rapid.IntRange(0, 6).Draw(t, "second")
	for i := range n1 {
		rc.first = append(rc.first, job(i, float64(i)))
	}
	rc.secondT = 100
	for i := range n2 {
		rc.second = append(rc.second, job(n1+i, 50+float64(i)))
	}
	rc.c = c
	return rc
}

// checkRubickDecision states what one Rubick decision must respect, counted here without
// Decision.Validate: every GPU at most once; on every server the CPU cores and host memory
// of the workers placed there, under their chosen plans, within what it has; each job on as
// many GPUs as its chosen plan has workers; and each chosen plan fits an A800's memory.
func checkRubickDecision(v gpusched.View, d gpusched.Decision) error {
	jobs := map[gpusched.JobID]*gpusched.Job{}
	for _, s := range slices.Concat(v.Running, v.Pending) {
		jobs[s.Job.ID] = s.Job
	}
	used := map[topology.GPUID]gpusched.JobID{}
	cpus := make([]int, v.Cluster.NumServers())
	mem := make([]float64, v.Cluster.NumServers())
	for _, a := range d.Run {
		j := jobs[a.Job]
		if j == nil {
			return fmt.Errorf("unknown job %q", a.Job)
		}
		o, ok := j.Option(a.PlanChoice)
		if !ok {
			return fmt.Errorf("job %q: plan choice %d out of range", a.Job, a.PlanChoice)
		}
		if len(a.GPUs) != o.GPUs() {
			return fmt.Errorf("job %q: %d GPUs for a plan of %d workers", a.Job, len(a.GPUs), o.GPUs())
		}
		comp, err := graph.Compile(j.Model, o.Plan)
		if err == nil {
			err = comp.CheckMemory(v.Cluster.Server(0).GPU)
		}
		if err != nil {
			return fmt.Errorf("job %q: chosen plan %v cannot run: %w", a.Job, o.Plan, err)
		}
		for _, g := range a.GPUs {
			if prev, dup := used[g]; dup {
				return fmt.Errorf("GPU %d given to %q and %q", g, prev, a.Job)
			}
			used[g] = a.Job
			s := v.Cluster.ServerOf(g)
			cpus[s] += o.CPUs
			mem[s] += o.HostMemory
		}
	}
	for s := range cpus {
		sp := v.Cluster.Server(s)
		if cpus[s] > sp.CPUs || mem[s] > sp.HostMemory*(1+1e-12) {
			return fmt.Errorf("server %d: %d of %d CPU cores, %.4g of %.4g bytes of host memory", s, cpus[s], sp.CPUs, mem[s], sp.HostMemory)
		}
	}
	return nil
}

// guaranteedRuns returns the assignments of the guaranteed jobs.
func guaranteedRuns(v gpusched.View, d gpusched.Decision) map[gpusched.JobID]gpusched.Assignment {
	g := map[gpusched.JobID]bool{}
	for _, s := range slices.Concat(v.Running, v.Pending) {
		g[s.Job.ID] = s.Job.Guaranteed
	}
	out := map[gpusched.JobID]gpusched.Assignment{}
	for _, a := range d.Run {
		if g[a.Job] {
			out[a.Job] = a
		}
	}
	return out
}

// rubickProp runs two calls of Rubick (the second with the first's jobs running under the
// plans and GPUs it chose) and checks every decision (checkRubickDecision) and that
// guaranteed jobs come first: the guaranteed jobs' assignments are the same when the waiting
// best-effort jobs are left out of the view.
func rubickProp(tmpl []rubickTemplate, cost gpusched.CostModel, broken rubickBroken) func(*rapid.T) {
	return func(t *rapid.T) {
		rc := genRubickCase(t, tmpl)
		fresh := func() *rubickPolicy {
			r, err := newRubick(RubickOptions{Cost: cost})
			if err != nil {
				t.Fatal(err)
			}
			r.broken = broken
			return r
		}
		full, lean := fresh(), fresh()
		v1 := gpusched.View{Cluster: rc.c, Pending: rc.first}
		call := func(r *rubickPolicy, v gpusched.View) gpusched.Decision {
			d, err := r.Schedule(v)
			if err != nil {
				t.Fatalf("schedule: %v", err)
			}
			if err := checkRubickDecision(v, d); err != nil {
				t.Fatalf("at %v: %v", v.Now, err)
			}
			return d
		}
		d1 := call(full, v1)
		call(lean, v1) // the same state as full's
		v2 := gpusched.View{Cluster: rc.c, Now: rc.secondT}
		byID := map[gpusched.JobID]*gpusched.Job{}
		for _, s := range rc.first {
			byID[s.Job.ID] = s.Job
		}
		started := map[gpusched.JobID]bool{}
		for _, a := range d1.Run {
			started[a.Job] = true
			v2.Running = append(v2.Running, gpusched.JobStatus{Job: byID[a.Job], GPUs: a.GPUs, PlanChoice: a.PlanChoice, Since: 0})
		}
		for _, s := range rc.first {
			if !started[s.Job.ID] {
				v2.Pending = append(v2.Pending, s)
			}
		}
		v2.Pending = append(v2.Pending, rc.second...)
		d2 := call(full, v2)
		v2lean := v2
		v2lean.Pending = slices.DeleteFunc(slices.Clone(v2.Pending), func(s gpusched.JobStatus) bool { return !s.Job.Guaranteed })
		d2lean := call(lean, v2lean)
		got, want := guaranteedRuns(v2, d2), guaranteedRuns(v2lean, d2lean)
		if len(got) != len(want) {
			t.Fatalf("%d guaranteed jobs run with the waiting best-effort jobs in view, %d without", len(got), len(want))
		}
		for id, a := range want {
			b := got[id]
			if b.PlanChoice != a.PlanChoice || !slices.Equal(b.GPUs, a.GPUs) {
				t.Fatalf("guaranteed job %q: %v (plan %d) with the best-effort jobs waiting, %v (plan %d) without", id, b.GPUs, b.PlanChoice, a.GPUs, a.PlanChoice)
			}
		}
	}
}

func TestPropertyRubick(t *testing.T) {
	tmpl := rubickTemplates(t)
	rapid.Check(t, rubickProp(tmpl, gpusched.DefaultCost(), rubickSound))
}

// TestPropertyRubickHasTeeth shows the property catches a Rubick that ignores the servers'
// CPU cores and host memory, one that orders guaranteed jobs among the best-effort ones, and
// one that takes plans that cannot run for fast ones.
func TestPropertyRubickHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("teeth: slow")
	}
	tmpl := rubickTemplates(t)
	cost := gpusched.DefaultCost()
	for _, b := range []rubickBroken{rubickIgnoresHost, rubickIgnoresGuarantees, rubickIgnoresMemory} {
		if !teeth.Fails(rubickProp(tmpl, cost, b)) {
			t.Errorf("the Rubick property does not catch broken variant %d", b)
		}
	}
}

// TestRubickWaitHeap: popping Rubick's wait heap gives the order of a stable sort of the
// waiting jobs as listed by (guaranteed first, order decreasing, arrival), the order Rubick
// took them in before the heap: ties (few distinct keys here, and NaN orders) come out as
// listed.
func TestRubickWaitHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		guar := rapid.Bool().Draw(t, "guar")
		orders := []float64{0.5, 1, 2, math.NaN()}
		var jobs []*rubickJob
		for i := range n {
			jobs = append(jobs, &rubickJob{idx: i, guar: rapid.Bool().Draw(t, "g"),
				order:   orders[rapid.IntRange(0, len(orders)-1).Draw(t, "order")],
				arrival: float64(rapid.IntRange(0, 3).Draw(t, "arrival"))})
		}
		want := slices.Clone(jobs)
		slices.SortStableFunc(want, func(a, b *rubickJob) int {
			if a.guar != b.guar && guar {
				if a.guar {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(b.order, a.order); c != 0 {
				return c
			}
			return cmp.Compare(a.arrival, b.arrival)
		})
		q := waitHeap{jobs: slices.Clone(jobs), guar: guar}
		q.init()
		for k := range want {
			if got := q.pop(); got != want[k] {
				t.Fatalf("pop %d: job %d, want job %d", k, got.idx, want[k].idx)
			}
		}
		if q.len() != 0 {
			t.Fatalf("%d jobs left", q.len())
		}
	})
}
