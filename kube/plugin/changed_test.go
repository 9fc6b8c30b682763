package plugin

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/kube/mapping"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Every field the planner reads kicks it; the writes of its own (pod conditions, PodGroup
// status) and node heartbeats do not. A filter that kicks always fails the second half, one
// that never kicks the first.
func TestChangedFilters(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"}},
		Spec: v1.PodSpec{SchedulerName: "gpusched", Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	now := metav1.NewTime(time.Unix(1, 0))
	podCases := map[string]func(p *v1.Pod){
		"node":       func(p *v1.Pod) { p.Spec.NodeName = "n" },
		"phase":      func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded },
		"deleted":    func(p *v1.Pod) { p.DeletionTimestamp = &now },
		"label":      func(p *v1.Pod) { p.Labels["a"] = "2" },
		"annotation": func(p *v1.Pod) { p.Annotations["gpusched.io/progress"] = "5" },
		"scheduler":  func(p *v1.Pod) { p.Spec.SchedulerName = "x" },
		"cpu":        func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2") },
	}
	for name, change := range podCases {
		q := pod.DeepCopy()
		change(q)
		if !PodChanged(pod, q) {
			t.Errorf("pod %s changed: no kick", name)
		}
	}
	q := pod.DeepCopy()
	q.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "GpuschedWaiting", Message: "waits"}}
	q.ResourceVersion = "7"
	if PodChanged(pod, q) {
		t.Errorf("a pod's condition alone kicks the planner")
	}

	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Annotations: map[string]string{}}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}
	g := pg.DeepCopy()
	g.Status.Phase, g.Status.Running = v1alpha1.PodGroupRunning, 2
	if PodGroupChanged(pg, g) {
		t.Errorf("a PodGroup's status alone kicks the planner")
	}
	g = pg.DeepCopy()
	g.Annotations["gpusched.io/progress"] = "10"
	if !PodGroupChanged(pg, g) {
		t.Errorf("a PodGroup's progress annotation does not kick the planner")
	}
	g = pg.DeepCopy()
	g.Spec.MinMember = 3
	if !PodGroupChanged(pg, g) {
		t.Errorf("a PodGroup's spec does not kick the planner")
	}

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}, Status: v1.NodeStatus{
		Allocatable: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
		Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: now}},
	}}
	n := node.DeepCopy()
	n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(2, 0))
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse})
	if NodeChanged(node, n) {
		t.Errorf("a node heartbeat kicks the planner")
	}
	nodeCases := map[string]func(n *v1.Node){
		"ready":       func(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse },
		"cordon":      func(n *v1.Node) { n.Spec.Unschedulable = true },
		"taint":       func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}} },
		"label":       func(n *v1.Node) { n.Labels["nvidia.com/gpu.product"] = "H100" },
		"allocatable": func(n *v1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4") },
	}
	for name, change := range nodeCases {
		n := node.DeepCopy()
		change(n)
		if !NodeChanged(node, n) {
			t.Errorf("node %s changed: no kick", name)
		}
	}
}

// A deleted pod retries only the waiting pods of its own job.
func TestPodDeletedHint(t *testing.T) {
	pl := &Plugin{mapping: mappingDefaults()}
	pod := func(group string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: group + "-0", Namespace: "ns", Labels: map[string]string{v1alpha1.PodGroupLabel: group}}}
	}
	if h, _ := pl.podDeleted(klog.Background(), pod("a"), pod("b"), nil); h != framework.QueueSkip {
		t.Errorf("a pod of job b deleted retries job a's pod: %v", h)
	}
	if h, _ := pl.podDeleted(klog.Background(), pod("a"), pod("a"), nil); h != framework.Queue {
		t.Errorf("a pod of job a deleted does not retry job a's pod: %v", h)
	}
	if h, _ := pl.podDeleted(klog.Background(), pod("a"), cache.DeletedFinalStateUnknown{Obj: pod("a")}, nil); h != framework.Queue {
		t.Errorf("a tombstone of job a's pod does not retry job a's pod: %v", h)
	}
}

func mappingDefaults() mapping.Config { return mapping.Config{}.WithDefaults() }
