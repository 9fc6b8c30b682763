package planner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

func stepGroups(names ...string) []*v1alpha1.PodGroup {
	var out []*v1alpha1.PodGroup
	for _, n := range names {
		out = append(out, podGroup(n, 1, map[string]string{"gpusched.io/step-time": "1"}))
	}
	return out
}

func (f *fake) removePod(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.pods {
		if p.Name == name {
			f.pods = append(f.pods[:i], f.pods[i+1:]...)
			return
		}
	}
}

func (f *fake) addPod(p *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = append(f.pods, p)
}

func hasEvent(f *fake, s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Contains(strings.Join(f.events, "\n"), s)
}

// A running job whose pods are deleted (its PodGroup kept) gives its GPUs back: the
// scheduler may restart it, but a started job that lacks pods for PodsGoneGrace is taken
// back until its pods exist, and the job that waits starts.
func TestPodsGoneGiveGPUsBack(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = stepGroups("old", "new")
	f.pods = []*v1.Pod{workerPod("old-0", "old", 4)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/old": 0, "podgroup/ns/new": 1}, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	bind(f.fake, "old-0", "a")
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	f.removePod("old-0")
	newPod := workerPod("new-0", "new", 4)
	f.addPod(newPod)
	for range 3 {
		clock = clock.Add(time.Second)
		p.syncWait(ctx)
	}
	if ok, _ := p.Admit(newPod); ok {
		t.Fatalf("new started while old held the GPUs for less than the grace")
	}
	clock = clock.Add(31 * time.Second)
	p.syncWait(ctx)
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(newPod); !ok {
		t.Fatalf("a job with no pods keeps the GPUs: new waits: %s", why)
	}
	if !hasEvent(f.fake, "PodsGone: job old was started but has 0 of its 1 pods") {
		t.Fatalf("no PodsGone event: %q", f.events)
	}
	// old's pod comes back: it is submitted again and waits (new runs, old does not preempt it
	// under this scheduler? it does: old has the higher priority) and runs once it binds.
	oldPod := workerPod("old-0", "old", 4)
	oldPod.UID = "old-0-again"
	f.addPod(oldPod)
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(oldPod); !ok {
		t.Fatalf("old, its pods back, is not started again: %s", why)
	}
}

// A started gang that does not bind within BindTimeout is taken back with an event, makes no
// progress meanwhile, gives its GPUs to the next job and comes back after UnstartBackoff.
func TestUnboundGangTakenBack(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = stepGroups("stuck", "next")
	f.pods = []*v1.Pod{workerPod("stuck-0", "stuck", 4), workerPod("next-0", "next", 4)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/stuck": 0, "podgroup/ns/next": 1},
		Options{Cost: gpusched.DefaultCost(), BindTimeout: 100 * time.Second, UnstartBackoff: 50 * time.Second})
	ctx := context.Background()
	p.syncWait(ctx)
	if ok, why := p.Admit(f.pods[0]); !ok {
		t.Fatalf("stuck not started: %s", why)
	}
	clock = clock.Add(60 * time.Second)
	p.syncWait(ctx)
	p.mu.Lock()
	st, _, _ := p.bk.status("podgroup/ns/stuck", p.now)
	p.mu.Unlock()
	if st.Iterations != 0 {
		t.Fatalf("a started job progressed %v iterations before its pods bound", st.Iterations)
	}
	clock = clock.Add(41 * time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(f.pods[0]); ok || !strings.Contains(why, "bound") {
		t.Fatalf("a gang that did not bind in time still runs (%v, %q)", ok, why)
	}
	if !hasEvent(f.fake, "NotBound: job stuck was started but only 0 of its 1 pods bound") {
		t.Fatalf("no NotBound event: %q", f.events)
	}
	f.mu.Lock()
	why, nextWhy := f.waiting["stuck-0"], f.waiting["next-0"]
	f.mu.Unlock()
	if !strings.Contains(why, "bound in 1m40s") || !strings.Contains(nextWhy, "queue") {
		t.Fatalf("pending reasons: stuck %q, next %q", why, nextWhy)
	}
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(f.pods[1]); !ok {
		t.Fatalf("next does not get the GPUs stuck gave back: %s", why)
	}
	bind(f.fake, "next-0", "a")
	clock = clock.Add(10 * time.Second)
	p.syncWait(ctx) // sees the gang bound: it progresses from now on
	clock = clock.Add(10 * time.Second)
	p.syncWait(ctx)
	p.mu.Lock()
	st, _, _ = p.bk.status("podgroup/ns/next", p.now)
	p.mu.Unlock()
	if st.Iterations <= 0 {
		t.Fatalf("a bound job makes no progress")
	}
	if s := p.Stats(); s.Unstarted != 1 {
		t.Fatalf("stats: %+v", s)
	}
	f.mu.Lock()
	stuck, next := f.phases["stuck"], f.phases["next"]
	f.mu.Unlock()
	if !slices.Equal(stuck, []v1alpha1.PodGroupPhase{"Scheduling", "Pending"}) || !slices.Equal(next, []v1alpha1.PodGroupPhase{"Pending", "Scheduling", "Running"}) {
		t.Fatalf("PodGroup phases: stuck %v, next %v", stuck, next)
	}
	// After the backoff, stuck is submitted again (and, first in priority, preempts next).
	clock = clock.Add(50 * time.Second)
	p.syncWait(ctx)
	if ok, why := p.Admit(f.pods[0]); !ok {
		t.Fatalf("stuck not started again after its backoff: %s", why)
	}
}

// Other plugins' Filter rejections on the nodes of the decision take the job back at once,
// with their reason; a pod no GPU node can hold by its CPU request is never submitted.
func TestUnfitAndDoesNotFit(t *testing.T) {
	clock := time.Unix(1000, 0)
	node := gpuNode("a", 4)
	node.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("64")
	f := &evictFake{fake: &fake{nodes: []*v1.Node{node}}}
	f.pgs = stepGroups("big", "ok")
	big := workerPod("big-0", "big", 1)
	big.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100")}
	okPod := workerPod("ok-0", "ok", 4)
	f.pods = []*v1.Pod{big, okPod}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/big": 0}, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	if ok, why := p.Admit(big); ok || !strings.Contains(why, "100000m CPU") {
		t.Fatalf("a pod asking 100 CPUs on 64-CPU nodes: admitted %v (%q)", ok, why)
	}
	if !hasEvent(f.fake, "DoesNotFit") {
		t.Fatalf("no DoesNotFit event: %q", f.events)
	}
	f.mu.Lock()
	why := f.waiting["big-0"]
	f.mu.Unlock()
	if !strings.Contains(why, "100000m CPU") {
		t.Fatalf("the pod's pending reason %q does not say why", why)
	}
	if ok, why := p.Admit(okPod); !ok {
		t.Fatalf("ok not started: %s", why)
	}
	p.Unfit(okPod, map[string]string{"a": "NodeResourcesFit: Insufficient memory"})
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if ok, _ := p.Admit(okPod); !ok {
		t.Fatalf("a job whose pod does not fit was taken back before UnfitGrace")
	}
	clock = clock.Add(30 * time.Second)
	p.syncWait(ctx)
	if ok, _ := p.Admit(okPod); ok {
		t.Fatalf("a job whose pod fits none of its nodes still runs")
	}
	if !hasEvent(f.fake, "Insufficient memory") {
		t.Fatalf("the Filter's reason does not reach the job's owner: %q", f.events)
	}
}

// Adoption defaults: a node of an unknown GPU type is scheduled (as a generic GPU, with a
// warning); a PodGroup without any gpusched annotation runs with the default step time; its
// launcher pod without GPUs is admitted with it and goes anywhere.
func TestAdoptionDefaults(t *testing.T) {
	clock := time.Unix(1000, 0)
	n := gpuNode("x", 4)
	n.Labels["nvidia.com/gpu.product"] = "Voodoo-5"
	f := &evictFake{fake: &fake{nodes: []*v1.Node{n}}}
	f.pgs = []*v1alpha1.PodGroup{podGroup("mpi", 2, nil)}
	launcher := workerPod("mpi-launcher", "mpi", 0)
	launcher.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	f.pods = []*v1.Pod{workerPod("mpi-worker-0", "mpi", 4), launcher}
	p := newPrioPlanner(t, f, &clock, nil, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	if !hasEvent(f.fake, "UnknownGPUType") {
		t.Fatalf("no warning for the unknown GPU type: %q", f.events)
	}
	for _, pod := range f.pods {
		if ok, why := p.Admit(pod); !ok {
			t.Fatalf("pod %s not admitted: %s", pod.Name, why)
		}
	}
	if !p.Launcher(launcher) || p.Launcher(f.pods[0]) {
		t.Fatalf("launcher not told from worker")
	}
	if left, k := p.Slots(f.pods[0]); k != 4 || left["x"] != 4 {
		t.Fatalf("worker slots %v %d", left, k)
	}
	bind(f.fake, "mpi-worker-0", "x")
	bind(f.fake, "mpi-launcher", "x")
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if len(f.evicted) != 0 {
		t.Fatalf("evicted %v", f.evicted)
	}
	if s := p.Stats(); s.Running != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// The planner plans CPU and memory as well as GPUs: a job whose pod asks for more CPU than a
// node has left (other pods hold it) is placed on a node that has it, and, when no node with
// free GPUs has it, waits with the reason instead of being started where it cannot bind.
func TestCPUPlanned(t *testing.T) {
	clock := time.Unix(1000, 0)
	a, b := gpuNode("a", 4), gpuNode("b", 4)
	for _, n := range []*v1.Node{a, b} {
		n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("64")
		n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("256Gi")
	}
	f := &evictFake{fake: &fake{nodes: []*v1.Node{a, b}}}
	f.pgs = stepGroups("cpu")
	hog := func(name, node string) *v1.Pod {
		p := workerPod(name, "", 0)
		p.Labels = nil
		p.Spec.SchedulerName = "default-scheduler"
		p.Spec.NodeName = node
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("60")}}
		return p
	}
	pod := workerPod("cpu-0", "cpu", 1)
	pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("1Gi")}
	f.pods = []*v1.Pod{hog("hog-a", "a"), pod}
	p := newPrioPlanner(t, f, &clock, nil, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	// The scheduler packs onto a first; a has 4 CPUs left for the planner's pods.
	if left, _ := p.Slots(pod); left["a"] != 0 || left["b"] != 1 {
		t.Fatalf("a pod of 16 CPUs placed on %v: node a has 4 CPUs left, b 64", left)
	}
	// Both nodes busy: the job waits, with the reason, and is not started.
	f = &evictFake{fake: &fake{nodes: []*v1.Node{a, b}}}
	f.pgs = stepGroups("cpu")
	f.pods = []*v1.Pod{hog("hog-a", "a"), hog("hog-b", "b"), pod}
	p = newPrioPlanner(t, f, &clock, nil, Options{})
	p.syncWait(ctx)
	if ok, why := p.Admit(pod); ok || !strings.Contains(why, "waits for CPU or memory") {
		t.Fatalf("a pod of 16 CPUs on nodes with 4 left: admitted %v (%q)", ok, why)
	}
	if !hasEvent(f.fake, "InsufficientResources") {
		t.Fatalf("no InsufficientResources event: %q", f.events)
	}
	if s := p.Stats(); s.Running != 0 {
		t.Fatalf("a job that cannot bind counts as running: %+v", s)
	}
	// b frees up: the job starts there.
	f.mu.Lock()
	f.pods = []*v1.Pod{hog("hog-a", "a"), pod}
	f.mu.Unlock()
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	if left, _ := p.Slots(pod); left["b"] != 1 || len(left) != 1 {
		t.Fatalf("the job does not start on the node that frees up: %v", left)
	}
}

// A job taken back is saved with the state: a restarted planner keeps its arrival, its
// progress, its backoff and its reason, instead of treating it as a new job.
func TestTakenBackSurvivesRestart(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = stepGroups("stuck", "next")
	f.pods = []*v1.Pod{workerPod("stuck-0", "stuck", 4), workerPod("next-0", "next", 4)}
	opt := Options{Cost: gpusched.DefaultCost(), BindTimeout: 100 * time.Second, UnstartBackoff: 50 * time.Second}
	prio := map[gpusched.JobID]int{"podgroup/ns/stuck": 0, "podgroup/ns/next": 1}
	p := newPrioPlanner(t, f, &clock, prio, opt)
	ctx := context.Background()
	clock = clock.Add(10 * time.Second)
	p.syncWait(ctx) // stuck arrives (t=10 s) and starts
	clock = clock.Add(101 * time.Second)
	p.syncWait(ctx) // not bound in time: taken back
	p.mu.Lock()
	arr := p.jobs["podgroup/ns/stuck"].arr
	p.mu.Unlock()
	data, err := p.encoded()
	if err != nil || data == nil {
		t.Fatalf("no state: %v", err)
	}
	// A new planner on the same cluster, 10 s later: stuck is still taken back, with its
	// reason, until its backoff has passed; then it comes back with its old arrival.
	f.data = data
	clock = clock.Add(10 * time.Second)
	q := newPrioPlanner(t, f, &clock, prio, opt)
	q.syncWait(ctx)
	if ok, why := q.Admit(f.pods[0]); ok || !strings.Contains(why, "bound in 1m40s") {
		t.Fatalf("after the restart, stuck is not held back as taken back: admitted %v (%q)", ok, why)
	}
	if ok, why := q.Admit(f.pods[1]); !ok {
		t.Fatalf("next does not run: %s", why)
	}
	clock = clock.Add(41 * time.Second)
	q.syncWait(ctx)
	q.mu.Lock()
	j := q.jobs["podgroup/ns/stuck"]
	held, arr2 := j.held, j.arr
	q.mu.Unlock()
	if !held || arr2 != arr {
		t.Fatalf("after its backoff, stuck held %v, arrival %v (was %v)", held, arr2, arr)
	}
	if ok, why := q.Admit(f.pods[0]); !ok {
		t.Fatalf("stuck, first in priority, not started again after its backoff: %s", why)
	}
}

// learner records the completions a scheduler is told of.
type learner struct {
	gpusched.Scheduler
	done []gpusched.Completion
}

func (l *learner) JobCompleted(c gpusched.Completion) { l.done = append(l.done, c) }

// A job whose pods exit before its last progress report reaches the planner finishes at the
// extrapolated count, rounded to whole iterations: the scheduler learns the same count as it
// would from the report when the cost model is exact (the end-to-end test's order flake).
func TestFinishWholeIterations(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = stepGroups("g")
	f.pods = []*v1.Pod{workerPod("g-0", "g", 4)}
	l := &learner{Scheduler: prioSched(nil)}
	p := newPrioPlanner(t, f, &clock, nil, Options{Cost: gpusched.DefaultCost()})
	p.opt.Scheduler = l
	p.fit.inner = l
	ctx := context.Background()
	p.syncWait(ctx)
	bind(f.fake, "g-0", "a")
	clock = clock.Add(time.Second)
	p.syncWait(ctx) // bound: progresses from now on, 1 iteration per second
	clock = clock.Add(100400 * time.Millisecond)
	f.mu.Lock()
	q := f.pods[0].DeepCopy()
	q.Status.Phase = v1.PodSucceeded
	f.pods[0] = q
	f.mu.Unlock()
	p.syncWait(ctx)
	if len(l.done) != 1 {
		t.Fatalf("completions %+v", l.done)
	}
	if it := l.done[0].Iterations; it != 100 {
		t.Fatalf("the scheduler learned %v iterations, want the extrapolation (100.4) rounded: 100", it)
	}
}

// A PodGroup's status follows its running pods when its phase stays the same: a gang that
// binds one pod at a time is Scheduling with 0, then 1 pod running, then Running with 2.
// (The status used to be rewritten only when the phase changed: a preempted job's PodGroup
// kept "running 2" with its pods gone.)
func TestPodGroupStatusRunning(t *testing.T) {
	clock := time.Unix(1000, 0)
	f := &evictFake{fake: &fake{nodes: []*v1.Node{gpuNode("a", 4)}}}
	f.pgs = []*v1alpha1.PodGroup{podGroup("g", 2, map[string]string{"gpusched.io/step-time": "1"})}
	f.pods = []*v1.Pod{workerPod("g-0", "g", 2), workerPod("g-1", "g", 2)}
	p := newPrioPlanner(t, f, &clock, map[gpusched.JobID]int{"podgroup/ns/g": 0}, Options{})
	ctx := context.Background()
	p.syncWait(ctx)
	bind(f.fake, "g-0", "a")
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	bind(f.fake, "g-1", "a")
	clock = clock.Add(time.Second)
	p.syncWait(ctx)
	f.mu.Lock()
	got := slices.Clone(f.status["g"])
	f.mu.Unlock()
	if want := []string{"Scheduling/0", "Scheduling/1", "Running/2"}; !slices.Equal(got, want) {
		t.Fatalf("PodGroup statuses %v, want %v", got, want)
	}
}
