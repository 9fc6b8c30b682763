// Command quickstart builds a cluster, asks a tiny scheduler for a decision, and shows what
// the host does with it: validate it and turn it into starts, preemptions and migrations.
package main

import (
	"fmt"
	"os"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	cluster, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		return err
	}
	fmt.Printf("cluster %s: %d GPUs on %d servers\n", cluster.Name(), cluster.NumGPUs(), cluster.NumServers())
	jobs := []*gpusched.Job{
		{ID: "bert", GPUs: 8, Arrival: 0},
		{ID: "gpt", GPUs: 16, Arrival: 5},
		{ID: "resnet", GPUs: 4, Arrival: 9},
	}
	view := gpusched.View{Now: 10, Cluster: cluster}
	for _, j := range jobs {
		view.Pending = append(view.Pending, gpusched.JobStatus{Job: j, Since: j.Arrival})
	}
	// Pack each job onto whole servers where it can: the lowest-numbered free GPUs, server by server.
	packer := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		free := v.Free().Slice()
		for _, p := range v.Pending {
			if p.Job.GPUs <= len(free) {
				d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: free[:p.Job.GPUs]})
				free = free[p.Job.GPUs:]
			}
		}
		return d, nil
	})
	d, err := packer.Schedule(view)
	if err != nil {
		return err
	}
	if err := d.Validate(view); err != nil {
		return err
	}
	for _, s := range d.Diff(view).Start {
		fmt.Printf("start %-7s on %2d GPUs %v: ring all-reduce of 1 GB takes %.1f ms\n", s.Job, len(s.GPUs),
			topology.SetOf(s.GPUs...), 1e3*cluster.RingAllReduceTime(s.GPUs, 1e9, nil))
	}
	// A faulty decision is caught before anything is applied.
	bad := gpusched.Decision{Run: []gpusched.Assignment{
		{Job: "bert", GPUs: []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}},
		{Job: "resnet", GPUs: []topology.GPUID{7, 8, 9, 10}},
	}}
	fmt.Println("faulty decision rejected:", bad.Validate(view))
	return nil
}
