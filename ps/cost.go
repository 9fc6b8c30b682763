package ps

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

// ErrInvalid reports bad input to the cost functions: no workers, no shards, a shard on a
// server the cluster lacks, a non-finite or negative size or constant.
var ErrInvalid = errors.New("ps: invalid input")

// Constants are the parameter-server specifics of the model that the measurements beside the
// project do not cover (they hold ring all-reduce step times only); each is a stated modelling
// assumption, not a fitted value.
type Constants struct {
	// LocalBandwidth is the bandwidth in bytes per second, per direction, between a worker's
	// GPU and a PS shard on the same server (host memory over PCIe: the GPU's copy engine to
	// pinned host memory; shared memory between the processes). Default 12e9 (PCIe 3.0 x16 at
	// about 75% of its 15.75 GB/s).
	LocalBandwidth float64
	// AggregateRate is the bytes of gradient per second one CPU core of a PS shard sums into
	// its parameters and updates (a memory-bound streaming loop). Default 2e9.
	AggregateRate float64
}

// DefaultConstants returns the constants used unless told otherwise.
func DefaultConstants() Constants {
	return Constants{LocalBandwidth: 12e9, AggregateRate: 2e9}
}

func (k Constants) orDefault() Constants {
	d := DefaultConstants()
	if !(k.LocalBandwidth > 0) {
		k.LocalBandwidth = d.LocalBandwidth
	}
	if !(k.AggregateRate > 0) {
		k.AggregateRate = d.AggregateRate
	}
	return k
}

