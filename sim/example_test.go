package sim_test

import (
	"errors"
	"fmt"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// Three jobs on one 8-GPU server under a FIFO scheduler: the third waits for the first to
// finish. The simulator knows each job's true iterations; the scheduler only sees the view.
func Example() {
	c, _ := topology.Uniform(topology.A100(), 1)
	jobs := []trace.Record{
		{Job: gpusched.Job{ID: "a", Arrival: 0, GPUs: 4, StepTime: 0.5}, Iterations: 200},  // 100 s
		{Job: gpusched.Job{ID: "b", Arrival: 10, GPUs: 4, StepTime: 1}, Iterations: 300},   // 300 s
		{Job: gpusched.Job{ID: "c", Arrival: 20, GPUs: 2, StepTime: 0.25}, Iterations: 80}, // 20 s
	}
	fifo := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		for _, r := range v.Running {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		}
		free := v.Free()
		for _, p := range v.Pending {
			g, ok := v.Cluster.Pack(free, p.Job.GPUs)
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
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: fifo})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range res.Jobs {
		fmt.Printf("%s: start %3g finish %3g JCT %3g\n", j.ID, j.Start, j.Finish, j.JCT)
	}
	s := res.Summary
	fmt.Printf("avg JCT %.1f s, makespan %g s, utilisation %.3f\n", s.AvgJCT, s.Makespan, s.Utilisation)

	// A scheduler that gives a GPU twice is stopped, with its name, the time and the job.
	bad := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		if len(v.Pending) < 2 {
			return gpusched.Decision{}, nil // wait for company
		}
		return gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{0, 1, 2, 3}}, {Job: "b", GPUs: []topology.GPUID{3, 4, 5, 6}}}}, nil
	})
	_, err = sim.Run(sim.Config{Cluster: c, Jobs: jobs, Scheduler: bad})
	fmt.Println(errors.Is(err, gpusched.ErrDoubleBooked), err)
	// Output:
	// a: start   0 finish 100 JCT 100
	// b: start  10 finish 310 JCT 300
	// c: start 100 finish 120 JCT 100
	// avg JCT 166.7 s, makespan 310 s, utilisation 0.661
	// true sim: invalid decision: scheduler gpusched.SchedulerFunc at t=10 s: job "b": gpusched: GPU double-booked: GPU 3 (a100-0/3) given to jobs "a" and "b"
}
