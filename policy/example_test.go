package policy_test

import (
	"fmt"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// fourGPUs is one T4 server: GPUs 0-3.
func fourGPUs() *topology.Cluster {
	c, err := topology.Uniform(topology.T4(), 1)
	if err != nil {
		panic(err)
	}
	return c
}

func show(d gpusched.Decision) {
	for _, a := range d.Run {
		fmt.Printf("  %s on %v\n", a.Job, a.GPUs)
	}
	if d.WakeAt > 0 {
		fmt.Printf("  wake at %g\n", d.WakeAt)
	}
}

func ExampleNew_fifo() {
	c := fourGPUs()
	v := gpusched.View{Now: 2, Cluster: c, Pending: []gpusched.JobStatus{
		{Job: &gpusched.Job{ID: "a", GPUs: 2, StepTime: 1, Arrival: 0}},
		{Job: &gpusched.Job{ID: "b", GPUs: 4, StepTime: 1, Arrival: 1}},
		{Job: &gpusched.Job{ID: "c", GPUs: 2, StepTime: 1, Arrival: 2}},
	}}
	strict, _ := policy.New("fifo", policy.Config{})
	backfill, _ := policy.New("fifo", policy.Config{Options: policy.Options{Order: policy.Backfill}})
	for _, s := range []gpusched.Scheduler{strict, backfill} {
		d, _ := s.Schedule(v)
		fmt.Println("fifo:")
		show(d)
	}
	// Output:
	// fifo:
	//   a on [0 1]
	// fifo:
	//   a on [0 1]
	//   c on [2 3]
}

func ExampleNew_sjf() {
	predicted := map[gpusched.JobID]float64{"long": 3600, "short": 60} // GPU-seconds
	s, _ := policy.New("sjf", policy.Config{SJF: policy.SJFOptions{Size: func(j *gpusched.Job) float64 { return predicted[j.ID] }}})
	d, _ := s.Schedule(gpusched.View{Cluster: fourGPUs(), Pending: []gpusched.JobStatus{
		{Job: &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}},
		{Job: &gpusched.Job{ID: "short", GPUs: 4, StepTime: 1}},
	}})
	fmt.Println(s)
	show(d)
	// Output:
	// sjf
	//   short on [0 1 2 3]
}

func ExampleNew_srptOracle() {
	iterations := map[gpusched.JobID]float64{"long": 1000, "short": 50}
	o, _ := policy.New("srpt-oracle", policy.Config{Oracle: policy.OracleOptions{
		Iterations: func(id gpusched.JobID) float64 { return iterations[id] },
	}})
	long := &gpusched.Job{ID: "long", GPUs: 4, StepTime: 1}
	short := &gpusched.Job{ID: "short", GPUs: 2, StepTime: 1, Arrival: 100}
	v := gpusched.View{Now: 100, Cluster: fourGPUs(),
		Running: []gpusched.JobStatus{{Job: long, GPUs: []topology.GPUID{0, 1, 2, 3}, Iterations: 100, Started: true, Since: 0}},
		Pending: []gpusched.JobStatus{{Job: short, Since: 100}}}
	d, _ := o.Schedule(v)
	ch := d.Diff(v)
	fmt.Println("preempt:", ch.Preempt)
	fmt.Println("start:", ch.Start[0].Job, ch.Start[0].GPUs)
	// Output:
	// preempt: [long]
	// start: short [0 1]
}

func ExampleNew_tiresias() {
	t, _ := policy.New("tiresias", policy.Config{}) // queues at 3250 and 7200 GPU-seconds
	old := &gpusched.Job{ID: "old", GPUs: 4, StepTime: 1}
	fresh := &gpusched.Job{ID: "new", GPUs: 4, StepTime: 1, Arrival: 1000}
	// old has run 1000 s on 4 GPUs: 4000 GPU-seconds, so it is in the second queue.
	v := gpusched.View{Now: 1000, Cluster: fourGPUs(),
		Running: []gpusched.JobStatus{{Job: old, GPUs: []topology.GPUID{0, 1, 2, 3}, Executed: 1000, Attained: 4000, Started: true}},
		Pending: []gpusched.JobStatus{{Job: fresh, Since: 1000}}}
	d, _ := t.Schedule(v)
	q := policy.DiagnosticsOf(t).Queues
	fmt.Println("queues:", q["old"], q["new"])
	show(d) // new preempts old; Tiresias wants a call when new reaches 3250 GPU-seconds
	// Output:
	// queues: 1 0
	//   new on [0 1 2 3]
	//   wake at 1812.5
}

