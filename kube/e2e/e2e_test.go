package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	restore   = 30.0  // seconds of planner time a restarted job restores
	minRun    = 600.0 // seconds of planner time a job runs before it may be preempted
	wallRun   = 40.0  // seconds of wall time the main workload should take
	numJobs   = 50
	maxDur    = 7200.0
	minDur    = 300.0
	gpuLabel  = "nvidia.com/gpu.product"
	rackLabel = "gpusched.io/rack"
)

// env is the test's cluster: clients, the scheduler's hooks, the node agent's records.
type env struct {
	t     *testing.T
	cfg   *rest.Config
	cs    kubernetes.Interface
	pgc   pgclient.Interface
	pods  listersv1.PodLister
	scale float64
	conf  string // scheduler configuration file

	mu        sync.Mutex
	pl        *planner.Planner
	epoch     time.Time // planner time 0 in wall time
	decisions []planner.Decision
	lastStart map[gpusched.JobID]planner.Start
	arrivals  map[gpusched.JobID]float64
	firstAt   map[gpusched.JobID]float64 // first start (planner time)
	firstPos  map[gpusched.JobID]int     // position of the first start among all first starts
	nfirst    int
	stopped   map[gpusched.JobID]int // stops that were not migrations
	problems  []string
}

func (e *env) fail(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.problems) < 50 {
		e.problems = append(e.problems, fmt.Sprintf(format, args...))
	}
}

// now returns the planner time (the planner's clock is (wall - epoch) x scale, its epoch kept
// across restarts in the saved state).
func (e *env) now() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Since(e.epoch).Seconds() * e.scale
}

func (e *env) hooks() *plugin.Hooks {
	return &plugin.Hooks{
		Planner: func(p *planner.Planner) {
			e.mu.Lock()
			e.pl = p
			e.mu.Unlock()
		},
		Decided: func(d planner.Decision) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.decisions = append(e.decisions, d)
			if os.Getenv("GPUSCHED_KUBE_E2E_DECISIONS") != "" {
				e.t.Logf("decision t=%.0f: stops %v starts %v rejected %v submitted %d", d.Time, d.Stops, d.Starts, d.Rejected, len(d.Submitted))
			}
			for id, at := range d.Submitted {
				e.arrivals[id] = at
			}
			started := map[gpusched.JobID]bool{}
			for _, s := range d.Starts {
				started[s.Job] = true
				e.lastStart[s.Job] = s
				if _, ok := e.firstAt[s.Job]; !ok {
					e.firstAt[s.Job] = d.Time
					e.firstPos[s.Job] = e.nfirst
					e.nfirst++
				}
			}
			for _, id := range d.Stops {
				delete(e.lastStart, id)
				if !started[id] {
					e.stopped[id]++
				}
			}
		},
	}
}

