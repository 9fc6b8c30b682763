package gpusched_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

func psCluster(t *testing.T, servers, cpus int) *topology.Cluster {
	t.Helper()
	spec := topology.T4()
	spec.CPUs = cpus
	c, err := topology.Uniform(spec, servers)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func psJob(t *testing.T, id string, spec ps.Spec) *gpusched.Job {
	t.Helper()
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	j, err := gpusched.NewPSJob(gpusched.PSJobSpec{ID: gpusched.JobID(id), Model: m, PS: spec, WorkerCPUs: 2})
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return j
}

func TestNewPSJobOffersEveryShapeInBounds(t *testing.T) {
	j := psJob(t, "a", ps.Spec{MinWorkers: 2, MaxWorkers: 8, MinPS: 1, MaxPS: 4, CPUs: 2})
	if !j.IsPS() || j.GPUs != 8 || j.NumPSOf(0) != 0 {
		t.Fatalf("choice 0: %d workers, %d PS", j.GPUs, j.NumPSOf(0))
	}
	var got []ps.Config
	for k := 1; k < j.Choices(); k++ {
		w := j.GPUsFor(k)
		p := j.NumPSOf(k)
		if w < 2 || w > 8 || p < 1 || p > 4 || p > w {
			t.Errorf("choice %d: %d workers, %d PS out of bounds", k, w, p)
		}
		if jj := j.WithPlan(k); jj.PS.NumPS != p || jj.GPUs != w || j.PS.NumPS != 0 {
			t.Errorf("WithPlan(%d) = %d workers %d PS; original spec changed to %d", k, jj.GPUs, jj.PS.NumPS, j.PS.NumPS)
		}
		got = append(got, ps.Config{Workers: w, PS: p})
	}
	want := []ps.Config{{Workers: 2, PS: 1}, {Workers: 2, PS: 2}, {Workers: 4, PS: 1}, {Workers: 4, PS: 2}, {Workers: 4, PS: 4},
		{Workers: 8, PS: 1}, {Workers: 8, PS: 2}, {Workers: 8, PS: 4}}
	if !slices.Equal(got, want) {
		t.Errorf("shapes %v, want %v", got, want)
	}
}

func TestPSJobHostileSpecs(t *testing.T) {
	m, _ := graph.ZooModel("resnet50")
	c := psCluster(t, 2, 16)
	for name, s := range map[string]ps.Spec{
		"zero PS":          {MinWorkers: 1, MaxWorkers: 2, MinPS: 0, MaxPS: 0},
		"inverted PS":      {MinWorkers: 1, MaxWorkers: 2, MinPS: 3, MaxPS: 2},
		"zero workers":     {MinWorkers: 0, MaxWorkers: 0, MinPS: 1, MaxPS: 1},
		"inverted workers": {MinWorkers: 4, MaxWorkers: 2, MinPS: 1, MaxPS: 1},
		"PS count outside": {MinWorkers: 1, MaxWorkers: 2, MinPS: 1, MaxPS: 2, NumPS: 5},
		"negative cores":   {MinWorkers: 1, MaxWorkers: 2, MinPS: 1, MaxPS: 2, CPUs: -1},
	} {
		_, err := gpusched.NewPSJob(gpusched.PSJobSpec{ID: "bad", Model: m, PS: s, Workers: max(s.MinWorkers, 1)})
		if !errors.Is(err, ps.ErrInvalidJob) || !errors.Is(err, gpusched.ErrInvalidJob) {
			t.Errorf("%s: %v, want ps.ErrInvalidJob", name, err)
		}
	}
	// Bounds that admit no allocation on the cluster.
	j := psJob(t, "big", ps.Spec{MinWorkers: 16, MaxWorkers: 16, MinPS: 1, MaxPS: 1})
	if err := j.Validate(c); !errors.Is(err, gpusched.ErrTooLarge) {
		t.Errorf("16 workers on 8 GPUs: %v, want ErrTooLarge", err)
	}
	j = psJob(t, "fat", ps.Spec{MinWorkers: 1, MaxWorkers: 1, MinPS: 1, MaxPS: 1, CPUs: 15})
	if err := j.Validate(c); !errors.Is(err, ps.ErrInvalidJob) {
		t.Errorf("a shard of 15 cores beside a 2-core worker on 16-core servers: %v, want ps.ErrInvalidJob", err)
	}
	if _, err := gpusched.NewPSJob(gpusched.PSJobSpec{ID: "nomodel", PS: ps.Spec{MinWorkers: 1, MaxWorkers: 1, MinPS: 1, MaxPS: 1}}); !errors.Is(err, ps.ErrInvalidJob) {
		t.Errorf("no model: %v", err)
	}
	// A plan that is not pure data parallelism.
	j = psJob(t, "tp", ps.Spec{MinWorkers: 2, MaxWorkers: 2, MinPS: 1, MaxPS: 1})
	j.Plan.DP, j.Plan.TP = 1, 2
	if err := j.Validate(c); !errors.Is(err, ps.ErrInvalidJob) {
		t.Errorf("TP plan: %v, want ps.ErrInvalidJob", err)
	}
}

func TestPSPlacementRule(t *testing.T) {
	c := psCluster(t, 3, 0)
	gpus := []topology.GPUID{4, 5, 0, 8, 1}                                  // servers 1, 1, 0, 2, 0
	if got := ps.Placement(c, gpus, 0); !slices.Equal(got, []int{1, 0, 2}) { // one per worker server
		t.Errorf("baseline: %v", got)
	}
	if got := ps.Placement(c, gpus, 3); !slices.Equal(got, []int{1, 1, 0}) { // beside workers 0..2
		t.Errorf("3 shards: %v", got)
	}
	if got := ps.Placement(c, gpus, 7); !slices.Equal(got, []int{1, 1, 0, 2, 0, 1, 1}) {
		t.Errorf("7 shards: %v", got)
	}
	if ps.Placement(c, nil, 2) != nil {
		t.Error("no workers: want nil")
	}
}

// TestDecisionChargesPSCores: a decision whose PS shards overcommit a server's cores is
// rejected, and the same workers with their shards elsewhere are accepted.
func TestDecisionChargesPSCores(t *testing.T) {
	c := psCluster(t, 2, 8)
	j := psJob(t, "a", ps.Spec{MinWorkers: 2, MaxWorkers: 2, MinPS: 1, MaxPS: 2, CPUs: 3})
	v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}}
	k := slices.IndexFunc(j.Plans, func(o gpusched.PlanOption) bool { return o.PS == 2 }) + 1
	// Both workers and both shards on server 0: 2 x 2 + 2 x 3 = 10 > 8 cores.
	d := gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{0, 1}, PlanChoice: k}}}
	if err := d.Validate(v); !errors.Is(err, gpusched.ErrHostResources) {
		t.Errorf("10 cores on an 8-core server: %v, want ErrHostResources", err)
	}
	// One worker and one shard per server: 5 cores each.
	d.Run[0].GPUs = []topology.GPUID{0, 4}
	if err := d.Validate(v); err != nil {
		t.Errorf("5 cores per server: %v", err)
	}
	// The baseline (choice 0): one shard per worker server.
	d.Run[0] = gpusched.Assignment{Job: "a", GPUs: []topology.GPUID{0, 1}}
	if err := d.Validate(v); err != nil {
		t.Errorf("baseline, 7 cores: %v", err)
	}
}

