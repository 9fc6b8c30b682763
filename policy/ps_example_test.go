package policy_test

import (
	"fmt"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/topology"
)

// A parameter-server job of 2 to 4 workers and 1 to 4 shards arrives on two T4 servers whose
// servers are each half busy: ps-locality solves the placement program of each shape, rounds
// and repairs it, and starts the job on the shape it prefers, its shards beside its workers.
func ExampleNew_psLocality() {
	spec := topology.T4()
	spec.CPUs = 16
	c, _ := topology.Uniform(spec, 2)
	m, _ := graph.ZooModel("resnet50")
	job, _ := gpusched.NewPSJob(gpusched.PSJobSpec{
		ID: "resnet", Model: m, WorkerCPUs: 2,
		PS: ps.Spec{MinWorkers: 2, MaxWorkers: 4, MinPS: 1, MaxPS: 4, CPUs: 2},
	})
	busy := &gpusched.Job{ID: "busy", GPUs: 4, StepTime: 1}
	v := gpusched.View{Cluster: c,
		Running: []gpusched.JobStatus{{Job: busy, GPUs: []topology.GPUID{0, 1, 4, 5}}},
		Pending: []gpusched.JobStatus{{Job: job}},
	}
	s, _ := policy.New("ps-locality", policy.Config{PSLocality: policy.PSLocalityOptions{Seed: 1}})
	d, err := s.Schedule(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range d.Run {
		if a.Job == "resnet" {
			fmt.Printf("%d workers on GPUs %v, %d shards on servers %v\n", len(a.GPUs), a.GPUs,
				job.NumPSOf(a.PlanChoice), ps.Placement(c, a.GPUs, job.NumPSOf(a.PlanChoice)))
		}
	}
	st := *policy.DiagnosticsOf(s).PS
	fmt.Printf("cross-server bytes per iteration %.0f MB, LP bound %.0f MB\n", st.Achieved/1e6, st.Bound/1e6)
	// Output:
	// 4 workers on GPUs [2 3 6 7], 4 shards on servers [0 0 1 1]
	// cross-server bytes per iteration 204 MB, LP bound 204 MB
}
