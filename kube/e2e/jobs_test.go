package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// shipped holds TestShipped's clients (admin: the test's own part) and the helpers its cases
// share.
type shipped struct {
	t   *testing.T
	ctx context.Context
	cfg *rest.Config
	cs  kubernetes.Interface
	pgc pgclient.Interface
}

// group creates a PodGroup of pods pods of podGPUs GPUs each in namespace space, with the
// annotations ann and, when cpu is not empty, that CPU request on each pod.
func (s *shipped) group(space, name string, pods, podGPUs int, cpu string, ann map[string]string) {
	s.t.Helper()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: space, Annotations: ann}, Spec: v1alpha1.PodGroupSpec{MinMember: int32(pods)}}
	if _, err := s.pgc.SchedulingV1alpha1().PodGroups(space).Create(s.ctx, pg, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	s.pods(space, name, pods, podGPUs, cpu)
}

// pods creates the pods of PodGroup name (as its controller would, again after an eviction).
func (s *shipped) pods(space, name string, pods, podGPUs int, cpu string) {
	s.t.Helper()
	for i := range pods {
		p := gpuPod(fmt.Sprintf("%s-%d", name, i), map[string]string{v1alpha1.PodGroupLabel: name, "app": name}, nil, podGPUs)
		p.Namespace = space
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		}
		if _, err := s.cs.CoreV1().Pods(space).Create(s.ctx, p, metav1.CreateOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *shipped) pod(space, name string) *v1.Pod {
	s.t.Helper()
	p, err := s.cs.CoreV1().Pods(space).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// bound tells whether every pod of the namespace with the PodGroup label name is bound
// (and there is at least one).
func (s *shipped) bound(space, name string) func() bool {
	return func() bool {
		ps := s.groupPods(space, name)
		for _, p := range ps {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return len(ps) > 0
	}
}

// groupPods lists the pods of PodGroup name that are not being deleted.
func (s *shipped) groupPods(space, name string) []v1.Pod {
	ps, err := s.cs.CoreV1().Pods(space).List(s.ctx, metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel + "=" + name})
	if err != nil {
		return nil
	}
	var out []v1.Pod
	for _, p := range ps.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// event tells whether an event on obj (by name) in the namespace says phrase in its reason
// or note.
func (s *shipped) event(space, obj, phrase string) func() bool {
	return func() bool {
		evs, err := s.cs.EventsV1().Events(space).List(s.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Name == obj && strings.Contains(ev.Reason+": "+ev.Note, phrase) {
				return true
			}
		}
		return false
	}
}

// phase tells whether PodGroup name's status has the phase and running pods given.
func (s *shipped) phase(space, name string, phase v1alpha1.PodGroupPhase, running int32) func() bool {
	return func() bool {
		pg, err := s.pgc.SchedulingV1alpha1().PodGroups(space).Get(s.ctx, name, metav1.GetOptions{})
		return err == nil && pg.Status.Phase == phase && pg.Status.Running == running
	}
}

// succeed marks the pods of PodGroup name Succeeded, as their kubelets would when the job
// ends.
func (s *shipped) succeed(space, name string) {
	s.t.Helper()
	for _, p := range s.groupPods(space, name) {
		if _, err := s.cs.CoreV1().Pods(space).Patch(s.ctx, p.Name, types.MergePatchType, []byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// clear deletes every PodGroup and pod of the namespace (at once: no kubelet ends a pod
// here) and waits until the pods are gone.
func (s *shipped) clear(space string) {
	s.t.Helper()
	zero := int64(0)
	if err := s.pgc.SchedulingV1alpha1().PodGroups(space).DeleteCollection(s.ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		s.t.Fatal(err)
	}
	if err := s.cs.CoreV1().Pods(space).DeleteCollection(s.ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		s.t.Fatal(err)
	}
	waitFor(s.t, 30*time.Second, "the pods of namespace "+space+" to be gone", func() bool {
		ps, err := s.cs.CoreV1().Pods(space).List(s.ctx, metav1.ListOptions{})
		return err == nil && len(ps.Items) == 0
	})
}

// dump logs, when the test has failed, what the namespaces hold: PodGroups and their
// status, pods (node, phase, conditions), events.
func (s *shipped) dump(spaces ...string) {
	if !s.t.Failed() {
		return
	}
	for _, space := range spaces {
		if pgs, err := s.pgc.SchedulingV1alpha1().PodGroups(space).List(s.ctx, metav1.ListOptions{}); err == nil {
			for _, pg := range pgs.Items {
				s.t.Logf("PodGroup %s/%s: %s, running %d", space, pg.Name, pg.Status.Phase, pg.Status.Running)
			}
		}
		if ps, err := s.cs.CoreV1().Pods(space).List(s.ctx, metav1.ListOptions{}); err == nil {
			for _, p := range ps.Items {
				var conds []string
				for _, c := range p.Status.Conditions {
					conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
				}
				s.t.Logf("pod %s/%s: node %q, %s, deleting %v, %s", space, p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, strings.Join(conds, "; "))
			}
		}
		if evs, err := s.cs.EventsV1().Events(space).List(s.ctx, metav1.ListOptions{}); err == nil {
			for _, ev := range evs.Items {
				s.t.Logf("event %s/%s %s: %s: %s", space, ev.Regarding.Name, ev.Type, ev.Reason, ev.Note)
			}
		}
	}
}

// kubelets plays the kubelets' part in pod deletion until ctx ends: a bound pod being deleted
// (an eviction: the API server set its DisruptionTarget condition and a grace period) has its
// containers stopped, so it ends Failed, and is then removed (a delete with grace 0). Without
// them an evicted pod would stay Terminating for ever, and a Job controller would never see
// it fail.
func (s *shipped) kubelets(ctx context.Context, spaces ...string) {
	zero := int64(0)
	go func() {
		for ctx.Err() == nil {
			for _, space := range spaces {
				ps, err := s.cs.CoreV1().Pods(space).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for i := range ps.Items {
					p := &ps.Items[i]
					if p.DeletionTimestamp == nil {
						continue
					}
					if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
						p.Status.Phase = v1.PodFailed
						if _, err := s.cs.CoreV1().Pods(space).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
							continue
						}
					}
					uid := p.UID
					_ = s.cs.CoreV1().Pods(space).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// jobController runs Kubernetes' batch/v1 Job controller (kube-controller-manager's, of
// k8s.io/kubernetes) in process until ctx ends, with the delay before it replaces a failed
// pod cut from 10 s to 1 s (a variable the controller exports for tests, as Kubernetes' own
// integration tests set it).
func (s *shipped) jobController(ctx context.Context) {
	s.t.Helper()
	jobcontroller.DefaultJobPodFailureBackOff = time.Second
	cs := kubernetes.NewForConfigOrDie(rest.CopyConfig(s.cfg))
	inf := informers.NewSharedInformerFactory(cs, 0)
	jc, err := jobcontroller.NewController(ctx, inf.Core().V1().Pods(), inf.Batch().V1().Jobs(), cs)
	if err != nil {
		s.t.Fatalf("the Job controller: %v", err)
	}
	inf.Start(ctx.Done())
	go jc.Run(ctx, 2)
}

// recipeJob reads kube/recipes/job.yaml: its PodGroup and its batch/v1 Job.
func recipeJob(t *testing.T) (*v1alpha1.PodGroup, *batchv1.Job) {
	data, err := os.ReadFile(filepath.Join("..", "recipes", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pg *v1alpha1.PodGroup
	var job *batchv1.Job
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "PodGroup":
			pg = &v1alpha1.PodGroup{}
			err = yaml.UnmarshalStrict(doc, pg)
		case "Job":
			job = &batchv1.Job{}
			err = yaml.UnmarshalStrict(doc, job)
		}
		if err != nil {
			t.Fatalf("recipes/job.yaml: %v", err)
		}
	}
	if pg == nil || job == nil {
		t.Fatal("recipes/job.yaml: want a PodGroup and a Job")
	}
	return pg, job
}

// preemptJobs runs the batch/v1 Job of kube/recipes/job.yaml under the real Job controller
// and has gpusched preempt it: the Job is not failed (its podFailurePolicy ignores the
// evictions' DisruptionTarget), its pods come back and bind once the GPUs are free again, and
// it completes. The same Job without the podFailurePolicy counts every evicted pod against
// backoffLimit: with backoffLimit 1 its two evicted pods fail it (BackoffLimitExceeded; the
// recipe's four workers and backoffLimit 4 would fail at the second preemption). The recipe's
// Job is submitted as it is but for its size, two workers of 8 GPUs instead of four, so that it
// and its copy without the policy fill the 32 GPUs here. The cluster must be empty.
func (s *shipped) preemptJobs(space string) {
	t := s.t
	defer s.dump(space)
	pg, job := recipeJob(t)
	const workers = 2
	submit := func(name string, policy bool, backoff int32) {
		g, j := pg.DeepCopy(), job.DeepCopy()
		g.Name, g.Namespace, g.Spec.MinMember = name, space, workers
		j.Name, j.Namespace = name, space
		j.Spec.Parallelism, j.Spec.Completions = ptr(int32(workers)), ptr(int32(workers))
		j.Spec.Template.Labels[v1alpha1.PodGroupLabel] = name
		if !policy {
			j.Spec.PodFailurePolicy, j.Spec.BackoffLimit = nil, ptr(backoff)
		}
		if _, err := s.pgc.SchedulingV1alpha1().PodGroups(space).Create(s.ctx, g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.cs.BatchV1().Jobs(space).Create(s.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Job %s: %v", name, err)
		}
	}
	submit("bert", true, 0)
	submit("bert-nopolicy", false, 1)
	waitFor(t, 60*time.Second, "the recipe's Job to run", s.bound(space, "bert"))
	waitFor(t, 60*time.Second, "the Job without podFailurePolicy to run", s.bound(space, "bert-nopolicy"))
	first := map[types.UID]bool{}
	for _, p := range s.groupPods(space, "bert") {
		first[p.UID] = true
	}
	// A job of 32 GPUs and a few iterations arrives: A-SRPT preempts both Jobs for it.
	s.group(space, "urgent", 4, 8, "", map[string]string{"gpusched.io/iterations": "10"})
	waitFor(t, 60*time.Second, "the short job to bind", s.bound(space, "urgent"))
	for _, name := range []string{"bert", "bert-nopolicy"} {
		if !s.event(space, name, "Preempted")() {
			t.Fatalf("the short job runs, but %s was not preempted", name)
		}
	}
	jobOf := func(name string) *batchv1.Job {
		j, err := s.cs.BatchV1().Jobs(space).Get(s.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	cond := func(j *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
		for i := range j.Status.Conditions {
			if c := &j.Status.Conditions[i]; c.Type == typ && c.Status == v1.ConditionTrue {
				return c
			}
		}
		return nil
	}
	waitFor(t, 60*time.Second, "the Job without podFailurePolicy to fail", func() bool { return cond(jobOf("bert-nopolicy"), batchv1.JobFailed) != nil })
	np := jobOf("bert-nopolicy")
	t.Logf("without podFailurePolicy: %d evicted pods counted as failed (backoffLimit %d): Job %s: %s", np.Status.Failed, *np.Spec.BackoffLimit, cond(np, batchv1.JobFailed).Reason, cond(np, batchv1.JobFailed).Message)
	if np.Status.Failed != workers || cond(np, batchv1.JobFailed).Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("the Job without podFailurePolicy: %d failed, condition %+v; want %d failed, BackoffLimitExceeded", np.Status.Failed, cond(np, batchv1.JobFailed), workers)
	}
	// The recipe's Job: the controller replaced the evicted pods (the failures ignored);
	// the replacements wait for the GPUs.
	waitFor(t, 60*time.Second, "the recipe's Job to replace its evicted pods", func() bool {
		n := 0
		for _, p := range s.groupPods(space, "bert") {
			if !first[p.UID] {
				n++
			}
		}
		return n == workers
	})
	if j := jobOf("bert"); j.Status.Failed != 0 || cond(j, batchv1.JobFailed) != nil {
		t.Fatalf("the recipe's Job counted its evictions: %d failed, conditions %+v", j.Status.Failed, j.Status.Conditions)
	}
	// The short job ends; the recipe's Job runs again, on new pods, and completes.
	s.succeed(space, "urgent")
	waitFor(t, 60*time.Second, "the recipe's Job to run again", s.bound(space, "bert"))
	for _, p := range s.groupPods(space, "bert") {
		if first[p.UID] {
			t.Fatalf("pod %s of the recipe's Job was never evicted", p.Name)
		}
	}
	s.succeed(space, "bert")
	waitFor(t, 60*time.Second, "the recipe's Job to complete", func() bool { return cond(jobOf("bert"), batchv1.JobComplete) != nil })
	j := jobOf("bert")
	if j.Status.Failed != 0 || j.Status.Succeeded != workers {
		t.Fatalf("the recipe's Job completed with %d failed, %d succeeded; want 0 and %d", j.Status.Failed, j.Status.Succeeded, workers)
	}
	t.Logf("the recipe's Job (podFailurePolicy Ignore on DisruptionTarget): preempted, its pods replaced and bound again, completed with 0 failed of backoffLimit %d", *j.Spec.BackoffLimit)
	for _, name := range []string{"bert", "bert-nopolicy"} {
		if err := s.cs.BatchV1().Jobs(space).Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// queues runs two teams' queues (team-a and team-b, 16 GPUs guaranteed each of the 32 here)
// end to end: team-a's two jobs of 16 GPUs both run (team-a borrows team-b's idle quota);
// team-b's job arrives, longer than team-a's (so that A-SRPT alone would not preempt for
// it): the queues reclaim team-b's guarantee from the most recently started of team-a's jobs
// (Preempted), team-b's job runs, team-a's other job keeps running; the preempted job's pods,
// made again, wait (PodGroup Pending, the pods' pending reason) until team-b's job ends, then
// run again. The cluster must be empty.
func (s *shipped) queues() {
	t := s.t
	defer s.dump("team-a", "team-b")
	for _, space := range []string{"team-a", "team-b"} {
		if _, err := s.cs.CoreV1().Namespaces().Create(s.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	long := func(n int) map[string]string { return map[string]string{"gpusched.io/iterations": fmt.Sprint(n)} }
	s.group("team-a", "qa1", 2, 8, "", long(100000))
	waitFor(t, 60*time.Second, "team-a's first job to run", s.bound("team-a", "qa1"))
	s.group("team-a", "qa2", 2, 8, "", long(100000))
	waitFor(t, 60*time.Second, "team-a's second job to run on team-b's idle quota", s.bound("team-a", "qa2"))
	waitFor(t, 30*time.Second, "team-a's PodGroups Running", func() bool {
		return s.phase("team-a", "qa1", v1alpha1.PodGroupRunning, 2)() && s.phase("team-a", "qa2", v1alpha1.PodGroupRunning, 2)()
	})
	s.group("team-b", "qb", 2, 8, "", long(200000))
	waitFor(t, 60*time.Second, "team-b's job to run on its reclaimed quota", s.bound("team-b", "qb"))
	waitFor(t, 30*time.Second, "a Preempted event on team-a's second job", s.event("team-a", "qa2", "Preempted"))
	waitFor(t, 30*time.Second, "team-b's PodGroup Running", s.phase("team-b", "qb", v1alpha1.PodGroupRunning, 2))
	if s.event("team-a", "qa1", "Preempted")() || !s.bound("team-a", "qa1")() {
		t.Fatalf("team-a's first job, within its guarantee, was preempted")
	}
	// qa2's pods, made again (as its controller would), wait: team-a runs its guarantee.
	waitFor(t, 30*time.Second, "qa2's evicted pods to be gone", func() bool { return len(s.groupPods("team-a", "qa2")) == 0 })
	s.pods("team-a", "qa2", 2, 8, "")
	waitFor(t, 30*time.Second, "qa2 to wait: PodGroup Pending and the pods' reason", func() bool {
		if !s.phase("team-a", "qa2", v1alpha1.PodGroupPending, 0)() {
			return false
		}
		for _, c := range s.pod("team-a", "qa2-0").Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == "GpuschedWaiting" {
				return true
			}
		}
		return false
	})
	if s.bound("team-a", "qa2")() {
		t.Fatalf("qa2 was bound beyond team-a's share while team-b runs its guarantee")
	}
	s.succeed("team-b", "qb")
	waitFor(t, 60*time.Second, "qa2 to run again once team-b's job ended", s.bound("team-a", "qa2"))
	t.Logf("queues: team-a borrowed team-b's idle quota, gave it back when team-b's job arrived (qa2 preempted), and borrowed it again once that job ended")
	s.intraQueue()
}

// intraQueue follows queues: qa2 ends, team-b's job qb2 (shorter than team-a's qa1) takes
// team-b's guarantee, so that both queues run their share. Then team-a's short job qa3
// arrives: A-SRPT stops the lowest-priority running job, qa1, of qa3's own queue, so the queues
// let qa3 preempt it (Preempted, its GPUs going to qa3), and qb2 keeps running.
func (s *shipped) intraQueue() {
	t := s.t
	s.succeed("team-a", "qa2")
	s.group("team-b", "qb2", 2, 8, "", map[string]string{"gpusched.io/iterations": "50000"})
	waitFor(t, 60*time.Second, "team-b's second job to run on its guarantee", s.bound("team-b", "qb2"))
	s.group("team-a", "qa3", 2, 8, "", map[string]string{"gpusched.io/iterations": "10"})
	waitFor(t, 60*time.Second, "team-a's short job to run in place of qa1", s.bound("team-a", "qa3"))
	waitFor(t, 30*time.Second, "a Preempted event on qa1 naming qa3", s.event("team-a", "qa1", "go to qa3"))
	if s.event("team-b", "qb2", "Preempted")() || !s.bound("team-b", "qb2")() {
		t.Fatalf("team-b's job, within its share, was preempted by team-a's intra-queue preemption")
	}
	t.Logf("queues: inside full team-a, the short qa3 preempted the long qa1; team-b's qb2 untouched")
}

func ptr[T any](v T) *T { return &v }
