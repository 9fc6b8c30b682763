package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/kube/queues"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Annotation and label names, relative to Config.Prefix ("gpusched.io/").
const (
	AnnModel        = "model"
	AnnPlan         = "plan"
	AnnStepTime     = "step-time"
	AnnIterations   = "iterations"
	AnnFeatures     = "features"
	AnnWeight       = "weight"
	AnnGPUType      = "gpu-type"
	AnnMinGPUMemory = "min-gpu-memory"
	AnnPods         = "pods"
	AnnProgress     = "progress"
	AnnQueue        = "queue"
	LabelJob        = "job"
	LabelRack       = "rack"
)

// ErrBadJob is wrapped by every error about a job's or a pod's description.
var ErrBadJob = errors.New("bad job")

// ErrBadNode is wrapped by every error about a node's description.
var ErrBadNode = errors.New("bad node")

// Error is a problem with one Kubernetes object: its kind and namespace/name, the field
// (annotation, label or resource) at fault, and why. It wraps ErrBadJob or ErrBadNode.
type Error struct {
	// Kind is the object's kind ("PodGroup", "Pod", "Node"), Object its namespace/name.
	Kind, Object string
	// Field names what is wrong: an annotation, a label, a resource ("" for the object).
	Field string
	// Err is the reason.
	Err  error
	node bool
}

// Error names the object, the field and the reason.
func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s %s: %v", e.Kind, e.Object, e.Err)
	}
	return fmt.Sprintf("%s %s: %s: %v", e.Kind, e.Object, e.Field, e.Err)
}

// Unwrap returns ErrBadJob (or ErrBadNode) and the reason.
func (e *Error) Unwrap() []error {
	if e.node {
		return []error{ErrBadNode, e.Err}
	}
	return []error{ErrBadJob, e.Err}
}

// Config names the labels, annotations and resources of the mapping. The zero value is the
// default (see WithDefaults).
type Config struct {
	// GPUResource is the extended resource of a GPU. Default "nvidia.com/gpu".
	GPUResource v1.ResourceName `json:"gpuResource,omitempty"`
	// Prefix is the prefix of every gpusched annotation and label. Default "gpusched.io/".
	Prefix string `json:"prefix,omitempty"`
	// PodGroupLabel is the label that puts a pod in a PodGroup. Default
	// "scheduling.x-k8s.io/pod-group".
	PodGroupLabel string `json:"podGroupLabel,omitempty"`
	// GPUTypeLabel is the node label that names the node's GPU. Default
	// "nvidia.com/gpu.product".
	GPUTypeLabel string `json:"gpuTypeLabel,omitempty"`
	// RackLabel is the node label that names the node's rack. Default "gpusched.io/rack".
	RackLabel string `json:"rackLabel,omitempty"`
	// GPUTypes maps values of GPUTypeLabel to topology presets ("a100", "a800", "h100", "t4",
	// "h200", "b200", "l40s", "v100"). A value it does not list is matched to the first
	// preset whose name it contains (case ignored: h200, h100, b200, a100, a800, l40s, v100,
	// t4); a value that contains none is scheduled as a generic GPU (Generic) with a warning.
	GPUTypes map[string]string `json:"gpuTypes,omitempty"`
	// DefaultGPUType is the preset of a GPU node without GPUTypeLabel. Default "": such a
	// node is scheduled as a generic GPU (Generic), with a warning (ErrUnknownGPUType).
	DefaultGPUType string `json:"defaultGPUType,omitempty"`
	// RackOversubscription is the oversubscription of every rack's uplinks (see
	// topology.Rack). Default 1.
	RackOversubscription float64 `json:"rackOversubscription,omitempty"`
	// DefaultStepTime is the seconds per iteration assumed for a job that names neither a
	// model (gpusched.io/model) nor a step time (gpusched.io/step-time). Default 1; with
	// gpusched.io/iterations unset too, the scheduler's predictor learns the job's length
	// from the jobs that finish. A negative value refuses such jobs (ErrBadJob).
	DefaultStepTime float64 `json:"defaultStepTime,omitempty"`
	// TolerateTaints are the keys of node taints that the gpusched pods tolerate (GPU nodes
	// are often tainted so that only GPU pods land there). A node with a NoSchedule or
	// NoExecute taint of another key is unusable: its GPUs are drained. Default
	// {GPUResource}; an empty list that is not nil tolerates none.
	TolerateTaints []string `json:"tolerateTaints,omitempty"`
}

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.GPUResource == "" {
		c.GPUResource = "nvidia.com/gpu"
	}
	if c.Prefix == "" {
		c.Prefix = "gpusched.io/"
	}
	if c.PodGroupLabel == "" {
		c.PodGroupLabel = v1alpha1.PodGroupLabel
	}
	if c.GPUTypeLabel == "" {
		c.GPUTypeLabel = "nvidia.com/gpu.product"
	}
	if c.RackLabel == "" {
		c.RackLabel = c.Prefix + LabelRack
	}
	if !(c.RackOversubscription >= 1) || math.IsInf(c.RackOversubscription, 0) {
		c.RackOversubscription = 1
	}
	if c.TolerateTaints == nil {
		c.TolerateTaints = []string{string(c.GPUResource)}
	}
	if c.DefaultStepTime == 0 || math.IsNaN(c.DefaultStepTime) || math.IsInf(c.DefaultStepTime, 0) {
		c.DefaultStepTime = 1
	}
	return c
}

