package host_test

import (
	"fmt"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// fifo starts waiting jobs in order on packed GPUs, preempts running jobs that hold a GPU the
// view marks unavailable, and rejects jobs larger than the cluster.
var fifo = gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	free := v.Free()
	for _, r := range v.Running {
		drained := false
		for _, g := range r.GPUs {
			drained = drained || v.Unavailable.Contains(g)
		}
		if !drained {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		}
	}
	for _, p := range v.Pending {
		if err := gpusched.Fits(p.Job, v.Cluster); err != nil {
			d.Rejected = append(d.Rejected, gpusched.Reject(p.Job.ID, err))
			continue
		}
		g, ok := gpusched.Pack(v.Cluster, free, p.Job)
		if !ok {
			break
		}
		for _, x := range g {
			free.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: g})
	}
	return d, nil
})

// A host loop on two 4-GPU servers: jobs start, a job too large for the cluster is rejected
// while the others run, a server is drained (its job is preempted and resumes elsewhere once
// GPUs free up), and the server comes back.
func Example() {
	c, _ := topology.Uniform(topology.T4(), 2) // GPUs 0-3 on t4-0, 4-7 on t4-1
	rt, _ := host.New(host.Options{Cluster: c, Scheduler: fifo, RestoreTime: 30})
	show := func(acts *host.Actions) {
		for _, a := range acts.Steps {
			fmt.Printf("t=%g %s %s on %v\n", acts.Time, a.Kind, a.Job, a.GPUs)
		}
		for _, r := range acts.Rejected {
			fmt.Printf("t=%g rejected %s: %v\n", acts.Time, r.Job, r.Err)
		}
	}
	for _, j := range []gpusched.Job{
		{ID: "a", GPUs: 2, StepTime: 1},
		{ID: "b", GPUs: 4, StepTime: 1},
		{ID: "huge", GPUs: 16, StepTime: 1},
	} {
		if _, err := rt.Submit(j, 0); err != nil {
			fmt.Println(err)
		}
	}
	acts, _ := rt.Schedule(0)
	show(acts)

	_ = rt.Report("a", 10, 10) // a reports 10 iterations done
	_ = rt.Drain(0, 1, 2, 3)   // take server t4-0 out of service
	acts, _ = rt.Schedule(10)
	show(acts)

	_ = rt.Finish("b", 20, 20, false) // b is done: a resumes on its GPUs
	acts, _ = rt.Schedule(20)
	show(acts)
	_ = rt.Return(0, 1, 2, 3)

	a, _ := rt.Job("a")
	st := a.Status(60)
	fmt.Printf("a at t=60: %d preemption, %g iterations, %g s held, restoring until t=%g\n",
		st.Preemptions, st.Iterations, st.Executed, a.RestoreEnd())
	// Output:
	// t=0 start a on [0 1]
	// t=0 start b on [4 5 6 7]
	// t=0 rejected huge: gpusched: invalid job: larger than the cluster: job "huge" needs 16 GPUs, cluster "2x4-t4" has 8 GPUs
	// t=10 stop a on [0 1]
	// t=20 start a on [4 5]
	// a at t=60: 1 preemption, 10 iterations, 50 s held, restoring until t=50
}
