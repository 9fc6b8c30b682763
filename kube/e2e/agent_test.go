package e2e

import (
	"context"
	"fmt"
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

// agent plays the kubelets of the test's nodes and the training jobs' controller: it marks
// bound pods Running, runs each job at the speed the cost model gives for the placement the
// decision gave it (no link sharing: noShare), reports progress on the PodGroup, completes the
// job's pods when it has done its iterations, finalizes the deletion of evicted pods, and
// recreates the pods of jobs that are not finished. It also checks, at every tick, that no
// node is over-committed, that gangs are never left partly bound and that every job runs
// where the decision put it.
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
	starts       int
	evicted      int
	nodes        []string
	reported     time.Time
	partialSince time.Time
	seenDeleted  map[types.UID]bool
	// want are the names of the job's current pods (the controller's), each with whether the
	// agent has seen it in the lister; next numbers the next replacement pod.
	want       map[string]bool
	next       int
	finishedAt float64
}

func newAgent(e *env, _ []work, cl *topology.Cluster) *agent {
	return &agent{e: e, cl: cl, cost: noShare{gpusched.DefaultCost()}, quit: make(chan struct{}), jobs: map[gpusched.JobID]*ajob{}}
}

func (a *agent) stop() { a.once.Do(func() { close(a.quit) }) }

func (a *agent) done() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, j := range a.jobs {
		if j.finished && j.w.name[0] == 'j' {
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

func (a *agent) submit(ctx context.Context, w work) {
	pg, pods := w.objects()
	m := mapping.Config{}.WithDefaults()
	s, _, err := m.JobFromPodGroup(pg, pods, a.cl.Server(0).ServerSpec)
	if err != nil {
		a.e.fail("map job %s: %v", w.name, err)
		return
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
	a.jobs[s.Job.ID] = &ajob{w: w, job: s.Job, seenDeleted: map[types.UID]bool{}, want: want, next: len(pods)}
	a.mu.Unlock()
}

func (a *agent) run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
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
	now := e.now()
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
		for _, p := range byJob[j.w.name] {
			switch {
			case p.DeletionTimestamp != nil:
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
			default:
				if p.Spec.NodeName != "" {
					bound = append(bound, p)
				}
			}
		}
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
			if !j.running {
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
					e.fail("job %s runs on %v, the decision gave it %v", id, count, st.Nodes)
				}
				sc, err := a.cost.StepCost(&j.job, a.cl, st.GPUs, nil)
				if err != nil {
					e.fail("job %s: cost: %v", id, err)
					continue
				}
				j.step = sc.Time
				if j.w.iterations <= 0 { // run for 8 wall seconds
					j.w.iterations = 8 * e.scale / j.step
				}
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
			}
			a.advance(j, now)
			if j.prog >= j.w.iterations {
				a.report(ctx, j, j.w.iterations)
				for _, p := range bound {
					if err := e.setPhase(ctx, p.Name, v1.PodSucceeded); err != nil {
						e.fail("pod %s succeeded: %v", p.Name, err)
					}
				}
				j.finished, j.running, j.finishedAt = true, false, now
			} else if time.Since(j.reported) > time.Second {
				a.report(ctx, j, j.prog)
			}
			continue
		}
		if j.running {
			a.advance(j, now) // stopped: it keeps its progress (checkpointed when evicted)
			j.running = false
		}
		if len(bound) > 0 {
			if j.partialSince.IsZero() {
				j.partialSince = time.Now()
			} else if time.Since(j.partialSince) > 3*time.Second {
				e.fail("gang %s partly bound (%d of %d pods) for more than 3 s", id, len(bound), npods)
				j.partialSince = time.Now()
			}
		} else {
			j.partialSince = time.Time{}
		}
	}
}

// setPhase sets a pod's phase with a patch of its status (the kubelet's part), which does not
// conflict with other writers as an update of a cached copy would.
func (e *env) setPhase(ctx context.Context, pod string, phase v1.PodPhase) error {
	patch := fmt.Sprintf(`{"status":{"phase":%q}}`, phase)
	_, err := e.cs.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

func (a *agent) advance(j *ajob, now float64) {
	from := max(j.last, j.restoreEnd)
	if now > from && j.step > 0 {
		j.prog += (now - from) / j.step
	}
	j.last = max(j.last, now)
}

func (a *agent) report(ctx context.Context, j *ajob, prog float64) {
	j.reported = time.Now()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"gpusched.io/progress":"%g"}}}`, prog)
	_, err := a.e.pgc.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, j.w.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		a.e.fail("report progress of %s: %v", j.w.name, err)
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
