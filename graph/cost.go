package graph

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/topology"
)

// Efficiency holds the handful of constants of the cost model that are fitted rather than
// derived. The zero value stands for DefaultEfficiency().
type Efficiency struct {
	// Compute is the achieved fraction of a GPU's peak FLOP/s, in (0, 1].
	Compute float64 `json:"compute"`
	// IntraComm is the achieved fraction of the intra-server bandwidth (NVLink, PCIe), in (0, 1].
	IntraComm float64 `json:"intra_comm"`
	// InterComm is the achieved fraction of the inter-server bandwidth (NICs, uplinks), in
	// (0, 1].
	InterComm float64 `json:"inter_comm"`
	// Overlap is the fraction of the data-parallel gradient synchronisation that can run during
	// the last micro-batch's backward pass, in [0, 1]: at most Overlap x DPComm, and never more
	// than that backward pass lasts, is hidden.
	Overlap float64 `json:"overlap"`
	// StepOverhead is a fixed time per iteration in seconds (optimizer step, data loading,
	// framework), at least 0.
	StepOverhead float64 `json:"step_overhead"`
	// RingLayout says how ring collectives use the paths between servers (see RingLayout): the
	// zero value, ServerGrouped, suits NCCL on full-duplex links; the Pollux T4 testbed's
	// measurements call for HalfDuplexPairs. It lives beside the constants because it is chosen
	// by calibration together with them (Calibrated returns both).
	RingLayout RingLayout `json:"ring_layout,omitempty"`
}

// DefaultEfficiency returns the constants used when none are given: Compute 0.5 (Megatron-LM
// reaches 44-52% of A100 peak on GPT models, Narayanan et al. 2021), IntraComm and InterComm
// 0.8 (NCCL's bus bandwidth is typically 80-90% of the line rate on NVLink and InfiniBand),
// Overlap 0.8 (PyTorch DDP overlaps all gradient buckets but the last ones with the backward
// pass), StepOverhead 0, RingLayout ServerGrouped. For the T4/Ethernet testbed see Calibrated.
func DefaultEfficiency() Efficiency {
	return Efficiency{Compute: 0.5, IntraComm: 0.8, InterComm: 0.8, Overlap: 0.8, StepOverhead: 0}
}

// Validate returns an error wrapping ErrInvalidOptions naming the first constant outside its
// range.
func (e Efficiency) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute", e.Compute}, {"intra_comm", e.IntraComm}, {"inter_comm", e.InterComm}} {
		if !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("%w: efficiency %s %v must be in (0, 1]", ErrInvalidOptions, f.name, f.v)
		}
	}
	if !(e.Overlap >= 0 && e.Overlap <= 1) {
		return fmt.Errorf("%w: efficiency overlap %v must be in [0, 1]", ErrInvalidOptions, e.Overlap)
	}
	if !finiteNonNeg(e.StepOverhead) {
		return fmt.Errorf("%w: efficiency step_overhead %v must be a non-negative finite number of seconds", ErrInvalidOptions, e.StepOverhead)
	}
	if !e.RingLayout.valid() {
		return fmt.Errorf("%w: efficiency ring_layout %d is not a known RingLayout", ErrInvalidOptions, e.RingLayout)
	}
	return nil
}

// Options parameterises IterationTime.
type Options struct {
	// Efficiency holds the fitted constants; the zero value means DefaultEfficiency().
	Efficiency Efficiency
	// Load counts other jobs' flows on shared links (see topology.LinkLoad); nil means idle.
	Load topology.LinkLoad
}

func (o Options) efficiency() (Efficiency, error) {
	e := o.Efficiency
	if e == (Efficiency{}) {
		e = DefaultEfficiency()
	}
	return e, e.Validate()
}

