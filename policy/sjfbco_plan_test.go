package policy

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// opaqueCost hides the cost model's type from the planner, which then keys its memo on exact
// placements only (as it does for a user's cost model).
type opaqueCost struct{ gpusched.CostModel }

// bcoPlanInstance draws a planning problem: a cluster of up to three kinds of server (servers
// of different sizes, a shared fabric, racks), jobs with and without a model, some tied to a
// kind of GPU, and GPUs busy until various times.
func bcoPlanInstance(t *rapid.T) (*topology.Cluster, []BCOJob, []float64, BCOPlanOptions) {
	specs := []topology.ServerSpec{topology.A100(), topology.H100(), topology.T4()}
	kinds := rapid.IntRange(1, len(specs)).Draw(t, "kinds")
	var racks []topology.Rack
	if rapid.Bool().Draw(t, "racks") {
		racks = []topology.Rack{{ID: "r0", Oversubscription: 1}, {ID: "r1", Oversubscription: 2}}
	}
	var servers []topology.Server
	for i := range rapid.IntRange(1, 6).Draw(t, "servers") {
		spec := specs[rapid.IntRange(0, kinds-1).Draw(t, "kind")]
		spec.GPUs = rapid.SampledFrom([]int{2, 4, 8}).Draw(t, "gpus")
		spec.NICs = min(spec.NICs, spec.GPUs)
		sv := topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec}
		if racks != nil {
			sv.Rack = racks[rapid.IntRange(0, 1).Draw(t, "rack")].ID
		}
		servers = append(servers, sv)
	}
	c, err := topology.New("plan", servers, racks)
	if err != nil {
		t.Fatal(err)
	}
	models := []string{"resnet50", "bert-large"}
	var jobs []BCOJob
	for i := range rapid.IntRange(1, 14).Draw(t, "jobs") {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), Arrival: float64(rapid.IntRange(0, 3).Draw(t, "arrival")),
			GPUs: rapid.IntRange(1, min(c.NumGPUs(), 12)).Draw(t, "demand"), StepTime: rapid.SampledFrom([]float64{0.1, 0.5, 1}).Draw(t, "step")}
		switch rapid.IntRange(0, 2).Draw(t, "what") {
		case 1:
			j.Features.Numeric = map[string]float64{ModelBytesFeature: 1e8}
		case 2:
			m, err := graph.ZooModel(rapid.SampledFrom(models).Draw(t, "model"))
			if err != nil {
				t.Fatal(err)
			}
			j.Model = m
			j.Plan = graph.Plan{DP: j.GPUs, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 16 * j.GPUs}
			if j.GPUs%2 == 0 && rapid.Bool().Draw(t, "tp") {
				j.Plan.DP, j.Plan.TP, j.Plan.GlobalBatch = j.GPUs/2, 2, 8*j.GPUs
			}
		}
		if !c.UniformGPUs() && rapid.IntRange(0, 3).Draw(t, "typed") == 0 {
			j.GPUType = c.GPU(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "type"))).Type()
		}
		if n := j.EligibleIn(c, c.AllGPUs()).Len(); j.GPUs > n {
			continue
		}
		jobs = append(jobs, BCOJob{Job: j, Iterations: float64(rapid.IntRange(1, 500).Draw(t, "iters"))})
	}
	var busy []float64
	if rapid.Bool().Draw(t, "busy") {
		busy = make([]float64, c.NumGPUs())
		for g := range busy {
			busy[g] = rapid.SampledFrom([]float64{0, 0, 3, 10, 40, 250}).Draw(t, "until")
		}
	}
	opt := BCOPlanOptions{
		EarliestFit: rapid.Bool().Draw(t, "earliest"),
		Lambda:      rapid.SampledFrom([]float64{0.25, 0.5, 1}).Draw(t, "lambda"),
		Tolerance:   rapid.SampledFrom([]float64{1e-3, 1e-6}).Draw(t, "tolerance"),
	}
	return c, jobs, busy, opt
}

// TestPropertySJFBCOPlanReplay: the planner's shortcuts (following recorded decisions within
// their range of theta, undoing assignments, the start trees, the per-kind and loaded memos of
// the default cost, the plan of the kappas below every demand made once, last and without
// tries) give the plan that planning every try afresh, scanning every server, with the cost
// model's answers memoised by exact placement on idle links only, every kappa by bisection in
// order, gives.
func TestPropertySJFBCOPlanReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, busy, opt := bcoPlanInstance(t)
		got, err := planWith(&bcoPlanner{}, c, jobs, busy, opt)
		ref := opt
		ref.Cost = opaqueCost{planCost{model: gpusched.DefaultCost()}}
		want, werr := planWith(&bcoPlanner{fresh: true, linear: true, reference: true}, c, jobs, busy, ref)
		if (err == nil) != (werr == nil) {
			t.Fatalf("error %v, afresh %v", err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan differs from the plan made afresh:\n%+v\n%+v", got, want)
		}
	})
}