func ExamplePlanSJFBCO() {
	c, _ := topology.Uniform(topology.T4(), 2) // 2 servers x 4 GPUs
	jobs := []policy.BCOJob{
		{Job: &gpusched.Job{ID: "a", GPUs: 1, StepTime: 0.02}, Iterations: 3000},
		{Job: &gpusched.Job{ID: "b", GPUs: 2, StepTime: 0.03}, Iterations: 2000},
		{Job: &gpusched.Job{ID: "c", GPUs: 4, StepTime: 0.02}, Iterations: 4000},
		{Job: &gpusched.Job{ID: "d", GPUs: 8, StepTime: 0.01}, Iterations: 1000},
	}
	plan, err := policy.PlanSJFBCO(c, jobs, nil, policy.BCOPlanOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("kappa %d, theta %.1f s, makespan %.1f s\n", plan.Kappa, plan.Theta, plan.Makespan)
	for _, p := range plan.Jobs {
		fmt.Printf("  %s on %v from %.0f to %.0f\n", p.Job.ID, p.GPUs, p.Start, p.End)
	}
	// Output:
	// kappa 0, theta 90.0 s, makespan 90.0 s
	//   a on [0] from 0 to 60
	//   b on [4 5] from 0 to 60
	//   c on [1 2 6 7] from 0 to 80
	//   d on [0 1 2 3 4 5 6 7] from 80 to 90
}

func ExampleBCOCost() {
	c, _ := topology.Uniform(topology.T4(), 2)
	j := &gpusched.Job{ID: "j", GPUs: 4, StepTime: 0.02}
	cost := policy.BCOCost{Alpha: 0.5, Overhead: 0.01, Bandwidth: 1e9,
		Bytes: func(*gpusched.Job) float64 { return 100e6 }} // 100 MB of gradients
	packed, _ := cost.StepCost(j, c, []topology.GPUID{0, 1, 2, 3}, nil)
	split, _ := cost.StepCost(j, c, []topology.GPUID{0, 1, 4, 5}, nil)
	// Another ring on both servers' links: B = 1e9 / (2 + 0.5).
	contended, _ := cost.StepCost(j, c, []topology.GPUID{0, 1, 4, 5}, topology.LinkLoad{
		{Kind: topology.NICLink, Index: 0}: 1, {Kind: topology.NICLink, Index: 1}: 1})
	fmt.Printf("packed %.3f s, split %.3f s, split and contended %.3f s\n", packed.Time, split.Time, contended.Time)
	// Output:
	// packed 0.020 s, split 0.180 s, split and contended 0.405 s
}

func ExampleNew_gadget() {
	c, _ := topology.Uniform(topology.T4(), 3) // 3 servers x 4 GPUs
	g, _ := policy.New("gadget", policy.Config{GADGET: policy.GADGETOptions{Share: 0.6}})
	x := &gpusched.Job{ID: "x", GPUs: 4, StepTime: 1}
	z := &gpusched.Job{ID: "z", GPUs: 4, StepTime: 1}
	v := gpusched.View{Now: 1, Cluster: c,
		Running: []gpusched.JobStatus{
			{Job: x, GPUs: []topology.GPUID{0, 1, 4, 5}, Started: true}, // spans servers 0 and 1
			{Job: z, GPUs: []topology.GPUID{8, 9, 10, 11}, Started: true},
		},
		Pending: []gpusched.JobStatus{
			{Job: &gpusched.Job{ID: "y", GPUs: 4, StepTime: 1}}, // would span servers 0 and 1 again
			{Job: &gpusched.Job{ID: "small", GPUs: 2, StepTime: 1}},
		}}
	d, _ := g.Schedule(v)
	show(d) // y's ring does not fit the links' remaining bandwidth; small fits in one server
	// Output:
	//   x on [0 1 4 5]
	//   z on [8 9 10 11]
	//   small on [2 3]
}

// SJF-BCO's offline algorithm on a batch of jobs present at time 0, run by the simulator in the
// paper's contention model: the simulated schedule is the plan.
func ExampleNew_sjfBCO() {
	servers := []topology.Server{}
	for i, n := range []int{4, 8, 4, 8} {
		spec := topology.T4()
		spec.GPUs = n
		servers = append(servers, topology.Server{ID: fmt.Sprintf("s%d", i), ServerSpec: spec})
	}
	c, _ := topology.New("mini", servers, nil)
	var recs []trace.Record
	iters := map[gpusched.JobID]float64{}
	for i, g := range []int{1, 1, 1, 2, 2, 4, 4, 8, 1, 2, 4, 8, 16, 1, 2, 4} {
		id := gpusched.JobID(fmt.Sprintf("j%02d", i))
		n := float64(1000 + 300*i)
		iters[id] = n
		recs = append(recs, trace.Record{Iterations: n, Job: gpusched.Job{ID: id, GPUs: g,
			StepTime: 0.01 + 0.002*float64(i%10),
			Features: gpusched.Features{Numeric: map[string]float64{policy.ModelBytesFeature: 50e6}}}})
	}
	cost := policy.BCOCost{Alpha: 0.5, Overhead: 0.005}
	bco, _ := policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{
		Batch:          true,
		BCOPlanOptions: policy.BCOPlanOptions{Cost: cost},
		Iterations:     func(j *gpusched.Job) float64 { return iters[j.ID] }, // known, as in the paper
	}})
	res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: bco, Cost: cost})
	if err != nil {
		panic(err)
	}
	plan := policy.DiagnosticsOf(bco).Plan
	fmt.Printf("%s: kappa %d, planned makespan %.1f s, simulated %.1f s\n",
		res.Scheduler, plan.Kappa, plan.Makespan, res.Summary.Makespan)
	// Output:
	// sjf-bco: kappa 16, planned makespan 432.4 s, simulated 432.4 s
}