// Breakdown is the time of one training iteration of a placed job, in seconds, split by cause.
// Total = Compute + Bubble + TP + PP + DP + Overhead.
type Breakdown struct {
	// Compute is the bottleneck stage's forward and backward (and recompute) time over the
	// micro-batches.
	Compute float64 `json:"compute"`
	// Bubble is the pipeline fill and drain: (PP - 1) x the bottleneck stage's micro-batch time.
	Bubble float64 `json:"bubble"`
	// TP is the bottleneck stage's tensor-parallel all-reduce time over the micro-batches.
	TP float64 `json:"tp"`
	// PP is the bottleneck stage's point-to-point activation and gradient time over the
	// micro-batches.
	PP float64 `json:"pp"`
	// DP is the data-parallel gradient synchronisation left exposed after overlap with the
	// backward pass.
	DP float64 `json:"dp"`
	// Overhead is the fixed per-iteration overhead (Efficiency.StepOverhead).
	Overhead float64 `json:"overhead"`
	// Total is the iteration time.
	Total float64 `json:"total"`
	// DPComm is the full data-parallel synchronisation time before overlap (slowest stage).
	DPComm float64 `json:"dp_comm"`
	// MicroBatch is the bottleneck stage's time per micro-batch (compute + TP + PP).
	MicroBatch float64 `json:"micro_batch"`
	// Stage is the bottleneck stage.
	Stage int `json:"stage"`
}

// String formats the breakdown in milliseconds.
func (b Breakdown) String() string {
	return fmt.Sprintf("total %.3f ms = compute %.3f + bubble %.3f + tp %.3f + pp %.3f + dp %.3f (of %.3f) + overhead %.3f (bottleneck stage %d)",
		b.Total*1e3, b.Compute*1e3, b.Bubble*1e3, b.TP*1e3, b.PP*1e3, b.DP*1e3, b.DPComm*1e3, b.Overhead*1e3, b.Stage)
}

// IterationTime compiles model and plan and returns the iteration time of the job placed on
// cluster (see Compiled.IterationTime).
func IterationTime(model *Model, plan Plan, cluster *topology.Cluster, placement []topology.GPUID, o Options) (Breakdown, error) {
	c, err := Compile(model, plan)
	if err != nil {
		return Breakdown{}, err
	}
	return c.IterationTime(cluster, placement, o)
}

// IterationTime returns the time of one training iteration of the job with worker rank r on GPU
// placement[r] of cluster, broken down by cause. It does not check memory (see CheckMemory).
// Errors wrap ErrInvalidPlacement (wrong length, unknown or repeated GPU) or ErrInvalidOptions.
//
// With b samples per micro-batch, m micro-batches, and for each stage s: forward FLOPs F_s per
// sample, slowest GPU peak P_s, efficiency constants E (Compute, IntraComm, InterComm,
// Overlap, StepOverhead):
//
//	fwd_s     = b F_s / TP / (P_s x E.Compute)
//	compute_s = 3 fwd_s (4 fwd_s with checkpointing: the forward pass is recomputed)
//	tp_s      = passes x ring all-reduce over the TP group of b x TPAllReduceBytes_s
//	            (passes = 2: forward and backward; 3 with checkpointing), with the ring's
//	            latency paid once per all-reduce; slowest TP group of the stage
//	pp_s      = p2p(b x SendBytes_s / TP to stage s+1) + p2p(b x SendBytes_{s-1} / TP to s-1)
//	            (activations forward, gradients backward; slowest pair of the boundary)
//	T_s       = compute_s + tp_s + pp_s;  T = max_s T_s (the bottleneck stage)
//	pipeline  = (m + PP - 1) x T   (1F1B; Bubble = (PP - 1) x T)
//	dp_s      = ring all-reduce over the stage's DP ring of ParamBytes_s / TP bytes
//	            (x 1.5 under ZeRO-3, which adds parameter all-gathers); slowest ring
//	exposed_s = dp_s - min(E.Overlap x dp_s, backward time of one micro-batch of stage s)
//	Total     = pipeline + max_s exposed_s + E.StepOverhead
//
// A ring all-reduce of B bytes over n GPUs takes 2(n-1)/n x B / bw + 2(n-1) x latency, where bw
// is the smaller of the ring's slowest intra-server hop x E.IntraComm and its slowest
// inter-server hop x E.InterComm (topology's ring model), the latter divided by 2 when
// E.RingLayout is HalfDuplexPairs and the ring spans exactly two servers (its hops A->B and
// B->A share one path), and a point-to-point send takes latency + bytes / (bandwidth x the
// efficiency of its kind of link).
//
// Links are shared: o.Load counts other jobs' flows on each link, and the job's own concurrent
// flows share links too. All DP rings run at once, so a server whose NICs carry rings needing
// D NIC-channels in total (a ring with m GPUs there drives min(m, NICs)) gives each
// max(1, D/NICs) less bandwidth, and a shared (PCIe) fabric is split among the rings with two or
// more GPUs on it; the same holds for the TP groups and for the pipeline's point-to-point flows
// (each using one NIC). Rack uplinks carry only the load o.Load gives them.
func (c *Compiled) IterationTime(cluster *topology.Cluster, placement []topology.GPUID, o Options) (Breakdown, error) {
	eff, err := o.efficiency()
	if err != nil {
		return Breakdown{}, err
	}
	if cluster == nil {
		return Breakdown{}, fmt.Errorf("%w: no cluster", ErrInvalidPlacement)
	}
	p := c.plan
	if len(placement) != p.Workers() {
		return Breakdown{}, fmt.Errorf("%w: plan %v has %d workers but the placement lists %d GPUs", ErrInvalidPlacement, p, p.Workers(), len(placement))
	}
	ev := newEvaluator(cluster, o.Load, len(placement))
	if err := ev.place(placement); err != nil {
		return Breakdown{}, err
	}
	return c.timing(c.geometry(ev, placement), eff), nil
}

