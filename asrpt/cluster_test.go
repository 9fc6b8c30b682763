package asrpt

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// servers builds a cluster of n 4-GPU T4 servers named s0, s1, ...
func servers(t *testing.T, n int) *topology.Cluster {
	t.Helper()
	var list []topology.Server
	for i := range n {
		list = append(list, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: topology.T4()})
	}
	c, err := topology.New(fmt.Sprint(n, "x4"), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func serversOf(c *topology.Cluster, gpus []topology.GPUID) []int {
	var out []int
	for _, g := range gpus {
		if s := c.ServerOf(g); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func assignment(d gpusched.Decision, id gpusched.JobID) ([]topology.GPUID, bool) {
	for _, a := range d.Run {
		if a.Job == id {
			return a.GPUs, true
		}
	}
	return nil, false
}

func schedule(t *testing.T, s *Scheduler, v gpusched.View) gpusched.Decision {
	t.Helper()
	d, err := s.Schedule(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(v); err != nil {
		t.Fatalf("invalid decision at t=%g: %v", v.Now, err)
	}
	return d
}

// A server being drained: the job on it moves to free GPUs elsewhere (a migration); when no
// GPUs are free for it, it is preempted rather than kept on the drained server.
func TestDrainedServerIsVacated(t *testing.T) {
	c := servers(t, 2)
	a := &gpusched.Job{ID: "a", GPUs: 4, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 4, StepTime: 1}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 100, "b": 50}), NoConsolidate: true})
	on0 := []topology.GPUID{0, 1, 2, 3}
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{{Job: a, GPUs: on0, Started: true}}}
	schedule(t, s, v)
	v.Now = 1
	v.Unavailable = topology.SetOf(on0...)
	d := schedule(t, s, v)
	if g, ok := assignment(d, "a"); !ok || !slices.Equal(serversOf(c, g), []int{1}) {
		t.Fatalf("drained job a: %v (run %v), want moved to server 1", g, ok)
	}
	// Now b (shorter) arrives and server 0 is still drained: a is preempted for b, not kept.
	v.Now = 2
	v.Running = []gpusched.JobStatus{{Job: a, GPUs: []topology.GPUID{4, 5, 6, 7}, Started: true}}
	v.Pending = []gpusched.JobStatus{{Job: b}}
	d = schedule(t, s, v)
	if _, ok := assignment(d, "a"); ok {
		t.Errorf("a kept although b has priority and server 0 is drained")
	}
	if g, ok := assignment(d, "b"); !ok || !slices.Equal(serversOf(c, g), []int{1}) {
		t.Errorf("b: %v %v", g, ok)
	}
	// Server 0 returns: both run.
	v.Now = 3
	v.Unavailable = topology.GPUSet{}
	v.Running = []gpusched.JobStatus{{Job: b, GPUs: []topology.GPUID{4, 5, 6, 7}, Started: true}}
	v.Pending = []gpusched.JobStatus{{Job: a, Started: true, Preemptions: 1}}
	d = schedule(t, s, v)
	if g, ok := assignment(d, "a"); !ok || !slices.Equal(serversOf(c, g), []int{0}) {
		t.Errorf("a after the server returned: %v %v", g, ok)
	}
}

// Servers leave and join: a job too large for the shrunken cluster is rejected while it is, and
// runs once the cluster has grown back; a job waits for a new server and starts on it.
func TestClusterShrinksAndGrows(t *testing.T) {
	big, small := servers(t, 2), servers(t, 1)
	a := &gpusched.Job{ID: "a", GPUs: 8, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 4, StepTime: 1}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 10, "b": 100})})
	v := gpusched.View{Cluster: big, Pending: []gpusched.JobStatus{{Job: a}, {Job: b}}}
	d := schedule(t, s, v)
	if _, ok := assignment(d, "a"); !ok {
		t.Fatal("a does not start on the full cluster")
	}
	// Server s1 leaves: the host has stopped a (it ran on it); a cannot fit any more.
	v = gpusched.View{Now: 1, Cluster: small, Pending: []gpusched.JobStatus{{Job: a, Started: true}, {Job: b}}}
	d = schedule(t, s, v)
	var je *gpusched.JobError
	if len(d.Rejected) != 1 || !errors.As(d.Rejected[0], &je) || je.Job != "a" || !errors.Is(je, gpusched.ErrTooLarge) {
		t.Errorf("a on the small cluster: rejected %v", d.Rejected)
	}
	if _, ok := assignment(d, "b"); !ok {
		t.Errorf("b does not start while a cannot fit: %+v", d.Run)
	}
	// The server returns: a has priority again and b is preempted for it.
	v = gpusched.View{Now: 2, Cluster: big, Pending: []gpusched.JobStatus{{Job: a, Started: true}},
		Running: []gpusched.JobStatus{{Job: b, GPUs: []topology.GPUID{0, 1, 2, 3}, Started: true}}}
	d = schedule(t, s, v)
	if _, ok := assignment(d, "a"); !ok || len(d.Rejected) != 0 {
		t.Errorf("a after the cluster grew back: %+v, rejected %v", d.Run, d.Rejected)
	}
}

// The virtual machine runs as fast as the available GPUs: with half of them unavailable a
// job's virtual completion moves twice as far into the future.
func TestVirtualSpeedFollowsAvailability(t *testing.T) {
	c := servers(t, 2)
	a := &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"a": 80})})
	v := gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: a}}}
	schedule(t, s, v)
	full, _ := s.VirtualCompletion("a") // 1 GPU x 80 s over 8 GPUs: 10 s
	v.Unavailable = topology.SetOf(0, 1, 2, 3)
	schedule(t, s, v)
	half, _ := s.VirtualCompletion("a")
	if full != 10 || half != 20 {
		t.Errorf("virtual completion %v with every GPU, %v with half, want 10 and 20", full, half)
	}
}

