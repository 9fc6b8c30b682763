package graph

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func near(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func mustUniform(t interface {
	Helper()
	Fatal(...any)
}, spec topology.ServerSpec, n int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(spec, n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// textbook evaluates with the uncalibrated constants, which the hand computations use.
var textbook = Options{Efficiency: DefaultEfficiency()}

func ids(gpus ...int) []topology.GPUID {
	out := make([]topology.GPUID, len(gpus))
	for i, g := range gpus {
		out[i] = topology.GPUID(g)
	}
	return out
}

// TestIterationTimePureDPByHand checks a two-server data-parallel job against the equations
// evaluated by hand.
func TestIterationTimePureDPByHand(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "one", Layers: []Layer{
		{Name: "l", FLOPs: 1e12, ParamBytes: 1e9, ActivationBytes: 1, MemoryBytes: 1}}})
	c, err := Compile(m, Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A100(), 2)
	b, err := c.IterationTime(cl, ids(0, 8), textbook)
	if err != nil {
		t.Fatal(err)
	}
	fwd := 2 * 1e12 / (312e12 * 0.5)        // b = 2 samples at half of peak
	dp := 1e9/(25e9*0.8) + 2*5e-6           // 2(n-1)/n = 1; one 200 Gb/s NIC at 80%; 2(n-1) latencies
	exposed := dp - math.Min(0.8*dp, 2*fwd) // overlap with the backward pass
	want := Breakdown{Compute: 3 * fwd, DP: exposed, DPComm: dp, MicroBatch: 3 * fwd, Total: 3*fwd + exposed}
	if !near(b.Total, want.Total, 1e-12) || !near(b.DP, want.DP, 1e-12) || !near(b.DPComm, want.DPComm, 1e-12) ||
		!near(b.Compute, want.Compute, 1e-12) || b.TP != 0 || b.PP != 0 || b.Bubble != 0 {
		t.Fatalf("breakdown %+v, want %+v", b, want)
	}
	// Packed on one server the ring runs over NVSwitch instead.
	b2, _ := c.IterationTime(cl, ids(0, 1), textbook)
	if want := 1e9/(300e9*0.8) + 2*3e-6; !near(b2.DPComm, want, 1e-12) {
		t.Fatalf("packed DP %v, want %v", b2.DPComm, want)
	}
	// Other jobs on server 1's NICs halve the ring's bandwidth.
	b3, _ := c.IterationTime(cl, ids(0, 8), Options{Efficiency: DefaultEfficiency(), Load: topology.LinkLoad{{Kind: topology.NICLink, Index: 1}: 1}})
	if want := 1e9/(12.5e9*0.8) + 2*5e-6; !near(b3.DPComm, want, 1e-12) {
		t.Fatalf("loaded DP %v, want %v", b3.DPComm, want)
	}
	// The top-level function agrees.
	b4, err := IterationTime(m, c.Plan(), cl, ids(0, 8), textbook)
	if err != nil || b4 != b {
		t.Fatalf("IterationTime = %+v, %v", b4, err)
	}
}

// TestComputeSizeExponentByHand checks the size-dependent compute rate on a two-layer model
// whose layers do 4e10 and 1.2e11 forward FLOPs per sample: with 2 samples per GPU and TP 2
// their mean work per GPU is 8e10 FLOPs, eight times ComputeSizeRef, so they run at Compute x
// 8^a of peak. A variant that took the work per sample, or ignored the tensor-parallel split,
// would see 2x or 2x more work and fail the check; so would one that summed the stage's
// layers instead of averaging them.
func TestComputeSizeExponentByHand(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "two", Heads: 2, Layers: []Layer{
		{Name: "a", FLOPs: 4e10, ParamBytes: 1e6, ActivationBytes: 1, MemoryBytes: 1},
		{Name: "b", FLOPs: 1.2e11, ParamBytes: 1e6, ActivationBytes: 1, MemoryBytes: 1}}})
	c, err := Compile(m, Plan{DP: 1, TP: 2, PP: 1, MicroBatches: 1, GlobalBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A100(), 1)
	for _, a := range []float64{0, 0.1, 0.5} {
		eff := Efficiency{Compute: 0.2, IntraComm: 1, InterComm: 1, ComputeSizeExponent: a}
		b, err := c.IterationTime(cl, ids(0, 1), Options{Efficiency: eff})
		if err != nil {
			t.Fatal(err)
		}
		rate := 0.2 * math.Pow(8, a)
		want := 3 * 2 * (4e10 + 1.2e11) / 2 / (312e12 * rate)
		if !near(b.Compute, want, 1e-12) {
			t.Fatalf("exponent %v: compute %v s, want %v s", a, b.Compute, want)
		}
	}
	// The rate never exceeds peak.
	eff := Efficiency{Compute: 0.9, IntraComm: 1, InterComm: 1, ComputeSizeExponent: 2}
	b, _ := c.IterationTime(cl, ids(0, 1), Options{Efficiency: eff})
	if want := 3 * 2 * (4e10 + 1.2e11) / 2 / 312e12; !near(b.Compute, want, 1e-12) {
		t.Fatalf("capped compute %v s, want %v s", b.Compute, want)
	}
	for _, bad := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		if err := (Efficiency{Compute: 0.2, IntraComm: 1, InterComm: 1, ComputeSizeExponent: bad}).Validate(); err == nil {
			t.Errorf("exponent %v accepted", bad)
		}
	}
}

