// Command policy-sjfbco reruns the comparison of the SJF-BCO paper (Yu, Ji, Rajan, Liu,
// MobiHoc 2022, arXiv 2207.07817) in its own setting and its own contention model: SJF-BCO
// against First-Fit, List-Scheduling and Random on makespan and average job completion time.
//
//	go run ./examples/policy-sjfbco              # 10 seeds, markdown tables
//	go run ./examples/policy-sjfbco -seeds 3 -alpha 1
//
// The setting, as the paper describes it: 160 jobs (80 x 1 GPU, 14 x 2, 26 x 4, 30 x 8, 8 x 16,
// 2 x 32), 20 servers with 4, 8, 16 or 32 GPUs, iterations in [1000, 6000], time per iteration
// in [0.01, 0.05] s. What the paper's summary does not fix is this program's choice, seeded and
// deterministic (math/rand/v2 PCG with the seed):
//
//   - each server's GPU count is drawn uniformly from {4, 8, 16, 32} (so the cluster size varies
//     with the seed); servers are A100-like (topology.A100) with one NIC of -nic Gb/s, which is
//     the link bandwidth b_e of the contention model;
//   - each job's GPU demand comes from the mix above, in a shuffled order (its arrival order:
//     the list order of First-Fit, List-Scheduling and Random); iterations uniform on the
//     integers 1000..6000; compute time per iteration uniform on [0.01, 0.05] s; gradient size
//     uniform on [10, 100] MB (Features.Numeric["model_bytes"]);
//   - every job arrives at time 0 (the paper's offline batch), so JCT is completion time;
//   - the cost is policy.BCOCost{Alpha: -alpha, Overhead: -overhead}: a job split over k
//     servers gets B = b_e / (n + alpha (n - 1)) on a link shared by n rings and pays overhead
//     x (k - 1) per iteration; the simulator (package sim) charges no restore cost (nothing is
//     preempted).
//
// SJF-BCO knows every job's iterations, as the paper assumes. It runs in batch mode (the
// offline algorithm, once: policy.PlanSJFBCO), both with the first-fit reading of FA-FFP (the
// default) and with EarliestFit, and in its online mode.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

func main() {
	seeds := flag.Int("seeds", 10, "run seeds 1..n")
	alpha := flag.Float64("alpha", 0.5, "contention factor alpha of the BCO model")
	overhead := flag.Float64("overhead", 0.005, "seconds per iteration per extra server spanned")
	nic := flag.Float64("nic", 25, "server link bandwidth b_e in Gb/s")
	flag.Parse()
	if err := run(*seeds, *alpha, *overhead, *nic); err != nil {
		fmt.Fprintln(os.Stderr, "policy-sjfbco:", err)
		os.Exit(1)
	}
}

// Setting generates the paper's setting for one seed (see the package documentation).
func Setting(seed uint64, nicGbps float64) (*topology.Cluster, []trace.Record, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	servers := make([]topology.Server, 20)
	for i := range servers {
		spec := topology.A100()
		spec.GPUs = []int{4, 8, 16, 32}[rng.IntN(4)]
		spec.NICs = 1
		spec.NICBandwidth = topology.Gbps(nicGbps)
		servers[i] = topology.Server{ID: fmt.Sprintf("s%02d", i), ServerSpec: spec}
	}
	c, err := topology.New(fmt.Sprintf("sjfbco-%d", seed), servers, nil)
	if err != nil {
		return nil, nil, err
	}
	var demands []int
	for _, m := range [][2]int{{1, 80}, {2, 14}, {4, 26}, {8, 30}, {16, 8}, {32, 2}} {
		for range m[1] {
			demands = append(demands, m[0])
		}
	}
	rng.Shuffle(len(demands), func(i, j int) { demands[i], demands[j] = demands[j], demands[i] })
	recs := make([]trace.Record, len(demands))
	for i, g := range demands {
		recs[i] = trace.Record{
			Iterations: float64(1000 + rng.IntN(5001)),
			Job: gpusched.Job{
				ID:       gpusched.JobID(fmt.Sprintf("j%03d", i)),
				GPUs:     g,
				StepTime: 0.01 + 0.04*rng.Float64(),
				Features: gpusched.Features{Numeric: map[string]float64{policy.ModelBytesFeature: 10e6 + 90e6*rng.Float64()}},
			},
		}
	}
	return c, recs, nil
}

