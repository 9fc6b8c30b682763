package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/kube/internal/testenv"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/kube/planner"
	"github.com/gpusched/gpusched/kube/plugin"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
)

const (
	ns        = "train"
	nodeGPUs  = 8
	numNodes  = 6
	restore   = 30.0  // seconds a restarted job restores
	minRun    = 600.0 // seconds a job runs before it may be preempted
	numJobs   = 50
	maxDur    = 7200.0
	minDur    = 300.0
	gpuLabel  = "nvidia.com/gpu.product"
	rackLabel = "gpusched.io/rack"
)

// env is the test's cluster: clients, the virtual clock, the scheduler's hooks and what they
// recorded.
type env struct {
	t     *testing.T
	cfg   *rest.Config
	cs    kubernetes.Interface
	pgc   pgclient.Interface
	pods  listersv1.PodLister
	clock *vclock
	conf  string // scheduler configuration file
	ag    *agent

	mu           sync.Mutex
	pl           *planner.Planner
	decisions    []planner.Decision
	lastStart    map[gpusched.JobID]planner.Start
	arrivals     map[gpusched.JobID]float64
	firstAt      map[gpusched.JobID]float64 // first start (planner time)
	finishedSeen map[gpusched.JobID]bool    // finishes the planner recorded
	problems     []string
	restarted    bool    // the scheduler was killed and started again
	killedAt     float64 // virtual time at which it was killed (0: never)
}

// restartedOnce reports whether the scheduler was killed and started again.
func (e *env) restartedOnce() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.restarted
}

func (e *env) fail(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.problems) < 50 {
		e.problems = append(e.problems, fmt.Sprintf(format, args...))
	}
}

func (e *env) planner() *planner.Planner {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pl
}

func (e *env) hooks() *plugin.Hooks {
	return &plugin.Hooks{
		Now: e.clock.Now,
		Planner: func(p *planner.Planner) {
			e.mu.Lock()
			e.pl = p
			e.mu.Unlock()
		},
		Decided: func(d planner.Decision) {
			e.mu.Lock()
			e.decisions = append(e.decisions, d)
			if os.Getenv("GPUSCHED_KUBE_E2E_DECISIONS") != "" {
				e.t.Logf("decision t=%.0f: stops %v starts %v rejected %v submitted %d finished %v", d.Time, d.Stops, d.Starts, d.Rejected, len(d.Submitted), d.Finished)
			}
			for id, at := range d.Submitted {
				e.arrivals[id] = at
			}
			for _, id := range d.Finished {
				e.finishedSeen[id] = true
			}
			started := map[gpusched.JobID]bool{}
			for _, s := range d.Starts {
				started[s.Job] = true
				e.lastStart[s.Job] = s
				if _, ok := e.firstAt[s.Job]; !ok {
					e.firstAt[s.Job] = d.Time
				}
			}
			for _, id := range d.Stops {
				if !started[id] {
					delete(e.lastStart, id)
				}
			}
			e.mu.Unlock()
			// Stops of jobs that ran (preemptions and migrations): their pods must be evicted
			// and the job rescheduled.
			// The pods bound now are to go (evicted): the agent no longer counts them as the
			// job's placement.
			pods, _ := e.pods.List(labels.Everything())
			e.ag.mu.Lock()
			for _, id := range d.Stops {
				j := e.ag.jobs[id]
				if j == nil {
					continue
				}
				if j.running {
					j.stoppedRun++
				}
				for _, p := range pods {
					if p.Labels[v1alpha1.PodGroupLabel] == j.w.name && p.Spec.NodeName != "" && !finished(p) {
						j.stale[p.UID] = true
					}
				}
			}
			e.ag.mu.Unlock()
		},
	}
}

// startScheduler runs the gpusched scheduler in process and waits for its planner.
func (e *env) startScheduler(old *planner.Planner) (stop func(), pl *planner.Planner) {
	stop = testenv.Scheduler(e.t, e.conf, app.WithPlugin(plugin.Name, plugin.Factory(e.hooks())))
	waitFor(e.t, 30*time.Second, "the planner", func() bool {
		p := e.planner()
		return p != nil && p != old
	})
	return stop, e.planner()
}

