package e2e

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// vclock is the test's virtual clock: the planner's clock (plugin.Hooks.Now) and the agent's.
// Only the test's driver moves it, and only when the cluster has settled.
type vclock struct {
	mu sync.Mutex
	d  time.Duration
}

// base is the virtual clock's time 0.
var base = time.Unix(1_000_000_000, 0)

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return base.Add(c.d)
}

// Seconds returns the virtual time in seconds, as the planner reads it.
func (c *vclock) Seconds() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.d.Seconds()
}

// Set moves the clock to at seconds (rounded up to the nanosecond, never backwards) and
// returns the time set.
func (c *vclock) Set(at float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := time.Duration(math.Ceil(at * 1e9))
	if d > c.d {
		c.d = d
	}
	return c.d.Seconds()
}

// objects returns the PodGroup of a job and its first pods.
func (w work) objects() (*v1alpha1.PodGroup, []*v1.Pod) {
	ann := map[string]string{"gpusched.io/model": w.model}
	if w.plan != "" {
		ann["gpusched.io/plan"] = w.plan
	}
	if w.iterations > 0 {
		ann["gpusched.io/iterations"] = strconv.FormatFloat(w.iterations, 'g', -1, 64)
	}
	n := w.gpus / w.podGPUs
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: ns, Annotations: ann}, Spec: v1alpha1.PodGroupSpec{MinMember: int32(n)}}
	var pods []*v1.Pod
	for i := range n {
		pods = append(pods, w.pod(0, i))
	}
	return pg, pods
}

func (w work) pod(gen, i int) *v1.Pod {
	return gpuPod(fmt.Sprintf("%s-%d-%d", w.name, gen, i), map[string]string{v1alpha1.PodGroupLabel: w.name}, nil, w.podGPUs)
}

// agent plays the kubelets of the test's nodes and the training jobs' controller. Its tick
// (every few milliseconds of wall time) marks bound pods Running, finalizes the deletion of
// evicted pods and recreates the pods of jobs that are not finished; it checks that no node is
// over-committed, that no gang stays partly bound and that every job runs where the decision
// put it. The test's driver moves the virtual clock and, through advance and complete, runs
// each job at the speed the cost model gives for its placement under the load of the other
// running jobs on its links (as package sim does), completing its pods when it has done its
// iterations.
type agent struct {
	e    *env
	cl   *topology.Cluster
	cost gpusched.CostModel
	quit chan struct{}
	once sync.Once

	mu   sync.Mutex
	jobs map[gpusched.JobID]*ajob
}

type ajob struct {
	w            work
	job          gpusched.Job
	prog         float64
	running      bool
	finished     bool
	restoreEnd   float64
	last         float64
	step         float64
	gpus         []topology.GPUID // the decision's GPUs while running
	starts       int
	evicted      int // pods seen being deleted
	stoppedRun   int // times a decision stopped it while it ran
	nodes        []string
	partialSince time.Time
	// mismatchSince is when the agent first saw the job's gang bound on other nodes than the
	// latest decision gave it, after a restart of the planner (zero: not so).
	mismatchSince time.Time
	seenDeleted   map[types.UID]bool
	stale         map[types.UID]bool // pods bound when a decision stopped the job: to be evicted
	bound         int                // pods bound at the last tick
	gone          int                // pods being deleted at the last tick
	// want are the names of the job's current pods (the controller's), each with whether the
	// agent has seen it in the lister; next numbers the next replacement pod.
	want       map[string]bool
	next       int
	finishedAt float64
}

func newAgent(e *env, cl *topology.Cluster) *agent {
	return &agent{e: e, cl: cl, cost: gpusched.DefaultCost(), quit: make(chan struct{}), jobs: map[gpusched.JobID]*ajob{}}
}

func (a *agent) stop() { a.once.Do(func() { close(a.quit) }) }

// done returns the number of finished jobs whose name starts with prefix.
func (a *agent) done(prefix byte) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, j := range a.jobs {
		if j.finished && j.w.name[0] == prefix {
			n++
		}
	}
	return n
}

