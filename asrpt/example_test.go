package asrpt_test

import (
	"fmt"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/topology"
)

// A-SRPT with true sizes (an Oracle) on two 4-GPU servers: a long 8-GPU job runs until a
// short job arrives, which takes half the cluster at once; the long job waits (strict order)
// because it no longer fits.
func Example() {
	cluster, _ := topology.Uniform(topology.T4(), 2)
	truth := map[gpusched.JobID]float64{"long": 1000, "short": 50}
	s, err := asrpt.New(asrpt.Options{
		Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) { n, ok := truth[id]; return n, ok }),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	long := &gpusched.Job{ID: "long", GPUs: 8, StepTime: 0.5}
	short := &gpusched.Job{ID: "short", GPUs: 4, StepTime: 0.5, Arrival: 60}

	v := gpusched.View{Now: 0, Cluster: cluster, Pending: []gpusched.JobStatus{{Job: long}}}
	d, _ := s.Schedule(v)
	fmt.Println("t=0: run", d.Run[0].Job, "on", topology.SetOf(d.Run[0].GPUs...))

	v = gpusched.View{Now: 60, Cluster: cluster,
		Running: []gpusched.JobStatus{{Job: long, GPUs: d.Run[0].GPUs, Iterations: 120, Executed: 60, Started: true}},
		Pending: []gpusched.JobStatus{{Job: short, Since: 60}}}
	d, _ = s.Schedule(v)
	ch := d.Diff(v)
	fmt.Println("t=60: start", ch.Start[0].Job, "on", topology.SetOf(ch.Start[0].GPUs...), "preempt", ch.Preempt)
	vc, _ := s.VirtualCompletion("short")
	fmt.Printf("short completes on the virtual machine at t=%.1f\n", vc)
	// Output:
	// t=0: run long on {0-7}
	// t=60: start short on {0-3} preempt [long]
	// short completes on the virtual machine at t=72.5
}
