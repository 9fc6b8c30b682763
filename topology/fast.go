package topology

import (
	"math"
	"slices"
)

// This file holds allocation-free variants of RingOf and P2PTime for hot paths (the graph
// package evaluates thousands of rings per iteration-time query). They compute exactly the same
// figures as RingOf and P2PTime; fast_test.go checks that on random clusters and loads.

// DenseLoad is a LinkLoad in dense form, for hot paths that evaluate many transfers against the
// same load: Intra[s] and NIC[s] are the loads (other flows) on server s's intra-server fabric
// and NICs, Uplink[r] the load on rack r's uplink, with the meaning of LinkLoad values. A nil or
// short slice means idle links. A nil *DenseLoad means every link is idle.
type DenseLoad struct {
	Intra  []float64
	NIC    []float64
	Uplink []float64
}

// FillDenseLoad writes l in dense form into dst, reusing dst's slices when they are long
// enough, and returns dst. Entries of l for links outside the cluster are ignored; NaN and
// negative loads count as idle, as in LinkLoad.
func (c *Cluster) FillDenseLoad(l LinkLoad, dst *DenseLoad) *DenseLoad {
	if dst == nil {
		dst = &DenseLoad{}
	}
	dst.Intra = resetFloats(dst.Intra, len(c.servers))
	dst.NIC = resetFloats(dst.NIC, len(c.servers))
	dst.Uplink = resetFloats(dst.Uplink, len(c.racks))
	for k, v := range l {
		if !(v > 0) {
			continue
		}
		switch k.Kind {
		case IntraLink:
			if k.Index >= 0 && k.Index < len(dst.Intra) {
				dst.Intra[k.Index] = v
			}
		case NICLink:
			if k.Index >= 0 && k.Index < len(dst.NIC) {
				dst.NIC[k.Index] = v
			}
		case UplinkLink:
			if k.Index >= 0 && k.Index < len(dst.Uplink) {
				dst.Uplink[k.Index] = v
			}
		}
	}
	return dst
}