// TestComputeWidthExponentByHand checks the width-dependent compute rate on a two-layer model
// whose layers hold 4e7 and 1e9 parameters (bf16: 8e7 and 2e9 bytes) and do 1e10 and 3e10
// forward FLOPs per sample, plus a layer without parameters (excluded): the FLOPs-weighted
// geometric mean of the parameters is exp((1 ln 4e7 + 3 ln 1e9) / 4); with TP 2 each GPU holds
// half, so the rate is Compute x (w / 2 / 1e7)^b. A variant that weighed the layers alike, or
// by their parameters, or ignored the tensor-parallel split, or counted the parameterless
// layer, fails the check.
func TestComputeWidthExponentByHand(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "two", Heads: 2, DTypeBytes: 2, Layers: []Layer{
		{Name: "a", FLOPs: 1e10, ParamBytes: 8e7, ActivationBytes: 1, MemoryBytes: 1},
		{Name: "n", FLOPs: 5e9, ParamBytes: 0, ActivationBytes: 1, MemoryBytes: 1},
		{Name: "b", FLOPs: 3e10, ParamBytes: 2e9, ActivationBytes: 1, MemoryBytes: 1}}})
	c, err := Compile(m, Plan{DP: 1, TP: 2, PP: 1, MicroBatches: 1, GlobalBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A100(), 1)
	w := math.Exp((math.Log(4e7)+3*math.Log(1e9))/4) / 2
	for _, b := range []float64{0, 0.1, 0.5} {
		eff := Efficiency{Compute: 0.2, IntraComm: 1, InterComm: 1, ComputeWidthExponent: b}
		got, err := c.IterationTime(cl, ids(0, 1), Options{Efficiency: eff})
		if err != nil {
			t.Fatal(err)
		}
		rate := 0.2 * math.Pow(w/1e7, b)
		want := 3 * 2 * (1e10 + 5e9 + 3e10) / 2 / (312e12 * rate)
		if !near(got.Compute, want, 1e-12) {
			t.Fatalf("exponent %v: compute %v s, want %v s", b, got.Compute, want)
		}
	}
	// The rate never exceeds peak.
	eff := Efficiency{Compute: 0.9, IntraComm: 1, InterComm: 1, ComputeWidthExponent: 3}
	got, _ := c.IterationTime(cl, ids(0, 1), Options{Efficiency: eff})
	if want := 3 * 2 * (1e10 + 5e9 + 3e10) / 2 / 312e12; !near(got.Compute, want, 1e-12) {
		t.Fatalf("capped compute %v s, want %v s", got.Compute, want)
	}
	for _, bad := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		if err := (Efficiency{Compute: 0.2, IntraComm: 1, InterComm: 1, ComputeWidthExponent: bad}).Validate(); err == nil {
			t.Errorf("exponent %v accepted", bad)
		}
	}
}

// TestIterationTimeMixedByHand checks TP inside T4 servers and DP across them: the four DP rings
// of a stage share each server's single NIC, and the pipeline's stages are on different servers.
func TestIterationTimeMixedByHand(t *testing.T) {
	layers := []Layer{
		{Name: "a", FLOPs: 1e11, ParamBytes: 4e8, ActivationBytes: 1e6, MemoryBytes: 1, TPAllReduces: 2},
		{Name: "b", FLOPs: 1e11, ParamBytes: 4e8, ActivationBytes: 1e6, MemoryBytes: 1, TPAllReduces: 2},
	}
	m := mustModel(t, ModelSpec{Name: "two", Layers: layers})
	p := Plan{DP: 2, TP: 4, PP: 2, MicroBatches: 4, GlobalBatch: 16} // b = 2
	c, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.T4(), 4)
	// Rank (d*2+s)*4+t on server d*2+s: each TP group fills a server.
	placement := make([]topology.GPUID, 16)
	for i := range placement {
		placement[i] = topology.GPUID(i)
	}
	eff := Efficiency{Compute: 0.5, IntraComm: 0.5, InterComm: 0.25, Overlap: 0.5, StepOverhead: 0.01}
	b, err := c.IterationTime(cl, placement, Options{Efficiency: eff})
	if err != nil {
		t.Fatal(err)
	}
	const (
		pcie, nic   = 15.75e9, 6.25e9
		pciLat, lat = 10e-6, 50e-6
	)
	fwd := 2 * 1e11 / 4 / (65e12 * 0.5)
	// TP: 2 passes x 2 samples x 2 all-reduces x 1e6 bytes over 4 GPUs on the PCIe fabric.
	tp := 1.5*(2*2*2*1e6)/(pcie*0.5) + 2*2*6*pciLat // latency once per all-reduce, not per sample
	// PP: 2 samples x 1e6 / 4 bytes from stage 0's server to stage 1's; 4 flows share one NIC
	// at each end.
	hop := lat + (2*1e6/4)/(nic/4*0.25)
	// DP: per stage, 4 rings (one per TP shard) of 2 GPUs on 2 servers share each NIC.
	dp := 1*(4e8/4)/(nic/4*0.25) + 2*lat
	micro := 3*fwd + tp + hop // each stage sends once (stage 0 forward, stage 1 backward)
	exposed := dp - math.Min(0.5*dp, 2*fwd)
	want := 4*micro + 1*micro + exposed + 0.01
	if !near(b.Total, want, 1e-12) || !near(b.TP, 4*tp, 1e-12) || !near(b.PP, 4*hop, 1e-12) ||
		!near(b.Bubble, micro, 1e-12) || !near(b.DPComm, dp, 1e-12) || b.Overhead != 0.01 {
		t.Fatalf("breakdown %v\nwant total %v tp %v pp %v bubble %v dp %v", b, want, 4*tp, 4*hop, micro, dp)
	}
	if got := b.Compute + b.Bubble + b.TP + b.PP + b.DP + b.Optimizer + b.Overhead; !near(got, b.Total, 1e-12) {
		t.Fatalf("parts sum to %v, total %v", got, b.Total)
	}
	if !strings.Contains(b.String(), "bottleneck stage") {
		t.Error(b.String())
	}
}