// settle waits until the cluster has carried out the planner's decisions at the current
// virtual time and the planner, called again, decides nothing new: agent.stable holds, then
// two more decisions are made (the second surely started after the cluster settled) and none
// of them acted.
func (e *env) settle(t testing.TB, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for {
			ok, w := e.ag.stable()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				pods, _ := e.pods.List(labels.Everything())
				var ps []string
				for _, p := range pods {
					ps = append(ps, fmt.Sprintf("%s@%s:%s%v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil))
				}
				sort.Strings(ps)
				e.mu.Lock()
				var starts []string
				for id, st := range e.lastStart {
					starts = append(starts, fmt.Sprintf("%s:%v", id, st.Nodes))
				}
				e.mu.Unlock()
				sort.Strings(starts)
				if pl := e.planner(); pl != nil {
					for _, p := range pods {
						if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == v1.PodPending {
							ok, why := pl.Admit(p)
							left, g := pl.Slots(p)
							starts = append(starts, fmt.Sprintf("\n  waiting pod %s: admit %v %q, slots %v of %d", p.Name, ok, why, left, g))
						}
					}
				}
				t.Fatalf("t=%.0f: %s: the cluster did not settle in 90 s: %s\npods: %s\nthe planner's last starts: %s", e.clock.Seconds(), what, w, strings.Join(ps, " "), strings.Join(starts, " "))
			}
			e.check(t)
			time.Sleep(2 * time.Millisecond)
		}
		e.mu.Lock()
		n0 := len(e.decisions)
		e.mu.Unlock()
		pl := e.planner()
		for range 2 {
			_, s0 := pl.Busy()
			pl.Kick()
			for {
				if _, s := pl.Busy(); s > s0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("t=%.0f: %s: the planner did not decide in 90 s", e.clock.Seconds(), what)
				}
				time.Sleep(time.Millisecond)
			}
		}
		e.mu.Lock()
		n1 := len(e.decisions)
		e.mu.Unlock()
		if ok, _ := e.ag.stable(); ok && n1 == n0 {
			e.check(t)
			return
		}
	}
}

// check stops the test at the first problem the agent or the hooks recorded.
func (e *env) check(t testing.TB) {
	e.mu.Lock()
	probs := slices.Clone(e.problems)
	e.mu.Unlock()
	if len(probs) > 0 {
		t.Fatalf("t=%.0f: %s", e.clock.Seconds(), strings.Join(probs, "\n"))
	}
}

// step moves the virtual clock to the next event (the next arrival, the next completion at
// the agent's speeds, the time the planner asked to be woken, or limit) and lets the cluster
// act on it: the jobs arriving are created, the jobs done complete, the planner decides.
func (e *env) step(t testing.TB, ctx context.Context, arrivals []work, limit float64) []work {
	t.Helper()
	now := e.clock.Seconds()
	next := min(limit, e.ag.nextCompletion())
	if len(arrivals) > 0 {
		next = min(next, arrivals[0].arrival)
	}
	if w := e.planner().WakeAt(); w > now {
		next = min(next, w)
	}
	if math.IsInf(next, 1) {
		t.Fatalf("t=%.0f: nothing runs, nothing arrives, the planner asks for no wake-up: %s", now, e.ag.status())
	}
	e.ag.advance(next)
	now = e.clock.Set(next)
	// Completions before arrivals, as sim takes them: the pods informer delivers the
	// finished jobs' pods before the new jobs' pods, so that no decision at this instant
	// sees an arrival but not a completion.
	e.ag.complete(ctx, now)
	for len(arrivals) > 0 && arrivals[0].arrival <= now {
		e.ag.submit(ctx, arrivals[0])
		arrivals = arrivals[1:]
	}
	e.planner().Kick()
	e.settle(t, fmt.Sprintf("step to t=%.0f", now))
	return arrivals
}

