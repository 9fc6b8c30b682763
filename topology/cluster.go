package topology

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// GPUID names one GPU of a cluster: GPUs are numbered 0..NumGPUs()-1, server by server, in the
// order the servers were given to New.
type GPUID int

// Errors returned when a cluster or a query is malformed. Every returned error wraps one of
// these and names the offending server, rack or GPU.
var (
	// ErrInvalidCluster reports a cluster description that cannot be built: no servers, a
	// duplicate id, a non-positive GPU count or bandwidth, a NaN, an unknown rack.
	ErrInvalidCluster = errors.New("topology: invalid cluster")
	// ErrNoSuchGPU reports a GPU id outside 0..NumGPUs()-1.
	ErrNoSuchGPU = errors.New("topology: no such GPU")
)

// GPUSpec describes one kind of GPU.
type GPUSpec struct {
	// Model is a free-form name such as "A100-SXM4-80GB".
	Model string `json:"model"`
	// PeakFLOPS is the dense half-precision tensor throughput in FLOP/s.
	PeakFLOPS float64 `json:"peak_flops"`
	// MemoryBytes is the device memory in bytes.
	MemoryBytes float64 `json:"memory_bytes"`
}

// Type returns the GPU's type: the lower-case family of its model name, the part before the
// first '-', ' ' or '_' ("a100" for "A100-SXM4-80GB", "t4" for "T4-16GB").
func (g GPUSpec) Type() string { return family(g.Model) }

// Is reports whether the GPU is of the named type or model, ignoring case: "a100", "A100" and
// "A100-SXM4-80GB" all name an "A100-SXM4-80GB". The empty name matches every GPU.
func (g GPUSpec) Is(name string) bool {
	return name == "" || strings.EqualFold(name, g.Model) || strings.EqualFold(name, g.Type())
}

// ServerSpec describes a kind of server: its GPUs and links. Bandwidths are bytes per second in
// each direction; latencies are seconds per message.
type ServerSpec struct {
	// GPU is the kind of every GPU in the server.
	GPU GPUSpec `json:"gpu"`
	// GPUs is the number of GPUs in the server.
	GPUs int `json:"gpus"`
	// IntraBandwidth is the bandwidth between two GPUs of the server, per GPU and direction
	// (NVLink/NVSwitch or PCIe), in bytes per second.
	IntraBandwidth float64 `json:"intra_bandwidth"`
	// IntraLatency is the latency of one message between two GPUs of the server, in seconds.
	IntraLatency float64 `json:"intra_latency"`
	// IntraShared marks a shared intra-server fabric (a PCIe tree) whose bandwidth is divided
	// among the jobs on the server, rather than a non-blocking switch (NVSwitch) that gives every
	// GPU its full bandwidth whatever the other GPUs do.
	IntraShared bool `json:"intra_shared,omitempty"`
	// NICs is the number of network interfaces of the server. The GPUs are attached to them
	// evenly, in order (with 8 GPUs and 4 NICs, GPUs 0 and 1 share NIC 0), and a job that uses
	// m GPUs of the server drives the NICs its GPUs are attached to (GPU-NIC affinity, as NCCL
	// does): NICChannels(m) of them.
	NICs int `json:"nics"`
	// NICBandwidth is the bandwidth of one network interface in bytes per second.
	NICBandwidth float64 `json:"nic_bandwidth"`
	// NICLatency is the latency of one message between servers, in seconds.
	NICLatency float64 `json:"nic_latency"`
	// CPUs is the number of CPU cores (vCPUs) of the server that jobs may be given (host-side
	// optimizers under ZeRO-Offload, data loading). Zero means not accounted: jobs' CPU needs
	// are not checked against it.
	CPUs int `json:"cpus,omitempty"`
	// HostMemory is the server's host memory that jobs may be given, in bytes. Zero means not
	// accounted.
	HostMemory float64 `json:"host_memory,omitempty"`
}

// NICChannels returns how many of the server's NICs a job with m of its GPUs drives at once.
// GPU i of the server is attached to NIC floor(i x NICs / GPUs), and the job's m GPUs are taken
// to be the first m (packed, as Pack and consecutive GPU ids place them), so it drives
// floor((m-1) x NICs / GPUs) + 1 NICs: with 4 NICs for 8 GPUs, a job with 2 GPUs of the server
// drives one NIC and one with 3 or 4 drives two. With at least one NIC per GPU it is
// min(m, NICs). It is 0 for m < 1.
func (s ServerSpec) NICChannels(m int) int {
	if m < 1 || s.NICs < 1 {
		return 0
	}
	if s.GPUs < 1 || s.NICs >= s.GPUs {
		return min(m, s.NICs)
	}
	return min((m-1)*s.NICs/s.GPUs+1, s.NICs)
}