func TestIterationTimeErrors(t *testing.T) {
	m := tinyTransformer(t, 2)
	c, err := Compile(m, Plan{DP: 2, TP: 2, PP: 1, MicroBatches: 1, GlobalBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A100(), 1)
	for _, tc := range []struct {
		placement []topology.GPUID
		opts      Options
		cl        *topology.Cluster
		want      error
		msg       string
	}{
		{ids(0, 1, 2), Options{}, cl, ErrInvalidPlacement, "4 workers but the placement lists 3"},
		{ids(0, 1, 2, 8), Options{}, cl, topology.ErrNoSuchGPU, "worker 3"},
		{ids(0, 1, 2, -1), Options{}, cl, ErrInvalidPlacement, "GPU -1"},
		{ids(0, 1, 1, 2), Options{}, cl, ErrInvalidPlacement, "GPU 1 (a100-0/1) is used twice"},
		{ids(0, 1, 2, 3), Options{}, nil, ErrInvalidPlacement, "no cluster"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: math.NaN()}}, cl, ErrInvalidOptions, "compute NaN"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: 1, IntraComm: 1, InterComm: 2}}, cl, ErrInvalidOptions, "inter_comm 2"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: 1, IntraComm: 1, InterComm: 1, Overlap: -0.1}}, cl, ErrInvalidOptions, "overlap -0.1"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: 1, IntraComm: 1, InterComm: 1, PairDuplex: 1.5}}, cl, ErrInvalidOptions, "pair_duplex 1.5"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: 1, IntraComm: 1, InterComm: 1, PairDuplex: math.NaN()}}, cl, ErrInvalidOptions, "pair_duplex NaN"},
		{ids(0, 1, 2, 3), Options{Efficiency: Efficiency{Compute: 1, IntraComm: 1, InterComm: 1, StepOverhead: math.Inf(1)}}, cl, ErrInvalidOptions, "step_overhead"},
	} {
		_, err := c.IterationTime(tc.cl, tc.placement, tc.opts)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("IterationTime(%v) = %v, want %v containing %q", tc.placement, err, tc.want, tc.msg)
		}
	}
	if _, err := IterationTime(m, Plan{}, cl, nil, Options{}); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("zero plan: %v", err)
	}
}

// genCluster draws a small cluster: uniform or mixed A100/H100/T4 servers, with or without racks.
func genCluster(t *rapid.T) *topology.Cluster {
	n := rapid.IntRange(1, 8).Draw(t, "servers")
	perRack := rapid.IntRange(0, 3).Draw(t, "perRack")
	mixed := rapid.Bool().Draw(t, "mixed")
	presets := []topology.ServerSpec{topology.A100(), topology.H100(), topology.T4()}
	base := presets[rapid.IntRange(0, 2).Draw(t, "preset")]
	var racks []topology.Rack
	servers := make([]topology.Server, n)
	for i := range servers {
		spec := base
		if mixed {
			spec = presets[rapid.IntRange(0, 2).Draw(t, "spec")]
		}
		servers[i] = topology.Server{ID: fmt.Sprintf("s%d", i), ServerSpec: spec}
		if perRack > 0 {
			r := i / perRack
			if r == len(racks) {
				racks = append(racks, topology.Rack{ID: fmt.Sprintf("r%d", r), Oversubscription: rapid.Float64Range(1, 3).Draw(t, "over")})
			}
			servers[i].Rack = racks[r].ID
		}
	}
	c, err := topology.New("gen", servers, racks)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func genLinkLoad(t *rapid.T, cl *topology.Cluster) topology.LinkLoad {
	l := topology.LinkLoad{}
	for k := rapid.IntRange(0, 4).Draw(t, "loads"); k > 0; k-- {
		kind := topology.LinkKind(rapid.IntRange(0, 2).Draw(t, "kind"))
		l[topology.Link{Kind: kind, Index: rapid.IntRange(0, cl.NumServers()-1).Draw(t, "idx")}] = float64(rapid.IntRange(0, 3).Draw(t, "flows"))
	}
	return l
}

// genJob draws a compiled job and a placement of it on a generated cluster.
func genJob(t *rapid.T) (*Compiled, *topology.Cluster, []topology.GPUID) {
	cl := genCluster(t)
	m := tinyTransformer(t, rapid.IntRange(1, 4).Draw(t, "layers"))
	var p Plan
	for {
		p = genPlan(t, m.NumLayers())
		if p.Workers() <= cl.NumGPUs() {
			break
		}
		if p.DP > 1 {
			p.DP = 1
			p.GlobalBatch = p.MicroBatches
		}
		if p.Workers() <= cl.NumGPUs() {
			break
		}
		t.Skip("plan larger than cluster")
	}
	c, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]topology.GPUID, cl.NumGPUs())
	for i := range all {
		all[i] = topology.GPUID(i)
	}
	var placement []topology.GPUID
	if rapid.Bool().Draw(t, "packed") {
		placement = all[:p.Workers()]
	} else {
		placement = rapid.Permutation(all).Draw(t, "perm")[:p.Workers()]
	}
	return c, cl, placement
}

