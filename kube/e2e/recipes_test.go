package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
)

// recipe is what a file of kube/recipes must make: a job of workers pods of gpus GPUs each,
// and aux pods without GPUs.
type recipe struct {
	file                string
	workers, gpus, aux  int
	evictionsNotFailure bool // its Job templates ignore DisruptionTarget (podFailurePolicy)
}

var recipes = []recipe{
	{file: "job.yaml", workers: 4, gpus: 8, evictionsNotFailure: true},
	{file: "jobset.yaml", workers: 4, gpus: 4, evictionsNotFailure: true},
	{file: "pytorchjob.yaml", workers: 4, gpus: 8},
	{file: "mpijob.yaml", workers: 2, gpus: 8, aux: 1},
}

// checkRecipes checks kube/recipes against a real API server with the PodGroup CRD: every
// file holds a PodGroup and a workload; the PodGroup and the pod templates pass the API
// server's validation (server-side dry run; a batch/v1 Job as a whole, podFailurePolicy
// included); the batch Jobs (and a JobSet's Job templates) ignore evictions
// (podFailurePolicy Ignore on DisruptionTarget, restartPolicy Never); and the pods the
// workload's controller would make (the templates times their replicas) are mapped by
// package mapping to one complete job of the PodGroup with the workers and GPUs the recipe
// says, its pods without GPUs not workers.
func checkRecipes(t *testing.T, cfg *rest.Config) {
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	const rns = "recipes"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "recipes", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, r := range recipes {
		if !slices.Contains(names, r.file) {
			t.Errorf("kube/recipes has no %s", r.file)
		}
	}
	if len(names) != len(recipes) {
		t.Errorf("kube/recipes holds %v; the test knows %d recipes", names, len(recipes))
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	ref, err := topology.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recipes {
		t.Run(strings.TrimSuffix(r.file, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "recipes", r.file))
			if err != nil {
				t.Fatal(err)
			}
			var pg *v1alpha1.PodGroup
			var work *unstructured.Unstructured
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				u := &unstructured.Unstructured{}
				if err := yaml.UnmarshalStrict(doc, &u.Object); err != nil {
					t.Fatal(err)
				}
				if len(u.Object) == 0 {
					continue
				}
				u.SetNamespace(rns)
				if u.GetKind() == "PodGroup" {
					pg = &v1alpha1.PodGroup{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, pg, true); err != nil {
						t.Fatalf("PodGroup: %v", err)
					}
					if _, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("podgroups")).Namespace(rns).Create(ctx, u, dry); err != nil {
						t.Fatalf("PodGroup %s rejected by the API server: %v", u.GetName(), err)
					}
					continue
				}
				work = u
			}
			if pg == nil || work == nil {
				t.Fatalf("%s: want a PodGroup and a workload", r.file)
			}
			pods, jobs := podsOf(t, work)
			if r.evictionsNotFailure {
				if len(jobs) == 0 {
					t.Fatalf("%s: no Job template", r.file)
				}
				for _, j := range jobs {
					if !ignoresEvictions(j) {
						t.Errorf("%s: a Job template does not ignore evictions (podFailurePolicy: Ignore on DisruptionTarget, restartPolicy Never): preemptions would count against backoffLimit", r.file)
					}
				}
			}
			if work.GetKind() == "Job" {
				if _, err := dyn.Resource(schemaJobs).Namespace(rns).Create(ctx, work, dry); err != nil {
					t.Fatalf("Job rejected by the API server: %v", err)
				}
			}
			// Each distinct template, as a pod, passes the API server's validation.
			seen := map[string]bool{}
			for _, p := range pods {
				key := fmt.Sprint(p.Spec)
				if seen[key] {
					continue
				}
				seen[key] = true
				q := p.DeepCopy()
				if _, err := cs.CoreV1().Pods(rns).Create(ctx, q, dry); err != nil {
					t.Fatalf("pod %s rejected by the API server: %v", p.Name, err)
				}
			}
			c := mapping.Config{}.WithDefaults()
			aux := 0
			for _, p := range pods {
				if k, ok := c.KeyOf(p); !ok || !k.PodGroup || k.Name != pg.Name {
					t.Errorf("pod %s is not in PodGroup %s (%v)", p.Name, pg.Name, k)
				}
				if p.Spec.SchedulerName != "gpusched" {
					t.Errorf("pod %s: schedulerName %q", p.Name, p.Spec.SchedulerName)
				}
				if g, _ := c.PodGPUs(p); g == 0 {
					aux++
				}
			}
			s, complete, err := c.JobFromPodGroup(pg, pods, ref)
			if err != nil || !complete {
				t.Fatalf("the mapping refuses the recipe's pods: complete %v, %v", complete, err)
			}
			if s.Pods != r.workers || s.PodGPUs != r.gpus || aux != r.aux {
				t.Fatalf("mapped to %d workers of %d GPUs and %d pods without GPUs, want %d of %d and %d", s.Pods, s.PodGPUs, aux, r.workers, r.gpus, r.aux)
			}
			t.Logf("%s %s: %d pods, a job of %d GPUs (%d workers of %d) and %d pods without GPUs", work.GetKind(), work.GetName(), len(pods), s.Job.GPUs, s.Pods, s.PodGPUs, aux)
		})
	}
}