type row struct {
	name               string
	makespan, avgJCT   float64
	bestMk, bestJCT    int
	crossBytes, spread float64
}

func run(seeds int, alpha, overhead, nic float64) error {
	cost := policy.BCOCost{Alpha: alpha, Overhead: overhead}
	names := []string{"sjf-bco (batch)", "sjf-bco (batch, earliest-fit)", "sjf-bco (online)", "first-fit", "list-scheduling", "random"}
	rows := make([]row, len(names))
	for i := range rows {
		rows[i].name = names[i]
	}
	fmt.Printf("Per seed: makespan / average JCT in seconds (alpha %g, overhead %g s, b_e %g Gb/s)\n\n", alpha, overhead, nic)
	fmt.Printf("| seed | GPUs | %s |\n|---|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, recs, err := Setting(seed, nic)
		if err != nil {
			return err
		}
		iters := map[gpusched.JobID]float64{}
		for _, r := range recs {
			iters[r.Job.ID] = r.Iterations
		}
		known := func(j *gpusched.Job) float64 { return iters[j.ID] }
		plan := policy.BCOPlanOptions{Cost: cost}
		early := plan
		early.EarliestFit = true
		scheds := make([]gpusched.Scheduler, 0, len(names))
		for _, mk := range []func() (gpusched.Scheduler, error){
			func() (gpusched.Scheduler, error) {
				return policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{Batch: true, BCOPlanOptions: plan, Iterations: known}})
			},
			func() (gpusched.Scheduler, error) {
				return policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{Batch: true, BCOPlanOptions: early, Iterations: known}})
			},
			func() (gpusched.Scheduler, error) {
				return policy.New("sjf-bco", policy.Config{SJFBCO: policy.SJFBCOOptions{BCOPlanOptions: plan, Iterations: known}})
			},
			func() (gpusched.Scheduler, error) { return policy.New("first-fit", policy.Config{}) },
			func() (gpusched.Scheduler, error) { return policy.New("list-scheduling", policy.Config{}) },
			func() (gpusched.Scheduler, error) {
				return policy.New("random", policy.Config{Random: policy.RandomOptions{Seed: seed}})
			},
		} {
			s, err := mk()
			if err != nil {
				return err
			}
			scheds = append(scheds, s)
		}
		results := make([]*sim.Result, len(scheds))
		line := fmt.Sprintf("| %d | %d |", seed, c.NumGPUs())
		for i, s := range scheds {
			res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: s, Cost: cost, RestoreTime: -1})
			if err != nil {
				return fmt.Errorf("seed %d, %s: %w", seed, names[i], err)
			}
			results[i] = res
			rows[i].makespan += res.Summary.Makespan / float64(seeds)
			rows[i].avgJCT += res.Summary.AvgJCT / float64(seeds)
			rows[i].crossBytes += res.Summary.CrossServerBytes / float64(seeds)
			spread := 0.0
			for _, j := range res.Jobs {
				spread += float64(j.ServersSpanned) / float64(len(res.Jobs))
			}
			rows[i].spread += spread / float64(seeds)
			line += fmt.Sprintf(" %.0f / %.0f |", res.Summary.Makespan, res.Summary.AvgJCT)
		}
		bm, bj := 0, 0
		for i, r := range results {
			if r.Summary.Makespan < results[bm].Summary.Makespan {
				bm = i
			}
			if r.Summary.AvgJCT < results[bj].Summary.AvgJCT {
				bj = i
			}
		}
		rows[bm].bestMk++
		rows[bj].bestJCT++
		fmt.Println(line)
	}
	fmt.Printf("\nMeans over %d seeds\n\n", seeds)
	fmt.Println("| policy | makespan (s) | avg JCT (s) | best makespan | best avg JCT | servers per job | cross-server GB |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %.0f | %.0f | %d/%d | %d/%d | %.2f | %.0f |\n", r.name, r.makespan, r.avgJCT,
			r.bestMk, seeds, r.bestJCT, seeds, r.spread, r.crossBytes/1e9)
	}
	return nil
}