// TestEndToEnd runs the gpusched scheduler (A-SRPT) in a real kube-scheduler against a real
// API server with 50 Philly jobs on 6 nodes x 8 GPUs, on a virtual clock that the test moves
// from event to event once the cluster has settled; then changes the cluster under running
// jobs. See the package documentation for what it checks.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts etcd, a kube-apiserver and the scheduler")
	}
	philly := sharedFile(t, "philly/philly.csv")
	cfg, saConfig := shippedCluster(t)
	e := &env{
		t: t, cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), pgc: pgclient.NewForConfigOrDie(cfg), clock: &vclock{},
		lastStart: map[gpusched.JobID]planner.Start{}, arrivals: map[gpusched.JobID]float64{},
		firstAt: map[gpusched.JobID]float64{}, finishedSeen: map[gpusched.JobID]bool{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreate(t, e.cs, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	nodes := e.createNodes(ctx)
	cl, _, _, err := mapping.Config{}.WithDefaults().Cluster(nodes)
	if err != nil || cl == nil {
		t.Fatalf("cluster of the test nodes: %v", err)
	}
	work := loadWorkload(t, philly, cl)
	// The shipped configuration, as the ServiceAccount, with the test's clock and the
	// restore and minimum run times that the comparison with sim uses (the shipped values).
	e.conf = shippedConfig(t, saConfig, func(args map[string]any) int {
		args["restoreTime"], args["minRunTime"], args["debounceMillis"] = restore, minRun, 10
		return 0
	})

	inf := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(ns))
	e.pods = inf.Core().V1().Pods().Lister()
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	e.ag = newAgent(e, cl)
	go e.ag.run(ctx)

	stop, pl := e.startScheduler(nil)
	bad := e.createBadInput(ctx)

	// The workload: every event, then the restart when 40% of the jobs are done.
	t0 := time.Now()
	pending := slices.Clone(work)
	restarted := false
	lastLog := time.Now()
	for len(pending) > 0 || e.ag.done('j') < len(work) {
		pending = e.step(t, ctx, pending, math.Inf(1))
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("t=%.0f: %s", e.clock.Seconds(), e.ag.status())
		}
		if !restarted && e.ag.done('j') >= len(work)*2/5 {
			restarted = true
			e.mu.Lock()
			e.restarted = true
			e.killedAt = e.clock.Seconds()
			e.mu.Unlock()
			t.Logf("t=%.0f: %d of %d jobs done: killing the scheduler", e.clock.Seconds(), e.ag.done('j'), len(work))
			stop()
			select { // as a process would before it exits: the last state written
			case <-pl.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("the killed scheduler's planner did not stop in 30 s")
			}
			stop, pl = e.startScheduler(pl)
			waitFor(t, 30*time.Second, "restored state", func() bool { return pl.Restored() > 0 })
			t.Logf("the restarted planner restored %d jobs from its saved state", pl.Restored())
			e.settle(t, "restart")
		}
	}
	t.Logf("workload done at t=%.0f in %.0f s of wall time: %s", e.clock.Seconds(), time.Since(t0).Seconds(), e.ag.status())
	if !restarted {
		t.Errorf("the scheduler was never restarted")
	}
	t.Run("bad-input", func(t *testing.T) { e.checkBadInput(ctx, t, bad) })
	t.Run("preempted-rescheduled", func(t *testing.T) { e.checkPreempted(t, 'j', true) })
	t.Run("order-vs-sim", func(t *testing.T) { e.compareWithSim(t, work, cl) })
	t.Run("cluster-changes", func(t *testing.T) { e.clusterChanges(ctx, t) })
	_ = stop
	e.ag.stop()
	e.check(t)
}

// sharedFile returns the path of a file of the reference data beside the checkout, or skips
// (fails when the environment says CI=true: a CI run that skipped the end-to-end test would
// still say ok).
func sharedFile(t *testing.T, rel string) string {
	dir, _ := os.Getwd()
	shared := false // a ../shared/data exists (CI's checkouts have one), without the file
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		p := filepath.Join(d, "..", "shared", "data", rel)
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			break
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if fi, err := os.Stat(filepath.Join(d, "..", "shared", "data")); err == nil && fi.IsDir() {
			shared = true
		}
	}
	if fail, why := missingData(rel, os.Getenv, shared); fail {
		t.Fatal(why)
	} else {
		t.Skip(why)
	}
	return ""
}

// missingData says what a test does when reference data is missing, and why: fail in CI
// (the environment variable CI set to true or 1, as CI services set it) or when a
// ../shared/data directory exists without the file (the project's CI runs on a checkout with
// ../shared beside it: data moved or renamed there must not turn the test into a skip);
// else (a checkout without the shared data) skip.
func missingData(rel string, getenv func(string) string, shared bool) (fail bool, why string) {
	switch strings.ToLower(strings.TrimSpace(getenv("CI"))) {
	case "true", "1", "yes":
		return true, fmt.Sprintf("reference data %s not found beside the checkout (../shared/data): CI (CI=%s) must have it", rel, getenv("CI"))
	}
	if shared {
		return true, fmt.Sprintf("reference data %s not found in ../shared/data, which exists: moved or renamed?", rel)
	}
	return false, fmt.Sprintf("reference data %s not found beside the checkout (../shared/data); set CI=true to make this a failure", rel)
}