// Key returns the annotation or label name for name (AnnModel, ...): Prefix + name.
func (c Config) Key(name string) string { return c.Prefix + name }

// JobKey identifies a job in the cluster: a PodGroup, or a job label value, in a namespace.
type JobKey struct {
	Namespace, Name string
	// PodGroup tells a PodGroup job from a label job.
	PodGroup bool
}

// ID returns the job's gpusched id: "podgroup/NAMESPACE/NAME" or "job/NAMESPACE/NAME".
func (k JobKey) ID() gpusched.JobID {
	if k.PodGroup {
		return gpusched.JobID("podgroup/" + k.Namespace + "/" + k.Name)
	}
	return gpusched.JobID("job/" + k.Namespace + "/" + k.Name)
}

// KeyOf returns the job a pod belongs to: its PodGroup if it has PodGroupLabel, else its job
// label. ok is false for a pod of no job.
func (c Config) KeyOf(p *v1.Pod) (k JobKey, ok bool) {
	if n := p.Labels[c.PodGroupLabel]; n != "" {
		return JobKey{Namespace: p.Namespace, Name: n, PodGroup: true}, true
	}
	if n := p.Labels[c.Key(LabelJob)]; n != "" {
		return JobKey{Namespace: p.Namespace, Name: n}, true
	}
	return JobKey{}, false
}

// Spec is a job as mapped: the gpusched job (its Arrival left to the caller) and how its
// workers are split into pods.
type Spec struct {
	// Job is the job; Arrival is 0.
	Job gpusched.Job
	// Pods is the number of worker pods; PodGPUs the GPUs each requests.
	Pods, PodGPUs int
	// Hint is the iterations hint (gpusched.io/iterations), 0 when absent.
	Hint float64
}

// PodGPUs returns the GPUs a pod requests: the sum over its containers of the GPU resource
// (requests, or limits where a container sets no request), or its largest init container's
// if that is more.
func (c Config) PodGPUs(p *v1.Pod) (int64, error) {
	get := func(ct *v1.Container) (int64, error) {
		q, ok := ct.Resources.Requests[c.GPUResource]
		if !ok {
			q, ok = ct.Resources.Limits[c.GPUResource]
		}
		if !ok {
			return 0, nil
		}
		v, ok := q.AsInt64()
		if !ok || v < 0 {
			return 0, fmt.Errorf("container %q requests %s %s: not a whole number >= 0", ct.Name, q.String(), c.GPUResource)
		}
		return v, nil
	}
	var sum, initMax int64
	for i := range p.Spec.Containers {
		v, err := get(&p.Spec.Containers[i])
		if err != nil {
			return 0, err
		}
		sum += v
	}
	for i := range p.Spec.InitContainers {
		v, err := get(&p.Spec.InitContainers[i])
		if err != nil {
			return 0, err
		}
		initMax = max(initMax, v)
	}
	return max(sum, initMax), nil
}