// startScheduler runs the gpusched scheduler in process.
func (e *env) startScheduler() func() {
	return testenv.Scheduler(e.t, e.conf, app.WithPlugin(plugin.Name, plugin.Factory(e.hooks())))
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts etcd, a kube-apiserver and the scheduler")
	}
	// Not yet reliable (see the package documentation): run it on purpose.
	if os.Getenv("GPUSCHED_KUBE_E2E") == "" {
		t.Skip("set GPUSCHED_KUBE_E2E=1 to run the end-to-end test (not yet passing: see the e2e package doc)")
	}
	philly := sharedFile(t, "philly/philly.csv")
	cfg := testenv.APIServer(t)
	e := &env{
		t: t, cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), pgc: pgclient.NewForConfigOrDie(cfg),
		lastStart: map[gpusched.JobID]planner.Start{}, arrivals: map[gpusched.JobID]float64{},
		firstAt: map[gpusched.JobID]float64{}, firstPos: map[gpusched.JobID]int{}, stopped: map[gpusched.JobID]int{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	installCRD(t, cfg)
	mustCreate(t, e.cs, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	nodes := e.createNodes(ctx)
	cl, _, _, err := mapping.Config{}.WithDefaults().Cluster(nodes)
	if err != nil || cl == nil {
		t.Fatalf("cluster of the test nodes: %v", err)
	}
	work := loadWorkload(t, philly, cl)
	// Time scale: the workload's GPU-time spread over the cluster in about wallRun seconds.
	var gpuTime float64
	for _, w := range work {
		gpuTime += w.dur * float64(w.gpus)
	}
	e.scale = math.Max(50, gpuTime/float64(cl.NumGPUs())/0.8/wallRun)
	t.Logf("%d jobs, %.0f GPU-hours on %d GPUs; time scale %.0f planner seconds per second", len(work), gpuTime/3600, cl.NumGPUs(), e.scale)
	e.conf = writeConfig(t, testenv.Kubeconfig(t, cfg), e.scale)

	inf := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(ns))
	e.pods = inf.Core().V1().Pods().Lister()
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())

	stop := e.startScheduler()
	// Wait for the planner, then fix the planner's epoch in wall time.
	waitFor(t, 30*time.Second, "planner", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.pl != nil
	})
	e.mu.Lock()
	pl := e.pl
	e.mu.Unlock()
	pnow := pl.Now()
	e.mu.Lock()
	e.epoch = time.Now().Add(-time.Duration(pnow / e.scale * float64(time.Second)))
	e.mu.Unlock()

	bad := e.createBadInput(ctx)
	ag := newAgent(e, work, cl)
	go ag.run(ctx)

	// Submit the jobs at their (scaled) arrival times; restart the scheduler when 40% are done.
	go func() {
		t0 := e.now()
		for _, w := range work {
			for e.now()-t0 < w.arrival {
				time.Sleep(5 * time.Millisecond)
			}
			ag.submit(ctx, w)
		}
	}()
	restarted := false
	lastLog := time.Now()
	waitFor(t, 6*time.Minute, "every job to finish", func() bool {
		e.mu.Lock()
		probs := slices.Clone(e.problems)
		e.mu.Unlock()
		if len(probs) > 0 {
			t.Fatalf("t=%.0f: %s", e.now(), strings.Join(probs, "\n"))
		}
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("t=%.0f: %s", e.now(), ag.status())
		}
		done := ag.done()
		if !restarted && done >= len(work)*2/5 {
			restarted = true
			t.Logf("t=%.0f: %d of %d jobs done: killing the scheduler", e.now(), done, len(work))
			stop()
			stop = e.startScheduler()
			waitFor(t, 30*time.Second, "restarted planner", func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.pl != pl
			})
			e.mu.Lock()
			pl = e.pl
			e.mu.Unlock()
		}
		return done == len(work)
	})
	if !restarted {
		t.Errorf("the scheduler was never restarted")
	}
	waitFor(t, 10*time.Second, "restored state", func() bool { return pl.Restored() > 0 })
	t.Logf("restarted planner restored %d jobs from its saved state", pl.Restored())

	t.Run("bad-input", func(t *testing.T) { e.checkBadInput(ctx, t, bad) })
	t.Run("cordon", func(t *testing.T) { e.cordon(ctx, t, ag, cl) })
	ag.stop()

	e.mu.Lock()
	for _, p := range e.problems {
		t.Error(p)
	}
	preempted := 0
	for id, n := range e.stopped {
		if n > 0 && !strings.Contains(string(id), "cordon") {
			preempted++
		}
	}
	e.mu.Unlock()
	t.Run("preempted-rescheduled", func(t *testing.T) {
		if preempted == 0 {
			t.Errorf("no job was preempted: the workload does not exercise preemption")
		}
		ag.mu.Lock()
		defer ag.mu.Unlock()
		for id, n := range e.stopped {
			j := ag.jobs[id]
			if j == nil || n == 0 {
				continue
			}
			if j.evicted < 1 {
				t.Errorf("job %s was preempted %d times but none of its pods was evicted", id, n)
			}
			if !j.finished {
				t.Errorf("preempted job %s never finished", id)
			}
		}
		t.Logf("%d jobs preempted, all evicted and rescheduled", preempted)
	})
	t.Run("order-vs-sim", func(t *testing.T) { e.compareWithSim(t, ag, work, cl) })
}

// sharedFile returns the path of a file of the reference data beside the checkout, or skips.
func sharedFile(t *testing.T, rel string) string {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		p := filepath.Join(d, "..", "shared", "data", rel)
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			break
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("reference data %s not found beside the checkout (../shared/data)", rel)
	return ""
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
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("gpu-%d", i),
			Labels: map[string]string{gpuLabel: "NVIDIA-A100-SXM4-80GB", rackLabel: fmt.Sprintf("rack-%d", i/3)},
		}}
		n, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		res := v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("96"), v1.ResourceMemory: resource.MustParse("1Ti"),
			v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(nodeGPUs, resource.DecimalSI),
		}
		n.Status.Capacity, n.Status.Allocatable = res, res
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "KubeletReady"}}
		n, err = e.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		n = untaint(ctx, e.t, e.cs, n)
		out = append(out, n)
	}
	return out
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
// model-aware mapping), and clips their durations to [minDur, maxDur] so that the test runs
// in about a minute.
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

