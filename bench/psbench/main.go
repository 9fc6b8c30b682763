// Command psbench runs the parameter-server comparison of BENCHMARKS.md ("Parameter-server
// jobs (issue #17)", bench/ps_policies.sh): jobs of the shared Philly file as PS jobs of zoo
// CNN and recommendation models on T4 servers with CPU cores, under ps-locality, smd, and
// FIFO, SJF (true sizes) and Tiresias with the baseline PS placement (one shard per worker
// server), and the same jobs as ring all-reduce jobs under A-SRPT with true sizes:
//
//	psbench -trace philly.csv -servers 512 -cpus 32 -rates 5,8 -jobs 0
//	psbench -trace philly.csv -jobs 300 -jsonl ps.jsonl   # then gpusched compare -trace ps.jsonl
//
// Each Philly job keeps its arrival (divided by the rate), its GPU count g (the PS job's
// largest worker count, and its baseline's; at least g/2 workers and 1 to g shards) and its
// run time: its iteration count is its duration over the baseline's step time packed on g
// GPUs, so that the trace's duration is what the job took on its own GPUs. The model is drawn,
// seeded, from resnet50, vgg16, inception-v3, resnet18-cifar10 and ncf. Each worker takes 2
// cores and 8 GB of host memory, each shard 4 cores and 4 GB.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/asrpt"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/ps"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "psbench:", err)
		os.Exit(1)
	}
}

var models = []string{"resnet50", "vgg16", "inception-v3", "resnet18-cifar10", "ncf"}

func run(args []string) error {
	fs := flag.NewFlagSet("psbench", flag.ContinueOnError)
	in := fs.String("trace", "../shared/data/philly/philly.csv", "the Philly job file")
	servers := fs.Int("servers", 512, "T4 servers (4 GPUs each)")
	cpus := fs.Int("cpus", 32, "CPU cores per server")
	rates := fs.String("rates", "5,8", "arrival-rate multipliers (load levels)")
	jobs := fs.Int("jobs", 0, "keep the first N jobs of the file (0: all)")
	seed := fs.Uint64("seed", 1, "seed of the model draw and of the rounding")
	pols := fs.String("policies", "ps-locality,smd,fifo,sjf,tiresias,asrpt-allreduce", "policies to run")
	jsonl := fs.String("jsonl", "", "write the PS workload (rate 1) as JSON lines to this file and exit (for gpusched compare -trace)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	spec := topology.T4()
	spec.CPUs = *cpus
	spec.HostMemory = 192e9
	c, err := topology.Uniform(spec, *servers)
	if err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	tr, err := trace.ReadPhilly(f, "philly.csv", trace.ReadOptions{Seed: *seed})
	f.Close()
	if err != nil {
		return err
	}
	recs := tr.Records
	if *jobs > 0 && *jobs < len(recs) {
		recs = recs[:*jobs]
	}
	cost := gpusched.DefaultCost()
	psRecs, arRecs, err := convert(recs, c, cost, *seed)
	if err != nil {
		return err
	}
	if *jsonl != "" {
		out, err := os.Create(*jsonl)
		if err != nil {
			return err
		}
		if err := trace.WriteJSONL(out, psRecs); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	fmt.Printf("cluster: %d T4 servers x 4 GPUs (%d GPUs), %d cores and 192 GB per server, one 50 Gb/s NIC\n", *servers, c.NumGPUs(), *cpus)
	fmt.Printf("workload: %d Philly jobs (%d skipped: larger than the cluster) as PS jobs of %s\n\n", len(psRecs), len(recs)-len(psRecs), strings.Join(models, ", "))
	fmt.Printf("%-16s %5s %10s %10s %10s %12s %10s %10s %8s\n", "policy", "rate", "mean JCT", "p99 JCT", "makespan", "net bytes", "LP gap", "wall", "cpu")
	for _, rs := range strings.Split(*rates, ",") {
		rate, err := strconv.ParseFloat(rs, 64)
		if err != nil || !(rate > 0) {
			return fmt.Errorf("bad rate %q", rs)
		}
		for _, name := range strings.Split(*pols, ",") {
			w := psRecs
			if name == "asrpt-allreduce" {
				w = arRecs
			}
			w = scale(w, rate)
			truth := make(map[gpusched.JobID]float64, len(w))
			for _, r := range w {
				truth[r.Job.ID] = r.Iterations
			}
			s, gap, err := build(name, cost, *seed, truth)
			if err != nil {
				return err
			}
			t0, c0 := time.Now(), cpuTime()
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: w, Scheduler: s, Cost: cost})
			if err != nil {
				return fmt.Errorf("%s at %gx: %w", name, rate, err)
			}
			g := "-"
			if gap != nil {
				g = gap()
			}
			fmt.Printf("%-16s %5s %9.2fh %9.2fh %9.2fd %10.3gPB %10s %9.1fs %7.1fs\n", name, rs+"x",
				res.Summary.AvgJCT/3600, res.Summary.P99JCT/3600, res.Summary.Makespan/86400,
				res.Summary.CrossServerBytes/1e15, g, time.Since(t0).Seconds(), cpuTime()-c0)
		}
	}
	return nil
}

