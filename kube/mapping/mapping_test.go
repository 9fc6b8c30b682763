package mapping

import (
	"errors"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

func pod(name string, gpus int64, lbl, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbl, Annotations: ann},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
		}}}},
	}
}

func group(min int32, ann map[string]string) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Annotations: ann}, Spec: v1alpha1.PodGroupSpec{MinMember: min}}
}

func TestJobFromPodGroup(t *testing.T) {
	c := Config{}.WithDefaults()
	ref := topology.A100()
	lbl := map[string]string{v1alpha1.PodGroupLabel: "g"}
	pods := []*v1.Pod{pod("a", 4, lbl, nil), pod("b", 4, lbl, nil)}
	pg := group(2, map[string]string{
		"gpusched.io/model": "gpt2-1.5b", "gpusched.io/iterations": "1000", "gpusched.io/weight": "2",
		"gpusched.io/gpu-type": "a100", "gpusched.io/min-gpu-memory": "40Gi", "gpusched.io/features": `{"user":"u1"}`,
	})
	s, complete, err := c.JobFromPodGroup(pg, pods, ref)
	if err != nil || !complete {
		t.Fatalf("complete=%v err=%v", complete, err)
	}
	j := s.Job
	if j.ID != "podgroup/ns/g" || j.GPUs != 8 || s.Pods != 2 || s.PodGPUs != 4 || j.Plan.Workers() != 8 || j.Weight != 2 ||
		j.GPUType != "a100" || j.MinGPUMemory != 40*(1<<30) || j.Features.User != "u1" || s.Hint != 1000 || j.Features.Numeric[HintFeature] != 1000 {
		t.Fatalf("job %+v spec %+v", j, s)
	}
	// Incomplete: one pod missing, no error.
	if _, complete, err := c.JobFromPodGroup(pg, pods[:1], ref); err != nil || complete {
		t.Fatalf("one pod of two: complete=%v err=%v", complete, err)
	}
	// A label job.
	ann := map[string]string{"gpusched.io/pods": "2", "gpusched.io/step-time": "0.5"}
	jl := map[string]string{"gpusched.io/job": "x"}
	k := JobKey{Namespace: "ns", Name: "x"}
	s, complete, err = c.JobFromPods(k, []*v1.Pod{pod("a", 1, jl, ann), pod("b", 1, jl, ann)}, ref)
	if err != nil || !complete || s.Job.GPUs != 2 || s.Job.StepTime != 0.5 || s.Job.ID != "job/ns/x" {
		t.Fatalf("label job: %+v %v %v", s, complete, err)
	}
}