// TestPSCostFollowsLocality: the cost model times a PS job by its shards' placement: traffic
// between co-located workers and shards stays off the network.
func TestPSCostFollowsLocality(t *testing.T) {
	c := psCluster(t, 2, 0)
	j := psJob(t, "a", ps.Spec{MinWorkers: 4, MaxWorkers: 4, MinPS: 1, MaxPS: 4, CPUs: 2})
	cost := gpusched.DefaultCost()
	one := slices.IndexFunc(j.Plans, func(o gpusched.PlanOption) bool { return o.PS == 1 }) + 1
	packed, err := cost.StepCost(j.WithPlan(one), c, []topology.GPUID{0, 1, 2, 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spread, err := cost.StepCost(j.WithPlan(one), c, []topology.GPUID{0, 1, 4, 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if packed.CrossServerBytes != 0 || !(spread.CrossServerBytes > 0) || !(spread.Time > packed.Time) {
		t.Errorf("packed %+v, spread %+v: want no network bytes packed and a slower spread", packed, spread)
	}
}

// TestSimAdvancesPSJobs: a PS-unaware policy (FIFO) runs PS jobs under the baseline placement,
// and a lone job finishes after exactly its iterations times its step cost on its placement.
func TestSimAdvancesPSJobs(t *testing.T) {
	c := psCluster(t, 4, 32)
	var recs []trace.Record
	for i, w := range []int{4, 8, 2, 6} {
		j := psJob(t, fmt.Sprint("j", i), ps.Spec{MinWorkers: 1, MaxWorkers: w, MinPS: 1, MaxPS: w, CPUs: 4})
		j.Arrival = float64(i) * 10
		recs = append(recs, trace.Record{Job: *j, Iterations: 1000})
	}
	fifo, err := policy.New("fifo", policy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: fifo, ValidateViews: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Jobs != len(recs) || res.Summary.Rejected != 0 {
		t.Fatalf("%d jobs, %d rejected, of %d", res.Summary.Jobs, res.Summary.Rejected, len(recs))
	}
	lone := recs[:1]
	fifo, _ = policy.New("fifo", policy.Config{})
	res, err = sim.Run(sim.Config{Cluster: c, Jobs: lone, Scheduler: fifo, RecordSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := gpusched.DefaultCost().StepCost(&lone[0].Job, c, res.Segments[0].GPUs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Jobs[0].JCT, 1000*sc.Time; math.Abs(got-want) > 1e-6*want {
		t.Errorf("lone PS job took %g s, want %g (1000 x %g)", got, want, sc.Time)
	}
}

// TestDeprecatedPSNames: the root's parameter-server names kept for one release (deprecated
// in favour of package ps) still work: the same types, the same results, and errors.Is with
// ErrInvalidPS, whose message did not change.
func TestDeprecatedPSNames(t *testing.T) {
	var spec gpusched.PSSpec = ps.Spec{MinWorkers: 2, MaxWorkers: 8, MinPS: 1, MaxPS: 4}
	var cfgs []gpusched.PSConfig = ps.Configs(spec)
	if !slices.Equal(gpusched.PSConfigs(spec), cfgs) || len(cfgs) != 8 {
		t.Errorf("PSConfigs = %v, ps.Configs = %v", gpusched.PSConfigs(spec), cfgs)
	}
	c := psCluster(t, 3, 0)
	gpus := []topology.GPUID{4, 5, 0, 8, 1}
	for _, n := range []int{0, 3, 7} {
		if a, b := gpusched.PSPlacement(c, gpus, n), ps.Placement(c, gpus, n); !slices.Equal(a, b) {
			t.Errorf("numPS %d: PSPlacement %v, ps.Placement %v", n, a, b)
		}
	}
	m, _ := graph.ZooModel("resnet50")
	_, err := gpusched.NewPSJob(gpusched.PSJobSpec{ID: "bad", Model: m, PS: ps.Spec{MinWorkers: 1, MaxWorkers: 2}})
	if !errors.Is(err, gpusched.ErrInvalidPS) || !errors.Is(err, ps.ErrInvalidJob) || !errors.Is(err, gpusched.ErrInvalidJob) {
		t.Errorf("an invalid PS job: %v; want ErrInvalidPS, ps.ErrInvalidJob and ErrInvalidJob", err)
	}
	if errors.Is(gpusched.ErrInvalidJob, gpusched.ErrInvalidPS) || errors.Is(gpusched.ErrTooLarge, ps.ErrInvalidJob) {
		t.Error("ErrInvalidPS matches errors that are not PS errors")
	}
	if got, want := gpusched.ErrInvalidPS.Error(), gpusched.ErrInvalidJob.Error()+": parameter-server job"; got != want {
		t.Errorf("ErrInvalidPS says %q, want %q (its message before the move)", got, want)
	}
}
