package planner

import (
	"fmt"
	"sort"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// podNeed is what each worker pod of a job requests: GPUs, CPU (millicores) and memory
// (bytes).
type podNeed struct {
	gpus     int
	cpu, mem int64
}

// hostFit plans the CPU and memory of the GPU nodes around a scheduler that plans GPUs only
// (A-SRPT and the other policies place GPUs; the pods' CPU and memory requests are Kubernetes'
// business). It stands between the host runtime and the scheduler: every decision's starts and
// migrations are checked against what each node has left for the planner's pods (allocatable
// minus the requests of the pods the planner does not place: other schedulers' pods, pods
// without GPUs, pods whose eviction was refused) once the jobs the decision keeps where they
// run are charged. A start whose pods would not fit is moved to free GPUs on nodes where they
// fit (the nodes that can hold most of its pods first); if there are none, it is left out of
// the decision: the job keeps waiting, with the reason (waits), instead of being started on
// nodes where its pods cannot bind. Jobs without CPU or memory requests pass untouched, and a
// decision none of whose starts has any passes through without work.
//
// The planner fills free and need under its lock before each decision; Schedule runs under
// that lock (the runtime calls it from Planner.Sync).
type hostFit struct {
	inner gpusched.Scheduler
	// free is, per server of the planner's cluster, the CPU and memory its planned pods may
	// take (nodeRes.gpus unused); nil: nothing is limited.
	free []nodeRes
	// need is each held job's per-pod request, for the jobs that request CPU or memory.
	need map[gpusched.JobID]podNeed
	// waits are the jobs the last decision started but that this step left waiting, and why.
	waits map[gpusched.JobID]string
	// broken skips the check (tests show that their property catches it).
	broken bool
}

func newHostFit(inner gpusched.Scheduler) *hostFit {
	return &hostFit{inner: inner, need: map[gpusched.JobID]podNeed{}, waits: map[gpusched.JobID]string{}}
}

// JobCompleted passes completions to the scheduler when it observes them.
func (h *hostFit) JobCompleted(c gpusched.Completion) {
	if o, ok := h.inner.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

// Schedule calls the scheduler and fits its starts to the nodes' CPU and memory.
func (h *hostFit) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := h.inner.Schedule(v)
	if err == nil && d.KeepOthers {
		d = d.Expand(v) // the checks below charge every running job, listed or kept
	}
	clear(h.waits)
	if err != nil || h.free == nil || len(h.need) == 0 || v.Cluster == nil || len(h.free) != v.Cluster.NumServers() {
		return d, err
	}
	some := false
	for i := range d.Run {
		if _, ok := h.need[d.Run[i].Job]; ok {
			some = true
			break
		}
	}
	if !some {
		return d, nil
	}
	running := make(map[gpusched.JobID][]topology.GPUID, len(v.Running))
	for i := range v.Running {
		if s := &v.Running[i]; s.Job != nil {
			running[s.Job.ID] = s.GPUs
		}
	}
	c := v.Cluster
	left := make([]nodeRes, len(h.free))
	copy(left, h.free)
	used := topology.NewGPUSet(c.NumGPUs())
	for _, a := range d.Run {
		for _, g := range a.GPUs {
			if g >= 0 && int(g) < c.NumGPUs() {
				used.Add(g)
			}
		}
	}
	// Charge what the decision keeps where it runs: bound already, it stays whatever it
	// takes.
	kept := make([]bool, len(d.Run))
	for i, a := range d.Run {
		if gpus, ok := running[a.Job]; ok && slicesEqual(gpus, a.GPUs) {
			kept[i] = true
			if n, ok := h.need[a.Job]; ok {
				h.charge(c, left, n, a.GPUs)
			}
		}
	}
	var out []gpusched.Assignment
	changed := false
	for i, a := range d.Run {
		n, ok := h.need[a.Job]
		if kept[i] || !ok {
			out = append(out, a)
			continue
		}
		if h.fits(c, left, n, a.GPUs) {
			h.charge(c, left, n, a.GPUs)
			out = append(out, a)
			continue
		}
		changed = true
		for _, g := range a.GPUs {
			used.Remove(g)
		}
		var job *gpusched.Job
		for _, list := range [][]gpusched.JobStatus{v.Running, v.Pending} {
			for k := range list {
				if list[k].Job != nil && list[k].Job.ID == a.Job {
					job = list[k].Job
				}
			}
		}
		if gpus := h.replace(c, v.Unavailable, used, left, job, n, len(a.GPUs)); gpus != nil {
			h.charge(c, left, n, gpus)
			for _, g := range gpus {
				used.Add(g)
			}
			out = append(out, gpusched.Assignment{Job: a.Job, GPUs: gpus, PlanChoice: a.PlanChoice})
			continue
		}
		// A migration that fits nowhere stays where it runs if its GPUs are still free.
		if old, ok := running[a.Job]; ok && a.PlanChoice == 0 && len(old) == len(a.GPUs) && !anyUsed(used, old) && h.fits(c, left, n, old) {
			h.charge(c, left, n, old)
			for _, g := range old {
				used.Add(g)
			}
			out = append(out, gpusched.Assignment{Job: a.Job, GPUs: old})
			continue
		}
		h.waits[a.Job] = h.why(c, a, n)
	}
	if changed {
		d.Run = out
	}
	return d, nil
}

// perServer counts the pods a placement puts on each server, in server order.
func perServer(c *topology.Cluster, n podNeed, gpus []topology.GPUID) map[int]int64 {
	count := map[int]int{}
	for _, g := range gpus {
		if g >= 0 && int(g) < c.NumGPUs() {
			count[c.ServerOf(g)]++
		}
	}
	pods := make(map[int]int64, len(count))
	for s, k := range count {
		pods[s] = int64((k + n.gpus - 1) / max(n.gpus, 1))
	}
	return pods
}

func (h *hostFit) fits(c *topology.Cluster, left []nodeRes, n podNeed, gpus []topology.GPUID) bool {
	if h.broken {
		return true
	}
	for s, k := range perServer(c, n, gpus) {
		if k*n.cpu > left[s].cpu || k*n.mem > left[s].mem {
			return false
		}
	}
	return true
}

func (h *hostFit) charge(c *topology.Cluster, left []nodeRes, n podNeed, gpus []topology.GPUID) {
	for s, k := range perServer(c, n, gpus) {
		left[s].cpu -= k * n.cpu
		left[s].mem -= k * n.mem
	}
}

// replace finds k GPUs for a job of pods n on servers whose free, available GPUs (eligible
// for job, when it restricts them) and CPU and memory hold its pods, the servers that hold
// most of them first (fewest servers), or returns nil.
func (h *hostFit) replace(c *topology.Cluster, unavail, used topology.GPUSet, left []nodeRes, job *gpusched.Job, n podNeed, k int) []topology.GPUID {
	if n.gpus < 1 || k%n.gpus != 0 {
		return nil
	}
	type cand struct {
		s    int
		pods int64
		gpus []topology.GPUID
	}
	var cands []cand
	need := int64(k / n.gpus)
	total := int64(0)
	for s := range c.NumServers() {
		first, m := c.GPUsOf(s)
		var free []topology.GPUID
		for g := first; g < first+topology.GPUID(m); g++ {
			if used.Contains(g) || (unavail.Len() > 0 && unavail.Contains(g)) {
				continue
			}
			if job != nil && job.Constrained() && !job.Eligible(c.GPU(g)) {
				continue
			}
			free = append(free, g)
		}
		pods := int64(len(free) / n.gpus)
		if n.cpu > 0 {
			pods = min(pods, max(left[s].cpu, 0)/n.cpu)
		}
		if n.mem > 0 {
			pods = min(pods, max(left[s].mem, 0)/n.mem)
		}
		if pods > 0 {
			cands = append(cands, cand{s, pods, free})
			total += pods
		}
	}
	if total < need {
		return nil
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].pods > cands[b].pods })
	var out []topology.GPUID
	for _, cd := range cands {
		take := min(cd.pods, need)
		out = append(out, cd.gpus[:take*int64(n.gpus)]...)
		need -= take
		if need == 0 {
			break
		}
	}
	return out
}

// why says why a start was left out.
func (h *hostFit) why(c *topology.Cluster, a gpusched.Assignment, n podNeed) string {
	var best nodeRes
	for s := range h.free {
		best.cpu, best.mem = max(best.cpu, h.free[s].cpu), max(best.mem, h.free[s].mem)
	}
	return fmt.Sprintf("job %s waits for CPU or memory: its %d pods of %dm CPU and %d bytes of memory each fit on no set of nodes with free GPUs (most any GPU node has for its pods: %dm CPU, %d bytes)",
		a.Job, len(a.GPUs)/max(n.gpus, 1), n.cpu, n.mem, max(best.cpu, 0), max(best.mem, 0))
}

func anyUsed(used topology.GPUSet, gpus []topology.GPUID) bool {
	for _, g := range gpus {
		if used.Contains(g) {
			return true
		}
	}
	return false
}

func slicesEqual(a, b []topology.GPUID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