// Every bad input is an *Error naming the object and the field, wrapping ErrBadJob.
func TestBadJobs(t *testing.T) {
	c := Config{}.WithDefaults()
	ref := topology.A100()
	lbl := map[string]string{v1alpha1.PodGroupLabel: "g"}
	two := []*v1.Pod{pod("a", 1, lbl, nil), pod("b", 1, lbl, nil)}
	for _, tc := range []struct {
		name  string
		pg    *v1alpha1.PodGroup
		pods  []*v1.Pod
		field string
	}{
		{"plan does not match", group(2, map[string]string{"gpusched.io/model": "resnet50", "gpusched.io/plan": `{"dp":4,"tp":1,"pp":1,"micro_batches":1,"global_batch":128}`}), two, "gpusched.io/plan"},
		{"weight not a number", group(2, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/weight": "heavy"}), two, "gpusched.io/weight"},
		{"negative step time", group(2, map[string]string{"gpusched.io/step-time": "-1"}), two, "gpusched.io/step-time"},
		{"NaN iterations", group(2, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/iterations": "NaN"}), two, "gpusched.io/iterations"},
		{"unknown model", group(2, map[string]string{"gpusched.io/model": "nosuchnet"}), two, "gpusched.io/model"},
		{"bad model JSON", group(2, map[string]string{"gpusched.io/model": "{"}), two, "gpusched.io/model"},
		{"plan with unknown field", group(2, map[string]string{"gpusched.io/model": "resnet50", "gpusched.io/plan": `{"dp":2,"tq":1}`}), two, "gpusched.io/plan"},
		{"features not JSON", group(2, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/features": "user=x"}), two, "gpusched.io/features"},
		{"bad memory", group(2, map[string]string{"gpusched.io/step-time": "1", "gpusched.io/min-gpu-memory": "lots"}), two, "gpusched.io/min-gpu-memory"},
		{"pods disagree on GPUs", group(2, map[string]string{"gpusched.io/step-time": "1"}), []*v1.Pod{pod("a", 1, lbl, nil), pod("b", 2, lbl, nil)}, "nvidia.com/gpu"},
		{"only pods without GPUs", group(1, map[string]string{"gpusched.io/step-time": "1"}), []*v1.Pod{pod("b", 0, lbl, nil)}, "minMember"},
		{"more pods than minMember", group(1, map[string]string{"gpusched.io/step-time": "1"}), two, ""},
		{"minMember 0", group(0, map[string]string{"gpusched.io/step-time": "1"}), two, "minMember"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.JobFromPodGroup(tc.pg, tc.pods, ref)
			var me *Error
			if !errors.As(err, &me) || !errors.Is(err, ErrBadJob) {
				t.Fatalf("error %v: want a *mapping.Error wrapping ErrBadJob", err)
			}
			if !strings.Contains(me.Field, tc.field) || me.Object == "" {
				t.Fatalf("error %v names field %q object %q, want %q", err, me.Field, me.Object, tc.field)
			}
		})
	}
	// A PodGroup without model or step time gets the default step time (or is refused when
	// the default is negative); a launcher pod without GPUs is not a worker.
	if s, complete, err := c.JobFromPodGroup(group(2, nil), two, ref); err != nil || !complete || s.Job.StepTime != 1 {
		t.Fatalf("no annotations: %+v %v %v", s.Job, complete, err)
	}
	if _, _, err := (Config{DefaultStepTime: -1}).WithDefaults().JobFromPodGroup(group(2, nil), two, ref); !errors.Is(err, ErrBadJob) {
		t.Fatalf("no annotations with the default refused: %v", err)
	}
	if s, _, err := c.JobFromPodGroup(group(2, map[string]string{"gpusched.io/queue": "team-a"}), two, ref); err != nil || s.Job.Features.Categorical["gpusched.io/queue"] != "team-a" {
		t.Fatalf("queue annotation: %+v %v", s.Job.Features, err)
	}
	withLauncher := []*v1.Pod{pod("a", 1, lbl, nil), pod("b", 1, lbl, nil), pod("launcher", 0, lbl, nil)}
	if s, complete, err := c.JobFromPodGroup(group(3, nil), withLauncher, ref); err != nil || !complete || s.Pods != 2 || s.Job.GPUs != 2 {
		t.Fatalf("MPI job with a launcher: %+v %v %v", s, complete, err)
	}
	if s, complete, err := c.JobFromPodGroup(group(3, map[string]string{"gpusched.io/pods": "2"}), withLauncher[:2], ref); err != nil || !complete || s.Pods != 2 {
		t.Fatalf("MPI job before its launcher, workers named: %+v %v %v", s, complete, err)
	}
	// Label pods that disagree.
	jl := map[string]string{"gpusched.io/job": "x"}
	_, _, err := c.JobFromPods(JobKey{Namespace: "ns", Name: "x"}, []*v1.Pod{
		pod("a", 1, jl, map[string]string{"gpusched.io/pods": "2", "gpusched.io/step-time": "1"}),
		pod("b", 1, jl, map[string]string{"gpusched.io/pods": "2", "gpusched.io/step-time": "2"}),
	}, ref)
	if !errors.Is(err, ErrBadJob) || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("disagreeing pods: %v", err)
	}
	if _, _, err := c.JobFromPods(JobKey{Namespace: "ns", Name: "x"}, []*v1.Pod{pod("a", 1, jl, map[string]string{"gpusched.io/step-time": "1"})}, ref); !errors.Is(err, ErrBadJob) {
		t.Fatalf("label job without a pod count: %v", err)
	}
}

func node(name string, gpus int64, lbl map[string]string, ready, cordoned bool) *v1.Node {
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
		Spec:       v1.NodeSpec{Unschedulable: cordoned},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: st}},
		},
	}
}

func TestCluster(t *testing.T) {
	c := Config{}.WithDefaults()
	a100 := map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "gpusched.io/rack": "r1"}
	h100 := map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	cl, unusable, problems, err := c.Cluster([]*v1.Node{
		node("n2", 8, h100, true, false),
		node("n1", 8, a100, true, false),
		node("cpu", 0, nil, true, false),
		node("n3", 4, a100, false, false),
		node("n4", 8, a100, true, true),
		node("weird", 8, map[string]string{"nvidia.com/gpu.product": "Voodoo-5"}, true, false),
		node("x-h200", 8, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}, true, false),
		node("x-b200", 8, map[string]string{"nvidia.com/gpu.product": "NVIDIA-B200"}, true, false),
		node("x-l40s", 8, map[string]string{"nvidia.com/gpu.product": "NVIDIA-L40S"}, true, false),
		node("x-v100", 8, map[string]string{"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB"}, true, false),
		node("x-unlabelled", 8, nil, true, false),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Unknown and unlabelled GPU types are scheduled as generic GPUs, with a warning each.
	if cl.NumServers() != 10 || cl.NumGPUs() != 76 {
		t.Fatalf("%d servers, %d GPUs", cl.NumServers(), cl.NumGPUs())
	}
	if cl.Server(0).ID != "n1" || cl.Server(1).ID != "n2" || !cl.Server(1).GPU.Is("h100") || cl.Server(1).Rack != "none" || cl.Server(0).Rack != "r1" {
		t.Fatalf("servers %+v %+v", cl.Server(0), cl.Server(1))
	}
	if strings.Join(unusable, ",") != "n3,n4" {
		t.Fatalf("unusable %v", unusable)
	}
	if len(problems) != 2 || !errors.Is(problems[0], ErrUnknownGPUType) || !strings.Contains(problems[0].Error(), "weird") ||
		!errors.Is(problems[1], ErrUnknownGPUType) || !strings.Contains(problems[1].Error(), "missing") {
		t.Fatalf("problems %v", problems)
	}
	for i, want := range map[int]string{4: "Voodoo-5", 5: "B200-180GB", 6: "H200-SXM-141GB", 7: "L40S-48GB", 8: "generic", 9: "V100-SXM2-32GB"} {
		if cl.Server(i).GPU.Model != want {
			t.Errorf("server %d (%s): GPU %q, want %q", i, cl.Server(i).ID, cl.Server(i).GPU.Model, want)
		}
	}
	if cl, _, _, err := c.Cluster([]*v1.Node{node("cpu", 0, nil, true, false)}); cl != nil || err != nil {
		t.Fatalf("no GPU node: %v %v", cl, err)
	}
}

