package asrpt

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/partition"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestPartitionedSharesGraphs: jobs of one model and plan share one worker graph; placing them
// again and again through its memo gives exactly partition.Place's placements; a graph
// outlives its jobs only up to a bound.
func TestPartitionedSharesGraphs(t *testing.T) {
	c := servers(t, 16)
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	opts := partition.PlaceOptions{Seed: 1}
	p := NewPartitioned(opts)
	var jobs []*gpusched.Job
	for i := range 12 {
		plan := graph.Plan{DP: 4 + 2*(i%2), TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 96}
		jobs = append(jobs, &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: plan.Workers(), Model: m, Plan: plan})
	}
	free := c.AllGPUs()
	for round := range 30 {
		j := jobs[round%len(jobs)]
		got, ok := p.Place(c, free, j)
		comp, err := graph.Compile(j.Model, j.Plan)
		if err != nil {
			t.Fatal(err)
		}
		want, err := partition.Place(c, free, comp.WorkerGraph(), opts)
		if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want.GPUs)) {
			t.Fatalf("round %d, job %s: Partitioned %v (%v), partition.Place %v (%v)", round, j.ID, got, ok, want.GPUs, err)
		}
		g := topology.GPUID((round * 7) % c.NumGPUs()) // the free GPUs change a little
		if free.Contains(g) {
			free.Remove(g)
		} else {
			free.Add(g)
		}
	}
	if len(p.graphs) != 2 || p.Cached() != len(jobs) {
		t.Fatalf("%d graphs for 2 plans, %d jobs cached", len(p.graphs), p.Cached())
	}
	for _, j := range jobs {
		p.Forget(j)
	}
	if p.Cached() != 0 || len(p.graphs) > keptGraphs {
		t.Fatalf("after every job left: %d jobs, %d graphs", p.Cached(), len(p.graphs))
	}
	// Many plans that come and go: the graphs nobody uses stay bounded.
	for i := range 3 * keptGraphs {
		plan := graph.Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 2 * (i + 1)}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("k", i)), GPUs: 2, Model: m, Plan: plan}
		if _, ok := p.Place(c, c.AllGPUs(), j); !ok {
			t.Fatalf("job %s not placed", j.ID)
		}
		p.Forget(j)
	}
	if len(p.graphs) > keptGraphs+1 {
		t.Fatalf("%d graphs kept for no job", len(p.graphs))
	}
}

// samePlan is reflect.DeepEqual on plans: on random pairs drawn from few values (so that many
// are equal), nil and empty Stages told apart; and a change to any one field of graph.Plan,
// found by reflection (a field added later included), makes the plans differ.
func TestSamePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		draw := func(name string) graph.Plan {
			p := graph.Plan{
				DP: rapid.IntRange(1, 2).Draw(t, name+"dp"), TP: rapid.IntRange(1, 2).Draw(t, name+"tp"),
				PP: rapid.IntRange(1, 2).Draw(t, name+"pp"), MicroBatches: rapid.IntRange(1, 2).Draw(t, name+"mb"),
				GlobalBatch: rapid.IntRange(1, 2).Draw(t, name+"gb"), Checkpointing: rapid.Bool().Draw(t, name+"ck"),
				ZeRO: rapid.IntRange(0, 1).Draw(t, name+"zero"), Offload: rapid.Bool().Draw(t, name+"off"),
				CPUThreads: rapid.IntRange(0, 1).Draw(t, name+"cpu"), UnevenHeads: rapid.Bool().Draw(t, name+"uneven"),
			}
			switch rapid.IntRange(0, 3).Draw(t, name+"stages") {
			case 1:
				p.Stages = []int{}
			case 2:
				p.Stages = []int{1, 2}
			case 3:
				p.Stages = []int{2, 1}
			}
			return p
		}
		a, b := draw("a"), draw("b")
		if rapid.Bool().Draw(t, "same") {
			b = a
			b.Stages = slices.Clone(a.Stages)
		}
		if got, want := samePlan(a, b), reflect.DeepEqual(a, b); got != want {
			t.Fatalf("samePlan(%+v, %+v) = %v, want %v", a, b, got, want)
		}
	})
	base := graph.Plan{DP: 1, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 1, Stages: []int{1}}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		b := base
		b.Stages = slices.Clone(base.Stages)
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf(1)))
		default:
			t.Fatalf("graph.Plan.%s is a %s: teach samePlan and this test to compare it", typ.Field(i).Name, f.Kind())
		}
		if samePlan(base, b) {
			t.Errorf("samePlan misses a change of graph.Plan.%s", typ.Field(i).Name)
		}
	}
}

// placeKindsProp places jobs of a few shapes on random sets of two kinds, as A-SRPT does (the
// free GPUs, changing a little at a time, and pools of them plus others), through
// Partitioned.placeIn, and checks every answer against partition.Place from scratch.
func placeKindsProp(broken bool) func(*rapid.T) {
	return func(t *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(t, "servers")
		var list []topology.Server
		for i := range n {
			list = append(list, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: topology.T4()})
		}
		c, err := topology.New("c", list, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.ZooModel("resnet50")
		if err != nil {
			t.Fatal(err)
		}
		opts := partition.PlaceOptions{Seed: 1}
		p := NewPartitioned(opts)
		p.brokenKinds = broken
		var jobs []*gpusched.Job
		for i, dp := range []int{2, 3, 4, 6} {
			plan := graph.Plan{DP: dp, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 12 * dp}
			jobs = append(jobs, &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: dp, Model: m, Plan: plan})
		}
		free := c.AllGPUs()
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			for range rapid.IntRange(0, 6).Draw(t, fmt.Sprint("flips", step)) {
				g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "gpu"))
				if free.Contains(g) {
					free.Remove(g)
				} else {
					free.Add(g)
				}
			}
			set, kind := free.Clone(), rapid.IntRange(0, placeKinds-1).Draw(t, "kind")
			if kind == 1 {
				for range rapid.IntRange(0, 8).Draw(t, "more") {
					set.Add(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "extra")))
				}
			}
			j := jobs[rapid.IntRange(0, len(jobs)-1).Draw(t, "job")]
			got, ok := p.placeIn(c, set, j, kind)
			comp, err := graph.Compile(j.Model, j.Plan)
			if err != nil {
				t.Fatal(err)
			}
			want, err := partition.Place(c, set, comp.WorkerGraph(), opts)
			if ok != (err == nil) || (ok && !slices.Equal(got, want.GPUs)) {
				t.Fatalf("step %d, kind %d, job %s on %v: placeIn %v (%v), partition.Place %v (%v)", step, kind, j.ID, set, got, ok, want.GPUs, err)
			}
		}
	}
}

// Every kind of set gets partition.Place's answer through its own memo; a memo keyed by too
// little (the set's size) is caught.
func TestPlaceKinds(t *testing.T) {
	rapid.Check(t, placeKindsProp(false))
	if !teeth.Fails(placeKindsProp(true)) {
		t.Fatal("the property did not catch a memo keyed by the set's size")
	}
}