// TestPropertySJFBCOPlanSequence: a planner reused for a sequence of problems (as SJFBCO's
// online mode does, with its memo) plans each as a new planner does.
func TestPropertySJFBCOPlanSequence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, busy, opt := bcoPlanInstance(t)
		memo := newStepMemo(c)
		opt.memo = &memo
		var p bcoPlanner
		for k := range 3 {
			sub := jobs[:rapid.IntRange(0, len(jobs)).Draw(t, "prefix")]
			if busy != nil && k > 0 {
				for g := range busy {
					busy[g] += float64(k)
				}
			}
			got, err := planWith(&p, c, sub, busy, opt)
			fresh := opt
			fresh.memo = nil
			want, werr := planWith(&bcoPlanner{fresh: true, linear: true, reference: true}, c, sub, busy, fresh)
			if (err == nil) != (werr == nil) {
				t.Fatalf("plan %d: error %v, afresh %v", k, err, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("plan %d differs from a new planner's:\n%+v\n%+v", k, got, want)
			}
		}
	})
}

// TestPropertyModelCostKindInvariant states what the per-kind memo relies on: under the default
// cost, a job's time per iteration on GPUs of one server, with idle links, is the same on every
// server of the same spec and every choice of its GPUs there.
func TestPropertyModelCostKindInvariant(t *testing.T) {
	cost := planCost{model: gpusched.DefaultCost()}
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, _, _ := bcoPlanInstance(t)
		for _, bj := range jobs {
			times := map[topology.ServerSpec]float64{}
			for s := range c.NumServers() {
				first, n := c.GPUsOf(s)
				if n < bj.Job.GPUs || !bj.Job.EligibleIn(c, c.AllGPUs()).Contains(first) {
					continue
				}
				perm := rapid.Permutation(seq(n)).Draw(t, "perm")[:bj.Job.GPUs]
				gpus := make([]topology.GPUID, len(perm))
				for i, k := range perm {
					gpus[i] = first + topology.GPUID(k)
				}
				slices.Sort(gpus)
				sc, err := cost.StepCost(bj.Job, c, gpus, nil)
				if err != nil {
					continue
				}
				spec := c.Server(s).ServerSpec
				if was, ok := times[spec]; ok && was != sc.Time {
					t.Fatalf("job %s: %v s per iteration on %v, %v on another server of the same spec", bj.Job.ID, sc.Time, gpus, was)
				}
				times[spec] = sc.Time
			}
		}
	})
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestPropertyPlanCostOwnLinks states what the planner's memo of loaded times relies on: under
// the default cost, a job's time per iteration depends only on the load on its own links
// (topology.Cluster.Links), not on the load elsewhere.
func TestPropertyPlanCostOwnLinks(t *testing.T) {
	cost := planCost{model: gpusched.DefaultCost()}
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, _, _ := bcoPlanInstance(t)
		var all []topology.Link
		for s := range c.NumServers() {
			all = append(all, topology.Link{Kind: topology.NICLink, Index: s}, topology.Link{Kind: topology.IntraLink, Index: s})
		}
		for r := range c.NumRacks() {
			all = append(all, topology.Link{Kind: topology.UplinkLink, Index: r})
		}
		for _, bj := range jobs {
			pool := bj.Job.EligibleIn(c, c.AllGPUs()).Slice()
			perm := rapid.Permutation(pool).Draw(t, "gpus")[:bj.Job.GPUs]
			gpus := slices.Clone(perm)
			slices.Sort(gpus)
			load := topology.LinkLoad{}
			for _, l := range all {
				if n := rapid.IntRange(0, 3).Draw(t, "load"); n > 0 {
					load[l] = float64(n)
				}
			}
			own := topology.LinkLoad{}
			for _, l := range c.Links(gpus) {
				if n, ok := load[l]; ok {
					own[l] = n
				}
			}
			a, err := cost.StepCost(bj.Job, c, gpus, load)
			b, err2 := cost.StepCost(bj.Job, c, gpus, own)
			if (err == nil) != (err2 == nil) || a.Time != b.Time {
				t.Fatalf("job %s on %v: %v s (%v) under %v, %v s (%v) under the load on its links %v", bj.Job.ID, gpus, a.Time, err, load, b.Time, err2, own)
			}
		}
	})
}