// status summarises the jobs for the test log: submitted, running, finished, evictions.
func (a *agent) status() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var run, fin, ev int
	for _, j := range a.jobs {
		if j.running {
			run++
		}
		if j.finished {
			fin++
		}
		ev += j.evicted
	}
	return fmt.Sprintf("%d jobs submitted, %d running, %d finished, %d pods evicted", len(a.jobs), run, fin, ev)
}

func (a *agent) submit(ctx context.Context, w work) gpusched.JobID {
	pg, pods := w.objects()
	m := mapping.Config{}.WithDefaults()
	s, _, err := m.JobFromPodGroup(pg, pods, a.cl.Server(0).ServerSpec)
	if err != nil {
		a.e.fail("map job %s: %v", w.name, err)
		return ""
	}
	if _, err := a.e.pgc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		a.e.fail("create PodGroup %s: %v", w.name, err)
	}
	want := map[string]bool{}
	for _, p := range pods {
		a.e.createPod(ctx, p)
		want[p.Name] = false
	}
	a.mu.Lock()
	a.jobs[s.Job.ID] = &ajob{w: w, job: s.Job, seenDeleted: map[types.UID]bool{}, stale: map[types.UID]bool{}, want: want, next: len(pods)}
	a.mu.Unlock()
	return s.Job.ID
}

func (a *agent) run(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.quit:
			return
		case <-tick.C:
			a.tick(ctx)
		}
	}
}

func finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (a *agent) tick(ctx context.Context) {
	e := a.e
	now := e.clock.Seconds()
	pods, err := e.pods.List(labels.Everything())
	if err != nil {
		return
	}
	byJob := map[string][]*v1.Pod{}
	used := map[string]int64{}
	m := mapping.Config{}.WithDefaults()
	for _, p := range pods {
		if p.Spec.NodeName != "" && !finished(p) {
			g, _ := m.PodGPUs(p)
			used[p.Spec.NodeName] += g
		}
		if n := p.Labels[v1alpha1.PodGroupLabel]; n != "" {
			byJob[n] = append(byJob[n], p)
		}
	}
	for n, g := range used {
		if g > nodeGPUs {
			e.fail("node %s over-committed: pods hold %d of its %d GPUs", n, g, nodeGPUs)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, j := range a.jobs {
		if j.finished {
			continue
		}
		id := j.job.ID
		npods := j.w.gpus / j.w.podGPUs
		var bound []*v1.Pod
		j.gone = 0
		for _, p := range byJob[j.w.name] {
			switch {
			case p.DeletionTimestamp != nil:
				j.gone++
				if !j.seenDeleted[p.UID] {
					j.seenDeleted[p.UID] = true
					j.evicted++
					// The kubelet's part: the container stopped, the pod goes.
					zero := int64(0)
					err := e.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					if err != nil && !apierrors.IsNotFound(err) {
						e.fail("delete evicted pod %s: %v", p.Name, err)
					}
				}
			case finished(p):
			case j.stale[p.UID]:
				j.gone++ // its eviction is on its way
			default:
				if p.Spec.NodeName != "" {
					bound = append(bound, p)
				}
			}
		}
		j.bound = len(bound)
		// The controller's part: a job that is not finished has all its pods. A pod it made
		// is replaced once it is gone: seen being deleted or finished, or seen once and now
		// absent (an unbound pod is deleted at once by an eviction). A pod not yet in the
		// lister is not replaced (the informer lags behind the creation).
		present := map[string]*v1.Pod{}
		for _, p := range byJob[j.w.name] {
			present[p.Name] = p
		}
		for name, seen := range j.want {
			p, ok := present[name]
			if ok && p.DeletionTimestamp == nil && !finished(p) {
				j.want[name] = true
				continue
			}
			if !ok && !seen {
				continue
			}
			delete(j.want, name)
			q := j.w.pod(1, j.next)
			j.next++
			e.createPod(ctx, q)
			j.want[q.Name] = false
		}
		if len(bound) == npods {
			j.partialSince = time.Time{}
			if j.running {
				continue
			}
			st, ok := e.lastStartOf(id)
			if !ok {
				// A job stopped by a decision whose evictions are still in flight is bound
				// but not run; a job no decision ever started must never be bound.
				if !e.everStarted(id) {
					e.fail("job %s is bound but no decision ever started it", id)
				}
				continue
			}
			count := map[string]int{}
			j.nodes = j.nodes[:0]
			for _, p := range bound {
				count[p.Spec.NodeName] += j.w.podGPUs
				j.nodes = append(j.nodes, p.Spec.NodeName)
			}
			if fmt.Sprint(count) != fmt.Sprint(st.Nodes) {
				// A restarted planner can find a gang bound where its predecessor's last
				// decision put it, a decision the predecessor did not live to save: it evicts
				// the pods that no decision of its own put where they are (planner, step 5 of
				// its loop), so such a mismatch must clear within seconds; any other is wrong.
				switch {
				case !e.restartedOnce():
					e.fail("job %s runs on %v, the decision gave it %v", id, count, st.Nodes)
				case j.mismatchSince.IsZero():
					j.mismatchSince = time.Now()
				case time.Since(j.mismatchSince) > 10*time.Second:
					e.fail("job %s runs on %v for more than 10 s, the decision gave it %v", id, count, st.Nodes)
					j.mismatchSince = time.Now()
				}
				continue
			}
			if !j.mismatchSince.IsZero() {
				e.t.Logf("job %s: bound where the planner before the restart put it; evicted and bound where the restarted one put it (%v) after %v",
					id, st.Nodes, time.Since(j.mismatchSince).Round(time.Millisecond))
				j.mismatchSince = time.Time{}
			}
			j.gpus = st.GPUs
			j.restoreEnd = now
			if j.starts > 0 {
				j.restoreEnd = now + restore
			}
			j.starts++
			j.running, j.last = true, now
			for _, p := range bound {
				if p.Status.Phase != v1.PodRunning {
					if err := e.setPhase(ctx, p.Name, v1.PodRunning); err != nil && !apierrors.IsNotFound(err) {
						e.fail("pod %s running: %v", p.Name, err)
					}
				}
			}
			continue
		}
		if j.running {
			// Stopped: it keeps its progress (checkpointed when evicted); the driver has
			// counted it up to now.
			j.running = false
		}
		if len(bound) > 0 {
			if j.partialSince.IsZero() {
				j.partialSince = time.Now()
			} else if time.Since(j.partialSince) > 10*time.Second {
				e.fail("gang %s partly bound (%d of %d pods) for more than 10 s", id, len(bound), npods)
				j.partialSince = time.Now()
			}
		} else {
			j.partialSince = time.Time{}
		}
	}
}

// stable tells whether the cluster has settled: every pod the controller made is in the
// lister, none is being deleted, every job the planner should know of it has seen (submitted,
// finished), every job the last decisions run is bound whole and running, and no other job
// has a pod bound. It returns what is not settled.
func (a *agent) stable() (bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, j := range a.jobs {
		if j.finished {
			if !e.finishedSeen[id] {
				return false, fmt.Sprintf("job %s finished, the planner has not seen it", id)
			}
			continue
		}
		for name, seen := range j.want {
			if !seen {
				return false, fmt.Sprintf("pod %s not yet seen", name)
			}
		}
		if j.gone > 0 {
			return false, fmt.Sprintf("job %s has pods being deleted", id)
		}
		if _, ok := e.arrivals[id]; !ok {
			return false, fmt.Sprintf("job %s not yet submitted", id)
		}
		_, runs := e.lastStart[id]
		switch {
		case runs && (!j.running || j.bound != j.w.gpus/j.w.podGPUs):
			return false, fmt.Sprintf("job %s started, not yet bound and running (%d pods bound)", id, j.bound)
		case !runs && j.bound > 0:
			return false, fmt.Sprintf("job %s stopped, %d pods still bound", id, j.bound)
		}
	}
	return true, ""
}

// speeds gives every running job its step time under the load of the other running jobs on
// its links (Cluster.Links), as the simulator does.
func (a *agent) speeds() {
	users := map[topology.Link]int{}
	for _, j := range a.jobs {
		if j.running {
			for _, l := range a.cl.Links(j.gpus) {
				users[l]++
			}
		}
	}
	for _, j := range a.jobs {
		if !j.running {
			continue
		}
		var load topology.LinkLoad
		for _, l := range a.cl.Links(j.gpus) {
			if k := users[l] - 1; k > 0 {
				if load == nil {
					load = topology.LinkLoad{}
				}
				load[l] = float64(k)
			}
		}
		sc, err := a.cost.StepCost(&j.job, a.cl, j.gpus, load)
		if err != nil {
			a.e.fail("job %s: cost: %v", j.job.ID, err)
			continue
		}
		j.step = sc.Time
	}
}

// nextCompletion returns the earliest time a running job finishes at the current speeds.
func (a *agent) nextCompletion() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.speeds()
	next := math.Inf(1)
	for _, j := range a.jobs {
		if j.running && j.step > 0 {
			from := max(j.last, j.restoreEnd)
			next = min(next, from+max(j.w.iterations-j.prog, 0)*j.step)
		}
	}
	return next
}

// advance runs every running job up to time to.
func (a *agent) advance(to float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.speeds()
	for _, j := range a.jobs {
		if !j.running {
			continue
		}
		from := max(j.last, j.restoreEnd)
		if to > from && j.step > 0 {
			j.prog += (to - from) / j.step
		}
		j.last = max(j.last, to)
	}
}

// complete finishes the running jobs that have done their iterations: it reports their
// progress and marks their pods Succeeded. It returns the number completed.
func (a *agent) complete(ctx context.Context, now float64) int {
	a.mu.Lock()
	var due []*ajob
	for _, j := range a.jobs {
		if j.running && j.prog >= j.w.iterations*(1-1e-9) {
			due = append(due, j)
			j.finished, j.running, j.finishedAt = true, false, now
		}
	}
	a.mu.Unlock()
	pods, _ := a.e.pods.List(labels.Everything())
	for _, j := range due {
		// The workers exit, then the job's last report lands (the planner finishes the job
		// at its first pod's success, at the progress the cost model gives, which is exact
		// here).
		for _, p := range pods {
			if p.Labels[v1alpha1.PodGroupLabel] == j.w.name && p.Spec.NodeName != "" && !finished(p) {
				if err := a.e.setPhase(ctx, p.Name, v1.PodSucceeded); err != nil && !apierrors.IsNotFound(err) {
					a.e.fail("pod %s succeeded: %v", p.Name, err)
				}
			}
		}
		a.report(ctx, j.w.name, j.w.iterations)
	}
	return len(due)
}

// setPhase sets a pod's phase with a patch of its status (the kubelet's part), which does not
// conflict with other writers as an update of a cached copy would.
func (e *env) setPhase(ctx context.Context, pod string, phase v1.PodPhase) error {
	patch := fmt.Sprintf(`{"status":{"phase":%q}}`, phase)
	_, err := e.cs.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

// report writes a job's progress on its PodGroup, as the job itself would.
func (a *agent) report(ctx context.Context, name string, prog float64) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"gpusched.io/progress":"%g"}}}`, prog)
	_, err := a.e.pgc.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		a.e.fail("report progress of %s: %v", name, err)
	}
}

func (e *env) everStarted(id gpusched.JobID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.firstAt[id]
	return ok
}

func (e *env) lastStartOf(id gpusched.JobID) (struct {
	Nodes map[string]int
	GPUs  []topology.GPUID
}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.lastStart[id]
	return struct {
		Nodes map[string]int
		GPUs  []topology.GPUID
	}{st.Nodes, st.GPUs}, ok
}