// build returns a fresh scheduler and, for the PS policies, a function that formats its gap.
func build(name string, cost gpusched.CostModel, seed uint64, truth map[gpusched.JobID]float64) (gpusched.Scheduler, func() string, error) {
	iters := func(j *gpusched.Job) float64 { return truth[j.ID] }
	switch name {
	case "ps-locality":
		s, err := policy.New("ps-locality", policy.Config{PSLocality: policy.PSLocalityOptions{Cost: cost, Seed: seed}})
		return s, func() string {
			st := policy.DiagnosticsOf(s).PS
			return fmt.Sprintf("%.3f", st.Gap())
		}, err
	case "smd":
		s, err := policy.New("smd", policy.Config{SMD: policy.SMDOptions{Cost: cost, Iterations: iters}})
		return s, func() string {
			st := policy.DiagnosticsOf(s).PS
			return fmt.Sprintf("%.3f", st.ObjectiveGap())
		}, err
	case "fifo":
		s, err := policy.New("fifo", policy.Config{})
		return s, nil, err
	case "sjf":
		s, err := policy.New("sjf", policy.Config{SJF: policy.SJFOptions{Size: func(j *gpusched.Job) float64 {
			return float64(j.GPUs) * truth[j.ID] * baselineStep(cost, j)
		}}})
		return s, nil, err
	case "tiresias":
		s, err := policy.New("tiresias", policy.Config{})
		return s, nil, err
	case "asrpt-allreduce":
		s, err := asrpt.New(asrpt.Options{Cost: cost, Name: "asrpt-allreduce", Estimator: asrpt.Oracle(func(id gpusched.JobID) (float64, bool) {
			n, ok := truth[id]
			return n, ok
		})})
		return s, nil, err
	}
	return nil, nil, fmt.Errorf("unknown policy %q", name)
}

// baselineStep is the job's step time under its own plan packed from GPU 0 (for SJF's sizes).
func baselineStep(cost gpusched.CostModel, j *gpusched.Job) float64 {
	return stepPacked(cost, j, nil)
}

var stepCluster *topology.Cluster

func stepPacked(cost gpusched.CostModel, j *gpusched.Job, c *topology.Cluster) float64 {
	if c == nil {
		c = stepCluster
	}
	gpus := make([]topology.GPUID, j.GPUs)
	for i := range gpus {
		gpus[i] = topology.GPUID(i)
	}
	sc, err := cost.StepCost(j, c, gpus, nil)
	if err != nil {
		return math.Inf(1)
	}
	return sc.Time
}

// convert maps Philly records to PS jobs and to the same jobs as all-reduce jobs.
func convert(recs []trace.Record, c *topology.Cluster, cost gpusched.CostModel, seed uint64) (psRecs, ar []trace.Record, err error) {
	stepCluster = c
	rng := rand.New(rand.NewPCG(seed, 17))
	zoo := make([]*graph.Model, len(models))
	for i, n := range models {
		if zoo[i], err = graph.ZooModel(n); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range recs {
		g := r.Job.GPUs
		dur := r.Iterations * r.Job.StepTime
		if g > c.NumGPUs() || !(dur > 0) {
			continue
		}
		m := zoo[rng.IntN(len(zoo))]
		j, err := gpusched.NewPSJob(gpusched.PSJobSpec{
			ID: r.Job.ID, Arrival: r.Job.Arrival, Model: m, WorkerCPUs: 2, WorkerMemory: 8e9,
			PS: ps.Spec{MinWorkers: max(1, g/2), MaxWorkers: g, MinPS: 1, MaxPS: g, CPUs: 4, HostMemory: 4e9},
		})
		if err != nil {
			return nil, nil, fmt.Errorf("job %q: %w", r.Job.ID, err)
		}
		step := stepPacked(cost, j, c)
		if math.IsInf(step, 0) {
			return nil, nil, errors.New("no step time for job " + string(r.Job.ID))
		}
		iters := math.Max(1, math.Round(dur/step))
		psRecs = append(psRecs, trace.Record{Job: *j, Iterations: iters})
		a := gpusched.Job{ID: r.Job.ID, Arrival: r.Job.Arrival, GPUs: g, Model: m, Plan: j.Plan, CPUs: 2, HostMemory: 8e9}
		ar = append(ar, trace.Record{Job: a, Iterations: iters})
	}
	return psRecs, ar, nil
}

// scale divides arrivals by the rate multiplier.
func scale(recs []trace.Record, rate float64) []trace.Record {
	out := slices.Clone(recs)
	for i := range out {
		out[i].Job.Arrival /= rate
	}
	return out
}

// cpuTime returns the process's user and system CPU time in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
