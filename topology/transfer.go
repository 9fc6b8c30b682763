package topology

import (
	"math"
	"slices"
)

// LinkKind says which kind of shared resource a Link is.
type LinkKind uint8

const (
	// IntraLink is a server's GPU-to-GPU fabric. It is shared among jobs only when the
	// server's spec says IntraShared (a PCIe tree); an NVSwitch is not a shared link.
	IntraLink LinkKind = iota
	// NICLink is a server's set of network interfaces.
	NICLink
	// UplinkLink is a rack's uplink to the rest of the cluster.
	UplinkLink
)

// String returns "intra", "nic" or "uplink".
func (k LinkKind) String() string {
	switch k {
	case IntraLink:
		return "intra"
	case NICLink:
		return "nic"
	case UplinkLink:
		return "uplink"
	}
	return "link?"
}

// Link names one shared resource: the intra-server fabric or the NICs of a server (Index is the
// server index), or the uplink of a rack (Index is the rack index).
type Link struct {
	Kind  LinkKind
	Index int
}

// LinkLoad tells transfer-time functions how many flows of other jobs share each link: a link
// with load k gives a flow 1/(k+1) of its bandwidth (fair sharing). A nil LinkLoad means the
// links are idle.
type LinkLoad map[Link]float64

func (l LinkLoad) share(k Link) float64 {
	if l == nil {
		return 1
	}
	v := l[k]
	if !(v > 0) {
		return 1
	}
	return 1 + v
}

// P2PTime returns the time in seconds to send the given bytes from GPU a to GPU b: latency plus
// bytes over the bandwidth of the path (the intra-server fabric, or one NIC at each end and, across
// racks, the oversubscribed uplinks), each divided among the flows that load says share it.
// Sending to oneself takes no time. a and b must be GPUs of the cluster (see Check).
func (c *Cluster) P2PTime(a, b GPUID, bytes float64, load LinkLoad) float64 {
	if a == b || bytes <= 0 {
		return 0
	}
	sa, sb := int(c.gpuServer[a]), int(c.gpuServer[b])
	if sa == sb {
		s := &c.servers[sa]
		return s.IntraLatency + bytes/c.intraBW(sa, load)
	}
	bw := math.Min(c.nicBW(sa, 1, load), c.nicBW(sb, 1, load))
	bw = c.crossRack(sa, sb, bw, load)
	lat := math.Max(c.servers[sa].NICLatency, c.servers[sb].NICLatency)
	return lat + bytes/bw
}

func (c *Cluster) intraBW(s int, load LinkLoad) float64 {
	sp := &c.servers[s]
	if sp.IntraShared {
		return sp.IntraBandwidth / load.share(Link{IntraLink, s})
	}
	return sp.IntraBandwidth
}

// nicBW is the bandwidth a job with m GPUs on server s gets from the server's NICs.
func (c *Cluster) nicBW(s, m int, load LinkLoad) float64 {
	sp := &c.servers[s]
	return float64(sp.NICChannels(m)) * sp.NICBandwidth / load.share(Link{NICLink, s})
}

func (c *Cluster) crossRack(sa, sb int, bw float64, load LinkLoad) float64 {
	ra, rb := c.rackOf[sa], c.rackOf[sb]
	if ra == rb || ra < 0 || rb < 0 {
		return bw
	}
	f := math.Max(c.racks[ra].Oversubscription*load.share(Link{UplinkLink, ra}),
		c.racks[rb].Oversubscription*load.share(Link{UplinkLink, rb}))
	return bw / f
}

// Ring describes the ring that a collective over a set of GPUs runs on: the GPUs ordered rack by
// rack and server by server (the order NCCL's ring builder favours), the bandwidth of its slowest
// hop in bytes per second, and the largest per-message latency of a hop in seconds. Across servers
// a job with m GPUs on a server drives ServerSpec.NICChannels(m) NICs at once (one ring channel
// per NIC), so the bandwidth of an inter-server hop is that many NICs' worth.
type Ring struct {
	GPUs      []GPUID
	Bandwidth float64
	Latency   float64
	Servers   int
}

// ringOrder compares two GPUs in ring order: by rack, then server, then id.
func (c *Cluster) ringOrder(x, y GPUID) int {
	sx, sy := int(c.gpuServer[x]), int(c.gpuServer[y])
	if rx, ry := c.rackOf[sx], c.rackOf[sy]; rx != ry {
		return rx - ry
	}
	if sx != sy {
		return sx - sy
	}
	return int(x - y)
}

