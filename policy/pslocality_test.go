package policy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// psWorkload is a small mixed workload: PS jobs of zoo CNNs and NCF, and ring all-reduce jobs.
func psWorkload(t testing.TB, n int, seed uint64) (*topology.Cluster, []trace.Record) {
	t.Helper()
	spec := topology.T4()
	spec.CPUs = 32
	spec.HostMemory = 192e9
	c, err := topology.Uniform(spec, 8)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	models := []string{"resnet50", "vgg16", "ncf", "resnet18-cifar10"}
	var recs []trace.Record
	for i := range n {
		m, err := graph.ZooModel(models[rng.IntN(len(models))])
		if err != nil {
			t.Fatal(err)
		}
		g := []int{1, 2, 4, 8}[rng.IntN(4)]
		at := float64(i) * 30
		if i%5 == 4 { // an all-reduce job known only by its step time
			recs = append(recs, trace.Record{Job: gpusched.Job{ID: gpusched.JobID(fmt.Sprint("ar", i)), Arrival: at, GPUs: g, StepTime: 0.2, CPUs: 2}, Iterations: 2000})
			continue
		}
		j, err := gpusched.NewPSJob(gpusched.PSJobSpec{
			ID: gpusched.JobID(fmt.Sprint("ps", i)), Arrival: at, Model: m, WorkerCPUs: 2, WorkerMemory: 8e9,
			PS: ps.Spec{MinWorkers: max(1, g/2), MaxWorkers: g, MinPS: 1, MaxPS: g, CPUs: 4, HostMemory: 4e9},
		})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, trace.Record{Job: *j, Iterations: float64(500 + rng.IntN(3000))})
	}
	return c, recs
}

func TestPSLocalityRunsMixedWorkload(t *testing.T) {
	c, recs := psWorkload(t, 40, 1)
	s, err := policy.New("ps-locality", policy.Config{PSLocality: policy.PSLocalityOptions{Seed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s, ValidateViews: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Rejected != 0 {
		t.Fatalf("%d rejected", res.Summary.Rejected)
	}
	st := *policy.DiagnosticsOf(s).PS
	if st.Placed == 0 || st.Gap() < 1-1e-9 {
		t.Errorf("stats %+v: want placements with achieved >= bound", st)
	}
	t.Logf("mean JCT %.0f s, %d PS placements, gap %.3f", res.Summary.AvgJCT, st.Placed, st.Gap())
	// Deterministic: the same seed gives the same result.
	s2, _ := policy.New("ps-locality", policy.Config{PSLocality: policy.PSLocalityOptions{Seed: 3}})
	res2, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s2})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Summary.AvgJCT != res.Summary.AvgJCT {
		t.Errorf("same seed, mean JCT %g then %g", res.Summary.AvgJCT, res2.Summary.AvgJCT)
	}
}

// TestBaselinesRunPSJobs: the policies that do not know PS jobs run them under the baseline
// placement (choice 0, one shard per worker server).
func TestBaselinesRunPSJobs(t *testing.T) {
	c, recs := psWorkload(t, 30, 2)
	fifo, _ := policy.New("fifo", policy.Config{})
	tir, _ := policy.New("tiresias", policy.Config{})
	sjf, _ := policy.New("sjf", policy.Config{})
	for _, s := range []gpusched.Scheduler{fifo, tir, sjf} {
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s, ValidateViews: true})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if res.Summary.Rejected != 0 {
			t.Errorf("%v: %d rejected", s, res.Summary.Rejected)
		}
	}
}

func TestSMDRunsMixedWorkload(t *testing.T) {
	c, recs := psWorkload(t, 40, 1)
	s, err := policy.New("smd", policy.Config{SMD: policy.SMDOptions{Interval: 300}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s, ValidateViews: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Rejected != 0 {
		t.Fatalf("%d rejected", res.Summary.Rejected)
	}
	st := *policy.DiagnosticsOf(s).PS
	if st.Intervals == 0 || st.ObjectiveGap() < 1-1e-9 {
		t.Errorf("stats %+v: want intervals with objective >= bound", st)
	}
	t.Logf("mean JCT %.0f s, %d intervals (%d exact), gap %.3f", res.Summary.AvgJCT, st.Intervals, st.Exact, st.ObjectiveGap())
}
