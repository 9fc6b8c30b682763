package planner

import (
	"fmt"
	"math/rand/v2"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// fitCase is one decision for hostFit to fit: a cluster, the CPU its servers have left, the
// jobs (some running), their needs, and a scheduler that places GPUs only.
type fitCase struct {
	c     *topology.Cluster
	free  []nodeRes
	view  gpusched.View
	need  map[gpusched.JobID]podNeed
	inner gpusched.Scheduler
}

// genFitCase draws a case; intn(n) returns a number in [0, n).
func genFitCase(intn func(n int) int) fitCase {
	c, err := topology.Uniform(topology.A100(), 1+intn(4))
	if err != nil {
		panic(err)
	}
	fc := fitCase{c: c, need: map[gpusched.JobID]podNeed{}}
	for range c.NumServers() {
		fc.free = append(fc.free, nodeRes{cpu: int64(intn(9)) * 8000, mem: int64(intn(5)) << 30})
	}
	free := c.AllGPUs()
	for i := range 1 + intn(8) {
		podGPUs := []int{1, 2, 4}[intn(3)]
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", i)), GPUs: podGPUs * (1 + intn(2)), StepTime: 1, Arrival: float64(i)}
		if intn(4) > 0 {
			fc.need[j.ID] = podNeed{gpus: podGPUs, cpu: int64(intn(5)) * 4000, mem: int64(intn(3)) << 29}
		}
		st := gpusched.JobStatus{Job: j}
		if intn(2) == 0 {
			if gpus, ok := gpusched.Pack(c, free, j); ok {
				for _, g := range gpus {
					free.Remove(g)
				}
				st.GPUs = gpus
				fc.view.Running = append(fc.view.Running, st)
				continue
			}
		}
		fc.view.Pending = append(fc.view.Pending, st)
	}
	fc.view.Cluster = c
	fc.view.Unavailable = topology.NewGPUSet(c.NumGPUs())
	if g := topology.GPUID(intn(c.NumGPUs())); intn(3) == 0 && free.Contains(g) {
		fc.view.Unavailable.Add(g) // a GPU no job holds
	}
	keep := intn(2) == 0
	// A host that takes deltas: the scheduler then keeps its running jobs by KeepOthers,
	// without listing them (what hostFit must still charge).
	fc.view.AcceptsKeepOthers = keep && intn(2) == 0
	fc.inner = gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		// Keeps running jobs (or drops them: preempted), packs the waiting ones on what is
		// left; CPU and memory unknown to it.
		var d gpusched.Decision
		free := v.Free()
		d.KeepOthers = keep && v.AcceptsKeepOthers
		for _, s := range v.Running {
			if d.KeepOthers {
				continue
			}
			if keep {
				d.Run = append(d.Run, gpusched.Assignment{Job: s.Job.ID, GPUs: s.GPUs})
			} else {
				for _, g := range s.GPUs {
					if !v.Unavailable.Contains(g) {
						free.Add(g)
					}
				}
			}
		}
		for _, s := range v.Pending {
			if gpus, ok := gpusched.Pack(v.Cluster, free, s.Job); ok {
				for _, g := range gpus {
					free.Remove(g)
				}
				d.Run = append(d.Run, gpusched.Assignment{Job: s.Job.ID, GPUs: gpus})
			}
		}
		return d, nil
	})
	return fc
}

// checkFit runs hostFit on a case and checks, independently of hostFit's own accounting:
// the decision is valid for the view (GPU counts, no GPU twice or unavailable); on every
// server, the CPU and memory of the pods it starts there, added to those of the jobs it keeps,
// are within what the server has left (or it starts no pod needing any there); every job the
// scheduler ran runs or is told to wait, and no other; jobs without needs are untouched.
func checkFit(fc fitCase, broken bool) error {
	h := newHostFit(fc.inner)
	h.free, h.need, h.broken = fc.free, fc.need, broken
	d, err := h.Schedule(fc.view)
	if err != nil {
		return err
	}
	if err := d.Validate(fc.view); err != nil {
		return fmt.Errorf("invalid decision: %w", err)
	}
	want, _ := fc.inner.Schedule(fc.view)
	want = want.Expand(fc.view)
	d = d.Expand(fc.view)
	wantGPUs := map[gpusched.JobID][]topology.GPUID{}
	for _, a := range want.Run {
		wantGPUs[a.Job] = a.GPUs
	}
	running := map[gpusched.JobID][]topology.GPUID{}
	for _, s := range fc.view.Running {
		running[s.Job.ID] = s.GPUs
	}
	kept := make([]nodeRes, fc.c.NumServers())
	started := make([]nodeRes, fc.c.NumServers())
	seen := map[gpusched.JobID]bool{}
	for _, a := range d.Run {
		seen[a.Job] = true
		g, ok := wantGPUs[a.Job]
		if !ok {
			return fmt.Errorf("job %s runs but the scheduler did not run it", a.Job)
		}
		n, needs := fc.need[a.Job]
		if !needs {
			if !slicesEqual(g, a.GPUs) {
				return fmt.Errorf("job %s without needs moved from %v to %v", a.Job, g, a.GPUs)
			}
			continue
		}
		on := map[int]int{}
		for _, g := range a.GPUs {
			on[fc.c.ServerOf(g)]++
		}
		to := started
		if r, ok := running[a.Job]; ok && slicesEqual(r, a.GPUs) {
			to = kept
		}
		for s, k := range on {
			pods := int64((k + n.gpus - 1) / n.gpus)
			to[s].cpu += pods * n.cpu
			to[s].mem += pods * n.mem
		}
	}
	for s := range started {
		if started[s].cpu > 0 && kept[s].cpu+started[s].cpu > fc.free[s].cpu {
			return fmt.Errorf("server %d: %dm CPU started beside %dm kept, %dm left", s, started[s].cpu, kept[s].cpu, fc.free[s].cpu)
		}
		if started[s].mem > 0 && kept[s].mem+started[s].mem > fc.free[s].mem {
			return fmt.Errorf("server %d: %d bytes started beside %d kept, %d left", s, started[s].mem, kept[s].mem, fc.free[s].mem)
		}
	}
	for id := range wantGPUs {
		if !seen[id] && h.waits[id] == "" {
			return fmt.Errorf("job %s left out without a reason", id)
		}
		if seen[id] && h.waits[id] != "" {
			return fmt.Errorf("job %s runs and waits", id)
		}
	}
	return nil
}

func TestHostFitProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fc := genFitCase(func(n int) int { return rapid.IntRange(0, n-1).Draw(t, "x") })
		if err := checkFit(fc, false); err != nil {
			t.Fatal(err)
		}
	})
}

// The property fails for a hostFit that does not check CPU and memory (broken): the
// generated cases do exercise it.
func TestHostFitPropertyCatchesBroken(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fails := 0
	for range 500 {
		if checkFit(genFitCase(r.IntN), true) != nil {
			fails++
		}
	}
	if fails == 0 {
		t.Fatalf("no case of 500 caught a hostFit that ignores CPU and memory")
	}
	t.Logf("%d of 500 cases caught the broken hostFit", fails)
}