var schemaJobs = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// podsOf returns the pods a workload's controller makes (every pod template times its
// replicas) and its batch/v1 Job specs (a Job's own, a JobSet's templates).
func podsOf(t *testing.T, u *unstructured.Unstructured) ([]*v1.Pod, []map[string]any) {
	type tmpl struct {
		obj  map[string]any
		n    int64
		role string
	}
	var ts []tmpl
	var jobs []map[string]any
	num := func(m map[string]any, f string, def int64) int64 {
		switch v := m[f].(type) { // YAML numbers decode as float64
		case float64:
			return int64(v)
		case int64:
			return v
		}
		return def
	}
	switch u.GetKind() {
	case "Job":
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		jobs = append(jobs, spec)
		tp, _, _ := unstructured.NestedMap(spec, "template")
		ts = append(ts, tmpl{tp, num(spec, "parallelism", 1), "job"})
	case "JobSet":
		rjs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
		for _, rj := range rjs {
			rj := rj.(map[string]any)
			spec, _, _ := unstructured.NestedMap(rj, "template", "spec")
			jobs = append(jobs, spec)
			tp, _, _ := unstructured.NestedMap(spec, "template")
			ts = append(ts, tmpl{tp, num(rj, "replicas", 1) * num(spec, "parallelism", 1), rj["name"].(string)})
		}
	case "PyTorchJob", "MPIJob":
		field := map[string]string{"PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}[u.GetKind()]
		specs, _, _ := unstructured.NestedMap(u.Object, "spec", field)
		roles := make([]string, 0, len(specs))
		for role := range specs {
			roles = append(roles, role)
		}
		slices.Sort(roles)
		for _, role := range roles {
			rs := specs[role].(map[string]any)
			tp, _, _ := unstructured.NestedMap(rs, "template")
			ts = append(ts, tmpl{tp, num(rs, "replicas", 1), strings.ToLower(role)})
		}
	default:
		t.Fatalf("unknown workload kind %s", u.GetKind())
	}
	var pods []*v1.Pod
	for _, tp := range ts {
		var pt v1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(tp.obj, &pt, true); err != nil {
			t.Fatalf("%s %s: pod template %s: %v", u.GetKind(), u.GetName(), tp.role, err)
		}
		for i := range tp.n {
			p := &v1.Pod{ObjectMeta: *pt.ObjectMeta.DeepCopy(), Spec: *pt.Spec.DeepCopy()}
			p.Name, p.Namespace = fmt.Sprintf("%s-%s-%d", u.GetName(), tp.role, i), u.GetNamespace()
			if p.Spec.RestartPolicy == "" {
				p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			}
			pods = append(pods, p)
		}
	}
	return pods, jobs
}

// ignoresEvictions tells whether a batch/v1 Job spec ignores evicted pods: a
// podFailurePolicy rule Ignore on the condition DisruptionTarget, with restartPolicy Never.
func ignoresEvictions(spec map[string]any) bool {
	rp, _, _ := unstructured.NestedString(spec, "template", "spec", "restartPolicy")
	rules, _, _ := unstructured.NestedSlice(spec, "podFailurePolicy", "rules")
	for _, r := range rules {
		r := r.(map[string]any)
		if r["action"] != "Ignore" {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(r, "onPodConditions")
		for _, c := range conds {
			if c.(map[string]any)["type"] == "DisruptionTarget" {
				return rp == "Never"
			}
		}
	}
	return false
}

// Missing reference data fails the end-to-end test in CI (CI=true, or a ../shared/data
// without the file) and skips it elsewhere: a CI run that skipped it would still say ok.
func TestMissingDataFailsInCI(t *testing.T) {
	type tc struct {
		env    string
		shared bool
	}
	for c, fail := range map[tc]bool{{"true", false}: true, {"TRUE", false}: true, {"1", false}: true, {"", true}: true, {"true", true}: true,
		{"", false}: false, {"false", false}: false, {"0", false}: false} {
		got, why := missingData("philly/philly.csv", func(k string) string {
			if k == "CI" {
				return c.env
			}
			return ""
		}, c.shared)
		if got != fail || !strings.Contains(why, "philly/philly.csv") {
			t.Errorf("CI=%q, ../shared/data exists %v: fail %v (%s), want %v", c.env, c.shared, got, why, fail)
		}
	}
}