// referenceIterationTime evaluates the cost model the slow way, from topology's public RingOf
// and P2PTime with LinkLoad maps, without the fast path's caching and deduplication. It needs
// IntraComm == InterComm (RingOf does not report the two kinds of hops apart). Under
// HalfDuplexPairs a ring over two servers is evaluated with RingOf on a copy of the cluster
// whose NICs have half the bandwidth. It needs an explicit Efficiency.
func referenceIterationTime(c *Compiled, cl *topology.Cluster, pl []topology.GPUID, o Options) Breakdown {
	eff := o.Efficiency
	f := o.Factors
	one := func(v float64) float64 {
		if v == 0 {
			return 1
		}
		return v
	}
	fComp, fComm, fOpt, fPar := one(f.Compute), one(f.Comm), one(f.Optimizer), one(f.Parallel)
	half := halfNICs(cl)
	p := c.Plan()
	st := c.Stages()
	d := c.Model().DTypeBytes()
	b := float64(p.MicroBatchSize())
	mul, passes, zf := 3.0, 2.0, 1.0
	if p.Checkpointing {
		mul, passes = 4, 3
	}
	if p.ZeRO == 3 {
		zf = 1.5
	}
	if p.TP > 1 || p.PP > 1 {
		fComp *= fPar
	}
	compute := eff.Compute
	if d >= 4 && eff.ComputeFP32 > 0 {
		compute = eff.ComputeFP32
	}
	// The NICs the job's GPUs on each server are attached to.
	jobPer := cl.PerServer(pl)
	reach := func(s int) float64 {
		sp := cl.Server(s).ServerSpec
		if jobPer[s] == 0 {
			return float64(sp.NICs)
		}
		return float64(sp.NICChannels(jobPer[s]))
	}
	phaseLoad := func(groups [][]topology.GPUID, pairs [][2]topology.GPUID) topology.LinkLoad {
		nic := make([]float64, cl.NumServers())
		intra := make([]float64, cl.NumServers())
		for _, g := range groups {
			per := cl.PerServer(g)
			spans := 0
			for _, k := range per {
				if k > 0 {
					spans++
				}
			}
			for s, k := range per {
				if spans > 1 && k > 0 {
					nic[s] += float64(cl.Server(s).NICChannels(k))
				}
				if k >= 2 {
					intra[s]++
				}
			}
		}
		for _, pr := range pairs {
			sa, sb := cl.ServerOf(pr[0]), cl.ServerOf(pr[1])
			if sa == sb {
				intra[sa]++
			} else {
				nic[sa]++
				nic[sb]++
			}
		}
		l := topology.LinkLoad{}
		for k, v := range o.Load {
			if k.Kind == topology.UplinkLink && v > 0 {
				l[k] = v
			}
		}
		ext := func(k topology.Link) float64 {
			if v := o.Load[k]; v > 0 {
				return v
			}
			return 0
		}
		for s := range nic {
			kn, ki := topology.Link{Kind: topology.NICLink, Index: s}, topology.Link{Kind: topology.IntraLink, Index: s}
			l[kn] = (1+ext(kn))*math.Max(1, nic[s]/reach(s)) - 1
			l[ki] = (1+ext(ki))*math.Max(1, intra[s]) - 1
		}
		return l
	}
	ring := func(gpus []topology.GPUID, bytes, count float64, load topology.LinkLoad) float64 {
		r := cl.RingOf(gpus, load)
		if eff.RingLayout == HalfDuplexPairs && r.Servers == 2 {
			r = half.RingOf(gpus, load)
		}
		n := float64(len(r.GPUs))
		if n < 2 || bytes <= 0 {
			return 0
		}
		return 2*(n-1)/n*bytes/(r.Bandwidth*eff.InterComm) + count*2*(n-1)*r.Latency
	}
	gpusOf := func(ranks []int) []topology.GPUID {
		out := make([]topology.GPUID, len(ranks))
		for i, r := range ranks {
			out[i] = pl[r]
		}
		return out
	}
	var tpGroups, dpRings [][]topology.GPUID
	for _, g := range p.TPGroups() {
		tpGroups = append(tpGroups, gpusOf(g))
	}
	for _, r := range p.DPRings() {
		dpRings = append(dpRings, gpusOf(r))
	}
	var pairs [][2]topology.GPUID
	for d := 0; d < p.DP; d++ {
		for s := 0; s+1 < p.PP; s++ {
			for t := 0; t < p.TP; t++ {
				pairs = append(pairs, [2]topology.GPUID{pl[p.Rank(d, s, t)], pl[p.Rank(d, s+1, t)]})
			}
		}
	}
	tpLoad, ppLoad, dpLoad := phaseLoad(tpGroups, nil), phaseLoad(nil, pairs), phaseLoad(dpRings, nil)
	bnd := make([]float64, p.PP)
	for s := 0; s+1 < p.PP; s++ {
		bytes := b * st[s].SendBytes / float64(p.TP)
		for d := 0; d < p.DP; d++ {
			for t := 0; t < p.TP; t++ {
				a, bb := pl[p.Rank(d, s, t)], pl[p.Rank(d, s+1, t)]
				bnd[s] = math.Max(bnd[s], cl.P2PTime(a, bb, bytes/eff.InterComm, ppLoad))
			}
		}
		bnd[s] *= fComm
	}
	var out Breakdown
	var fwdB, tpB, ppB float64
	for s := range st {
		peak := math.Inf(1)
		for d := 0; d < p.DP; d++ {
			for t := 0; t < p.TP; t++ {
				peak = math.Min(peak, cl.GPU(pl[p.Rank(d, s, t)]).PeakFLOPS)
			}
		}
		rate := compute
		if eff.ComputeSizeExponent > 0 {
			// The mean forward work of one of the stage's layers on one GPU, layer by layer.
			work := 0.0
			for l := st[s].First; l < st[s].End; l++ {
				work += b * c.model.Layers()[l].FLOPs / float64(p.TP)
			}
			if work > 0 {
				work /= float64(st[s].End - st[s].First)
				rate = math.Min(1, compute*math.Pow(work/ComputeSizeRef, eff.ComputeSizeExponent))
			}
		}
		if eff.ComputeWidthExponent > 0 {
			// The FLOPs-weighted geometric mean of the parameters per GPU of the stage's layers.
			var wf, wl float64
			for l := st[s].First; l < st[s].End; l++ {
				ly := c.model.Layers()[l]
				if q := ly.ParamBytes / c.model.DTypeBytes() / float64(p.TP); q*float64(p.TP) >= 1 && ly.FLOPs > 0 {
					wf += ly.FLOPs
					wl += ly.FLOPs * math.Log(q)
				}
			}
			if wf > 0 {
				rate = math.Min(1, rate*math.Pow(math.Exp(wl/wf)/1e7, eff.ComputeWidthExponent))
			}
		}
		fwd := fComp * (b*st[s].FLOPs/float64(p.TP)/(peak*rate) + float64(st[s].End-st[s].First)*eff.LayerOverhead)
		tp, dp := 0.0, 0.0
		for d := 0; d < p.DP; d++ {
			tp = math.Max(tp, ring(tpGroups[d*p.PP+s], passes*b*st[s].TPAllReduceBytes, passes*float64(st[s].TPAllReduces), tpLoad))
		}
		tp *= fComm
		for t := 0; t < p.TP; t++ {
			dp = math.Max(dp, ring(dpRings[s*p.TP+t], zf*st[s].ParamBytes/float64(p.TP), zf, dpLoad))
		}
		dp *= fComm
		pp := bnd[s]
		if s > 0 {
			pp += bnd[s-1]
		}
		ts := mul*fwd + tp + pp
		if s == 0 || ts > out.MicroBatch {
			out.MicroBatch, out.Stage, fwdB, tpB, ppB = ts, s, fwd, tp, pp
		}
		bwd := (mul - 1) * fwd
		if p.ZeRO == 0 {
			out.DP = math.Max(out.DP, dp-math.Min(eff.Overlap*dp, bwd))
		} else {
			rs := dp / zf / 2 // the gradient reduce-scatter
			out.DP = math.Max(out.DP, rs-math.Min(eff.Overlap*rs, bwd)+(dp-rs))
		}
		out.DPComm = math.Max(out.DPComm, dp)
	}
	// The optimizer: every worker updates its share, from its own stage.
	shard := func(s int) float64 {
		n := st[s].ParamBytes / d / float64(p.TP)
		if p.ZeRO > 0 {
			n /= float64(p.DP)
		}
		return n
	}
	if !p.Offload {
		for s := range st {
			out.Optimizer = math.Max(out.Optimizer, eff.OptimizerPerParam*shard(s))
		}
	} else {
		threads := float64(max(p.CPUThreads, 1))
		q := make([]float64, cl.NumServers())
		g := make([]float64, cl.NumServers())
		for r, gpu := range pl {
			q[cl.ServerOf(gpu)] += shard(p.StageOf(r))
			g[cl.ServerOf(gpu)]++
		}
		cpu := 0.0
		for s := range q {
			if g[s] > 0 {
				cpu = math.Max(cpu, q[s]*math.Max(eff.CPUOptimizerPerParam/(g[s]*threads), eff.HostOptimizerPerParam))
			}
		}
		pcie := 0.0
		if eff.HostBandwidth > 0 {
			for s := range st {
				pcie = math.Max(pcie, (d*shard(s)+st[s].ParamBytes/float64(p.TP))/eff.HostBandwidth)
			}
		}
		out.Optimizer = cpu + pcie
	}
	out.Optimizer *= fOpt
	m := float64(p.MicroBatches)
	out.Compute, out.TP, out.PP = m*mul*fwdB, m*tpB, m*ppB
	out.Bubble = float64(p.PP-1) * out.MicroBatch
	out.Overhead = math.Max(0, eff.StepOverhead+f.Overhead)
	out.Total = out.Compute + out.TP + out.PP + out.Bubble + out.DP + out.Optimizer + out.Overhead
	return out
}