// TestPropertyPlanStateUndo: the planner's state after assignments and undos is the state of
// a fresh pass with the remaining assignments made, byMean stays ordered by (mean busy-until
// time, index), and byMean stably sorted by server size (the order of FA-FFP's fallback) is
// the order by (size descending, mean, index).
func TestPropertyPlanStateUndo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, _, busy, _ := bcoPlanInstance(t)
		if busy == nil {
			busy = make([]float64, c.NumGPUs())
		}
		var p bcoPlanner
		if err := p.reset(c, nil, busy, BCOPlanOptions{Cost: gpusched.FixedCost{}, Lambda: 0.5, Tolerance: 1e-3, MaxBisections: 60}); err != nil {
			t.Fatal(err)
		}
		type op struct {
			gpus []topology.GPUID
			end  float64
		}
		var ops []op
		for _, g := range rapid.SliceOfN(rapid.IntRange(1, 8), 0, 3).Draw(t, "trees") {
			p.st.tree(g)
		}
		for range rapid.IntRange(1, 12).Draw(t, "ops") {
			if len(ops) > 0 && rapid.IntRange(0, 2).Draw(t, "undo") == 0 {
				ops = ops[:rapid.IntRange(0, len(ops)-1).Draw(t, "to")]
				p.st.undo(len(ops))
			} else {
				n := rapid.IntRange(1, c.NumGPUs()).Draw(t, "n")
				gpus := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")[:n]
				end := 0.0
				for _, g := range gpus {
					end = max(end, p.st.free[g])
				}
				end += rapid.SampledFrom([]float64{0, 1, 7.5, 100}).Draw(t, "d")
				ops = append(ops, op{gpus, end})
				p.st.assign(p.single, gpus, end)
			}
			var want planState
			want.init(c, busy)
			for _, o := range ops {
				want.assign(p.single, o.gpus, o.end)
			}
			if !slices.Equal(p.st.free, want.free) || !slices.Equal(p.st.ids, want.ids) || !slices.Equal(p.st.sum, want.sum) || !slices.Equal(p.st.byMean, want.byMean) {
				t.Fatalf("after %d assignments: state %v %v %v %v, afresh %v %v %v %v", len(ops),
					p.st.free, p.st.ids, p.st.sum, p.st.byMean, want.free, want.ids, want.sum, want.byMean)
			}
			for g := range p.st.trees {
				if !p.st.trees[g].built {
					continue
				}
				tr := p.st.tree(g) // brought up to date
				for s := range tr.size {
					if got, want := tr.at(s), p.st.startOf(s, g); got != want {
						t.Fatalf("tree %d: server %d starts at %v, state says %v", g, s, got, want)
					}
				}
				for k := 1; k < tr.size; k++ {
					if tr.t[k] != min(tr.t[2*k], tr.t[2*k+1]) {
						t.Fatalf("tree %d: node %d is %v, its children %v and %v", g, k, tr.t[k], tr.t[2*k], tr.t[2*k+1])
					}
				}
				from := rapid.IntRange(0, tr.n).Draw(t, "from")
				x := rapid.SampledFrom([]float64{0, 3, 50, 1000, math.Inf(1)}).Draw(t, "x")
				want := -1
				for s := from; s < tr.n; s++ {
					if tr.at(s) <= x {
						want = s
						break
					}
				}
				if got := tr.next(from, x); got != want {
					t.Fatalf("tree %d: next(%d, %v) = %d, want %d", g, from, x, got, want)
				}
			}
			if !slices.IsSortedFunc(p.st.byMean, p.st.meanLess) {
				t.Fatalf("byMean %v is not ordered", p.st.byMean)
			}
			if perm := slices.Sorted(slices.Values(p.st.byMean)); !slices.Equal(perm, seq(c.NumServers())) {
				t.Fatalf("byMean %v is not a permutation of the servers", p.st.byMean)
			}
			for s := range c.NumServers() {
				gs := p.st.sorted(s)
				if !slices.IsSortedFunc(gs, func(a, b topology.GPUID) int {
					if c := cmpFloat(p.st.free[a], p.st.free[b]); c != 0 {
						return c
					}
					return int(a) - int(b)
				}) {
					t.Fatalf("server %d's GPUs %v are not ordered", s, gs)
				}
			}
			bySize := slices.Clone(p.st.byMean)
			slices.SortStableFunc(bySize, func(a, b int) int { return p.st.size(b) - p.st.size(a) })
			explicit := seq(c.NumServers())
			slices.SortFunc(explicit, func(a, b int) int {
				if d := p.st.size(b) - p.st.size(a); d != 0 {
					return d
				}
				if c := cmpFloat(p.st.mean(a), p.st.mean(b)); c != 0 {
					return c
				}
				return a - b
			})
			if !slices.Equal(bySize, explicit) {
				t.Fatalf("byMean by size %v, by (size, mean, index) %v", bySize, explicit)
			}
		}
		// A new pass on the same cluster starts from the last pass's orders: same state.
		for g := range busy {
			busy[g] = rapid.SampledFrom([]float64{0, 2, 5, 40, 300}).Draw(t, "next")
		}
		p.st.init(c, busy)
		var want planState
		want.init(c, busy)
		if !slices.Equal(p.st.free, want.free) || !slices.Equal(p.st.ids, want.ids) || !slices.Equal(p.st.sum, want.sum) || !slices.Equal(p.st.byMean, want.byMean) {
			t.Fatalf("state of a second pass %v %v %v %v, afresh %v %v %v %v",
				p.st.free, p.st.ids, p.st.sum, p.st.byMean, want.free, want.ids, want.sum, want.byMean)
		}
	})
}

