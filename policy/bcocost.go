package policy

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// ModelBytesFeature is the Features.Numeric key BCOCost reads, by default, for the bytes a job's
// workers all-reduce per iteration (its gradient size) when the job has no model.
const ModelBytesFeature = "model_bytes"

// BCOCost is the per-iteration cost model of the SJF-BCO paper (Yu, Ji, Rajan, Liu, "On
// Scheduling Ring-All-Reduce Learning Jobs in Multi-Tenant GPU Clusters with Communication
// Contention", MobiHoc 2022, arXiv 2207.07817), as a gpusched.CostModel so that the simulator
// can run SJF-BCO's comparison in the paper's own model.
//
// A job j with g workers placed on k servers takes, per iteration,
//
//	tau_j = c_j                                            if k = 1
//	tau_j = c_j + 2(g-1)/g x m_j / B_j + Overhead x (k-1)  if k > 1
//
// where c_j is its compute time per iteration (Job.StepTime), m_j the bytes each worker
// all-reduces per iteration (Bytes), and B_j the bandwidth of its ring:
//
//	B_j = min over the servers s it spans of b_e(s) / (n_s + Alpha (n_s - 1))
//
// with n_s the number of jobs whose rings cross server s's network link, j included
// (1 + the LinkLoad the host reports on s's NIC link), and b_e(s) the link's bandwidth
// (Bandwidth, or the server's NICs x NICBandwidth). A job inside one server communicates over
// the server's fabric, which the model takes as free: the paper's point is that crossing servers
// costs a ring-all-reduce both a contention-dependent bandwidth term and an overhead that grows
// with the servers spanned.
//
// Choices where the paper's text was not available to this implementation (only its abstract
// and the summary were): k in B_j = b_e/(k + alpha(k-1)) is read as the number of jobs
// contending on a link; the overhead is linear in the servers beyond the first; the ring's
// volume is the standard 2(g-1)/g m_j. CrossServerBytes is k x 2(g-1)/g x m_j: every one of the
// ring's k server-crossing hops carries the full ring volume.
//
// The zero value is usable: no contention penalty beyond fair sharing (Alpha = 0), no overhead,
// link bandwidth from the cluster, bytes from Features.Numeric["model_bytes"]. A BCOCost is safe
// for concurrent use if its Bytes function is.
type BCOCost struct {
	// Alpha is the contention factor: each further job on a link costs a share alpha of
	// bandwidth on top of fair sharing. Must be >= 0.
	Alpha float64
	// Overhead is the time in seconds per iteration added for every server beyond the first
	// that a job spans. Must be >= 0.
	Overhead float64
	// Bandwidth, when positive, is every server link's bandwidth b_e in bytes per second.
	// Default: each server's NICs x NICBandwidth.
	Bandwidth float64
	// Bytes returns the bytes each worker of job j all-reduces per iteration. Default:
	// j.Features.Numeric[ModelBytesFeature] (0 when absent).
	Bytes func(j *gpusched.Job) float64
}

// StepCost returns the job's time per iteration on gpus under load, in the model above.
func (b BCOCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (gpusched.StepCost, error) {
	if !finiteNonNeg(b.Alpha) || !finiteNonNeg(b.Overhead) || math.IsNaN(b.Bandwidth) || math.IsInf(b.Bandwidth, 0) {
		return gpusched.StepCost{}, fmt.Errorf("%w: BCOCost{Alpha: %v, Overhead: %v, Bandwidth: %v}",
			ErrInvalidOptions, b.Alpha, b.Overhead, b.Bandwidth)
	}
	if !(j.StepTime > 0) || math.IsInf(j.StepTime, 1) {
		return gpusched.StepCost{}, fmt.Errorf("%w: job %q has step time %v", gpusched.ErrInvalidJob, j.ID, j.StepTime)
	}
	if len(gpus) != j.GPUs {
		return gpusched.StepCost{}, fmt.Errorf("%w: job %q needs %d GPUs, placed on %d", gpusched.ErrGPUCount, j.ID, j.GPUs, len(gpus))
	}
	for _, g := range gpus {
		if err := c.Check(g); err != nil {
			return gpusched.StepCost{}, fmt.Errorf("job %q: %w", j.ID, err)
		}
	}
	servers := make([]int, 0, 4)
	seen := map[int]bool{}
	for _, g := range gpus {
		if s := c.ServerOf(g); !seen[s] {
			seen[s] = true
			servers = append(servers, s)
		}
	}
	k := len(servers)
	if k <= 1 {
		return gpusched.StepCost{Time: j.StepTime}, nil
	}
	var m float64
	if b.Bytes != nil {
		m = b.Bytes(j)
	} else {
		m = j.Features.Numeric[ModelBytesFeature]
	}
	if !finiteNonNeg(m) {
		return gpusched.StepCost{}, fmt.Errorf("%w: job %q all-reduces %v bytes", gpusched.ErrInvalidJob, j.ID, m)
	}
	bw := math.Inf(1)
	for _, s := range servers {
		be := b.Bandwidth
		if !(be > 0) {
			sv := c.Server(s)
			be = float64(sv.NICs) * sv.NICBandwidth
		}
		n := 1 + load[topology.Link{Kind: topology.NICLink, Index: s}]
		bw = min(bw, be/(n+b.Alpha*(n-1)))
	}
	g := float64(j.GPUs)
	vol := 2 * (g - 1) / g * m
	comm := 0.0
	if vol > 0 {
		comm = vol / bw
	}
	return gpusched.StepCost{
		Time:             j.StepTime + comm + b.Overhead*float64(k-1),
		CrossServerBytes: float64(k) * vol,
	}, nil
}
