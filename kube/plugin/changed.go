package plugin

import (
	"github.com/gpusched/gpusched/kube/mapping"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// PodChanged tells whether an update of a pod changes what the planner reads of it: its node,
// phase, deletion, labels, annotations, scheduler or CPU and memory requests. Updates of its
// conditions alone (the pending reasons the planner writes) do not. Objects of other types
// count as changed.
func PodChanged(old, new any) bool {
	a, ok1 := old.(*v1.Pod)
	b, ok2 := new.(*v1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	if a.Spec.NodeName != b.Spec.NodeName || a.Status.Phase != b.Status.Phase ||
		(a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) || a.Spec.SchedulerName != b.Spec.SchedulerName ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Annotations, b.Annotations) {
		return true
	}
	ac, am := mapping.PodRequests(a)
	bc, bm := mapping.PodRequests(b)
	return ac != bc || am != bm
}

// PodGroupChanged tells whether an update of a PodGroup changes what the planner reads of
// it: its spec, labels or annotations. Updates of its status alone (the planner's own) do not.
func PodGroupChanged(old, new any) bool {
	a, ok1 := old.(*v1alpha1.PodGroup)
	b, ok2 := new.(*v1alpha1.PodGroup)
	if !ok1 || !ok2 {
		return true
	}
	return a.Generation != b.Generation || !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

// NodeChanged tells whether an update of a node changes what the planner reads of it: its
// labels, taints, cordon, allocatable resources or readiness. Heartbeats and other
// conditions do not.
func NodeChanged(old, new any) bool {
	a, ok1 := old.(*v1.Node)
	b, ok2 := new.(*v1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return a.Spec.Unschedulable != b.Spec.Unschedulable || ready(a) != ready(b) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable)
}

func ready(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}