func seq32(n int) []topology.GPUID {
	out := make([]topology.GPUID, n)
	for i := range out {
		out[i] = topology.GPUID(i)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestPropertyLinksOf: the planner's links of a sorted placement are the cluster's.
func TestPropertyLinksOf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, _, busy, opt := bcoPlanInstance(t)
		var p bcoPlanner
		opt.Cost = gpusched.FixedCost{}
		if err := p.reset(c, nil, busy, opt); err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, c.NumGPUs()).Draw(t, "n")
		gpus := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")[:n]
		slices.Sort(gpus)
		if got, want := p.linksOf(gpus), c.Links(gpus); !slices.Equal(got, want) {
			t.Fatalf("links of %v: %v, cluster's %v", gpus, got, want)
		}
	})
}

// serverSpeedCost is a cost model under which a job's time per iteration depends on the
// server of its first GPU (so that a server where the job starts later may end it earlier).
type serverSpeedCost struct{ factor []float64 }

func (s serverSpeedCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, _ topology.LinkLoad) (gpusched.StepCost, error) {
	return gpusched.StepCost{Time: j.StepTime * s.factor[c.ServerOf(gpus[0])]}, nil
}

// TestPropertySJFBCOStartTrees: FA-FFP's earliest-fit search with the start trees chooses as a
// scan of every server does, also when servers differ in speed (its second pass then finds
// servers that start later and end earlier).
func TestPropertySJFBCOStartTrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, busy, opt := bcoPlanInstance(t)
		factor := make([]float64, c.NumServers())
		for s := range factor {
			factor[s] = rapid.SampledFrom([]float64{0.25, 0.5, 1, 1, 2}).Draw(t, "factor")
		}
		if busy == nil {
			busy = make([]float64, c.NumGPUs())
		}
		for g := range busy {
			busy[g] += float64(rapid.IntRange(0, 20).Draw(t, "jitter"))
		}
		for k := range jobs {
			jobs[k].Job.GPUType = ""
		}
		opt.Cost, opt.EarliestFit = serverSpeedCost{factor}, true
		if rapid.Bool().Draw(t, "allsmall") {
			opt.Kappas = []int{c.NumGPUs()}
		}
		got, err := planWith(&bcoPlanner{}, c, jobs, busy, opt)
		want, werr := planWith(&bcoPlanner{linear: true}, c, jobs, busy, opt)
		if (err == nil) != (werr == nil) {
			t.Fatalf("error %v, scanning %v", err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan differs from the plan scanning every server:\n%+v\n%+v", got, want)
		}
	})
}