func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustCreate(t *testing.T, cs kubernetes.Interface, nsObj *v1.Namespace) {
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) createNodes(ctx context.Context) []*v1.Node {
	var out []*v1.Node
	for i := range numNodes {
		out = append(out, e.createNode(ctx, fmt.Sprintf("gpu-%d", i)))
	}
	return out
}

// createNode creates node gpu-I, Ready, with nodeGPUs GPUs, in rack I/3.
func (e *env) createNode(ctx context.Context, name string) *v1.Node {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "gpu-"))
	if err != nil {
		e.t.Fatalf("node name %q", name)
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{gpuLabel: "NVIDIA-A100-SXM4-80GB", rackLabel: fmt.Sprintf("rack-%d", i/3)},
	}}
	return readyNode(ctx, e.t, e.cs, n, v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("96"), v1.ResourceMemory: resource.MustParse("1Ti"),
		v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(nodeGPUs, resource.DecimalSI),
	})
}

// readyNode creates node n with res as its capacity and allocatable, Ready and untainted.
func readyNode(ctx context.Context, t testing.TB, cs kubernetes.Interface, n *v1.Node, res v1.ResourceList) *v1.Node {
	n, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity, n.Status.Allocatable = res, res
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "KubeletReady"}}
	if n, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return untaint(ctx, t, cs, n)
}

// gpuNodeResources is a 64-CPU, 512 GiB node with 8 GPUs, the shipped tests' nodes.
func gpuNodeResources() v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(8, resource.DecimalSI)}
}

// untaint removes the taints the API server's admission (TaintNodesByCondition) puts on a new
// node until the node lifecycle controller, which does not run here, sees it Ready.
func untaint(ctx context.Context, t testing.TB, cs kubernetes.Interface, n *v1.Node) *v1.Node {
	n = n.DeepCopy()
	n.Spec.Taints = nil
	n, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("untaint node: %v", err)
	}
	return n
}

// work is one job of the workload: what the test submits and what the agent runs.
type work struct {
	name       string
	arrival    float64 // planner seconds after the first job
	dur        float64 // seconds alone at its best placement (clipped)
	gpus       int
	podGPUs    int
	model      string
	plan       string
	iterations float64
}

// loadWorkload takes the first numJobs jobs of one of the Philly file's multi-GPU-rich virtual
// clusters with at most 16 GPUs, maps them to zoo models on the test cluster (trace's
// model-aware mapping), compresses their arrivals 20x (so that they queue and preempt) and
// clips their durations to [minDur, maxDur].
func loadWorkload(t *testing.T, path string, cl *topology.Cluster) []work {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n")
	var rows []string
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) < 5 || f[4] != "7f04ca" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err != nil || g > 16 {
			continue
		}
		rows = append(rows, l)
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a] < rows[b] }) // by timestamp
	rows = rows[:numJobs]
	tr, err := trace.ReadPhilly(strings.NewReader(lines[0]+"\n"+strings.Join(rows, "\n")), "philly-7f04ca", trace.ReadOptions{Cluster: cl, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out []work
	first := tr.Records[0].Job.Arrival
	for i, r := range tr.Records {
		j := r.Job
		dur := r.Iterations * j.StepTime
		clipped := min(max(dur, minDur), maxDur)
		plan, _ := json.Marshal(j.Plan)
		w := work{
			name: fmt.Sprintf("j%02d", i), arrival: (j.Arrival - first) / 20, dur: clipped, gpus: j.GPUs, podGPUs: 1,
			model: j.Model.Name(), plan: string(plan), iterations: math.Round(r.Iterations * clipped / dur),
		}
		if j.GPUs >= 8 && j.GPUs%4 == 0 && i%2 == 0 {
			w.podGPUs = 4
		}
		out = append(out, w)
	}
	return out
}

func gpuPod(name string, lbl, ann map[string]string, gpus int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl, Annotations: ann},
		Spec: v1.PodSpec{
			SchedulerName: "gpusched",
			Containers: []v1.Container{{Name: "train", Image: "trainer", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
			}}},
		},
	}
}

