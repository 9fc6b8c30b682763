package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// loadedView is a busy cluster of servers x 8 A100 GPUs: running jobs with a Philly-like GPU
// mix fill about 90% of it, and `pending` jobs wait. Step times 0.1-1 s, true iterations
// 100-100000.
func loadedView(b testing.TB, servers, pending int) (gpusched.View, map[gpusched.JobID]float64) {
	c, err := topology.Uniform(topology.A100(), servers)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mix := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 16}
	iters := map[gpusched.JobID]float64{}
	v := gpusched.View{Now: 1e5, Cluster: c}
	free := c.AllGPUs()
	for i := 0; free.Len() > c.NumGPUs()/10; i++ {
		g := mix[rng.IntN(len(mix))]
		gpus, ok := c.Pack(free, g)
		if !ok {
			break
		}
		for _, x := range gpus {
			free.Remove(x)
		}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("r%05d", i)), GPUs: g, Arrival: rng.Float64() * 1e5, StepTime: 0.1 + 0.9*rng.Float64()}
		n := 100 + rng.Float64()*1e5
		iters[j.ID] = n
		exec := rng.Float64() * (v.Now - j.Arrival)
		v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: gpus, Iterations: min(n-1, exec/j.StepTime),
			Executed: exec, Attained: exec * float64(g), Started: true, FirstStart: v.Now - exec, Since: v.Now - exec})
	}
	for i := range pending {
		g := mix[rng.IntN(len(mix))]
		arr := v.Now - float64(pending-i)
		if float64(pending) >= v.Now { // long queues: arrivals spread over [0, Now)
			arr = v.Now * float64(i) / float64(pending)
		}
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("p%05d", i)), GPUs: g, Arrival: arr, StepTime: 0.1 + 0.9*rng.Float64()}
		iters[j.ID] = 100 + rng.Float64()*1e5
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: j, Since: j.Arrival})
	}
	return v, iters
}

// BenchmarkSchedule measures one Schedule call of every policy on a loaded 2048-GPU cluster
// with 500 waiting jobs (the state of a busy Philly replay).
func BenchmarkSchedule(b *testing.B) {
	v, iters := loadedView(b, 256, 500)
	for _, s := range allSchedulers(b, iters) {
		b.Run(fmt.Sprint(s), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Schedule(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlanSJFBCO measures SJF-BCO's offline algorithm on the paper's setting (160 jobs,
// 20 servers of 4-32 GPUs) and on 1000 jobs over 2048 GPUs.
func BenchmarkPlanSJFBCO(b *testing.B) {
	for _, size := range []struct{ jobs, servers int }{{160, 20}, {1000, 256}} {
		rng := rand.New(rand.NewPCG(3, 4))
		var servers []topology.Server
		for i := range size.servers {
			spec := topology.A100()
			if size.servers == 20 {
				spec.GPUs = []int{4, 8, 16, 32}[rng.IntN(4)]
			}
			servers = append(servers, topology.Server{ID: fmt.Sprint(i), ServerSpec: spec})
		}
		c, _ := topology.New("bench", servers, nil)
		var jobs []BCOJob
		for i := range size.jobs {
			g := []int{1, 1, 1, 1, 1, 2, 4, 4, 8, 8, 16}[rng.IntN(11)]
			jobs = append(jobs, BCOJob{Job: &gpusched.Job{ID: gpusched.JobID(fmt.Sprint(i)), GPUs: g, StepTime: 0.01 + 0.04*rng.Float64(),
				Features: gpusched.Features{Numeric: map[string]float64{ModelBytesFeature: 1e7 + 9e7*rng.Float64()}}},
				Iterations: float64(1000 + rng.IntN(5001))})
		}
		opt := BCOPlanOptions{Cost: BCOCost{Alpha: 0.5, Overhead: 0.005}}
		b.Run(fmt.Sprintf("jobs=%d/gpus=%d", size.jobs, c.NumGPUs()), func(b *testing.B) {
			for b.Loop() {
				if _, err := PlanSJFBCO(c, jobs, nil, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimPhillyLike runs every policy through the simulator on 2000 synthetic Philly-like
// jobs at offered load 0.9 on 512 GPUs: the end-to-end cost of a comparison run.
func BenchmarkSimPhillyLike(b *testing.B) {
	c, _ := topology.Uniform(topology.A100(), 64)
	cfg := trace.DefaultPhillyConfig(2000, 1)
	cfg.ArrivalRate = trace.RateForLoad(0.9, c.NumGPUs())
	recs, err := trace.GeneratePhilly(cfg)
	if err != nil {
		b.Fatal(err)
	}
	iters := map[gpusched.JobID]float64{}
	for _, r := range recs {
		iters[r.Job.ID] = r.Iterations
	}
	for i, name := range []string{"fifo", "sjf", "srpt-oracle", "tiresias", "sjf-bco", "sjf-bco-batch", "gadget", "first-fit", "list-scheduling", "random"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s := allSchedulers(b, iters)[i]
				if _, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScheduleQueue measures one Schedule call of every policy as the queue grows: a
// 2,048-GPU cluster about 90% full and 1,000, 10,000 or 100,000 waiting jobs. At every call
// the job at the head of the queue leaves and a new one arrives at its tail (an event of a
// long replay), so policies that keep state between calls see it change as in a simulation.
// Flat ns/op from 1k to 100k means the policy does not re-scan the queue per event.
func BenchmarkScheduleQueue(b *testing.B) {
	for _, pending := range []int{1000, 10000, 100000} {
		v0, iters := loadedView(b, 256, pending+4096)
		// allSchedulers' Tiresias promotes (PromoteKnob 2: it ranks every job at every call);
		// the command line's default does not.
		tir, _ := newTiresias(TiresiasOptions{Options: Options{Name: "tiresias-nopromote"}})
		for _, s := range append(allSchedulers(b, iters), tir) {
			b.Run(fmt.Sprintf("%v/waiting=%d", s, pending), func(b *testing.B) {
				v := v0
				all := v0.Pending
				v.Pending = all[:pending]
				src := new(int) // the delta's source: this benchmark's host
				d := &gpusched.ViewDelta{Source: src, Seq: 1, ArrivalOrder: true}
				v.Delta = d
				if _, err := s.Schedule(v); err != nil { // warm-up: the policy learns the queue
					b.Fatal(err)
				}
				lo := 0
				b.ResetTimer()
				for range b.N {
					d.Seq++
					d.Left = append(d.Left[:0], all[lo].Job.ID)
					if lo+pending+1 >= len(all) {
						// Start the window afresh: a delta cannot say it, so the policies rescan.
						lo = 0
						d.Source = new(int)
					} else {
						lo++
					}
					v.Pending = all[lo : lo+pending]
					d.Arrived = append(d.Arrived[:0], &v.Pending[pending-1])
					v.Now++
					if _, err := s.Schedule(v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
