package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpusched/gpusched/kube/internal/testenv"
	"github.com/gpusched/gpusched/kube/planner"
	"github.com/gpusched/gpusched/kube/plugin"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// shippedConfig returns the KubeSchedulerConfiguration of kube/deploy/20-config.yaml as
// shipped, with clientConnection.kubeconfig set (as the README says for running outside the
// cluster) and the planner's lease shortened (6 s instead of 15, renewed within 4 s) so that
// a failover takes seconds; edit, when not nil, changes the plugin's args further (a test's clock, grace
// periods, queues), and returns the clientConnection's qps (0: kube-scheduler's default, as
// shipped).
func shippedConfig(t testing.TB, kubeconfig string, edit func(args map[string]any) (qps int)) string {
	var text string
	for _, u := range manifestObjects(t) {
		if u.GetKind() == "ConfigMap" && u.GetName() == "gpusched-scheduler-config" {
			text, _, _ = unstructuredString(u.Object, "data", "config.yaml")
		}
	}
	if text == "" {
		t.Fatal("kube/deploy has no gpusched-scheduler-config ConfigMap with config.yaml")
	}
	var conf map[string]any
	if err := yaml.Unmarshal([]byte(text), &conf); err != nil {
		t.Fatal(err)
	}
	conn := map[string]any{"kubeconfig": kubeconfig}
	conf["clientConnection"] = conn
	found := false
	for _, p := range conf["profiles"].([]any) {
		for _, pc := range p.(map[string]any)["pluginConfig"].([]any) {
			pc := pc.(map[string]any)
			if pc["name"] != plugin.Name {
				continue
			}
			args := pc["args"].(map[string]any)
			le, ok := args["leaderElection"].(map[string]any)
			if !ok {
				t.Fatal("the shipped config does not turn on the planner's leader election")
			}
			le["leaseDurationSeconds"], le["renewDeadlineSeconds"], le["retryPeriodSeconds"] = 6, 4, 0.5
			if edit != nil {
				if qps := edit(args); qps > 0 {
					conn["qps"], conn["burst"] = qps, 2*qps
				}
			}
			found = true
		}
	}
	if !found {
		t.Fatal("the shipped config does not configure the plugin")
	}
	out, err := yaml.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// shippedCluster starts an API server with RBAC on, installs the PodGroup CRD, creates the
// objects of kube/deploy for real (in kubectl's order) and returns an admin client config (for
// the test's own part: nodes, jobs, the kubelets' and controllers' writes) and a kubeconfig
// of the ServiceAccount gpusched-system/gpusched-scheduler, as which every scheduler of the
// end-to-end tests runs: so the shipped RBAC is what the scheduler can do, and a verb missing
// from it fails the test that needs it.
func shippedCluster(t testing.TB) (admin *rest.Config, scheduler string) {
	cfg := testenv.APIServer(t, "--authorization-mode=Node,RBAC")
	installCRD(t, cfg)
	createManifests(t, cfg, false)
	return cfg, serviceAccountKubeconfig(t, cfg)
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// serviceAccountKubeconfig returns a kubeconfig that authenticates as the ServiceAccount of
// kube/deploy (a token from the TokenRequest API), so that the scheduler runs with exactly the
// shipped RBAC.
func serviceAccountKubeconfig(t testing.TB, cfg *rest.Config) string {
	cs := kubernetes.NewForConfigOrDie(cfg)
	exp := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts("gpusched-system").CreateToken(context.Background(), "gpusched-scheduler",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the ServiceAccount gpusched-system/gpusched-scheduler: %v", err)
	}
	sa := rest.AnonymousClientConfig(cfg)
	sa.BearerToken = tok.Status.Token
	return testenv.Kubeconfig(t, sa)
}

// replica is one gpusched-scheduler replica run in process.
type replica struct {
	mu   sync.Mutex
	pl   *planner.Planner
	stop func()
}

func (r *replica) planner() *planner.Planner {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pl
}

// leading tells whether the replica's planner decides (it holds the lease).
func (r *replica) leading() bool {
	p := r.planner()
	return p != nil && p.Stats().Decisions > 0
}

func startReplica(t *testing.T, conf string) *replica {
	r := &replica{}
	hooks := &plugin.Hooks{Planner: func(p *planner.Planner) { r.mu.Lock(); r.pl = p; r.mu.Unlock() }}
	r.stop = testenv.Scheduler(t, conf, app.WithPlugin(plugin.Name, plugin.Factory(hooks)))
	return r
}

// TestShipped applies kube/deploy as shipped to an API server with RBAC on, and runs two
// replicas of the scheduler as its ServiceAccount with the shipped configuration. It checks
// the defects the issue "Kubernetes, round 2" found: a job without annotations on a node of
// an unknown GPU type runs; a job whose pod no node can hold by CPU is refused with an event,
// and one whose pod fits no node's CPU left (other pods hold it) is never started there;
// a PodDisruptionBudget that refuses an eviction blocks neither the planner nor other jobs,
// and the GPUs it keeps are not given away; the leader's death hands its jobs, from the saved
// state, to the other replica, which evicts nothing and schedules the next job.
func TestShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, a kube-apiserver and two schedulers")
	}
	cfg, saConfig := shippedCluster(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	pgc := pgclient.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two 8-GPU nodes: one of a type the presets do not know, one without a GPU type label.
	for name, label := range map[string]string{"gpu-0": "Voodoo-9000", "gpu-1": ""} {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if label != "" {
			n.Labels[gpuLabel] = label
		}
		readyNode(ctx, t, cs, n, gpuNodeResources())
	}
	// The shipped configuration with grace periods of 1 s (not 30) and a minimum run time of
	// 1 s (not 600: the Job case has A-SRPT preempt a Job).
	edit := func(args map[string]any) int {
		args["podsGoneGraceSeconds"], args["unfitGraceSeconds"], args["minRunTime"] = 1, 1, 1
		return 0
	}
	conf := shippedConfig(t, saConfig, edit)
	// The same with the shipped queues example made to fit the 32 GPUs of the queues case
	// (team-a and team-b, 16 GPUs guaranteed each; the jobs of other namespaces share the
	// default queue, without a guarantee), rolled out as a third replica at the end.
	confQueues := shippedConfig(t, saConfig, func(args map[string]any) int {
		edit(args)
		args["queues"] = map[string]any{"queues": []any{
			map[string]any{"name": "team-a", "namespaces": []any{"team-a"}, "guaranteedGPUs": 16, "weight": 2},
			map[string]any{"name": "team-b", "namespaces": []any{"team-b"}, "guaranteedGPUs": 16, "weight": 1},
		}}
		return 0
	})
	a := startReplica(t, conf)
	waitFor(t, 60*time.Second, "replica a to lead", a.leading)
	b := startReplica(t, conf)

	group := func(name string, pods int, podGPUs int, cpu string) {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.PodGroupSpec{MinMember: int32(pods)}}
		if _, err := pgc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range pods {
			p := gpuPod(fmt.Sprintf("%s-%d", name, i), map[string]string{v1alpha1.PodGroupLabel: name, "app": name}, nil, podGPUs)
			if cpu != "" {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
			}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pod := func(name string) *v1.Pod {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bound := func(name string) func() bool { return func() bool { return pod(name).Spec.NodeName != "" } }
	event := func(obj, phrase string) func() bool { return (&shipped{t: t, ctx: ctx, cs: cs}).event(ns, obj, phrase) }

	// A job without annotations (default step time), 8 GPUs: it runs, on a generic GPU node.
	group("plain", 1, 8, "")
	waitFor(t, 30*time.Second, "the job without annotations to bind", bound("plain-0"))
	waitFor(t, 30*time.Second, "a Started event", event("plain", "Started"))
	waitFor(t, 30*time.Second, "the PodGroup's status Running", func() bool {
		pg, err := pgc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "plain", metav1.GetOptions{})
		return err == nil && pg.Status.Phase == v1alpha1.PodGroupRunning && pg.Status.Running == 1
	})
	waitFor(t, 30*time.Second, "an UnknownGPUType warning on the unlabelled node", func() bool {
		evs, err := cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Kind == "Node" && ev.Reason == "UnknownGPUType" {
				return true
			}
		}
		return false
	})
	// A pod asking 100 CPUs of 64-CPU nodes: refused with an event, never bound.
	group("huge", 1, 1, "100")
	waitFor(t, 30*time.Second, "a DoesNotFit event", event("huge", "DoesNotFit"))
	waitFor(t, 30*time.Second, "the pending reason on the pod", func() bool {
		for _, c := range pod("huge-0").Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == "GpuschedWaiting" && strings.Contains(c.Message, "CPU") {
				return true
			}
		}
		return false
	})

	// A PodDisruptionBudget protects plain (its disruption controller does not run here, so it
	// never allows an eviction). Cordoning plain's node stops plain: the eviction is refused,
	// plain keeps its GPUs (EvictionBlocked) and the planner goes on: a job that fits on the
	// other node binds.
	minAv := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "plain"}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The kubelet's part: the pod runs (the eviction API lets a Pending pod go whatever its
	// budget says).
	running := pod("plain-0")
	running.Status.Phase = v1.PodRunning
	running.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	plainNode := pod("plain-0").Spec.NodeName
	if _, err := cs.CoreV1().Nodes().Patch(ctx, plainNode, "application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "an EvictionBlocked event", event("plain", "EvictionBlocked"))
	t0 := time.Now()
	group("next", 1, 8, "")
	waitFor(t, 20*time.Second, "a job to bind while an eviction is refused", bound("next-0"))
	t.Logf("with a refused eviction pending, the next job bound %v after its creation", time.Since(t0).Round(time.Millisecond))
	if p := pod("plain-0"); p.DeletionTimestamp != nil || p.Spec.NodeName != plainNode {
		t.Fatalf("plain was evicted through its budget")
	}
	if pod("next-0").Spec.NodeName == plainNode {
		t.Fatalf("the next job was bound to the GPUs plain keeps")
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, plainNode, "application/merge-patch+json", []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// plain is done with (no kubelet here ends a pod: delete it at once).
	zero := int64(0)
	if err := pgc.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "plain-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}

	// Failover: replica a dies; b takes the lease, restores the jobs from the state a wrote,
	// evicts nothing that runs where its decisions put it, and schedules the next job.
	if b.leading() {
		t.Fatalf("two replicas plan at once")
	}
	settled := pod("next-0").Spec.NodeName
	a.stop()
	waitFor(t, 30*time.Second, "replica b to take over", b.leading)
	if n := b.planner().Restored(); n < 1 {
		t.Fatalf("the new leader restored %d jobs from the saved state", n)
	}
	group("after", 1, 1, "")
	_ = settled
	waitFor(t, 30*time.Second, "the new leader to schedule a job", func() bool {
		p := pod("after-0")
		return p.Spec.NodeName != ""
	})
	if p := pod("next-0"); p.DeletionTimestamp != nil {
		t.Fatalf("the new leader evicted a job that ran where the old one put it")
	}
	lease, err := cs.CoordinationV1().Leases("gpusched-system").Get(ctx, "gpusched-planner", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("lease: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("gpusched-system").Get(ctx, "gpusched-state", metav1.GetOptions{}); err != nil {
		t.Fatalf("the state ConfigMap: %v", err)
	}
	t.Logf("failover: replica b leads (%s), restored %d jobs", *lease.Spec.HolderIdentity, b.planner().Restored())

	// A pod that does not fit the CPU its node has left (a pod of another scheduler holds 60
	// of the node's 64 CPUs): the planner plans CPU too, so the job is never started there:
	// it waits with the reason, or runs on a node that has the CPU.
	hogNode := pod("after-0").Spec.NodeName
	hog := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: ns}, Spec: v1.PodSpec{NodeName: hogNode,
		Containers: []v1.Container{{Name: "c", Image: "x", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("60")}}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	group("cpu", 1, 1, "10")
	waitFor(t, 30*time.Second, "an InsufficientResources event, or the pod bound where the CPU is", func() bool {
		return event("cpu", "InsufficientResources")() || bound("cpu-0")()
	})
	if n := pod("cpu-0").Spec.NodeName; n == hogNode {
		t.Fatalf("a pod that does not fit the CPU left on node %s was bound there", n)
	}
	if event("cpu", "Unschedulable")() || event("cpu", "NotBound")() {
		t.Fatalf("a job whose pod cannot bind was started and taken back: the planner did not plan the CPU")
	}
	// A running job whose pod is deleted (its PodGroup kept) gives its GPUs back to the job
	// that waits for them.
	group("wait8", 1, 8, "")
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "next-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the waiting job to get the GPUs of a job without pods", bound("wait8-0"))
	waitFor(t, 10*time.Second, "a PodsGone event", event("next", "PodsGone"))
	// A pod that another plugin's Filter rejects on every node (a nodeSelector no node
	// matches: nothing the planner's accounting sees): the plugin's PostFilter tells the
	// planner, which takes the job back (Unschedulable, naming the filter) after UnfitGrace
	// (1 s here) instead of keeping its GPUs.
	if _, err := pgc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "picky", Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	picky := gpuPod("picky-0", map[string]string{v1alpha1.PodGroupLabel: "picky"}, nil, 1)
	picky.Spec.NodeSelector = map[string]string{"example.com/no-such-label": "x"}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, picky, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "an Unschedulable event naming the filter", event("picky", "NodeAffinity"))
	if bound("picky-0")() {
		t.Fatalf("a pod no node's filters accept was bound")
	}

	// The metrics kube-scheduler serves on /metrics (component-base's registry, shared by the
	// two replicas of this process) counted what happened: decisions, state writes, the
	// refused eviction, the job taken back.
	waitFor(t, 10*time.Second, "the gpusched metrics", func() bool {
		m := gpuschedMetrics(t)
		return m["gpusched_decision_duration_seconds"] > 0 && m["gpusched_state_writes_total"] > 0 &&
			m[`gpusched_evictions_total{result="refused"}`] >= 1 && m["gpusched_unstarted_jobs_total"] >= 2
	})
	t.Logf("metrics: %v", gpuschedMetrics(t))

	// Two more nodes (32 GPUs), the cluster emptied, the kubelets' part in evictions played,
	// Kubernetes' Job controller running: the batch/v1 Job of kube/recipes preempted, then the
	// queues.
	sh := &shipped{t: t, ctx: ctx, cfg: cfg, cs: cs, pgc: pgc}
	sh.clear(ns)
	for _, name := range []string{"gpu-2", "gpu-3"} {
		readyNode(ctx, t, cs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, gpuNodeResources())
	}
	jctx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	sh.kubelets(jctx, ns, "team-a", "team-b")
	sh.jobController(jctx)
	t.Run("job-preempted", func(t *testing.T) { sh.t = t; sh.preemptJobs(ns) })
	sh.t = t
	sh.clear(ns)
	// The queues: replica c, configured with them, replaces b (a configuration change rolled
	// out: b stops, c takes the Lease and the state b wrote).
	c := startReplica(t, confQueues)
	b.stop()
	waitFor(t, 30*time.Second, "replica c, with the queues, to take over", c.leading)
	t.Run("queues", func(t *testing.T) { sh.t = t; sh.queues() })
}

// gpuschedMetrics gathers the gpusched_* metrics of the process's legacy registry (what
// kube-scheduler serves on /metrics): counters and gauges by name and labels, histograms by
// their sample count.
func gpuschedMetrics(t *testing.T) map[string]float64 {
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "gpusched_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