// JobFromPodGroup maps a PodGroup and its pods (those not being deleted) to a job. ref is the
// kind of server a default plan is made for (the job's GPU type's, or the cluster's first).
// Pods that request no GPU (an MPI launcher) are not workers: the job's worker pods are
// gpusched.io/pods when the PodGroup says so, else minMember less the pods without GPUs.
// It returns complete = false, and no error, while fewer worker pods exist.
func (c Config) JobFromPodGroup(pg *v1alpha1.PodGroup, pods []*v1.Pod, ref topology.ServerSpec) (s Spec, complete bool, err error) {
	key := JobKey{Namespace: pg.Namespace, Name: pg.Name, PodGroup: true}
	obj := pg.Namespace + "/" + pg.Name
	if pg.Spec.MinMember < 1 {
		return Spec{}, false, &Error{Kind: "PodGroup", Object: obj, Field: "spec.minMember", Err: fmt.Errorf("%d: need at least 1 worker pod", pg.Spec.MinMember)}
	}
	return c.job(key, "PodGroup", obj, pg.Annotations, int(pg.Spec.MinMember), pods, ref)
}

// JobFromPods maps the pods that share a job label to a job. Their gpusched annotations must
// be equal, and name the number of worker pods (gpusched.io/pods); pods that request no GPU
// are not workers. It returns complete = false, and
// no error, while fewer pods exist.
func (c Config) JobFromPods(key JobKey, pods []*v1.Pod, ref topology.ServerSpec) (s Spec, complete bool, err error) {
	if len(pods) == 0 {
		return Spec{}, false, nil
	}
	first := pods[0]
	ann := c.own(first.Annotations)
	for _, p := range pods[1:] {
		if other := c.own(p.Annotations); !mapsEqual(ann, other) {
			return Spec{}, false, &Error{Kind: "Pod", Object: p.Namespace + "/" + p.Name, Field: "annotations " + c.Prefix + "*",
				Err: fmt.Errorf("disagree with pod %s of job %s: %v vs %v", first.Name, key.Name, sorted(other), sorted(ann))}
		}
	}
	obj := first.Namespace + "/" + first.Name
	raw, ok := ann[c.Key(AnnPods)]
	if !ok {
		return Spec{}, false, &Error{Kind: "Pod", Object: obj, Field: "annotation " + c.Key(AnnPods), Err: errors.New("missing: a label job must say how many worker pods it has")}
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 1 {
		return Spec{}, false, &Error{Kind: "Pod", Object: obj, Field: "annotation " + c.Key(AnnPods), Err: fmt.Errorf("%q: need a whole number >= 1", short(raw))}
	}
	return c.job(key, "Pod", obj, ann, n, pods, ref)
}

// own returns the annotations under Prefix, except the progress the job writes.
func (c Config) own(ann map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range ann {
		if strings.HasPrefix(k, c.Prefix) && k != c.Key(AnnProgress) {
			out[k] = v
		}
	}
	return out
}

func (c Config) job(key JobKey, kind, obj string, ann map[string]string, npods int, pods []*v1.Pod, ref topology.ServerSpec) (Spec, bool, error) {
	bad := func(field string, err error) error { return &Error{Kind: kind, Object: obj, Field: field, Err: err} }
	// Pods without GPUs (an MPI launcher, a parameter server on CPU) run beside the workers:
	// they are not workers. A PodGroup's minMember counts them unless gpusched.io/pods
	// names the workers.
	workers := pods[:0:0]
	launchers := 0
	for _, p := range pods {
		if g, err := c.PodGPUs(p); err == nil && g == 0 {
			launchers++
			continue
		}
		workers = append(workers, p)
	}
	pods = workers
	if kind == "PodGroup" {
		if raw, ok := ann[c.Key(AnnPods)]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil || n < 1 {
				return Spec{}, false, bad("annotation "+c.Key(AnnPods), fmt.Errorf("%q: need a whole number >= 1", short(raw)))
			}
			npods = n
		} else {
			npods -= launchers
		}
		if npods < 1 {
			return Spec{}, false, bad("spec.minMember", fmt.Errorf("%d pods, %d of them without GPUs: no worker pod", npods+launchers, launchers))
		}
	}
	// GPU requests: equal over the pods.
	var per int64 = -1
	for _, p := range pods {
		g, err := c.PodGPUs(p)
		if err != nil {
			return Spec{}, false, &Error{Kind: "Pod", Object: p.Namespace + "/" + p.Name, Field: "resources " + string(c.GPUResource), Err: err}
		}
		if per >= 0 && g != per {
			return Spec{}, false, &Error{Kind: "Pod", Object: p.Namespace + "/" + p.Name, Field: "resources " + string(c.GPUResource),
				Err: fmt.Errorf("requests %d GPUs, other pods of job %s request %d: the pods of a job request the same", g, key.Name, per)}
		}
		per = g
	}
	if len(pods) > npods {
		return Spec{}, false, bad("", fmt.Errorf("%d worker pods exist, the job has %d", len(pods), npods))
	}
	s := Spec{Pods: npods}
	j := &s.Job
	j.ID = key.ID()
	// Annotations.
	num := func(name string, positive bool) (float64, error) {
		raw, ok := ann[c.Key(name)]
		if !ok {
			return 0, nil
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 || (positive && v == 0) {
			want := "a finite number >= 0"
			if positive {
				want = "a finite number > 0"
			}
			return 0, bad("annotation "+c.Key(name), fmt.Errorf("%q: need %s", short(raw), want))
		}
		return v, nil
	}
	var err error
	if j.StepTime, err = num(AnnStepTime, true); err != nil {
		return Spec{}, false, err
	}
	if s.Hint, err = num(AnnIterations, true); err != nil {
		return Spec{}, false, err
	}
	if j.Weight, err = num(AnnWeight, true); err != nil {
		return Spec{}, false, err
	}
	j.GPUType = strings.TrimSpace(ann[c.Key(AnnGPUType)])
	if raw, ok := ann[c.Key(AnnMinGPUMemory)]; ok {
		q, err := resource.ParseQuantity(strings.TrimSpace(raw))
		if err != nil || q.Sign() < 0 {
			return Spec{}, false, bad("annotation "+c.Key(AnnMinGPUMemory), fmt.Errorf("%q: need a quantity >= 0 such as 40Gi", short(raw)))
		}
		j.MinGPUMemory = q.AsApproximateFloat64()
	}
	if raw, ok := ann[c.Key(AnnFeatures)]; ok {
		if err := strict([]byte(raw), &j.Features); err != nil {
			return Spec{}, false, bad("annotation "+c.Key(AnnFeatures), err)
		}
	}
	if raw, ok := ann[c.Key(AnnModel)]; ok {
		m, err := ParseModel(raw)
		if err != nil {
			return Spec{}, false, bad("annotation "+c.Key(AnnModel), err)
		}
		j.Model = m
	}
	var plan *graph.Plan
	if raw, ok := ann[c.Key(AnnPlan)]; ok {
		if j.Model == nil {
			return Spec{}, false, bad("annotation "+c.Key(AnnPlan), errors.New("a plan needs a model (annotation "+c.Key(AnnModel)+")"))
		}
		plan = new(graph.Plan)
		if err := strict([]byte(raw), plan); err != nil {
			return Spec{}, false, bad("annotation "+c.Key(AnnPlan), err)
		}
		if err := plan.Validate(j.Model); err != nil {
			return Spec{}, false, bad("annotation "+c.Key(AnnPlan), err)
		}
	}
	if j.Model == nil && j.StepTime == 0 {
		if !(c.DefaultStepTime > 0) {
			return Spec{}, false, bad("annotation "+c.Key(AnnModel), fmt.Errorf("missing, and no %s: the scheduler cannot tell how long an iteration takes", c.Key(AnnStepTime)))
		}
		j.StepTime = c.DefaultStepTime
	}
	if len(pods) < npods {
		return s, false, nil
	}
	s.PodGPUs = int(per)
	j.GPUs = npods * int(per)
	if j.Model != nil {
		if plan != nil {
			if w := plan.Workers(); w != j.GPUs {
				return Spec{}, false, bad("annotation "+c.Key(AnnPlan), fmt.Errorf("plan %v has %d workers, the job's %d pods request %d GPUs each (%d in all)", plan, w, npods, per, j.GPUs))
			}
			j.Plan = *plan
		} else {
			p, err := graph.DefaultPlan(j.Model, j.GPUs, ref)
			if err != nil {
				return Spec{}, false, bad("annotation "+c.Key(AnnModel), fmt.Errorf("no default plan for %d GPUs: %w", j.GPUs, err))
			}
			j.Plan = p
		}
	}
	if q := strings.TrimSpace(ann[c.Key(AnnQueue)]); q != "" {
		if j.Features.Categorical == nil {
			j.Features.Categorical = map[string]string{}
		}
		j.Features.Categorical[queues.QueueFeature] = q
	}
	if j.Features.Family == "" && j.Model != nil {
		j.Features.Family = j.Model.Name()
	}
	if s.Hint > 0 {
		if j.Features.Numeric == nil {
			j.Features.Numeric = map[string]float64{}
		}
		j.Features.Numeric[HintFeature] = s.Hint
	}
	if err := j.Validate(nil); err != nil {
		return Spec{}, false, bad("", err)
	}
	return s, true, nil
}

// HintFeature is the name under which the iterations hint is kept in Job.Features.Numeric.
const HintFeature = "iterations_hint"

// ParseModel reads a model annotation: a zoo name, or a model JSON object.
func ParseModel(raw string) (*graph.Model, error) {
	s := strings.TrimSpace(raw)
	if strings.HasPrefix(s, "{") {
		m := new(graph.Model)
		if err := json.Unmarshal([]byte(s), m); err != nil {
			return nil, err
		}
		return m, nil
	}
	m, err := graph.ZooModel(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", short(s), err)
	}
	return m, nil
}

// Progress returns the iterations done that an object's progress annotation reports, and
// whether it has one.
func (c Config) Progress(ann map[string]string) (float64, bool, error) {
	raw, ok := ann[c.Key(AnnProgress)]
	if !ok {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false, fmt.Errorf("annotation %s: %q: need a finite number >= 0", c.Key(AnnProgress), short(raw))
	}
	return v, true, nil
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+short(v))
	}
	slices.Sort(out)
	return out
}

// PodRequests returns the CPU (millicores) and memory (bytes) a pod requests: the sum over
// its containers (requests, or limits where a container sets no request), or its largest
// init container's if that is more, plus the pod's overhead.
func PodRequests(p *v1.Pod) (milliCPU, memory int64) {
	get := func(ct *v1.Container, name v1.ResourceName) int64 {
		q, ok := ct.Resources.Requests[name]
		if !ok {
			q, ok = ct.Resources.Limits[name]
		}
		if !ok {
			return 0
		}
		if name == v1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		var sum, initMax int64
		for i := range p.Spec.Containers {
			sum += get(&p.Spec.Containers[i], name)
		}
		for i := range p.Spec.InitContainers {
			initMax = max(initMax, get(&p.Spec.InitContainers[i], name))
		}
		v := max(sum, initMax)
		if q, ok := p.Spec.Overhead[name]; ok {
			if name == v1.ResourceCPU {
				v += q.MilliValue()
			} else {
				v += q.Value()
			}
		}
		if name == v1.ResourceCPU {
			milliCPU = v
		} else {
			memory = v
		}
	}
	return milliCPU, memory
}
