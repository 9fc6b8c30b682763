package topology

// This file holds exported API kept for one release as deprecated wrappers (CONTRIBUTING.md,
// "API compatibility"): each is removed in v0.3.0 by deleting it here.

// H200 returns the spec of an 8-GPU H200 SXM 141 GB server.
//
// Deprecated: use Preset("h200"); removed in v0.3.0.
func H200() ServerSpec { return h200Spec() }

// B200 returns the spec of an 8-GPU B200 180 GB server.
//
// Deprecated: use Preset("b200"); removed in v0.3.0.
func B200() ServerSpec { return b200Spec() }

// L40S returns the spec of an 8-GPU L40S 48 GB server.
//
// Deprecated: use Preset("l40s"); removed in v0.3.0.
func L40S() ServerSpec { return l40sSpec() }

// V100 returns the spec of an 8-GPU V100 SXM2 32 GB server.
//
// Deprecated: use Preset("v100"); removed in v0.3.0.
func V100() ServerSpec { return v100Spec() }

// TotalPeakFLOPS returns the sum of the GPUs' peak throughput in FLOP/s.
//
// Deprecated: not needed by embedders (sum GPUSpec.PeakFLOPS over Cluster.GPU); removed in
// v0.3.0.
func (c *Cluster) TotalPeakFLOPS() float64 { return c.totalPeakFLOPS() }

// Intersects reports whether s and t share a GPU.
//
// Deprecated: not needed by embedders (Contains over one set's Range); removed in v0.3.0.
func (s GPUSet) Intersects(t GPUSet) bool { return s.intersects(t) }

// AllReduceTime returns the time in seconds of a ring all-reduce of the given bytes.
//
// Deprecated: use Cluster.RingAllReduceTime; removed in v0.3.0.
func (r Ring) AllReduceTime(bytes float64) float64 { return r.allReduceTime(bytes) }

// AllGatherTime returns the time in seconds of a ring all-gather of the given bytes.
//
// Deprecated: not needed by embedders (the cost model in package graph times collectives);
// removed in v0.3.0.
func (r Ring) AllGatherTime(bytes float64) float64 { return r.allGatherTime(bytes) }

// Bandwidth returns the bandwidth of the ring's slowest hop in bytes per second.
//
// Deprecated: use min(IntraBandwidth, InterBandwidth); removed in v0.3.0.
func (r RingStats) Bandwidth() float64 { return r.bandwidth() }

// Parse is Load from a byte slice.
//
// Deprecated: use Load(bytes.NewReader(data)); removed in v0.4.0.
func Parse(data []byte) (*Cluster, error) { return parse(data) }