// evaluator holds the scratch space of one IterationTime call.
type evaluator struct {
	cl    *topology.Cluster
	nics  []float64 // NICs per server
	peak  []float64 // GPU peak FLOP/s per server
	ext   *topology.DenseLoad
	load  topology.DenseLoad // the current phase's load: ext plus the job's own flows
	nic   []float64          // NIC-channel demand per server in the current phase
	intra []float64          // flows on each server's fabric in the current phase
	srv   []int32            // server of each rank's GPU
	cnt   []int32
	// touched lists the servers of the group being added; contrib saves its demand so that
	// an identical group can be added again cheaply.
	touched []int32
	contrib []demand
	buf     []topology.GPUID
	ringBuf []topology.GPUID // the DP rings, gathered
	ringSrv []int32          // their servers
}

// demand is one group's contribution to a server's NIC channels and fabric flows.
type demand struct {
	server     int32
	nic, intra float64
}

func newEvaluator(cl *topology.Cluster, l topology.LinkLoad, workers int) *evaluator {
	n := cl.NumServers()
	floats := make([]float64, 6*n)
	ints := make([]int32, n+workers)
	ev := &evaluator{
		cl:    cl,
		nics:  floats[0*n : 1*n],
		nic:   floats[1*n : 2*n],
		intra: floats[2*n : 3*n],
		peak:  floats[5*n : 6*n],
		cnt:   ints[:n],
		srv:   ints[n:],
		ext:   cl.FillDenseLoad(l, nil),
	}
	ev.load.NIC = floats[3*n : 4*n]
	ev.load.Intra = floats[4*n : 5*n]
	ev.load.Uplink = ev.ext.Uplink
	for s := range ev.nics {
		first, _ := cl.GPUsOf(s)
		ev.nics[s] = float64(cl.Server(s).NICs)
		ev.peak[s] = cl.GPU(first).PeakFLOPS
	}
	return ev
}

// place validates a placement (GPUs of the cluster, none twice) and records each rank's server.
func (ev *evaluator) place(placement []topology.GPUID) error {
	cl := ev.cl
	nGPUs := cl.NumGPUs()
	seen := make([]uint64, (nGPUs+63)/64)
	for r, g := range placement {
		if g < 0 || int(g) >= nGPUs {
			return fmt.Errorf("%w: worker %d: %w", ErrInvalidPlacement, r, cl.Check(g))
		}
		w, bit := int(g)/64, uint64(1)<<(uint(g)%64)
		if seen[w]&bit != 0 {
			return fmt.Errorf("%w: GPU %d (%s) is used twice (again by worker %d)", ErrInvalidPlacement, g, cl.GPUName(g), r)
		}
		seen[w] |= bit
		ev.srv[r] = int32(cl.ServerOf(g))
	}
	return nil
}

// resetDemand starts a new phase.
func (ev *evaluator) resetDemand() {
	clear(ev.nic)
	clear(ev.intra)
}