// TestPropertyPlanStateWarmInit: a pass that starts from the last pass's start (scan and init
// on the same cluster), where some servers' busy-until times are those of the last start and
// others changed, and after some assignments of the last pass, has the state of a fresh init:
// the unchanged servers' sums, means and GPU orders kept, the others computed, byMean
// repaired; scan's least time (-0 below +0) is that of every GPU's, and it reports the first
// time that is not finite.
func TestPropertyPlanStateWarmInit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, _, busy, _ := bcoPlanInstance(t)
		if busy == nil {
			busy = make([]float64, c.NumGPUs())
		}
		var st planState
		st.init(c, busy)
		var p bcoPlanner
		if err := p.reset(c, nil, busy, BCOPlanOptions{Cost: gpusched.FixedCost{}, Lambda: 0.5, Tolerance: 1e-3, MaxBisections: 60}); err != nil {
			t.Fatal(err)
		}
		for range rapid.IntRange(1, 6).Draw(t, "passes") {
			// Some assignments of the last pass (init must not start from them).
			for range rapid.IntRange(0, 3).Draw(t, "ops") {
				n := rapid.IntRange(1, c.NumGPUs()).Draw(t, "n")
				gpus := rapid.Permutation(seq32(c.NumGPUs())).Draw(t, "gpus")[:n]
				end := 0.0
				for _, g := range gpus {
					end = max(end, st.free[g])
				}
				st.assign(p.single, gpus, end+rapid.SampledFrom([]float64{0, 1, 7.5, 100}).Draw(t, "d"))
			}
			// Some servers keep their busy-until times, the others change some GPUs'.
			for s := range c.NumServers() {
				if rapid.Bool().Draw(t, "keep") {
					continue
				}
				first, k := c.GPUsOf(s)
				for g := int(first); g < int(first)+k; g++ {
					if rapid.Bool().Draw(t, "change") {
						busy[g] = rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 2, 3, 5, 40, 300}).Draw(t, "next")
					}
				}
			}
			// Sometimes a time that is not finite: scan reports the first such GPU, and the
			// next pass (with the time put back) is not misled by that scan.
			if rapid.IntRange(0, 3).Draw(t, "invalid") == 0 {
				was := slices.Clone(busy)
				for range rapid.IntRange(1, 2).Draw(t, "bads") {
					busy[rapid.IntRange(0, len(busy)-1).Draw(t, "at")] = rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}).Draw(t, "bad")
				}
				want := -1
				for h, x := range busy {
					if x-x != 0 {
						want = h
						break
					}
				}
				if _, bad := st.scan(c, busy); bad != want {
					t.Fatalf("scan reports GPU %d, the first time not finite is GPU %d's", bad, want)
				}
				copy(busy, was)
			}
			t0, bad := st.scan(c, busy)
			least := math.Inf(1)
			for _, x := range busy {
				if x < least || (x == 0 && least == 0 && math.Signbit(x)) {
					least = x
				}
			}
			if bad >= 0 || math.Float64bits(t0) != math.Float64bits(least) {
				t.Fatalf("scan: least %v (GPU %d not finite), want %v", t0, bad, least)
			}
			st.init(c, busy)
			var want planState
			want.init(c, busy)
			if !slices.Equal(st.free, want.free) || !slices.Equal(st.ids, want.ids) || !slices.Equal(st.sum, want.sum) ||
				!slices.Equal(st.means, want.means) || !slices.Equal(st.byMean, want.byMean) {
				t.Fatalf("warm init: %v %v %v %v %v, afresh %v %v %v %v %v", st.free, st.ids, st.sum, st.means, st.byMean,
					want.free, want.ids, want.sum, want.means, want.byMean)
			}
		}
	})
}

// TestPropertySJFBCOAllLarge: the plan of the kappas below every demand made once, after the
// others, stopped once a job ends after the others' best makespan, and its theta derived from
// its latest end (allLarge), leaves the plan (kappa, theta, makespan, placements and times) that
// bisecting every kappa in order gives, on the same planner (reused for several problems) and
// with kappa lists drawn to hold several such kappas, or only them.
func TestPropertySJFBCOAllLarge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, jobs, busy, opt := bcoPlanInstance(t)
		switch rapid.IntRange(0, 3).Draw(t, "kappas") {
		case 1:
			opt.Kappas = rapid.SliceOfN(rapid.IntRange(0, 6), 1, 4).Draw(t, "list")
		case 2:
			opt.Kappas = []int{0}
		}
		memo := newStepMemo(c)
		opt.memo = &memo
		var p, ref bcoPlanner
		ref.reference = true
		for k := range 3 {
			sub := jobs[:rapid.IntRange(0, len(jobs)).Draw(t, "prefix")]
			if busy != nil && k > 0 {
				for g := range busy {
					busy[g] += rapid.SampledFrom([]float64{0, 1, 30}).Draw(t, "dt")
				}
			}
			got, err := planWith(&p, c, sub, busy, opt)
			want, werr := planWith(&ref, c, sub, busy, opt)
			if (err == nil) != (werr == nil) {
				t.Fatalf("plan %d: error %v, in order %v", k, err, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("plan %d differs from the plan of every kappa in order:\n%+v\n%+v", k, got, want)
			}
		}
	})
}