func writeConfig(t *testing.T, kubeconfig string, scale float64) string {
	conf := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: gpusched
  plugins:
    preEnqueue: {enabled: [{name: Gpusched}]}
    preFilter: {enabled: [{name: Gpusched}]}
    filter: {enabled: [{name: Gpusched}]}
    postFilter: {disabled: [{name: DefaultPreemption}]}
    score: {enabled: [{name: Gpusched, weight: 10}]}
    reserve: {enabled: [{name: Gpusched}]}
    permit: {enabled: [{name: Gpusched}]}
  pluginConfig:
  - name: Gpusched
    args:
      scheduler: asrpt
      restoreTime: %g
      minRunTime: %g
      timeScale: %g
      stateNamespace: default
      debounceMillis: 10
`, kubeconfig, restore, minRun, scale)
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
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

// cordon runs four 8-GPU jobs, cordons a node that holds one of them, and checks that the
// decisions drain it: the job leaves the node (moved or preempted), nothing new lands there,
// and every job finishes after the node is uncordoned.
func (e *env) cordon(ctx context.Context, t *testing.T, ag *agent, cl *topology.Cluster) {
	var ws []work
	for i := range 4 {
		ws = append(ws, work{name: fmt.Sprintf("cordon%d", i), gpus: 8, podGPUs: 1, model: "resnet50", iterations: 0, dur: 0})
	}
	for i := range ws {
		ws[i].plan = ""
		ws[i].iterations = 3e3 / e.scale * 4e3 // long enough to be running when the node is cordoned
		ag.submit(ctx, ws[i])
	}
	id := func(w work) gpusched.JobID { return mapping.JobKey{Namespace: ns, Name: w.name, PodGroup: true}.ID() }
	var node string
	waitFor(t, 60*time.Second, "the cordon jobs to run", func() bool {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		for _, w := range ws {
			if j := ag.jobs[id(w)]; j == nil || !j.running {
				return false
			}
		}
		node = ag.jobs[id(ws[0])].nodes[0]
		return true
	})
	cordoned := e.setCordon(ctx, t, node, true)
	waitFor(t, 60*time.Second, "node "+node+" to be drained", func() bool {
		pods, _ := e.pods.List(labels.Everything())
		for _, p := range pods {
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
				return false
			}
		}
		return true
	})
	t.Logf("node %s cordoned at t=%.0f and drained", node, cordoned)
	e.mu.Lock()
	stoppedAfter := false
	for _, d := range e.decisions {
		if d.Time >= cordoned && slices.Contains(d.Stops, id(ws[0])) {
			stoppedAfter = true
		}
	}
	e.mu.Unlock()
	if !stoppedAfter {
		t.Errorf("no decision stopped job %s after its node was cordoned", id(ws[0]))
	}
	e.setCordon(ctx, t, node, false)
	waitFor(t, 2*time.Minute, "the cordon jobs to finish", func() bool {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		for _, w := range ws {
			if j := ag.jobs[id(w)]; j == nil || !j.finished {
				return false
			}
		}
		return true
	})
}

func (e *env) setCordon(ctx context.Context, t *testing.T, node string, on bool) float64 {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := e.cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return e.now()
}

// noShare is the cost model without link sharing, which both the agent and the simulation
// use (the agent computes each job's speed from its own placement only).
type noShare struct{ gpusched.CostModel }

func (n noShare) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, _ topology.LinkLoad) (gpusched.StepCost, error) {
	return n.CostModel.StepCost(j, c, gpus, nil)
}

// compareWithSim runs the same jobs (as the planner mapped them, with the arrivals it gave
// them) through package sim with the same scheduler, and compares the order of first starts.
func (e *env) compareWithSim(t *testing.T, ag *agent, ws []work, cl *topology.Cluster) {
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
	kubeFirst := map[gpusched.JobID]float64{}
	kubePos := map[gpusched.JobID]int{}
	for id, at := range e.firstAt {
		kubeFirst[id], kubePos[id] = at, e.firstPos[id]
	}
	e.mu.Unlock()
	sched, _, err := plugin.NewScheduler(plugin.Args{RestoreTime: restore, MinRunTime: minRun}, sizes)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: cl, Jobs: recs, Scheduler: sched, Cost: noShare{gpusched.DefaultCost()}, RestoreTime: restore})
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
	kubeOrder := slices.Clone(ids)
	sort.SliceStable(kubeOrder, func(a, b int) bool { return kubePos[kubeOrder[a]] < kubePos[kubeOrder[b]] })
	simOrder := slices.Clone(ids)
	sort.SliceStable(simOrder, func(a, b int) bool { return simFirst[simOrder[a]] < simFirst[simOrder[b]] })
	// Inversions: pairs in a different order. A pair is excused when its two sim start times
	// are within tol of each other: event times on the cluster differ from the simulator's by
	// the planner's reaction time (debounce, informer and binding latency) and the agent's
	// tick, and a restart gathers the events of its downtime into one decision.
	tol := 0.0
	var maxDelay float64
	for _, id := range ids {
		maxDelay = max(maxDelay, math.Abs(kubeFirst[id]-simFirst[id]))
	}
	tol = 0.02*e.scale*4 + restore
	inv, excused := 0, 0
	for a := range kubeOrder {
		for b := a + 1; b < len(kubeOrder); b++ {
			x, y := kubeOrder[a], kubeOrder[b]
			if simFirst[x] > simFirst[y] {
				if simFirst[x]-simFirst[y] <= tol {
					excused++
					continue
				}
				inv++
				t.Errorf("%s started before %s on the cluster (t=%.0f, %.0f) but after it in sim (t=%.0f, %.0f)",
					x, y, kubeFirst[x], kubeFirst[y], simFirst[x], simFirst[y])
			}
		}
	}
	same := slices.Equal(kubeOrder, simOrder)
	t.Logf("first-start order: identical to sim: %v; %d inversions, %d excused (sim starts within %.0f s); largest first-start difference %.0f s (planner time)",
		same, inv, excused, tol, maxDelay)
}
