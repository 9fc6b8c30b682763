package gpusched_test

import (
	"errors"
	"fmt"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// A scheduler is a function of what it may see. This one starts waiting jobs in arrival order
// on the lowest-numbered free GPUs, and never preempts.
func Example() {
	cluster, _ := topology.Uniform(topology.A100(), 2) // 2 servers x 8 GPUs
	fifo := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		for _, r := range v.Running {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
		}
		free := v.Free().Slice()
		for _, p := range v.Pending {
			if p.Job.GPUs > len(free) {
				break // strict FIFO: nobody overtakes the head of the queue
			}
			d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: free[:p.Job.GPUs]})
			free = free[p.Job.GPUs:]
		}
		return d, nil
	})

	a := &gpusched.Job{ID: "a", GPUs: 8}
	b := &gpusched.Job{ID: "b", GPUs: 4, Arrival: 10}
	c := &gpusched.Job{ID: "c", GPUs: 8, Arrival: 20}
	v := gpusched.View{
		Now:     20,
		Cluster: cluster,
		Running: []gpusched.JobStatus{{Job: a, GPUs: []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}, Started: true}},
		Pending: []gpusched.JobStatus{{Job: b}, {Job: c}},
	}
	d, _ := fifo.Schedule(v)
	if err := d.Validate(v); err != nil {
		fmt.Println("invalid:", err)
		return
	}
	ch := d.Diff(v)
	for _, s := range ch.Start {
		fmt.Println("start", s.Job, "on", topology.SetOf(s.GPUs...))
	}
	fmt.Println("keep", ch.Keep, "preempt", len(ch.Preempt))

	// A decision that gives GPU 3 to two jobs is rejected, naming both.
	bad := gpusched.Decision{Run: []gpusched.Assignment{
		{Job: "a", GPUs: []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}},
		{Job: "b", GPUs: []topology.GPUID{3, 8, 9, 10}},
	}}
	err := bad.Validate(v)
	fmt.Println(errors.Is(err, gpusched.ErrDoubleBooked), err)
	// Output:
	// start b on {8-11}
	// keep [a] preempt 0
	// true gpusched: GPU double-booked: GPU 3 (a100-0/3) given to jobs "a" and "b"
}

// A delta decision names only what changes: here job b starts, job a stops, and job c, which
// nothing mentions, keeps its GPUs. Expand gives the full form an embedder may want, and Diff
// the changes either form asks for.
func ExampleDecision_Expand() {
	cluster, _ := topology.Uniform(topology.A100(), 1) // 8 GPUs
	a := &gpusched.Job{ID: "a", GPUs: 4}
	b := &gpusched.Job{ID: "b", GPUs: 4}
	c := &gpusched.Job{ID: "c", GPUs: 4}
	v := gpusched.View{
		Now:     30,
		Cluster: cluster,
		Running: []gpusched.JobStatus{
			{Job: a, GPUs: []topology.GPUID{0, 1, 2, 3}, Started: true},
			{Job: c, GPUs: []topology.GPUID{4, 5, 6, 7}, Started: true},
		},
		Pending:           []gpusched.JobStatus{{Job: b}},
		AcceptsKeepOthers: true, // the host applies deltas
	}
	d := gpusched.Decision{
		KeepOthers: true,
		Run:        []gpusched.Assignment{{Job: "b", GPUs: []topology.GPUID{0, 1, 2, 3}}},
		Stop:       []gpusched.JobID{"a"},
	}
	fmt.Println("valid:", d.Validate(v) == nil)
	for _, r := range d.Expand(v).Run {
		fmt.Println("run", r.Job, r.GPUs)
	}
	ch := d.Diff(v)
	fmt.Println("start", len(ch.Start), "preempt", ch.Preempt, "keep", ch.Keep)
	// Output:
	// valid: true
	// run c [4 5 6 7]
	// run b [0 1 2 3]
	// start 1 preempt [a] keep [c]
}