// badInput names the objects of the bad-input cases and what their event must say.
type badInput struct {
	pods   []string          // pods that must stay unbound
	expect map[string]string // object name -> a phrase its event contains
}

func (e *env) createBadInput(ctx context.Context) badInput {
	b := badInput{expect: map[string]string{}}
	// A pod of no job.
	e.createPod(ctx, gpuPod("orphan", nil, nil, 1))
	b.pods = append(b.pods, "orphan")
	b.expect["orphan"] = "belongs to no job"
	// A job of pods whose annotations disagree.
	for i, st := range []string{"1", "2"} {
		name := fmt.Sprintf("disagree-%d", i)
		e.createPod(ctx, gpuPod(name, map[string]string{"gpusched.io/job": "disagree"}, map[string]string{"gpusched.io/pods": "2", "gpusched.io/step-time": st}, 1))
		b.pods = append(b.pods, name)
	}
	b.expect["disagree-1"] = "disagree"
	// A PodGroup whose plan does not match its pods' GPU requests.
	e.createGroup(ctx, "badplan", 2, map[string]string{"gpusched.io/model": "resnet50", "gpusched.io/plan": `{"dp":4,"tp":1,"pp":1,"micro_batches":1,"global_batch":128}`})
	// An annotation that does not parse.
	e.createGroup(ctx, "badweight", 1, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/weight": "heavy"})
	for _, g := range []struct {
		name string
		n    int
	}{{"badplan", 2}, {"badweight", 1}} {
		for i := range g.n {
			name := fmt.Sprintf("%s-%d", g.name, i)
			e.createPod(ctx, gpuPod(name, map[string]string{v1alpha1.PodGroupLabel: g.name}, nil, 1))
			b.pods = append(b.pods, name)
		}
	}
	b.expect["badplan"] = "workers"
	b.expect["badweight"] = "heavy"
	return b
}

func (e *env) createPod(ctx context.Context, p *v1.Pod) {
	if _, err := e.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		e.fail("create pod %s: %v", p.Name, err)
	}
}

func (e *env) createGroup(ctx context.Context, name string, min int32, ann map[string]string) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann}, Spec: v1alpha1.PodGroupSpec{MinMember: min}}
	if _, err := e.pgc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		e.fail("create PodGroup %s: %v", name, err)
	}
}

func (e *env) checkBadInput(ctx context.Context, t *testing.T, b badInput) {
	for _, name := range b.pods {
		p, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s: %v", name, err)
			continue
		}
		if p.Spec.NodeName != "" {
			t.Errorf("bad-input pod %s was bound to %s", name, p.Spec.NodeName)
		}
	}
	evs, err := e.cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for obj, phrase := range b.expect {
		found := false
		for _, ev := range evs.Items {
			if ev.Regarding.Name == obj && ev.Type == v1.EventTypeWarning && strings.Contains(ev.Note, phrase) {
				found = true
				t.Logf("event on %s %s: %s: %s", ev.Regarding.Kind, obj, ev.Reason, ev.Note)
				break
			}
		}
		if !found {
			t.Errorf("no warning event on %s saying %q", obj, phrase)
		}
	}
}

// checkPreempted checks that every job (of names starting with prefix) that a decision
// stopped while it ran had its pods evicted, was scheduled again and finished.
func (e *env) checkPreempted(t *testing.T, prefix byte, requireSome bool) {
	e.ag.mu.Lock()
	defer e.ag.mu.Unlock()
	n := 0
	for id, j := range e.ag.jobs {
		if j.w.name[0] != prefix || j.stoppedRun == 0 {
			continue
		}
		n++
		if j.evicted < 1 {
			t.Errorf("job %s was stopped %d times while it ran, but none of its pods was evicted", id, j.stoppedRun)
		}
		if j.starts < 2 {
			t.Errorf("job %s was stopped while it ran and never started again", id)
		}
		if !j.finished {
			t.Errorf("stopped job %s never finished", id)
		}
	}
	if requireSome && n == 0 {
		t.Errorf("no job was stopped while it ran: the workload does not exercise preemption")
	}
	t.Logf("%d jobs stopped while they ran (preempted or migrated): all evicted, rescheduled and finished", n)
}