// Server is one machine of a cluster.
type Server struct {
	// ID is the server's name, unique in its cluster.
	ID string `json:"id"`
	// Rack is the id of the server's rack, or "" when the cluster has no racks.
	Rack string `json:"rack,omitempty"`
	ServerSpec
}

// Rack is a group of servers behind one top-of-rack switch.
type Rack struct {
	// ID is the rack's name, unique in its cluster.
	ID string `json:"id"`
	// Oversubscription is the ratio of the servers' total NIC bandwidth to the rack's uplink
	// bandwidth (1 means non-blocking). Traffic leaving the rack gets the NIC bandwidth divided
	// by this ratio.
	Oversubscription float64 `json:"oversubscription"`
}

// Cluster is an immutable set of servers, their GPUs and the links between them. Build one with
// New, a preset such as Uniform(A100(), 64), or Load. A Cluster is safe for concurrent use.
type Cluster struct {
	name      string
	servers   []Server
	racks     []Rack
	serverIdx map[string]int
	rackOf    []int // server -> rack index, -1 without racks
	first     []int // server -> first GPU id; len = servers+1
	gpuServer []int32
	uniform   bool // every server has the same GPUSpec
}

// New builds a cluster from its servers and racks. Servers keep the order given; their GPUs get
// consecutive ids. Racks may be empty; if any server names a rack, every server must name a rack
// listed in racks.
func New(name string, servers []Server, racks []Rack) (*Cluster, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: cluster %q has no servers", ErrInvalidCluster, name)
	}
	c := &Cluster{
		name:      name,
		servers:   append([]Server(nil), servers...),
		racks:     append([]Rack(nil), racks...),
		serverIdx: make(map[string]int, len(servers)),
		rackOf:    make([]int, len(servers)),
		first:     make([]int, len(servers)+1),
	}
	rackIdx := make(map[string]int, len(racks))
	for i, r := range c.racks {
		if r.ID == "" {
			return nil, fmt.Errorf("%w: rack %d has an empty id", ErrInvalidCluster, i)
		}
		if _, dup := rackIdx[r.ID]; dup {
			return nil, fmt.Errorf("%w: duplicate rack id %q", ErrInvalidCluster, r.ID)
		}
		if !(r.Oversubscription >= 1) || math.IsInf(r.Oversubscription, 0) {
			return nil, fmt.Errorf("%w: rack %q: oversubscription %v must be a finite number >= 1",
				ErrInvalidCluster, r.ID, r.Oversubscription)
		}
		rackIdx[r.ID] = i
	}
	total := 0
	for i, s := range c.servers {
		if s.ID == "" {
			return nil, fmt.Errorf("%w: server %d has an empty id", ErrInvalidCluster, i)
		}
		if _, dup := c.serverIdx[s.ID]; dup {
			return nil, fmt.Errorf("%w: duplicate server id %q", ErrInvalidCluster, s.ID)
		}
		c.serverIdx[s.ID] = i
		if err := s.ServerSpec.validate(); err != nil {
			return nil, fmt.Errorf("%w: server %q: %v", ErrInvalidCluster, s.ID, err)
		}
		c.rackOf[i] = -1
		switch {
		case s.Rack != "":
			r, ok := rackIdx[s.Rack]
			if !ok {
				return nil, fmt.Errorf("%w: server %q names unknown rack %q", ErrInvalidCluster, s.ID, s.Rack)
			}
			c.rackOf[i] = r
		case len(c.racks) > 0:
			return nil, fmt.Errorf("%w: server %q has no rack but the cluster has racks", ErrInvalidCluster, s.ID)
		}
		c.first[i] = total
		total += s.GPUs
	}
	c.first[len(c.servers)] = total
	c.gpuServer = make([]int32, total)
	c.uniform = true
	for i := range c.servers {
		for g := c.first[i]; g < c.first[i+1]; g++ {
			c.gpuServer[g] = int32(i)
		}
		if c.servers[i].GPU != c.servers[0].GPU {
			c.uniform = false
		}
	}
	return c, nil
}

// UniformGPUs reports whether every GPU of the cluster is of the same kind (equal GPUSpecs).
func (c *Cluster) UniformGPUs() bool { return c.uniform }

