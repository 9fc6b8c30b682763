package policy

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestPropertySJFBCOBusyUntil: the GPUs' busy-until times that SJF-BCO plans from, computed
// with the steps kept from call to call (matched in order, the map serving the others), are
// those a fresh SJF-BCO computes from the same view, after random changes of the running jobs
// between calls: jobs starting (appended), finishing (removed anywhere), progressing, moved to
// other GPUs (in place, in the same slice), with and without shared links, and time passing.
func TestPropertySJFBCOBusyUntil(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		specs := []topology.ServerSpec{topology.A100(), topology.T4()}
		var servers []topology.Server
		for i := range rapid.IntRange(1, 4).Draw(t, "servers") {
			spec := specs[rapid.IntRange(0, 1).Draw(t, "kind")]
			spec.GPUs = rapid.SampledFrom([]int{2, 4, 8}).Draw(t, "gpus")
			spec.NICs = min(spec.NICs, spec.GPUs)
			servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec})
		}
		c, err := topology.New("busy", servers, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.ZooModel("resnet50")
		if err != nil {
			t.Fatal(err)
		}
		opt := SJFBCOOptions{Iterations: func(j *gpusched.Job) float64 { return float64(100 + len(j.ID)*37) }}
		kept, err := newSJFBCO(opt)
		if err != nil {
			t.Fatal(err)
		}
		v := gpusched.View{Now: 0, Cluster: c}
		used := make([]bool, c.NumGPUs())
		freeGPUs := func() []topology.GPUID {
			var out []topology.GPUID
			for g, u := range used {
				if !u {
					out = append(out, topology.GPUID(g))
				}
			}
			return out
		}
		id := 0
		for range rapid.IntRange(1, 25).Draw(t, "calls") {
			for range rapid.IntRange(0, 3).Draw(t, "changes") {
				switch rapid.IntRange(0, 4).Draw(t, "op") {
				case 0: // a job starts
					free := freeGPUs()
					if len(free) == 0 {
						continue
					}
					n := rapid.IntRange(1, min(len(free), 10)).Draw(t, "n")
					gpus := rapid.Permutation(free).Draw(t, "place")[:n]
					j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", id)), GPUs: n, StepTime: 0.5}
					if rapid.Bool().Draw(t, "model") {
						j.Model = m
						j.Plan = graph.Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 16 * n}
					}
					id++
					for _, g := range gpus {
						used[g] = true
					}
					v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: gpus, Started: true})
				case 1: // a job finishes
					if len(v.Running) == 0 {
						continue
					}
					k := rapid.IntRange(0, len(v.Running)-1).Draw(t, "done")
					for _, g := range v.Running[k].GPUs {
						used[g] = false
					}
					v.Running = slices.Delete(v.Running, k, k+1)
				case 2: // a job moves, in place
					if len(v.Running) == 0 {
						continue
					}
					st := &v.Running[rapid.IntRange(0, len(v.Running)-1).Draw(t, "moved")]
					for _, g := range st.GPUs {
						used[g] = false
					}
					free := freeGPUs()
					for k, g := range rapid.Permutation(free).Draw(t, "to")[:len(st.GPUs)] {
						st.GPUs[k] = g
						used[g] = true
					}
				case 3: // progress
					for k := range v.Running {
						v.Running[k].Iterations += float64(rapid.IntRange(0, 50).Draw(t, "iters"))
					}
				case 4:
					v.Now += rapid.SampledFrom([]float64{0, 1, 3.5, 100}).Draw(t, "dt")
				}
			}
			kept.follow(&v)
			got, err := kept.busyUntil(&v)
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := newSJFBCO(opt)
			if err != nil {
				t.Fatal(err)
			}
			fresh.follow(&v)
			want, err := fresh.busyUntil(&v)
			if err != nil {
				t.Fatal(err)
			}
			for g := range want {
				if math.Float64bits(got[g]) != math.Float64bits(want[g]) {
					t.Fatalf("at %v, GPU %d busy until %v, afresh %v (running %d)", v.Now, g, got[g], want[g], len(v.Running))
				}
			}
		}
	})
}