// clusterChanges fills the six nodes with six long 8-GPU jobs, then, one at a time, cordons
// the node of one, makes another's NotReady, taints a third's NoSchedule with a key the pods
// do not tolerate and deletes a fourth's; each time the decisions must stop the job there and
// evict its pods, no pod of the scheduler may stay bound there, and once the node is back the
// job must run again. Finally every job must finish.
func (e *env) clusterChanges(ctx context.Context, t *testing.T) {
	var ids []gpusched.JobID
	for i := range numNodes {
		w := work{name: fmt.Sprintf("c%d", i), gpus: 8, podGPUs: 4, model: "resnet50", iterations: 50000}
		ids = append(ids, e.ag.submit(ctx, w))
	}
	e.settle(t, "the cluster-change jobs")
	nodeOf := func(id gpusched.JobID) string {
		e.ag.mu.Lock()
		defer e.ag.mu.Unlock()
		j := e.ag.jobs[id]
		if !j.running || len(j.nodes) == 0 {
			t.Fatalf("job %s does not run", id)
		}
		return j.nodes[0]
	}
	node := func(name string) *v1.Node {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	setReady := func(name string, ready v1.ConditionStatus) {
		n := node(name)
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), Reason: "Test"}}
		if _, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch := func(name, p string) {
		if _, err := e.cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	last := ids[numNodes-1]
	var removed string
	cases := []struct {
		name        string
		victim      gpusched.JobID
		change, fix func(node string)
	}{
		{"cordon", ids[0], func(n string) { patch(n, `{"spec":{"unschedulable":true}}`) }, func(n string) { patch(n, `{"spec":{"unschedulable":false}}`) }},
		{"not-ready", ids[1], func(n string) { setReady(n, v1.ConditionFalse) }, func(n string) { setReady(n, v1.ConditionTrue) }},
		{"taint", ids[2], func(n string) { patch(n, `{"spec":{"taints":[{"key":"maintenance","effect":"NoSchedule"}]}}`) }, func(n string) { patch(n, `{"spec":{"taints":null}}`) }},
		{"removed", last, func(n string) {
			removed = n
			if err := e.cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, func(n string) { e.createNode(ctx, n) }},
	}
	for _, c := range cases {
		n := nodeOf(c.victim)
		e.mu.Lock()
		n0 := len(e.decisions)
		e.mu.Unlock()
		at := e.clock.Seconds()
		c.change(n)
		// The planner sees the change when its informer delivers it, which on a loaded
		// machine can be after two decisions that settle() waits for: wait for the stop
		// (kicking the planner) before settling.
		stopped := false
		for deadline := time.Now().Add(30 * time.Second); !stopped && time.Now().Before(deadline); {
			e.planner().Kick()
			time.Sleep(20 * time.Millisecond)
			e.mu.Lock()
			for _, d := range e.decisions[n0:] {
				stopped = stopped || slices.Contains(d.Stops, c.victim)
			}
			e.mu.Unlock()
		}
		e.settle(t, c.name)
		if !stopped {
			t.Errorf("%s: node %s changed at t=%.0f, no decision stopped its job %s", c.name, n, at, c.victim)
		}
		pods, _ := e.pods.List(labels.Everything())
		for _, p := range pods {
			if p.Spec.NodeName == n && p.DeletionTimestamp == nil && !finished(p) {
				t.Errorf("%s: pod %s still bound to node %s", c.name, p.Name, n)
			}
		}
		// Time passes with the node out; nothing may land there.
		e.step(t, ctx, nil, e.clock.Seconds()+300)
		pods, _ = e.pods.List(labels.Everything())
		for _, p := range pods {
			if p.Spec.NodeName == n && p.DeletionTimestamp == nil && !finished(p) {
				t.Errorf("%s: pod %s bound to node %s while it is out", c.name, p.Name, n)
			}
		}
		c.fix(n)
		e.planner().Kick()
		e.settle(t, c.name+" undone")
		e.ag.mu.Lock()
		j := e.ag.jobs[c.victim]
		running, starts := j.running, j.starts
		e.ag.mu.Unlock()
		if !running || starts < 2 {
			t.Errorf("%s: job %s does not run again once node %s is back (running %v, %d starts)", c.name, c.victim, n, running, starts)
		}
		t.Logf("%s: node %s out at t=%.0f: job %s stopped, its pods evicted; back: the job runs again", c.name, n, at, c.victim)
	}
	if removed == "" {
		t.Errorf("no node was removed")
	}
	for e.ag.done('c') < numNodes {
		e.step(t, ctx, nil, math.Inf(1))
	}
	e.checkPreempted(t, 'c', true)
}

// compareWithSim runs the same jobs (as the planner mapped them, with the arrivals it gave
// them) through package sim with the same scheduler and cost model, and compares the times
// and the order of first starts.
func (e *env) compareWithSim(t *testing.T, ws []work, cl *topology.Cluster) {
	m := mapping.Config{}.WithDefaults()
	sizes := &plugin.PodSizes{}
	var recs []trace.Record
	e.mu.Lock()
	for _, w := range ws {
		pg, pods := w.objects()
		s, complete, err := m.JobFromPodGroup(pg, pods, cl.Server(0).ServerSpec)
		if err != nil || !complete {
			t.Fatalf("map %s: %v", w.name, err)
		}
		at, ok := e.arrivals[s.Job.ID]
		if !ok {
			t.Fatalf("no arrival recorded for %s", s.Job.ID)
		}
		s.Job.Arrival = at
		sizes.Set(s.Job.ID, s.PodGPUs)
		recs = append(recs, trace.Record{Job: s.Job, Iterations: w.iterations})
	}
	kubeFirst := maps.Clone(e.firstAt)
	e.mu.Unlock()
	sched, _, err := plugin.NewScheduler(plugin.Args{RestoreTime: restore, MinRunTime: minRun}, sizes)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: cl, Jobs: recs, Scheduler: sched, Cost: gpusched.DefaultCost(), RestoreTime: restore})
	if err != nil {
		t.Fatal(err)
	}
	simFirst := map[gpusched.JobID]float64{}
	for _, r := range res.Jobs {
		simFirst[r.ID] = r.Start
	}
	ids := make([]gpusched.JobID, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, r.Job.ID)
	}
	order := func(at map[gpusched.JobID]float64) []gpusched.JobID {
		o := slices.Clone(ids)
		sort.SliceStable(o, func(a, b int) bool {
			if at[o[a]] != at[o[b]] {
				return at[o[a]] < at[o[b]]
			}
			return o[a] < o[b]
		})
		return o
	}
	kubeOrder, simOrder := order(kubeFirst), order(simFirst)
	var maxDiff float64
	same := 0
	for _, id := range ids {
		d := math.Abs(kubeFirst[id] - simFirst[id])
		maxDiff = max(maxDiff, d)
		if d <= 1e-3 {
			same++
		}
	}
	// The order must be sim's exactly, before the kill and after the restart. (The two
	// inversions after the restart that a loaded machine used to show, j41 before j42 and
	// j43, came from A-SRPT learning a finished job's count from the planner's extrapolation
	// in some runs and from the job's report in others, a race of two informers; the planner
	// now rounds the extrapolation to whole iterations. They are still counted apart.)
	const maxAfterRestart = 0
	e.mu.Lock()
	killedAt := e.killedAt
	e.mu.Unlock()
	inv, after := 0, 0
	for a := range kubeOrder {
		for b := a + 1; b < len(kubeOrder); b++ {
			x, y := kubeOrder[a], kubeOrder[b]
			if simFirst[x] > simFirst[y] {
				inv++
				msg := fmt.Sprintf("%s started before %s on the cluster (t=%.3f, %.3f) but after it in sim (t=%.3f, %.3f)",
					x, y, kubeFirst[x], kubeFirst[y], simFirst[x], simFirst[y])
				if killedAt > 0 && kubeFirst[y] >= killedAt {
					after++
					t.Log(msg + " (after the restart)")
					continue
				}
				t.Error(msg)
			}
		}
	}
	if after > maxAfterRestart {
		t.Errorf("%d inversions among jobs first started after the restart, more than %d", after, maxAfterRestart)
	}
	if inv > after {
		t.Errorf("the order of first starts before the restart differs from sim's:\ncluster %v\nsim     %v", kubeOrder, simOrder)
	}
	t.Logf("first starts: order identical to sim: %v (%d inversions); %d of %d jobs start at sim's time (within 1 ms); largest difference %.3f s",
		slices.Equal(kubeOrder, simOrder), inv, same, len(ids), maxDiff)
}