// addGroup records a collective over GPUs on the given servers in the current phase's demand:
// on every server it spans, a ring over several servers drives min(m, NICs) NIC channels
// (m of its GPUs there), and a ring with two or more GPUs there is one flow on the fabric.
// The contribution is kept for againGroup.
func (ev *evaluator) addGroup(servers []int32) {
	for _, s := range servers {
		if ev.cnt[s] == 0 {
			ev.touched = append(ev.touched, s)
		}
		ev.cnt[s]++
	}
	multi := len(ev.touched) > 1
	ev.contrib = ev.contrib[:0]
	for _, s := range ev.touched {
		d := demand{server: s}
		if multi {
			d.nic = min(float64(ev.cnt[s]), ev.nics[s])
		}
		if ev.cnt[s] >= 2 {
			d.intra = 1
		}
		ev.cnt[s] = 0
		if d.nic != 0 || d.intra != 0 {
			ev.nic[s] += d.nic
			ev.intra[s] += d.intra
			ev.contrib = append(ev.contrib, d)
		}
	}
	ev.touched = ev.touched[:0]
}

// againGroup adds the last group's contribution once more (for a group on the same servers).
func (ev *evaluator) againGroup() {
	for _, d := range ev.contrib {
		ev.nic[d.server] += d.nic
		ev.intra[d.server] += d.intra
	}
}

// addPair records a point-to-point flow between servers sa and sb in the current phase's demand.
func (ev *evaluator) addPair(sa, sb int32) {
	if sa == sb {
		ev.intra[sa]++
		return
	}
	ev.nic[sa]++
	ev.nic[sb]++
}

// finishDemand turns the phase's demand into the load its flows see.
func (ev *evaluator) finishDemand() {
	for s := range ev.nic {
		ext := 0.0
		if s < len(ev.ext.NIC) {
			ext = ev.ext.NIC[s]
		}
		ev.load.NIC[s] = (1+ext)*max(1, ev.nic[s]/ev.nics[s]) - 1
		ext = 0
		if s < len(ev.ext.Intra) {
			ext = ev.ext.Intra[s]
		}
		ev.load.Intra[s] = (1+ext)*max(1, ev.intra[s]) - 1
	}
}

