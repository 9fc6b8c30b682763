package mapping_test

import (
	"fmt"

	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// A PodGroup of two worker pods with four GPUs each, training GPT-2 with a hint of its
// iterations, becomes one 8-GPU job; a bad annotation names the object and the field.
func Example() {
	c := mapping.Config{}.WithDefaults()
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "gpt", Namespace: "team-a", Annotations: map[string]string{
			"gpusched.io/model": "gpt2-1.5b", "gpusched.io/iterations": "20000",
		}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2},
	}
	var pods []*v1.Pod
	for _, name := range []string{"gpt-0", "gpt-1"} {
		pods = append(pods, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{v1alpha1.PodGroupLabel: "gpt"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
			}}}},
		})
	}
	s, complete, err := c.JobFromPodGroup(pg, pods, topology.A100())
	fmt.Println(s.Job.ID, s.Job.GPUs, "GPUs in", s.Pods, "pods, plan", s.Job.Plan, complete, err)

	pg.Annotations["gpusched.io/weight"] = "heavy"
	_, _, err = c.JobFromPodGroup(pg, pods, topology.A100())
	fmt.Println(err)
	// Output:
	// podgroup/team-a/gpt 8 GPUs in 2 pods, plan dp=8 tp=1 pp=1 mb=1 batch=16 true <nil>
	// PodGroup team-a/gpt: annotation gpusched.io/weight: "heavy": need a finite number > 0
}