// twoServersHalfBusy is two 4-GPU servers; a job holds GPUs 0 and 1, another waits for two.
func twoServersHalfBusy() gpusched.View {
	c, _ := topology.Uniform(topology.T4(), 2) // GPUs 0-3 and 4-7
	return gpusched.View{Now: 10, Cluster: c,
		Running: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "r", GPUs: 2, StepTime: 1}, GPUs: []topology.GPUID{0, 1}, Started: true}},
		Pending: []gpusched.JobStatus{{Job: &gpusched.Job{ID: "p", GPUs: 2, StepTime: 1}}}}
}

// The SJF-BCO paper's three baselines take jobs in arrival order and differ in where a job
// goes. First-Fit: the first server with room.
func ExampleNew_firstFit() {
	ff, _ := policy.New("first-fit", policy.Config{})
	d, _ := ff.Schedule(twoServersHalfBusy())
	fmt.Println(ff, d.Run[1].GPUs)
	// Output:
	// first-fit [2 3]
}

// List-Scheduling: the free GPUs that have been busy the least, wherever they are.
func ExampleNew_listScheduling() {
	ls, _ := policy.New("list-scheduling", policy.Config{})
	v := twoServersHalfBusy()
	ls.Schedule(gpusched.View{Now: 0, Cluster: v.Cluster, Running: v.Running}) // r has run since 0
	d, _ := ls.Schedule(v)
	fmt.Println(ls, d.Run[1].GPUs, "load of GPU 0:", policy.DiagnosticsOf(ls).Load[0])
	// Output:
	// list-scheduling [2 3] load of GPU 0: 10
}

// Random: free GPUs drawn at random from a seeded stream.
func ExampleNew_random() {
	rnd, _ := policy.New("random", policy.Config{Random: policy.RandomOptions{Seed: 1}})
	d, _ := rnd.Schedule(twoServersHalfBusy())
	fmt.Println(rnd, d.Run[1].GPUs)
	// Output:
	// random [2 6]
}