func sameServers(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// oneServer returns the server all the given servers are, or -1.
func oneServer(servers []int32) int32 {
	s := servers[0]
	for _, x := range servers[1:] {
		if x != s {
			return -1
		}
	}
	return s
}

// ringGeo is what the cost model needs of a ring: its size, slowest intra- and inter-server
// hop bandwidths (bytes/s, +Inf when absent), largest hop latency (s) and the number of servers
// it visits (for the RingLayout).
type ringGeo struct {
	n, intraBW, interBW, lat float64
	servers                  int
}

// ring returns the figures of the ring over gpus, whose servers are given.
func (ev *evaluator) ring(gpus []topology.GPUID, servers []int32) ringGeo {
	if len(gpus) < 2 {
		return ringGeo{n: float64(len(gpus)), servers: len(gpus)}
	}
	if s := oneServer(servers); s >= 0 { // placements never repeat a GPU
		bw, lat := ev.cl.IntraStats(int(s), &ev.load)
		return ringGeo{n: float64(len(gpus)), intraBW: bw, interBW: math.Inf(1), lat: lat, servers: 1}
	}
	var rs topology.RingStats
	rs, ev.buf = ev.cl.RingStatsOf(gpus, &ev.load, ev.buf)
	return ringGeo{n: float64(rs.GPUs), intraBW: rs.IntraBandwidth, interBW: rs.InterBandwidth, lat: rs.Latency(), servers: rs.Servers}
}

// allReduce returns the time of count all-reduces moving bytes in total over the ring.
func (r ringGeo) allReduce(bytes, count float64, eff Efficiency) float64 {
	if r.n < 2 || bytes <= 0 {
		return 0
	}
	bw := min(r.intraBW*eff.IntraComm, r.interBW*eff.InterComm/eff.RingLayout.pairShare(r.servers))
	return 2*(r.n-1)/r.n*bytes/bw + count*2*(r.n-1)*r.lat
}

// linkGeo is what the cost model needs of a point-to-point path.
type linkGeo struct {
	bw, lat float64
	inter   bool
	self    bool
}

func (ev *evaluator) link(a, b topology.GPUID) linkGeo {
	if a == b {
		return linkGeo{self: true}
	}
	bw, lat, inter := ev.cl.P2PStats(a, b, &ev.load)
	return linkGeo{bw: bw, lat: lat, inter: inter}
}

// send returns the time to send bytes over the path.
func (l linkGeo) send(bytes float64, eff Efficiency) float64 {
	if l.self || bytes <= 0 {
		return 0
	}
	e := eff.IntraComm
	if l.inter {
		e = eff.InterComm
	}
	return l.lat + bytes/(l.bw*e)
}

// geometry is the placement-dependent part of an evaluation, independent of the efficiency
// constants: the pace of each stage's slowest GPU and the links of every collective and
// point-to-point flow, under the load of other jobs and of the job's own concurrent flows.
// Collectives and flows of one stage (or boundary) with identical links are stored once: the
// cost model takes the slowest of them.
type geometry struct {
	peak  []float64 // per stage, FLOP/s
	tp    []ringGeo // distinct TP-group rings, stage by stage
	tpOff []int     // stage s owns tp[tpOff[s]:tpOff[s+1]]
	pp    []linkGeo // distinct point-to-point paths, boundary by boundary
	ppOff []int
	dp    []ringGeo // distinct DP rings, stage by stage
	dpOff []int
}

// distinctWindow bounds how far back appendDistinct looks for a duplicate: duplicates it misses
// only cost time, never change a result.
const distinctWindow = 8

func appendDistinct[T comparable](list []T, from int, x T) []T {
	for i := len(list) - 1; i >= from && i >= len(list)-distinctWindow; i-- {
		if list[i] == x {
			return list
		}
	}
	return append(list, x)
}

func (c *Compiled) geometry(ev *evaluator, placement []topology.GPUID) *geometry {
	p := c.plan
	PP, TP, DP := p.PP, p.TP, p.DP
	srv := ev.srv
	geo := &geometry{}
	offs := make([]int, 3*(PP+1))
	geo.tpOff, geo.ppOff, geo.dpOff = offs[:PP+1], offs[PP+1:2*(PP+1)], offs[2*(PP+1):]

	// Compute: the slowest GPU of each stage sets its pace.
	geo.peak = make([]float64, PP)
	for s := range geo.peak {
		peak := math.Inf(1)
		for d := 0; d < DP; d++ {
			base := (d*PP + s) * TP
			for _, sv := range srv[base : base+TP] {
				peak = min(peak, ev.peak[sv])
			}
		}
		geo.peak[s] = peak
	}

	// Tensor parallelism: all TP groups run at once.
	if TP > 1 {
		ev.resetDemand()
		for g := 0; g < DP*PP; g++ {
			ev.addGroup(srv[g*TP : (g+1)*TP])
		}
		ev.finishDemand()
		geo.tp = make([]ringGeo, 0, 2*PP)
		for s := 0; s < PP; s++ {
			geo.tpOff[s] = len(geo.tp)
			for d := 0; d < DP; d++ {
				base := (d*PP + s) * TP
				geo.tp = appendDistinct(geo.tp, geo.tpOff[s], ev.ring(placement[base:base+TP], srv[base:base+TP]))
			}
		}
	}
	geo.tpOff[PP] = len(geo.tp)

	// Pipeline: activations forward and gradients backward between adjacent stages.
	if PP > 1 {
		ev.resetDemand()
		for d := 0; d < DP; d++ {
			for s := 0; s+1 < PP; s++ {
				a, b := srv[p.Rank(d, s, 0):], srv[p.Rank(d, s+1, 0):]
				for t := 0; t < TP; t++ {
					ev.addPair(a[t], b[t])
				}
			}
		}
		ev.finishDemand()
		geo.pp = make([]linkGeo, 0, 2*PP)
		for s := 0; s+1 < PP; s++ {
			geo.ppOff[s] = len(geo.pp)
			lastA, lastB := int32(-1), int32(-1)
			for d := 0; d < DP; d++ {
				ra, rb := p.Rank(d, s, 0), p.Rank(d, s+1, 0)
				for t := 0; t < TP; t++ {
					// A path depends only on its two servers (placements never repeat a GPU):
					// compute it when they change.
					if sa, sb := srv[ra+t], srv[rb+t]; sa != lastA || sb != lastB {
						lastA, lastB = sa, sb
						geo.pp = appendDistinct(geo.pp, geo.ppOff[s], ev.link(placement[ra+t], placement[rb+t]))
					}
				}
			}
		}
		geo.ppOff[PP-1] = len(geo.pp)
	}
	geo.ppOff[PP] = len(geo.pp)

	// Data parallelism: every (stage, TP shard) ring all-reduces its gradients, all at once.
	// Rings are gathered once: ring k = s x TP + t at rings[k*DP:(k+1)*DP].
	if DP > 1 {
		n := PP * TP * DP
		if cap(ev.ringBuf) < n {
			ev.ringBuf = make([]topology.GPUID, n)
			ev.ringSrv = make([]int32, n)
		}
		rings, ringSrv := ev.ringBuf[:n], ev.ringSrv[:n]
		for d := 0; d < DP; d++ {
			for s := 0; s < PP; s++ {
				base := (d*PP + s) * TP
				for t := 0; t < TP; t++ {
					rings[(s*TP+t)*DP+d] = placement[base+t]
					ringSrv[(s*TP+t)*DP+d] = srv[base+t]
				}
			}
		}
		ev.resetDemand()
		for k := 0; k < PP*TP; k++ {
			if k > 0 && sameServers(ringSrv[(k-1)*DP:k*DP], ringSrv[k*DP:(k+1)*DP]) {
				ev.againGroup()
			} else {
				ev.addGroup(ringSrv[k*DP : (k+1)*DP])
			}
		}
		ev.finishDemand()
		geo.dp = make([]ringGeo, 0, 2*PP)
		for s := 0; s < PP; s++ {
			geo.dpOff[s] = len(geo.dp)
			for t := 0; t < TP; t++ {
				k := s*TP + t
				// A ring over the same servers in the same order as the previous one has the
				// same figures (placements never repeat a GPU).
				if t > 0 && sameServers(ringSrv[(k-1)*DP:k*DP], ringSrv[k*DP:(k+1)*DP]) {
					continue
				}
				geo.dp = appendDistinct(geo.dp, geo.dpOff[s], ev.ring(rings[k*DP:(k+1)*DP], ringSrv[k*DP:(k+1)*DP]))
			}
		}
	}
	geo.dpOff[PP] = len(geo.dp)
	return geo
}

// timing applies the cost model's equations (see IterationTime) to a geometry.
func (c *Compiled) timing(geo *geometry, eff Efficiency) Breakdown {
	p := c.plan
	PP, TP := p.PP, p.TP
	var b Breakdown
	m := float64(p.MicroBatches)
	var fwdB, tpB, ppB float64
	prevBnd := 0.0 // the slowest transfer across boundary s-1
	for s := range c.stages {
		st := &c.stages[s]
		fwd := c.mb * st.FLOPs / float64(TP) / (geo.peak[s] * eff.Compute)
		tp := 0.0
		bytes, count := c.tpPasses*c.mb*st.TPAllReduceBytes, c.tpPasses*float64(st.TPAllReduces)
		for _, r := range geo.tp[geo.tpOff[s]:geo.tpOff[s+1]] {
			tp = max(tp, r.allReduce(bytes, count, eff))
		}
		pp := prevBnd // backward send to s-1
		if s+1 < PP {
			bytes := c.mb * st.SendBytes / float64(TP)
			next := 0.0
			for _, l := range geo.pp[geo.ppOff[s]:geo.ppOff[s+1]] {
				next = max(next, l.send(bytes, eff))
			}
			pp += next // forward send to s+1
			prevBnd = next
		}
		dp := 0.0
		bytes = c.dpFactor * st.ParamBytes / float64(TP)
		for _, r := range geo.dp[geo.dpOff[s]:geo.dpOff[s+1]] {
			dp = max(dp, r.allReduce(bytes, c.dpFactor, eff))
		}
		ts := c.computeMul*fwd + tp + pp
		if s == 0 || ts > b.MicroBatch {
			b.MicroBatch, b.Stage = ts, s
			fwdB, tpB, ppB = fwd, tp, pp
		}
		bwd := (c.computeMul - 1) * fwd
		b.DP = max(b.DP, dp-min(eff.Overlap*dp, bwd))
		b.DPComm = max(b.DPComm, dp)
	}
	b.Compute = m * c.computeMul * fwdB
	b.TP = m * tpB
	b.PP = m * ppB
	b.Bubble = float64(PP-1) * b.MicroBatch
	b.Overhead = eff.StepOverhead
	b.Total = b.Compute + b.TP + b.PP + b.Bubble + b.DP + b.Overhead
	return b
}