func TestUsableTaints(t *testing.T) {
	c := Config{}.WithDefaults()
	lbl := map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
	tainted := func(name string, taints ...v1.Taint) *v1.Node {
		n := node(name, 8, lbl, true, false)
		n.Spec.Taints = taints
		return n
	}
	cases := []struct {
		n    *v1.Node
		want bool
	}{
		{tainted("plain"), true},
		{tainted("gpu-taint", v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}), true},
		{tainted("prefer", v1.Taint{Key: "maintenance", Effect: v1.TaintEffectPreferNoSchedule}), true},
		{tainted("noschedule", v1.Taint{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}), false},
		{tainted("noexecute", v1.Taint{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute}), false},
		{tainted("mixed", v1.Taint{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule}, v1.Taint{Key: "x", Effect: v1.TaintEffectNoExecute}), false},
		{node("notready", 8, lbl, false, false), false},
		{node("cordoned", 8, lbl, true, true), false},
	}
	for _, tc := range cases {
		if got := c.Usable(tc.n); got != tc.want {
			t.Errorf("node %s: Usable %v, want %v", tc.n.Name, got, tc.want)
		}
	}
	// A configuration that tolerates no taint refuses the GPU taint too.
	if (Config{TolerateTaints: []string{}}).WithDefaults().Usable(cases[1].n) {
		t.Errorf("a node with the GPU taint is usable though no taint is tolerated")
	}
	_, unusable, _, err := c.Cluster([]*v1.Node{cases[0].n, cases[3].n, cases[4].n})
	if err != nil || strings.Join(unusable, ",") != "noexecute,noschedule" {
		t.Fatalf("unusable %v, %v", unusable, err)
	}
}

// FuzzJob feeds arbitrary annotations to the mapping: it must return a job that validates, or
// an *Error wrapping ErrBadJob, and never panic.
func FuzzJob(f *testing.F) {
	f.Add("resnet50", `{"dp":2,"tp":1,"pp":1,"micro_batches":1,"global_batch":64}`, "", "100", "1", `{"user":"u"}`, "40Gi", int64(1), int32(2))
	f.Add(`{"zoo":"bert-large"}`, "", "", "", "", "", "", int64(2), int32(2))
	f.Add("", "", "0.25", "1e9", "0.5", "", "", int64(8), int32(1))
	f.Add("gpt2-1.5b", `{"dp":1}`, "x", "NaN", "-1", "{", "-3", int64(0), int32(0))
	c := Config{}.WithDefaults()
	f.Fuzz(func(t *testing.T, model, plan, step, iters, weight, features, mem string, gpus int64, pods int32) {
		if pods > 64 || gpus > 64 || gpus < -1 {
			return
		}
		ann := map[string]string{}
		for k, v := range map[string]string{AnnModel: model, AnnPlan: plan, AnnStepTime: step, AnnIterations: iters, AnnWeight: weight, AnnFeatures: features, AnnMinGPUMemory: mem} {
			if v != "" {
				ann[c.Key(k)] = v
			}
		}
		lbl := map[string]string{v1alpha1.PodGroupLabel: "g"}
		var ps []*v1.Pod
		for range max(pods, 0) {
			ps = append(ps, pod("p", max(gpus, 0), lbl, nil))
		}
		s, complete, err := c.JobFromPodGroup(group(pods, ann), ps, topology.A100())
		if err != nil {
			if !errors.Is(err, ErrBadJob) {
				t.Fatalf("error %v does not wrap ErrBadJob", err)
			}
			return
		}
		if complete {
			if err := s.Job.Validate(nil); err != nil {
				t.Fatalf("mapped job does not validate: %v", err)
			}
			if s.Job.GPUs != s.Pods*s.PodGPUs {
				t.Fatalf("GPUs %d != %d pods x %d", s.Job.GPUs, s.Pods, s.PodGPUs)
			}
		}
		_ = gpusched.JobID("")
	})
}