// halfNICs returns a copy of cl whose NICs have half the bandwidth.
func halfNICs(cl *topology.Cluster) *topology.Cluster {
	servers := make([]topology.Server, cl.NumServers())
	for i := range servers {
		servers[i] = cl.Server(i)
		servers[i].NICBandwidth /= 2
	}
	racks := make([]topology.Rack, cl.NumRacks())
	for i := range racks {
		racks[i] = cl.Rack(i)
	}
	h, err := topology.New(cl.Name(), servers, racks)
	if err != nil {
		panic(err) // the copy of a valid cluster is valid
	}
	return h
}

// TestIterationTimeMatchesReference checks the fast evaluation against the slow reference on
// random jobs, clusters, placements, loads and ring layouts.
func TestIterationTimeMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, cl, placement := genJob(t)
		comm := rapid.Float64Range(0.05, 1).Draw(t, "comm")
		o := Options{
			Efficiency: Efficiency{Compute: rapid.Float64Range(0.05, 1).Draw(t, "compute"), IntraComm: comm, InterComm: comm,
				Overlap: rapid.Float64Range(0, 1).Draw(t, "overlap"), StepOverhead: rapid.Float64Range(0, 0.1).Draw(t, "oh"),
				LayerOverhead:        rapid.Float64Range(0, 1e-3).Draw(t, "layer"),
				ComputeSizeExponent:  rapid.SampledFrom([]float64{0, 0.02, 0.3}).Draw(t, "size"),
				ComputeWidthExponent: rapid.SampledFrom([]float64{0, 0.1, 0.5}).Draw(t, "width"),
				OptimizerPerParam:    rapid.Float64Range(0, 1e-9).Draw(t, "opt"),
				CPUOptimizerPerParam: rapid.Float64Range(0, 1e-8).Draw(t, "cpu"), HostOptimizerPerParam: rapid.Float64Range(0, 1e-9).Draw(t, "host"),
				HostBandwidth: rapid.SampledFrom([]float64{0, 1e9, 25e9}).Draw(t, "pcie"),
				RingLayout:    RingLayout(rapid.IntRange(0, 1).Draw(t, "layout"))},
			Load: genLinkLoad(t, cl),
		}
		if rapid.Bool().Draw(t, "factors") {
			o.Factors = ModelFactors{Compute: rapid.Float64Range(0.5, 2).Draw(t, "fc"), Comm: rapid.Float64Range(0.5, 2).Draw(t, "fm"),
				Optimizer: rapid.Float64Range(0.5, 2).Draw(t, "fo"), Overhead: rapid.Float64Range(-0.2, 0.2).Draw(t, "fh"),
				Parallel: rapid.Float64Range(0.5, 2).Draw(t, "fp")}
		}
		got, err := c.IterationTime(cl, placement, o)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceIterationTime(c, cl, placement, o)
		for _, f := range []struct {
			name string
			a, b float64
		}{{"total", got.Total, want.Total}, {"compute", got.Compute, want.Compute}, {"tp", got.TP, want.TP}, {"pp", got.PP, want.PP},
			{"dp", got.DP, want.DP}, {"dp_comm", got.DPComm, want.DPComm}, {"bubble", got.Bubble, want.Bubble},
			{"optimizer", got.Optimizer, want.Optimizer}, {"overhead", got.Overhead, want.Overhead}} {
			if !near(f.a, f.b, 1e-9) {
				t.Fatalf("plan %v on %v: %s %v, reference %v\n got %v\nwant %v", c.Plan(), placement, f.name, f.a, f.b, got, want)
			}
		}
	})
}