func (s ServerSpec) validate() error {
	pos := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s %v must be a positive finite number", name, v)
		}
		return nil
	}
	nonneg := func(name string, v float64) error {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s %v must be a non-negative finite number", name, v)
		}
		return nil
	}
	if s.GPUs < 1 {
		return fmt.Errorf("gpus %d must be at least 1", s.GPUs)
	}
	if s.NICs < 1 {
		return fmt.Errorf("nics %d must be at least 1", s.NICs)
	}
	if s.CPUs < 0 {
		return fmt.Errorf("cpus %d must be non-negative", s.CPUs)
	}
	for _, e := range []error{
		pos("gpu peak_flops", s.GPU.PeakFLOPS),
		pos("gpu memory_bytes", s.GPU.MemoryBytes),
		pos("intra_bandwidth", s.IntraBandwidth),
		pos("nic_bandwidth", s.NICBandwidth),
		nonneg("intra_latency", s.IntraLatency),
		nonneg("nic_latency", s.NICLatency),
		nonneg("host_memory", s.HostMemory),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// NumGPUs returns the number of GPUs in the cluster.
func (c *Cluster) NumGPUs() int { return len(c.gpuServer) }

// NumServers returns the number of servers in the cluster.
func (c *Cluster) NumServers() int { return len(c.servers) }

// NumRacks returns the number of racks (0 for a cluster without racks).
func (c *Cluster) NumRacks() int { return len(c.racks) }

// Server returns server i (0 <= i < NumServers()).
func (c *Cluster) Server(i int) Server { return c.servers[i] }

// Rack returns rack i (0 <= i < NumRacks()).
func (c *Cluster) Rack(i int) Rack { return c.racks[i] }

// ServerIndex returns the index of the server with the given id.
func (c *Cluster) ServerIndex(id string) (int, bool) {
	i, ok := c.serverIdx[id]
	return i, ok
}

// RackOf returns the rack index of server i, or -1 when the cluster has no racks.
func (c *Cluster) RackOf(server int) int { return c.rackOf[server] }

// ServerOf returns the index of the server that holds GPU g. It panics if g is out of range;
// use Check for untrusted ids.
func (c *Cluster) ServerOf(g GPUID) int { return int(c.gpuServer[g]) }

// GPUsOf returns the GPU ids of server i: first, first+1, ..., first+n-1.
func (c *Cluster) GPUsOf(server int) (first GPUID, n int) {
	return GPUID(c.first[server]), c.first[server+1] - c.first[server]
}

// GPU returns the spec of GPU g's kind, or the zero GPUSpec for a GPU the cluster does not
// have (Check tells which).
func (c *Cluster) GPU(g GPUID) GPUSpec {
	if uint(g) >= uint(len(c.gpuServer)) {
		return GPUSpec{}
	}
	return c.servers[c.gpuServer[g]].GPU
}

// Check returns an error wrapping ErrNoSuchGPU unless g is a GPU of the cluster.
func (c *Cluster) Check(g GPUID) error {
	if g < 0 || int(g) >= len(c.gpuServer) {
		return fmt.Errorf("%w: GPU %d (cluster %q has GPUs 0..%d)", ErrNoSuchGPU, g, c.name, len(c.gpuServer)-1)
	}
	return nil
}

// GPUName returns a readable name for GPU g: "server/local", e.g. "a100-3/5".
func (c *Cluster) GPUName(g GPUID) string {
	if c.Check(g) != nil {
		return fmt.Sprintf("gpu#%d", int(g))
	}
	s := c.gpuServer[g]
	return fmt.Sprintf("%s/%d", c.servers[s].ID, int(g)-c.first[s])
}

// AllGPUs returns the set of every GPU of the cluster.
func (c *Cluster) AllGPUs() GPUSet {
	n := c.NumGPUs()
	s := NewGPUSet(n)
	for i := range s.words {
		s.words[i] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		s.words[len(s.words)-1] = (1 << uint(r)) - 1
	}
	return s
}

// PerServer counts, for each server, how many of the given GPUs it holds. The result has
// NumServers() entries. It is the shape of a placement: "22" is two GPUs on each of two servers.
func (c *Cluster) PerServer(gpus []GPUID) []int {
	counts := make([]int, len(c.servers))
	for _, g := range gpus {
		counts[c.gpuServer[g]]++
	}
	return counts
}

// ServersSpanned returns the number of distinct servers the given GPUs lie on.
func (c *Cluster) ServersSpanned(gpus []GPUID) int {
	n := 0
	seen := make(map[int32]struct{}, 4)
	for _, g := range gpus {
		s := c.gpuServer[g]
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			n++
		}
	}
	return n
}

// totalPeakFLOPS returns the sum of the GPUs' peak throughput in FLOP/s.
func (c *Cluster) totalPeakFLOPS() float64 {
	t := 0.0
	for _, s := range c.servers {
		t += float64(s.GPUs) * s.GPU.PeakFLOPS
	}
	return t
}
