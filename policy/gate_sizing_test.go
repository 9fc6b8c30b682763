package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// gateSizingMismatch returns the first job (in a seeded random order, each job twice, so that
// most are answered from the cache) whose admission by g under cost differs from
// gpusched.Admit's and BestPlacement's: the verdict's error text, or its best time per
// iteration, or the time bestTime hands the policy. "" when none differs.
func gateSizingMismatch(g *gate, c *topology.Cluster, cost gpusched.CostModel, jobs []*gpusched.Job, seed uint64) string {
	order := append(append([]*gpusched.Job(nil), jobs...), jobs...)
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, k int) { order[i], order[k] = order[k], order[i] })
	g.cluster = c
	g.verdict = map[gpusched.JobID]verdict{}
	for _, j := range order {
		vd := g.judge(j, c)
		g.verdict[j.ID] = vd
		want := gpusched.Admit(j, c, cost)
		if fmt.Sprint(vd.err) != fmt.Sprint(gpusched.Reject(j.ID, want)) && (vd.err != nil || want != nil) {
			return fmt.Sprintf("job %q: verdict %v, Admit %v", j.ID, vd.err, want)
		}
		if want != nil {
			continue
		}
		_, sc, _ := gpusched.BestPlacement(j, c, cost)
		if tau, ok := g.bestTime(j); !ok || tau != sc.Time || vd.tau != sc.Time {
			return fmt.Sprintf("job %q: best time %v (%v), BestPlacement %v", j.ID, tau, ok, sc.Time)
		}
	}
	return ""
}

// gateSizingJobs is jobs of every GPU count from 1 to 20 (the mixed cluster has 12), of each
// constraint (none, a GPU type, a memory floor), with a model whose plan fits only the A100s,
// one that fits both, and none, some invalid.
func gateSizingJobs(t *testing.T) []*gpusched.Job {
	big, err1 := graph.ZooModel("gpt2-1.5b")
	small, err2 := graph.ZooModel("resnet50")
	if err1 != nil || err2 != nil {
		t.Skip("zoo models missing:", err1, err2)
	}
	var jobs []*gpusched.Job
	for n := 1; n <= 20; n++ {
		for ci, con := range []struct {
			typ string
			mem float64
		}{{"", 0}, {"A100", 0}, {"T4", 0}, {"", 40 << 30}} {
			for mi, m := range []*graph.Model{nil, small, big} {
				j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d-%d-%d", n, ci, mi)), GPUs: n, GPUType: con.typ, MinGPUMemory: con.mem, StepTime: 0.5}
				if m != nil {
					j.Model, j.StepTime = m, 0
					j.Plan = graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 4 * n}
				}
				jobs = append(jobs, j)
			}
		}
	}
	jobs = append(jobs, &gpusched.Job{ID: "invalid", GPUs: 0, StepTime: 1}, &gpusched.Job{ID: "nostep", GPUs: 2})
	return jobs
}

// TestGateSizingCache: the gate's admission under a cost model, with its cache of sizing
// candidates, says what gpusched.Admit says of every job (the same error, or none) and finds
// the best time per iteration that gpusched.BestPlacement finds, on a cluster of two GPU kinds
// where the candidates depend on the job's GPU count and constraints; a cache whose entries
// are swapped between constraints is caught.
func TestGateSizingCache(t *testing.T) {
	var servers []topology.Server
	for i, spec := range []topology.ServerSpec{topology.T4(), topology.A100(), topology.T4()} {
		servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec})
	}
	c, err := topology.New("mixed", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := gateSizingJobs(t)
	cost := gpusched.DefaultCost()
	for seed := uint64(1); seed <= 3; seed++ {
		g := &gate{cost: cost}
		if msg := gateSizingMismatch(g, c, cost, jobs, seed); msg != "" {
			t.Errorf("seed %d: %s", seed, msg)
		}
		if len(g.sizing) == 0 {
			t.Errorf("seed %d: nothing cached", seed)
		}
	}
	// Teeth: the A100 jobs' candidates handed to the T4 jobs and the other way round.
	g := &gate{cost: cost}
	if msg := gateSizingMismatch(g, c, cost, jobs, 1); msg != "" {
		t.Fatal(msg)
	}
	swapped := 0
	for k, v := range g.sizing {
		if k.gpuType == "A100" {
			t4 := k
			t4.gpuType = "T4"
			if w, ok := g.sizing[t4]; ok {
				g.sizing[k], g.sizing[t4] = w, v
				swapped++
			}
		}
	}
	if swapped == 0 {
		t.Fatal("test bug: no A100 and T4 entries to swap")
	}
	if msg := gateSizingMismatch(g, c, cost, jobs, 2); msg == "" {
		t.Error("a cache with the A100 and T4 candidates swapped is not caught")
	}
}
