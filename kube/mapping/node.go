package mapping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
)

// presetOrder is the order in which preset names are looked for in a GPU type label.
var presetOrder = [...]string{"h200", "h100", "b200", "a100", "a800", "l40s", "v100", "t4"}

// Generic returns the spec of a server of GPUs of no known type: model is the node's GPU
// type label ("generic" when it has none). Its figures are deliberately middling (a PCIe 4.0
// server: 32 GB/s between GPUs over a shared fabric, 100 TFLOPS and 24 GiB per GPU, one
// 100 Gb/s NIC), so that its nodes are scheduled, with a cost model that is only a guess.
func Generic(model string) topology.ServerSpec {
	if model == "" {
		model = "generic"
	}
	return topology.ServerSpec{
		GPU:            topology.GPUSpec{Model: model, PeakFLOPS: 100 * topology.TFLOPS, MemoryBytes: topology.GiB(24)},
		GPUs:           8,
		IntraBandwidth: 32 * topology.GB,
		IntraLatency:   10e-6,
		IntraShared:    true,
		NICs:           1,
		NICBandwidth:   topology.Gbps(100),
		NICLatency:     10e-6,
	}
}

// ErrUnknownGPUType is wrapped by the warning about a node whose GPU type is unknown or not
// labelled: it is scheduled as a generic type (Generic).
var ErrUnknownGPUType = errors.New("unknown GPU type")

// ServerOf returns the server a node offers: its GPU count (allocatable GPUResource), the
// preset of its GPU type, and its rack. ok is false, with no error, for a node without GPUs.
func (c Config) ServerOf(n *v1.Node) (s topology.Server, ok bool, err error) {
	s, ok, _, err = c.serverOf(n)
	return s, ok, err
}

// serverOf is ServerOf that also returns a warning (an *Error wrapping ErrUnknownGPUType)
// for a node of an unknown or unlabelled GPU type, which it offers as a generic server.
func (c Config) serverOf(n *v1.Node) (s topology.Server, ok bool, warn, err error) {
	bad := func(field string, err error) error {
		return &Error{Kind: "Node", Object: n.Name, Field: field, Err: err, node: true}
	}
	q, has := n.Status.Allocatable[c.GPUResource]
	if !has || q.IsZero() {
		return topology.Server{}, false, nil, nil
	}
	gpus, exact := q.AsInt64()
	if !exact || gpus < 0 || gpus > 1<<16 {
		return topology.Server{}, false, nil, bad("allocatable "+string(c.GPUResource), fmt.Errorf("%s: not a whole number of GPUs", q.String()))
	}
	label, has := n.Labels[c.GPUTypeLabel]
	name := c.DefaultGPUType
	if has {
		name = c.GPUTypes[label]
		if name == "" {
			lower := strings.ToLower(label)
			for _, p := range presetOrder {
				if strings.Contains(lower, p) {
					name = p
					break
				}
			}
		}
	}
	var spec topology.ServerSpec
	if name != "" {
		if spec, err = topology.Preset(name); err != nil {
			return topology.Server{}, false, nil, bad("label "+c.GPUTypeLabel, err)
		}
	} else {
		// No known type: scheduled as a generic GPU, with a warning.
		spec = Generic(strings.TrimSpace(label))
		why := fmt.Errorf("%w %q (known: %v; map it in gpuTypes): scheduled as a generic GPU", ErrUnknownGPUType, short(label), presetOrder)
		if !has {
			why = fmt.Errorf("%w: missing, and no default GPU type is configured: scheduled as a generic GPU", ErrUnknownGPUType)
		}
		warn = bad("label "+c.GPUTypeLabel, why)
	}
	spec.GPUs = int(gpus)
	if spec.NICs > spec.GPUs {
		spec.NICs = spec.GPUs
	}
	return topology.Server{ID: n.Name, Rack: n.Labels[c.RackLabel], ServerSpec: spec}, true, warn, nil
}

// Usable tells whether the gpusched pods may run on a node: it is not cordoned, it is Ready,
// and it has no NoSchedule or NoExecute taint whose key is not in TolerateTaints. (The
// taints that Kubernetes itself puts on cordoned and NotReady nodes, node.kubernetes.io/...,
// are not tolerated either.) PreferNoSchedule taints are ignored.
func (c Config) Usable(n *v1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !slices.Contains(c.TolerateTaints, t.Key) {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// Cluster builds the cluster the GPU nodes form: one server per node with GPUs, named after
// it, in name order, in its rack (RackLabel; servers without one share the rack "none" when
// other servers name racks). It returns nil when no node offers GPUs, the names of the
// servers' nodes that are not Usable, and one error per node left out or taken as a generic
// GPU type (problems), each an *Error wrapping ErrBadNode (and ErrUnknownGPUType for the
// latter, whose nodes are in the cluster as Generic servers).
func (c Config) Cluster(nodes []*v1.Node) (cl *topology.Cluster, unusable []string, problems []error, err error) {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	var servers []topology.Server
	racked := false
	for _, n := range sorted {
		s, ok, warn, err := c.serverOf(n)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if warn != nil {
			problems = append(problems, warn)
		}
		if !ok {
			continue
		}
		racked = racked || s.Rack != ""
		servers = append(servers, s)
		if !c.Usable(n) {
			unusable = append(unusable, n.Name)
		}
	}
	if len(servers) == 0 {
		return nil, nil, problems, nil
	}
	var racks []topology.Rack
	if racked {
		seen := map[string]bool{}
		for i := range servers {
			if servers[i].Rack == "" {
				servers[i].Rack = "none"
			}
			if !seen[servers[i].Rack] {
				seen[servers[i].Rack] = true
				racks = append(racks, topology.Rack{ID: servers[i].Rack, Oversubscription: c.RackOversubscription})
			}
		}
	}
	cl, err = topology.New("kubernetes", servers, racks)
	if err != nil {
		return nil, nil, problems, fmt.Errorf("mapping: cluster of %d GPU nodes: %w", len(servers), err)
	}
	return cl, unusable, problems, nil
}