// RingOf returns the ring a collective over gpus runs on. Duplicate GPUs are counted once. For
// fewer than two GPUs the ring has infinite bandwidth and no latency.
func (c *Cluster) RingOf(gpus []GPUID, load LinkLoad) Ring {
	r := Ring{GPUs: slices.Clone(gpus), Bandwidth: math.Inf(1)}
	slices.SortFunc(r.GPUs, c.ringOrder)
	r.GPUs = slices.Compact(r.GPUs)
	if len(r.GPUs) < 2 {
		r.Servers = len(r.GPUs)
		return r
	}
	// Walk the ring once: runs of GPUs on one server, then a hop to the next server.
	type run struct{ server, n int }
	runs := make([]run, 0, 8)
	for _, g := range r.GPUs {
		s := int(c.gpuServer[g])
		if len(runs) > 0 && runs[len(runs)-1].server == s {
			runs[len(runs)-1].n++
		} else {
			runs = append(runs, run{s, 1})
		}
	}
	r.Servers = len(runs)
	for _, u := range runs {
		if u.n > 1 {
			r.Bandwidth = math.Min(r.Bandwidth, c.intraBW(u.server, load))
			r.Latency = math.Max(r.Latency, c.servers[u.server].IntraLatency)
		}
	}
	if len(runs) > 1 {
		for i, u := range runs {
			v := runs[(i+1)%len(runs)]
			bw := math.Min(c.nicBW(u.server, u.n, load), c.nicBW(v.server, v.n, load))
			bw = c.crossRack(u.server, v.server, bw, load)
			r.Bandwidth = math.Min(r.Bandwidth, bw)
			r.Latency = math.Max(r.Latency, math.Max(c.servers[u.server].NICLatency, c.servers[v.server].NICLatency))
		}
	}
	return r
}

// allReduceTime returns the time in seconds of a ring all-reduce of the given bytes over the
// ring: 2(n-1) steps, each moving bytes/n over the slowest hop, so 2(n-1)/n x bytes / bandwidth
// plus 2(n-1) x latency.
func (r Ring) allReduceTime(bytes float64) float64 {
	n := float64(len(r.GPUs))
	if n < 2 || bytes <= 0 {
		return 0
	}
	return 2*(n-1)/n*bytes/r.Bandwidth + 2*(n-1)*r.Latency
}

// allGatherTime returns the time in seconds of a ring all-gather (or reduce-scatter) whose
// result is the given bytes: (n-1)/n x bytes / bandwidth plus (n-1) x latency.
func (r Ring) allGatherTime(bytes float64) float64 {
	n := float64(len(r.GPUs))
	if n < 2 || bytes <= 0 {
		return 0
	}
	return (n-1)/n*bytes/r.Bandwidth + (n-1)*r.Latency
}

// RingAllReduceTime returns the time in seconds of a ring all-reduce of the given bytes over
// gpus; see RingOf and Ring.AllReduceTime. Every GPU must belong to the cluster (see Check).
func (c *Cluster) RingAllReduceTime(gpus []GPUID, bytes float64, load LinkLoad) float64 {
	return c.RingOf(gpus, load).allReduceTime(bytes)
}

// Links returns the shared links that collective traffic among gpus crosses: each server's NICs
// when the GPUs span several servers, each rack's uplink when they span several racks, and the
// intra-server fabric of every server with at least two of the GPUs whose fabric is shared
// (IntraShared). The host adds a job's links to the LinkLoad of the other jobs on them.
func (c *Cluster) Links(gpus []GPUID) []Link {
	per := make(map[int]int, 4)
	racks := make(map[int]struct{}, 2)
	for _, g := range gpus {
		s := int(c.gpuServer[g])
		per[s]++
		racks[c.rackOf[s]] = struct{}{}
	}
	var out []Link
	for s, n := range per {
		if n > 1 && c.servers[s].IntraShared {
			out = append(out, Link{IntraLink, s})
		}
		if len(per) > 1 {
			out = append(out, Link{NICLink, s})
		}
	}
	if len(racks) > 1 {
		for r := range racks {
			if r >= 0 {
				out = append(out, Link{UplinkLink, r})
			}
		}
	}
	slices.SortFunc(out, func(a, b Link) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		return a.Index - b.Index
	})
	return out
}