// Weights: of two equal jobs that cannot run together, the heavier one runs first.
func TestWeightsOrderEqualJobs(t *testing.T) {
	c := servers(t, 1)
	light := &gpusched.Job{ID: "light", GPUs: 4, StepTime: 1}
	heavy := &gpusched.Job{ID: "heavy", GPUs: 4, StepTime: 1, Weight: 3}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"light": 100, "heavy": 200})})
	d := schedule(t, s, gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: light}, {Job: heavy}}})
	if _, ok := assignment(d, "heavy"); !ok {
		t.Errorf("the heavy job (twice as long, three times the weight) does not run first: %+v", d.Run)
	}
}

// Mixed GPUs: a job whose plan fits only 80 GB GPUs is sized and placed on them even though a
// 40 GB server comes first (it failed every call before), and a GPU-type constraint is honoured.
func TestMixedGPUs(t *testing.T) {
	small := topology.A100()
	small.GPU.Model, small.GPU.MemoryBytes = "A100-SXM4-40GB", topology.GiB(40)
	c, err := topology.New("mixed", []topology.Server{{ID: "a40", ServerSpec: small}, {ID: "a80", ServerSpec: topology.A100()}, {ID: "t4", ServerSpec: topology.T4()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	big := &gpusched.Job{ID: "big", GPUs: 4, Model: m, Plan: graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 4}}
	if comp, err := graph.Compile(m, big.Plan); err != nil || comp.CheckMemory(small.GPU) == nil {
		t.Skip("the test needs a plan that does not fit 40 GB")
	}
	t4 := &gpusched.Job{ID: "t4", GPUs: 2, StepTime: 1, GPUType: "t4"}
	s := mustNew(t, Options{Estimator: truthOracle(map[gpusched.JobID]float64{"big": 10, "t4": 10})})
	d := schedule(t, s, gpusched.View{Cluster: c, Pending: []gpusched.JobStatus{{Job: big}, {Job: t4}}})
	if g, ok := assignment(d, "big"); !ok || !slices.Equal(serversOf(c, g), []int{1}) {
		t.Errorf("big: %v %v, want on the 80 GB server", g, ok)
	}
	if g, ok := assignment(d, "t4"); !ok || !slices.Equal(serversOf(c, g), []int{2}) {
		t.Errorf("t4: %v %v, want on the T4 server", g, ok)
	}
}

// Per-job caches are bounded: once every job of a workload has left, A-SRPT, its default
// placer and its cost model hold nothing for them.
func TestCachesAreDroppedWhenJobsLeave(t *testing.T) {
	c := servers(t, 4)
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, Options{Estimator: truthOracle(nil), Cost: gpusched.DefaultCost()})
	s.opt.Estimator = constEst(50)
	var v gpusched.View
	v.Cluster = c
	for i := range 20 {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: 4, Model: m,
			Plan: graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 128}}
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: j})
	}
	d := schedule(t, s, v)
	if s.placer.Cached() == 0 || len(s.jobs) != 20 {
		t.Fatalf("nothing cached: placer %d, jobs %d (run %d)", s.placer.Cached(), len(s.jobs), len(d.Run))
	}
	for _, st := range v.Pending {
		s.JobCompleted(gpusched.Completion{Job: st.Job, Time: 1, Iterations: 50})
	}
	if s.placer.Cached() != 0 || len(s.jobs) != 0 {
		t.Errorf("after every job left: placer holds %d, scheduler %d", s.placer.Cached(), len(s.jobs))
	}
}

type constEst float64

func (c constEst) Estimate(j *gpusched.Job, done float64) (float64, error) {
	return max(float64(c), 2*done), nil
}

// TestNoPreemptionThatCannotHelp: the 8-GPU head of the priority order waits while A (protected
// by MinRunTime) and B run on 4 GPUs each. Preempting B cannot let the head start, so B keeps
// running; the old code preempted it, backfilled another job into its GPUs, and did so again
// at every call: a livelock found by the restart property.
func TestNoPreemptionThatCannotHelp(t *testing.T) {
	c := servers(t, 2)
	head := &gpusched.Job{ID: "head", GPUs: 8, StepTime: 1}
	a := &gpusched.Job{ID: "a", GPUs: 4, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 4, StepTime: 1}
	filler := &gpusched.Job{ID: "filler", GPUs: 4, StepTime: 1}
	iters := map[gpusched.JobID]float64{"head": 1, "a": 1000, "b": 2000, "filler": 3000}
	for _, backfill := range []bool{false, true} {
		s := mustNew(t, Options{Estimator: truthOracle(iters), MinRunTime: 25, Backfill: backfill, NoConsolidate: true})
		v := gpusched.View{Now: 100, Cluster: c,
			Running: []gpusched.JobStatus{
				{Job: a, GPUs: []topology.GPUID{0, 1, 2, 3}, Started: true, Since: 99},
				{Job: b, GPUs: []topology.GPUID{4, 5, 6, 7}, Started: true, Since: 0}},
			Pending: []gpusched.JobStatus{{Job: head}, {Job: filler}}}
		d := schedule(t, s, v)
		if _, ok := assignment(d, "b"); !ok {
			t.Errorf("backfill=%v: b preempted although the head cannot start before a's protection ends (run %+v)", backfill, d.Run)
		}
		if d.WakeAt != 124 {
			t.Errorf("backfill=%v: wake at %v, want 124 (a's protection ends)", backfill, d.WakeAt)
		}
	}
}
