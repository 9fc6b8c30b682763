package planner

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The framework plugin asks the planner, at each extension point, what the current decision
// allows. Every method is safe for concurrent use with Sync.

// jobOf returns the job of a pod, or why there is none to schedule.
func (p *Planner) jobOf(pod *v1.Pod) (*job, string) {
	k, ok := p.opt.Mapping.KeyOf(pod)
	if !ok {
		return nil, fmt.Sprintf("pod belongs to no job (label %s or %s)", p.opt.Mapping.PodGroupLabel, p.opt.Mapping.Key("job"))
	}
	j := p.jobs[k.ID()]
	if j == nil || !p.started {
		p.Kick()
		return nil, fmt.Sprintf("job %s not planned yet", k.Name)
	}
	return j, ""
}

// Admit tells whether a pod may be scheduled now: its job is one the current decision runs.
// Otherwise it says why not (the pod waits: PreEnqueue and PreFilter).
func (p *Planner) Admit(pod *v1.Pod) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, why := p.jobOf(pod)
	if j == nil {
		return false, why
	}
	if why := p.waitReason(j); why != "" {
		return false, why
	}
	return true, ""
}

// waitReason says why a job's pods may not be scheduled now, or "" when they may.
func (p *Planner) waitReason(j *job) string {
	switch {
	case j.prob != "":
		return j.prob
	case j.done:
		return fmt.Sprintf("job %s is finished or rejected", j.key.Name)
	case j.nodes != nil:
		return ""
	case j.fitWhy != "":
		return j.fitWhy
	case j.why != "":
		return j.why
	case !j.held:
		return fmt.Sprintf("job %s waits for all its worker pods to exist", j.key.Name)
	}
	return fmt.Sprintf("job %s waits in the %s scheduler's queue for GPUs", j.key.Name, p.schedName())
}

// Unfit tells the planner that no node the decision gave the pod's job can hold the pod:
// other plugins' Filters (CPU, memory, affinity, volumes) rejected it there, for the reasons
// given by node. The next decision takes the job back (Options.BindTimeout).
func (p *Planner) Unfit(pod *v1.Pod, reasons map[string]string) {
	p.mu.Lock()
	j, _ := p.jobOf(pod)
	if j == nil || j.nodes == nil || j.full || len(reasons) == 0 {
		p.mu.Unlock()
		return
	}
	names := make([]string, 0, len(reasons))
	for n := range reasons {
		if _, ok := j.nodes[n]; ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		p.mu.Unlock()
		return
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "pod %s on node %s: %s", pod.Name, n, reasons[n])
	}
	j.unfit = b.String()
	p.mu.Unlock()
	p.Kick()
}

// Slots returns, for each node where the decision put the pod's job, the GPUs the job has
// left there for this pod (0 or more). A pod may only go to a node where it is at least the
// pod's GPU request (Filter, Score).
func (p *Planner) Slots(pod *v1.Pod) (left map[string]int, podGPUs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, _ := p.jobOf(pod)
	if j == nil || j.nodes == nil {
		return nil, 0
	}
	return p.slots(j, pod.UID), j.spec.PodGPUs
}

func (p *Planner) slots(j *job, self types.UID) map[string]int {
	left := make(map[string]int, len(j.nodes))
	for n, g := range j.nodes {
		left[n] = g
	}
	counted := map[types.UID]bool{self: true}
	for _, pod := range j.pods {
		if pod.Spec.NodeName != "" && !counted[pod.UID] {
			counted[pod.UID] = true
			left[pod.Spec.NodeName] -= j.spec.PodGPUs
		}
	}
	for uid, n := range j.resv {
		if !counted[uid] {
			counted[uid] = true
			left[n] -= j.spec.PodGPUs
		}
	}
	return left
}

// Reserve takes a slot on node for pod, or says why it may not go there.
func (p *Planner) Reserve(pod *v1.Pod, node string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, why := p.jobOf(pod)
	if j == nil {
		return fmt.Errorf("%s", why)
	}
	if j.nodes == nil {
		return fmt.Errorf("job %s is not to run", j.key.Name)
	}
	if left := p.slots(j, pod.UID)[node]; left < j.spec.PodGPUs {
		return fmt.Errorf("job %s has %d of its GPUs left on node %s, the pod needs %d", j.key.Name, max(left, 0), node, j.spec.PodGPUs)
	}
	if j.resv == nil {
		j.resv = map[types.UID]string{}
	}
	j.resv[pod.UID] = node
	return nil
}

// Unreserve gives back the slot Reserve took.
func (p *Planner) Unreserve(pod *v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, _ := p.jobOf(pod); j != nil {
		delete(j.resv, pod.UID)
	}
}

// Gang tells whether every pod of the pod's job is bound or reserved (the gang may bind), and
// the UIDs of the reserved ones.
func (p *Planner) Gang(pod *v1.Pod) (complete bool, members []types.UID, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, why := p.jobOf(pod)
	if j == nil {
		return false, nil, fmt.Errorf("%s", why)
	}
	if j.nodes == nil {
		return false, nil, fmt.Errorf("job %s is not to run", j.key.Name)
	}
	have := map[types.UID]bool{}
	for _, q := range j.pods {
		if q.Spec.NodeName != "" {
			have[q.UID] = true
		}
	}
	for uid := range j.resv {
		have[uid] = true
		members = append(members, uid)
	}
	return len(have) >= j.spec.Pods, members, nil
}