// TestReferenceCatchesWrongVariant shows the comparison above can fail: ignoring the job's own
// NIC sharing (four DP rings on one T4 NIC) changes the result.
func TestReferenceCatchesWrongVariant(t *testing.T) {
	m := tinyTransformer(t, 2)
	c, err := Compile(m, Plan{DP: 2, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.T4(), 2)
	placement := ids(0, 1, 2, 3, 4, 5, 6, 7)
	got, _ := c.IterationTime(cl, placement, textbook)
	// The variant: each DP ring alone on the NICs.
	alone := cl.RingOf(ids(0, 4), nil)
	wrong := 1 * (m.ParamBytes() / 4) / (alone.Bandwidth * 0.8)
	if near(got.DPComm, wrong+2*alone.Latency, 1e-6) {
		t.Fatal("NIC sharing among a job's own rings is not modelled")
	}
	if want := referenceIterationTime(c, cl, placement, textbook); !near(got.DPComm, want.DPComm, 1e-12) {
		t.Fatalf("DPComm %v, reference %v", got.DPComm, want.DPComm)
	}
}

// TestIterationTimeMonotoneInLinks: iteration time never decreases when a link gets slower,
// whether other jobs' flows load it or the hardware is slower, in either ring layout.
func TestIterationTimeMonotoneInLinks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, cl, placement := genJob(t)
		o := Options{Load: genLinkLoad(t, cl)}
		if rapid.Bool().Draw(t, "splitEff") {
			o.Efficiency = Efficiency{Compute: 0.4, IntraComm: rapid.Float64Range(0.1, 1).Draw(t, "ic"), InterComm: rapid.Float64Range(0.1, 1).Draw(t, "ec"), Overlap: rapid.Float64Range(0, 1).Draw(t, "ov"),
				RingLayout: RingLayout(rapid.IntRange(0, 1).Draw(t, "layout"))}
		}
		before, err := c.IterationTime(cl, placement, o)
		if err != nil {
			t.Fatal(err)
		}
		// More load on one link.
		more := topology.LinkLoad{}
		for k, v := range o.Load {
			more[k] = v
		}
		k := topology.Link{Kind: topology.LinkKind(rapid.IntRange(0, 2).Draw(t, "kind")), Index: rapid.IntRange(0, cl.NumServers()-1).Draw(t, "idx")}
		more[k] = math.Max(more[k], 0) + rapid.Float64Range(0.5, 4).Draw(t, "extra")
		o2 := o
		o2.Load = more
		after, err := c.IterationTime(cl, placement, o2)
		if err != nil {
			t.Fatal(err)
		}
		if after.Total < before.Total || after.MicroBatch < before.MicroBatch || after.DPComm < before.DPComm {
			t.Fatalf("loading %v: total %v -> %v, micro-batch %v -> %v, dp %v -> %v", k, before.Total, after.Total, before.MicroBatch, after.MicroBatch, before.DPComm, after.DPComm)
		}
		// A slower NIC or fabric on one server.
		servers := make([]topology.Server, cl.NumServers())
		for i := range servers {
			servers[i] = cl.Server(i)
		}
		racks := make([]topology.Rack, cl.NumRacks())
		for i := range racks {
			racks[i] = cl.Rack(i)
		}
		s := rapid.IntRange(0, len(servers)-1).Draw(t, "slow")
		f := rapid.Float64Range(0.1, 0.99).Draw(t, "factor")
		if rapid.Bool().Draw(t, "nic") {
			servers[s].NICBandwidth *= f
		} else {
			servers[s].IntraBandwidth *= f
		}
		slow, err := topology.New(cl.Name(), servers, racks)
		if err != nil {
			t.Fatal(err)
		}
		after, err = c.IterationTime(slow, placement, o)
		if err != nil {
			t.Fatal(err)
		}
		if after.Total < before.Total {
			t.Fatalf("slowing server %d: total %v -> %v", s, before.Total, after.Total)
		}
	})
}