// Shards splits a model's parameters over p shards from its layer graph, as parameter-server
// frameworks assign tensors to servers: layers larger than an even share (ParamBytes/p) are cut
// into equal slices of at most that share (MXNet's big-array split), then every piece goes, the
// largest first, to the least-loaded shard. It returns the bytes of each shard (their sum is
// the model's ParamBytes), or an error for p < 1.
func Shards(m *graph.Model, p int) ([]float64, error) {
	if p < 1 {
		return nil, fmt.Errorf("%w: %d PS shards (need at least 1)", ErrInvalid, p)
	}
	total := m.ParamBytes()
	out := make([]float64, p)
	if p == 1 {
		out[0] = total
		return out, nil
	}
	even := total / float64(p)
	var pieces []float64
	for i := range m.NumLayers() {
		b := m.Layer(i).ParamBytes
		if b <= 0 {
			continue
		}
		if b > even {
			n := math.Ceil(b / even)
			for range int(n) {
				pieces = append(pieces, b/n)
			}
			continue
		}
		pieces = append(pieces, b)
	}
	slices.SortFunc(pieces, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	for _, b := range pieces {
		k := 0
		for i := 1; i < p; i++ {
			if out[i] < out[k] {
				k = i
			}
		}
		out[k] += b
	}
	return out, nil
}

// Comm is the parameter exchange of one iteration of a placed PS job, in seconds and bytes.
type Comm struct {
	// Push is the time for every worker to send each shard its slice of the gradient; Pull the
	// time to bring the new parameters back. Each is the slowest server's: its NIC bytes in the
	// busier direction over its NIC bandwidth (shared with other jobs), or a worker's whole
	// gradient (every worker moves all of it over its own PCIe link, to local shards directly
	// and to remote ones through the NIC) over LocalBandwidth, whichever is longer, plus one
	// message latency when bytes cross the network.
	Push, Pull float64
	// Aggregate is the slowest shard's time to sum the workers' gradients and update its
	// parameters on its CPU cores.
	Aggregate float64
	// CrossServerBytes is the bytes per iteration that leave a server (push and pull).
	CrossServerBytes float64
	// LocalBytes is the bytes per iteration between workers and shards on the same server.
	LocalBytes float64
}

// Time returns Push + Aggregate + Pull.
func (c Comm) Time() float64 { return c.Push + c.Aggregate + c.Pull }

// Exchange returns the parameter exchange of one iteration of a PS job whose worker i runs on
// workers[i], whose shard k (shards[k] bytes) runs on server psServers[k] with cpus cores, on
// cluster c with other jobs' flows as load says (nil: idle links). A worker and a shard on the
// same server exchange over LocalBandwidth (never the NIC); across servers every byte crosses
// the sending server's NIC out and the receiving server's NIC in, both shared with the other
// jobs on them (1/(k+1) of the bandwidth), and across racks the uplinks' oversubscription.
func Exchange(c *topology.Cluster, workers []topology.GPUID, psServers []int, shards []float64, cpus int, load topology.LinkLoad, k Constants) (Comm, error) {
	k = k.orDefault()
	if len(workers) == 0 || len(psServers) == 0 || len(psServers) != len(shards) {
		return Comm{}, fmt.Errorf("%w: %d workers, %d shards on %d servers", ErrInvalid, len(workers), len(shards), len(psServers))
	}
	type srv struct {
		m       int     // workers here
		shard   float64 // bytes of the shards here
		in, out float64 // push: NIC bytes in, out (pull swaps them)
		local   float64 // bytes between workers and shards here
	}
	per := make(map[int]*srv, 4)
	get := func(s int) *srv {
		x := per[s]
		if x == nil {
			x = &srv{}
			per[s] = x
		}
		return x
	}
	for _, g := range workers {
		if err := c.Check(g); err != nil {
			return Comm{}, fmt.Errorf("%w: worker on %w", ErrInvalid, err)
		}
		get(c.ServerOf(g)).m++
	}
	total := 0.0
	for i, s := range psServers {
		b := shards[i]
		if s < 0 || s >= c.NumServers() || !(b >= 0) || math.IsInf(b, 0) {
			return Comm{}, fmt.Errorf("%w: shard %d (%v bytes) on server %d of %d", ErrInvalid, i, b, s, c.NumServers())
		}
		get(s).shard += b
		total += b
	}
	w := float64(len(workers))
	var out Comm
	racks := make(map[int]struct{}, 2)
	for s := range per {
		racks[c.RackOf(s)] = struct{}{}
	}
	worst := 0.0
	lat := 0.0
	// Servers in order: the byte totals are sums of floats, which a map's varying order would
	// round differently from run to run.
	servers := make([]int, 0, len(per))
	for s := range per {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	for _, s := range servers {
		x := per[s]
		m := float64(x.m)
		// Push: the workers here send every remote shard its slice; the shards here receive
		// from every remote worker. Pull is the reverse, with the same bytes.
		x.out = m * (total - x.shard)
		x.in = (w - m) * x.shard
		x.local = m * x.shard
		out.CrossServerBytes += 2 * x.out // push out + pull out (= push in elsewhere)
		out.LocalBytes += 2 * x.local
		sp := c.Server(s)
		nic := float64(max(sp.NICChannels(max(x.m, 1)), 1)) * sp.NICBandwidth
		if load != nil {
			if v := load[topology.Link{Kind: topology.NICLink, Index: s}]; v > 0 {
				nic /= 1 + v
			}
			if len(racks) > 1 {
				r := c.RackOf(s)
				if r >= 0 {
					f := c.Rack(r).Oversubscription
					if v := load[topology.Link{Kind: topology.UplinkLink, Index: r}]; v > 0 {
						f *= 1 + v
					}
					nic /= max(f, 1)
				}
			}
		} else if len(racks) > 1 {
			if r := c.RackOf(s); r >= 0 {
				nic /= max(c.Rack(r).Oversubscription, 1)
			}
		}
		t := 0.0
		if b := max(x.in, x.out); b > 0 {
			if !(nic > 0) {
				return Comm{}, fmt.Errorf("%w: server %s has no NIC bandwidth", ErrInvalid, sp.ID)
			}
			t = b / nic
			lat = max(lat, sp.NICLatency)
		}
		// Every worker moves its whole gradient out and the whole model in over its own PCIe
		// link, to local shards directly and to remote ones on the way to the NIC.
		if x.m > 0 {
			t = max(t, total/k.LocalBandwidth)
		}
		worst = max(worst, t)
	}
	out.Push = worst + lat
	out.Pull = worst + lat
	big := 0.0
	for _, b := range shards {
		big = max(big, b)
	}
	out.Aggregate = w * big / (float64(max(cpus, 1)) * k.AggregateRate)
	return out, nil
}