func resetFloats(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// denseShare is LinkLoad.share for a dense slice.
func denseShare(s []float64, i int) float64 {
	if i < 0 || i >= len(s) {
		return 1
	}
	v := s[i]
	if !(v > 0) {
		return 1
	}
	return 1 + v
}

func (d *DenseLoad) intra(s int) float64 {
	if d == nil {
		return 1
	}
	return denseShare(d.Intra, s)
}

func (d *DenseLoad) nic(s int) float64 {
	if d == nil {
		return 1
	}
	return denseShare(d.NIC, s)
}

func (d *DenseLoad) uplink(r int) float64 {
	if d == nil {
		return 1
	}
	return denseShare(d.Uplink, r)
}

func (c *Cluster) intraBWDense(s int, load *DenseLoad) float64 {
	sp := &c.servers[s]
	if sp.IntraShared {
		return sp.IntraBandwidth / load.intra(s)
	}
	return sp.IntraBandwidth
}

func (c *Cluster) nicBWDense(s, m int, load *DenseLoad) float64 {
	sp := &c.servers[s]
	return float64(sp.NICChannels(m)) * sp.NICBandwidth / load.nic(s)
}

func (c *Cluster) crossRackDense(sa, sb int, bw float64, load *DenseLoad) float64 {
	ra, rb := c.rackOf[sa], c.rackOf[sb]
	if ra == rb || ra < 0 || rb < 0 {
		return bw
	}
	f := max(c.racks[ra].Oversubscription*load.uplink(ra),
		c.racks[rb].Oversubscription*load.uplink(rb))
	return bw / f
}

// RingStats describes the ring a collective over a set of GPUs runs on (see RingOf), with its
// intra-server and inter-server hops reported apart so that callers can apply different
// efficiencies to them. A kind of hop the ring does not have reports an infinite bandwidth and
// a zero latency.
type RingStats struct {
	// GPUs is the number of distinct GPUs on the ring.
	GPUs int
	// Servers is the number of servers the ring visits.
	Servers int
	// IntraBandwidth is the bandwidth of the slowest intra-server hop, in bytes per second.
	IntraBandwidth float64
	// IntraLatency is the largest latency of an intra-server hop, in seconds.
	IntraLatency float64
	// InterBandwidth is the bandwidth of the slowest inter-server hop, in bytes per second.
	InterBandwidth float64
	// InterLatency is the largest latency of an inter-server hop, in seconds.
	InterLatency float64
}

// bandwidth returns the bandwidth of the ring's slowest hop in bytes per second: RingOf's
// Bandwidth.
func (r RingStats) bandwidth() float64 { return math.Min(r.IntraBandwidth, r.InterBandwidth) }

// Latency returns the largest per-message latency of a hop in seconds: RingOf's Latency.
func (r RingStats) Latency() float64 { return math.Max(r.IntraLatency, r.InterLatency) }

// RingStatsOf returns the figures of RingOf(gpus, load) without allocating: buf is scratch space
// for sorting a copy of gpus; it is grown when too short and returned for reuse. load may be
// nil (idle links). Every GPU must belong to the cluster (see Check).
func (c *Cluster) RingStatsOf(gpus []GPUID, load *DenseLoad, buf []GPUID) (RingStats, []GPUID) {
	r := RingStats{IntraBandwidth: math.Inf(1), InterBandwidth: math.Inf(1)}
	buf = append(buf[:0], gpus...)
	if len(buf) > 1 && !c.strictlyRingOrdered(buf) {
		slices.SortFunc(buf, c.ringOrder)
		buf = slices.Compact(buf)
	}
	r.GPUs = len(buf)
	if len(buf) < 2 {
		r.Servers = len(buf)
		return r, buf
	}
	// Walk the runs of GPUs on one server. Each run's NIC bandwidth is computed once; each hop
	// between consecutive runs (and from the last back to the first) takes the smaller of its
	// ends, slowed when it crosses racks, exactly as RingOf does.
	var first, prev ringRun
	cur := ringRun{server: int(c.gpuServer[buf[0]])}
	for i, g := range buf {
		s := int(c.gpuServer[g])
		if s != cur.server {
			c.closeRingRun(&r, &cur, &prev, &first, load)
			cur = ringRun{server: s}
		}
		cur.n++
		if i == len(buf)-1 {
			c.closeRingRun(&r, &cur, &prev, &first, load)
		}
	}
	if r.Servers > 1 {
		c.ringHop(&r, &prev, &first, load)
	}
	return r, buf
}

// strictlyRingOrdered reports whether gpus are already in RingOf's order (rack, server, id)
// without duplicates, so that sorting can be skipped.
func (c *Cluster) strictlyRingOrdered(gpus []GPUID) bool {
	prev := gpus[0]
	ps := int(c.gpuServer[prev])
	pr := c.rackOf[ps]
	for _, g := range gpus[1:] {
		s := int(c.gpuServer[g])
		r := c.rackOf[s]
		if r < pr || (r == pr && (s < ps || (s == ps && g <= prev))) {
			return false
		}
		prev, ps, pr = g, s, r
	}
	return true
}

// ringRun is a maximal sequence of a ring's GPUs on one server.
type ringRun struct {
	server, n, rack int
	nicBW           float64
}

func (c *Cluster) closeRingRun(r *RingStats, cur, prev, first *ringRun, load *DenseLoad) {
	r.Servers++
	sp := &c.servers[cur.server]
	if cur.n > 1 {
		r.IntraBandwidth = min(r.IntraBandwidth, c.intraBWDense(cur.server, load))
		r.IntraLatency = max(r.IntraLatency, sp.IntraLatency)
	}
	cur.rack = c.rackOf[cur.server]
	cur.nicBW = c.nicBWDense(cur.server, cur.n, load)
	if r.Servers == 1 {
		*first = *cur
	} else {
		r.InterLatency = max(r.InterLatency, c.servers[first.server].NICLatency, sp.NICLatency)
		c.ringHop(r, prev, cur, load)
	}
	*prev = *cur
}

// ringHop accounts for the inter-server hop from run u to run v.
func (c *Cluster) ringHop(r *RingStats, u, v *ringRun, load *DenseLoad) {
	bw := min(u.nicBW, v.nicBW)
	if u.rack != v.rack && u.rack >= 0 && v.rack >= 0 {
		bw = c.crossRackDense(u.server, v.server, bw, load)
	}
	r.InterBandwidth = min(r.InterBandwidth, bw)
}

// IntraStats returns the bandwidth in bytes per second and the latency in seconds of one hop
// between two GPUs of server s under load (nil: idle links), as RingOf and P2PTime use them: a
// ring over n >= 2 GPUs of one server has this bandwidth and latency. s must be a server of
// the cluster.
func (c *Cluster) IntraStats(s int, load *DenseLoad) (bandwidth, latency float64) {
	return c.intraBWDense(s, load), c.servers[s].IntraLatency
}

// P2PStats returns the bandwidth in bytes per second and the latency in seconds of the path
// P2PTime uses from GPU a to GPU b under load (nil: idle links), and whether it leaves the
// server. For a == b it returns an infinite bandwidth and no latency. P2PTime(a, b, bytes, l)
// equals latency + bytes/bandwidth for a != b and bytes > 0. a and b must be GPUs of the
// cluster (see Check).
func (c *Cluster) P2PStats(a, b GPUID, load *DenseLoad) (bandwidth, latency float64, inter bool) {
	if a == b {
		return math.Inf(1), 0, false
	}
	sa, sb := int(c.gpuServer[a]), int(c.gpuServer[b])
	if sa == sb {
		return c.intraBWDense(sa, load), c.servers[sa].IntraLatency, false
	}
	bw := min(c.nicBWDense(sa, 1, load), c.nicBWDense(sb, 1, load))
	bw = c.crossRackDense(sa, sb, bw, load)
	return bw, max(c.servers[sa].NICLatency, c.servers[sb].NICLatency), true
}