// TestSpreadingNeverHelpsDP: under the default ServerGrouped ring layout, moving some of a
// data-parallel job's GPUs from one server to an unused one never reduces its communication
// time on a uniform topology (one whose intra-server links, at their efficiency, are at least
// as fast as a server's NICs). It is a property of that layout: HalfDuplexPairs breaks it on
// purpose, and TestSpreadingCatchesHalfDuplexPairs shows this check catches it.
func TestSpreadingNeverHelpsDP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { spreadingNeverHelps(t, ServerGrouped) })
}

// spreadingNeverHelps is one case of TestSpreadingNeverHelpsDP under the given layout.
func spreadingNeverHelps(t *rapid.T, layout RingLayout) {
	spec := []topology.ServerSpec{topology.A100(), topology.H100(), topology.T4()}[rapid.IntRange(0, 2).Draw(t, "spec")]
	nServers := rapid.IntRange(2, 6).Draw(t, "servers")
	var cl *topology.Cluster
	var err error
	if perRack := rapid.IntRange(0, 3).Draw(t, "perRack"); perRack > 0 {
		cl, err = topology.UniformRacks(spec, nServers, perRack, rapid.Float64Range(1, 4).Draw(t, "over"))
	} else {
		cl, err = topology.Uniform(spec, nServers)
	}
	if err != nil {
		t.Fatal(err)
	}
	// A placement on some servers, leaving at least one unused.
	counts := make([]int, nServers)
	used := rapid.IntRange(1, nServers-1).Draw(t, "used")
	for s := 0; s < used; s++ {
		counts[s] = rapid.IntRange(1, spec.GPUs).Draw(t, "count")
	}
	from := rapid.IntRange(0, used-1).Draw(t, "from")
	if counts[from] < 2 {
		counts[from] = 2
	}
	to := rapid.IntRange(used, nServers-1).Draw(t, "to")
	move := rapid.IntRange(1, counts[from]-1).Draw(t, "move")
	place := func(counts []int) []topology.GPUID {
		var out []topology.GPUID
		for s, k := range counts {
			first, _ := cl.GPUsOf(s)
			for j := 0; j < k; j++ {
				out = append(out, first+topology.GPUID(j))
			}
		}
		return out
	}
	before := place(counts)
	counts[from] -= move
	counts[to] += move
	after := place(counts)
	n := len(before)
	m := mustZoo(t, "resnet50")
	c, err := Compile(m, Plan{DP: n, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: n * 32})
	if err != nil {
		t.Fatal(err)
	}
	inter := rapid.Float64Range(0.05, 1).Draw(t, "inter")
	o := Options{Efficiency: Efficiency{Compute: 0.3, IntraComm: rapid.Float64Range(inter, 1).Draw(t, "intra"), InterComm: inter, Overlap: rapid.Float64Range(0, 1).Draw(t, "ov"), RingLayout: layout}}
	b1, err := c.IterationTime(cl, before, o)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := c.IterationTime(cl, after, o)
	if err != nil {
		t.Fatal(err)
	}
	if b2.DPComm < b1.DPComm || b2.DP < b1.DP || b2.Total < b1.Total {
		t.Fatalf("moving %d GPUs from server %d to %d: dp %v -> %v, exposed %v -> %v", move, from, to, b1.DPComm, b2.DPComm, b1.DP, b2.DP)
	}
}

func TestIterationTimeZeRO3AndCheckpointing(t *testing.T) {
	m := tinyTransformer(t, 4)
	cl := mustUniform(t, topology.A100(), 2)
	placement := make([]topology.GPUID, 8)
	for i := range placement {
		placement[i] = topology.GPUID(i * 2)
	}
	base := Plan{DP: 4, TP: 2, PP: 1, MicroBatches: 2, GlobalBatch: 16}
	c0, _ := Compile(m, base)
	z3 := base
	z3.ZeRO = 3
	c3, _ := Compile(m, z3)
	b0, _ := c0.IterationTime(cl, placement, textbook)
	b3, _ := c3.IterationTime(cl, placement, textbook)
	if !near(b3.DPComm, 1.5*b0.DPComm, 1e-12) {
		t.Errorf("ZeRO-3 DP %v, 1.5 x ZeRO-0 %v", b3.DPComm, 1.5*b0.DPComm)
	}
	ck := base
	ck.Checkpointing = true
	cc, _ := Compile(m, ck)
	bc, _ := cc.IterationTime(cl, placement, textbook)
	if !near(bc.Compute, 4.0/3*b0.Compute, 1e-12) || !near(bc.TP, 1.5*b0.TP, 1e-9) {
		t.Errorf("checkpointing: compute %v vs %v, tp %v vs %v", bc.Compute, b0.Compute, bc.TP, b0.TP)
	}
	// Under ZeRO only the reduce-scatter half of the synchronisation overlaps the backward
	// pass: with full overlap, ZeRO-1 exposes at least the all-gather half.
	full := DefaultEfficiency()
	full.Overlap = 1
	z1 := base
	z1.ZeRO = 1
	c1, _ := Compile(m, z1)
	bz, _ := c1.IterationTime(cl, placement, Options{Efficiency: full})
	if bz.DP < bz.DPComm/2-1e-15 || !near(bz.DPComm, b0.DPComm, 1e-12) {
		t.Errorf("ZeRO-1 exposed %v of %v", bz.DP, bz.DPComm)
	}
	// Halving the compute efficiency doubles the compute time.
	e := DefaultEfficiency()
	e.Compute /= 2
	bh, _ := c0.IterationTime(cl, placement, Options{Efficiency: e})
	if !near(bh.Compute, 2*b0.Compute, 1e-12) {
		t.Errorf("half efficiency: compute %v vs %v", bh.Compute, b0.Compute)
	}
}

// TestGPT3IterationTimeSane checks the benchmark job's breakdown for plausibility: compute near
// 6 x parameters x tokens / (GPUs x peak x efficiency), and a few-percent bubble.
func TestGPT3IterationTimeSane(t *testing.T) {
	c, cl, placement := gpt3Job13B(t)
	b, err := c.IterationTime(cl, placement, textbook)
	if err != nil {
		t.Fatal(err)
	}
	ideal := 6 * c.Model().Params() * 2048 * 1024 / (1024 * 312e12 * 0.5)
	if b.Compute < ideal || b.Compute > 1.5*ideal {
		t.Errorf("compute %v s, 6NT/(GPUs x peak x 0.5) = %v s", b.Compute, ideal)
	}
	if frac := b.Bubble / b.Total; frac < 0.05 || frac > 0.15 {
		t.Errorf("bubble fraction %v (PP-1)/(m+PP-1) ~ 7/71", frac)
	}
	if b.TP <= 0 || b.PP <= 0 || b.DP <= 0 {
		t.Errorf("breakdown %v", b)
	}
}

// TestScratchIsExact: a job timed many times with one Scratch (its evaluators reused from call
// to call, on placements and loads that differ, and on another cluster in between) gives
// exactly what it gives without one, for each call.
func TestScratchIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, cl, _ := genJob(t)
		other := genCluster(t)
		var scratch Scratch
		for call := range rapid.IntRange(1, 6).Draw(t, "calls") {
			on := cl
			if rapid.IntRange(0, 3).Draw(t, "other") == 0 && other.NumGPUs() >= c.Plan().Workers() {
				on = other
			}
			ids := make([]topology.GPUID, on.NumGPUs())
			for i := range ids {
				ids[i] = topology.GPUID(i)
			}
			placement := rapid.Permutation(ids).Draw(t, "perm")[:c.Plan().Workers()]
			o := Options{Load: genLinkLoad(t, on)}
			want, err := c.IterationTime(on, placement, o)
			if err != nil {
				t.Fatal(err)
			}
			o.Scratch = &scratch
			got, err := c.IterationTime(on, placement, o)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("call %d on %s: with scratch %+v, without %+v", call, on.Name(), got, want)
			}
		}
	})
}
