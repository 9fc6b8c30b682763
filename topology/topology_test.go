package topology

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func mustUniform(t interface {
	Helper()
	Fatal(...any)
}, spec ServerSpec, n int) *Cluster {
	t.Helper()
	c, err := Uniform(spec, n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func ids(first GPUID, n int) []GPUID {
	out := make([]GPUID, n)
	for i := range out {
		out[i] = first + GPUID(i)
	}
	return out
}

func TestClusterShape(t *testing.T) {
	c := mustUniform(t, A100(), 3)
	if c.NumGPUs() != 24 || c.NumServers() != 3 || c.NumRacks() != 0 {
		t.Fatalf("shape: %d GPUs %d servers %d racks", c.NumGPUs(), c.NumServers(), c.NumRacks())
	}
	if c.Name() != "3x8-a100" {
		t.Errorf("name %q", c.Name())
	}
	if first, n := c.GPUsOf(2); first != 16 || n != 8 {
		t.Errorf("GPUsOf(2) = %d, %d", first, n)
	}
	if c.ServerOf(15) != 1 || c.GPUName(15) != "a100-1/7" {
		t.Errorf("GPU 15 is %d %s", c.ServerOf(15), c.GPUName(15))
	}
	if i, ok := c.ServerIndex("a100-2"); !ok || i != 2 {
		t.Errorf("ServerIndex")
	}
	if err := c.Check(24); !errors.Is(err, ErrNoSuchGPU) || !strings.Contains(err.Error(), "GPU 24") {
		t.Errorf("Check(24) = %v", err)
	}
	if c.Check(-1) == nil || c.Check(0) != nil {
		t.Error("Check bounds")
	}
	if got := c.PerServer([]GPUID{0, 9, 10, 23}); !slices.Equal(got, []int{1, 2, 1}) {
		t.Errorf("PerServer = %v", got)
	}
	if c.ServersSpanned([]GPUID{0, 9, 10, 23}) != 3 || c.ServersSpanned(nil) != 0 {
		t.Error("ServersSpanned")
	}
	if c.GPU(5).Model != "A100-SXM4-80GB" || !near(c.totalPeakFLOPS(), 24*312e12) {
		t.Error("GPU spec / TotalPeakFLOPS")
	}
}

func TestNewRejects(t *testing.T) {
	good := Server{ID: "s", ServerSpec: T4()}
	mod := func(f func(*Server)) []Server { s := good; f(&s); return []Server{s} }
	cases := []struct {
		name    string
		servers []Server
		racks   []Rack
		msg     string
	}{
		{"empty", nil, nil, "no servers"},
		{"duplicate id", []Server{good, good}, nil, `duplicate server id "s"`},
		{"empty id", mod(func(s *Server) { s.ID = "" }), nil, "empty id"},
		{"zero GPUs", mod(func(s *Server) { s.GPUs = 0 }), nil, `server "s": gpus 0`},
		{"zero NICs", mod(func(s *Server) { s.NICs = 0 }), nil, "nics 0"},
		{"zero intra bandwidth", mod(func(s *Server) { s.IntraBandwidth = 0 }), nil, "intra_bandwidth"},
		{"negative NIC bandwidth", mod(func(s *Server) { s.NICBandwidth = -1 }), nil, "nic_bandwidth -1"},
		{"NaN flops", mod(func(s *Server) { s.GPU.PeakFLOPS = math.NaN() }), nil, "peak_flops NaN"},
		{"inf memory", mod(func(s *Server) { s.GPU.MemoryBytes = math.Inf(1) }), nil, "memory_bytes"},
		{"negative latency", mod(func(s *Server) { s.NICLatency = -1e-6 }), nil, "nic_latency"},
		{"unknown rack", mod(func(s *Server) { s.Rack = "r9" }), []Rack{{ID: "r0", Oversubscription: 1}}, `unknown rack "r9"`},
		{"rackless server in racked cluster", []Server{good}, []Rack{{ID: "r0", Oversubscription: 1}}, "has no rack"},
		{"duplicate rack", mod(func(s *Server) { s.Rack = "r" }), []Rack{{ID: "r", Oversubscription: 1}, {ID: "r", Oversubscription: 2}}, `duplicate rack id "r"`},
		{"oversubscription below 1", mod(func(s *Server) { s.Rack = "r" }), []Rack{{ID: "r", Oversubscription: 0.5}}, "oversubscription 0.5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("x", tc.servers, tc.racks)
			if !errors.Is(err, ErrInvalidCluster) {
				t.Fatalf("New = %v, want ErrInvalidCluster", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
	if _, err := Uniform(A100(), 0); !errors.Is(err, ErrInvalidCluster) {
		t.Errorf("Uniform(0) = %v", err)
	}
	if _, err := Preset("tpu"); !errors.Is(err, ErrInvalidCluster) {
		t.Errorf("Preset(tpu) = %v", err)
	}
}

// Hand-computed transfer times. A100 servers: NVLink 300 GB/s per GPU each way, 8 x 25 GB/s NICs.
func TestRingAllReduceHandComputed(t *testing.T) {
	c := mustUniform(t, A100(), 8)
	const gb = 1e9
	// 8 GPUs in one server: 2*7/8 * 1 GB / 300 GB/s = 5.8333 ms, plus 14 steps of 3 us.
	in := c.RingAllReduceTime(ids(0, 8), gb, nil)
	if want := 2*7.0/8*gb/300e9 + 14*3e-6; !near(in, want) {
		t.Errorf("8 GPUs in one server: %v s, want %v", in, want)
	}
	// 8 GPUs on 8 servers, one each: every hop is one 200 Gb/s NIC (25 GB/s):
	// 2*7/8 * 1 GB / 25 GB/s = 70 ms, plus 14 steps of 5 us.
	spread := []GPUID{0, 8, 16, 24, 32, 40, 48, 56}
	out := c.RingAllReduceTime(spread, gb, nil)
	if want := 2*7.0/8*gb/25e9 + 14*5e-6; !near(out, want) {
		t.Errorf("8 GPUs on 8 servers: %v s, want %v", out, want)
	}
	if out/in < 11 || out/in > 13 {
		t.Errorf("spread/packed ratio %v, want about 12", out/in)
	}
	// 16 GPUs on 2 full servers: each server drives all 8 NICs (200 GB/s) < NVLink 300 GB/s.
	two := c.RingAllReduceTime(ids(0, 16), gb, nil)
	if want := 2*15.0/16*gb/200e9 + 30*5e-6; !near(two, want) {
		t.Errorf("16 GPUs on 2 servers: %v s, want %v", two, want)
	}
	// One GPU or no bytes: no time.
	if c.RingAllReduceTime(ids(3, 1), gb, nil) != 0 || c.RingAllReduceTime(ids(0, 8), 0, nil) != 0 {
		t.Error("degenerate all-reduce should take no time")
	}
	// Duplicates count once; order does not matter.
	if got := c.RingAllReduceTime([]GPUID{56, 0, 8, 16, 24, 32, 40, 48, 0}, gb, nil); !near(got, out) {
		t.Errorf("permuted ring: %v, want %v", got, out)
	}
	r := c.RingOf(spread, nil)
	if r.Servers != 8 || !near(r.Bandwidth, 25e9) || !near(r.allGatherTime(gb), 7.0/8*gb/25e9+7*5e-6) {
		t.Errorf("RingOf: %+v", r)
	}
}

func TestP2PHandComputed(t *testing.T) {
	c := mustUniform(t, T4(), 2)
	const mb = 1e6
	if got, want := c.P2PTime(0, 3, mb, nil), 10e-6+mb/15.75e9; !near(got, want) {
		t.Errorf("intra P2P %v, want %v", got, want)
	}
	if got, want := c.P2PTime(0, 4, mb, nil), 50e-6+mb/6.25e9; !near(got, want) {
		t.Errorf("inter P2P %v, want %v", got, want)
	}
	if c.P2PTime(2, 2, mb, nil) != 0 || c.P2PTime(0, 4, 0, nil) != 0 {
		t.Error("self or empty transfer should take no time")
	}
	// One other flow on server 1's NIC halves the bandwidth.
	load := LinkLoad{{NICLink, 1}: 1}
	if got, want := c.P2PTime(0, 4, mb, load), 50e-6+mb/3.125e9; !near(got, want) {
		t.Errorf("shared NIC P2P %v, want %v", got, want)
	}
	// T4's PCIe fabric is shared; two other flows divide it by three.
	if got, want := c.P2PTime(0, 1, mb, LinkLoad{{IntraLink, 0}: 2}), 10e-6+mb/(15.75e9/3); !near(got, want) {
		t.Errorf("shared PCIe P2P %v, want %v", got, want)
	}
	// An NVSwitch is not shared: load on it changes nothing.
	a := mustUniform(t, A100(), 1)
	if a.P2PTime(0, 1, mb, LinkLoad{{IntraLink, 0}: 5}) != a.P2PTime(0, 1, mb, nil) {
		t.Error("NVSwitch bandwidth should not be divided")
	}
}

func TestRacks(t *testing.T) {
	c, err := UniformRacks(A100(), 4, 2, 4) // 2 racks of 2 servers, 4:1 uplinks
	if err != nil {
		t.Fatal(err)
	}
	if c.NumRacks() != 2 || c.RackOf(3) != 1 || c.Rack(1).ID != "rack-1" {
		t.Fatalf("racks: %d, RackOf(3)=%d", c.NumRacks(), c.RackOf(3))
	}
	const mb = 1e6
	same := c.P2PTime(0, 8, mb, nil)    // servers 0 and 1, rack 0
	across := c.P2PTime(0, 16, mb, nil) // servers 0 and 2
	if want := 5e-6 + mb/(25e9/4); !near(across, want) || !near(same, 5e-6+mb/25e9) {
		t.Errorf("same rack %v, across %v (want %v)", same, across, want)
	}
	// A ring over one GPU of each server crosses racks: bottleneck 25/4 GB/s.
	r := c.RingOf([]GPUID{0, 8, 16, 24}, nil)
	if !near(r.Bandwidth, 25e9/4) {
		t.Errorf("cross-rack ring bandwidth %v", r.Bandwidth)
	}
	links := c.Links([]GPUID{0, 8, 16, 24})
	want := []Link{{NICLink, 0}, {NICLink, 1}, {NICLink, 2}, {NICLink, 3}, {UplinkLink, 0}, {UplinkLink, 1}}
	if !slices.Equal(links, want) {
		t.Errorf("Links = %v, want %v", links, want)
	}
	// Load on an uplink slows cross-rack traffic further.
	if got := c.P2PTime(0, 16, mb, LinkLoad{{UplinkLink, 1}: 1}); !near(got, 5e-6+mb/(25e9/8)) {
		t.Errorf("loaded uplink: %v", got)
	}
}

func TestLinks(t *testing.T) {
	t4 := mustUniform(t, T4(), 2)
	if got := t4.Links([]GPUID{0, 1}); !slices.Equal(got, []Link{{IntraLink, 0}}) {
		t.Errorf("two T4s on one server share PCIe: %v", got)
	}
	if got := t4.Links([]GPUID{0}); len(got) != 0 {
		t.Errorf("one GPU uses no shared link: %v", got)
	}
	if got := t4.Links([]GPUID{0, 1, 4}); !slices.Equal(got, []Link{{IntraLink, 0}, {NICLink, 0}, {NICLink, 1}}) {
		t.Errorf("spanning job: %v", got)
	}
	a := mustUniform(t, A100(), 1)
	if got := a.Links(ids(0, 8)); len(got) != 0 {
		t.Errorf("NVSwitch job uses no shared link: %v", got)
	}
	for _, k := range []LinkKind{IntraLink, NICLink, UplinkLink, 9} {
		if k.String() == "" {
			t.Error("empty LinkKind string")
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	c, err := UniformRacks(H100(), 5, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Save(&buf); err != nil {
		t.Fatal(err)
	}
	d, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Equal(d) {
		t.Fatalf("round trip changed the cluster:\n%+v\n%+v", c, d)
	}
	// Through MarshalJSON / UnmarshalJSON too.
	data, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var e Cluster
	if err := e.UnmarshalJSON(data); err != nil || !c.Equal(&e) {
		t.Fatalf("Marshal/Unmarshal round trip: %v", err)
	}
	if c.Equal(mustUniform(t, H100(), 5)) || !(*Cluster)(nil).Equal(nil) || c.Equal(nil) {
		t.Error("Equal")
	}
}

func TestJSONPresetsAndCount(t *testing.T) {
	src := `{"name": "lab",
	  "racks": [{"id": "r0", "oversubscription": 2}],
	  "servers": [
	    {"id": "a", "count": 3, "preset": "a100", "rack": "r0"},
	    {"id": "t", "preset": "t4", "rack": "r0", "nic_bandwidth": 12.5e9}
	  ]}`
	c, err := parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumServers() != 4 || c.NumGPUs() != 28 || c.Server(2).ID != "a-2" || c.Server(3).ID != "t" {
		t.Fatalf("parsed %d servers %d GPUs", c.NumServers(), c.NumGPUs())
	}
	if c.Server(3).NICBandwidth != 12.5e9 || c.Server(3).GPUs != 4 || c.Server(0).IntraBandwidth != 300e9 {
		t.Errorf("preset override: %+v", c.Server(3))
	}
}

func TestJSONErrors(t *testing.T) {
	cases := map[string]string{
		`{`:                         "unexpected EOF",
		`{"name":"x","servers":[]}`: "no servers",
		`{"name":"x","servers":[{"id":"a","gpu":1}]}`:                                       "server entry 0",
		`{"servers":[{"id":"a","preset":"a100","nic_bandwith":1}]}`:                         "unknown field",
		`{"servers":[{"id":"a","preset":"tpu"}]}`:                                           `server entry 0: topology: invalid cluster: unknown server preset "tpu"`,
		`{"servers":[{"id":"a","preset":"a100","count":0}]}`:                                "count 0",
		`{"servers":[{"id":"a","preset":"a100","count":-3}]}`:                               "count -3",
		`{"servers":[{"id":"a","preset":"a100"},{"id":"b","preset":"t4","count":1048576}]}`: `server entry 1 ("b"): more than 1048576 servers in all`,
		`{"servers":[{"id":"a","preset":"a100","intra_bandwidth":0}]}`:                      `server "a": intra_bandwidth 0`,
		`{"servers":[{"id":"a","preset":"a100"}]} {}`:                                       "trailing data",
		`{"servers":[{"id":"a","preset":"a100"},{"id":"a","preset":"t4"}]}`:                 `duplicate server id "a"`,
	}
	for src, msg := range cases {
		_, err := parse([]byte(src))
		if !errors.Is(err, ErrInvalidCluster) {
			t.Errorf("%s: err = %v, want ErrInvalidCluster", src, err)
			continue
		}
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %q does not say %q", src, err, msg)
		}
	}
}

// TestGPUSetMatchesMap checks GPUSet against a map-based model under random operations.
func TestGPUSetMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s GPUSet
		model := map[GPUID]bool{}
		gpu := rapid.Custom(func(t *rapid.T) GPUID { return GPUID(rapid.IntRange(-2, 300).Draw(t, "g")) })
		for i := rapid.IntRange(0, 60).Draw(t, "ops"); i > 0; i-- {
			g := gpu.Draw(t, "gpu")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				s.Add(g)
				if g >= 0 {
					model[g] = true
				}
			case 1:
				s.Remove(g)
				delete(model, g)
			case 2:
				if s.Contains(g) != model[g] {
					t.Fatalf("Contains(%d) = %v", g, s.Contains(g))
				}
			}
		}
		var want []GPUID
		for g := range model {
			want = append(want, g)
		}
		slices.Sort(want)
		if got := s.Slice(); !slices.Equal(got, want) || s.Len() != len(want) {
			t.Fatalf("Slice = %v, want %v", got, want)
		}
		lo := GPUID(rapid.IntRange(-5, 300).Draw(t, "lo"))
		n := rapid.IntRange(-1, 130).Draw(t, "n")
		count := 0
		for _, g := range want {
			if g >= lo && int(g) < int(lo)+n {
				count++
			}
		}
		if got := s.CountRange(lo, n); got != count {
			t.Fatalf("CountRange(%d, %d) = %d, want %d", lo, n, got, count)
		}
		other := SetOf(want...)
		c := s.Clone()
		c.RemoveAll(other)
		if c.Len() != 0 || (len(want) > 0 && !s.intersects(other)) {
			t.Fatalf("RemoveAll/Intersects")
		}
		c.AddAll(other)
		if c.Len() != len(want) {
			t.Fatalf("AddAll")
		}
	})
}

func TestGPUSetString(t *testing.T) {
	if got := SetOf(0, 1, 2, 3, 8, 10, 11).String(); got != "{0-3,8,10-11}" {
		t.Errorf("String = %q", got)
	}
	if got := (GPUSet{}).String(); got != "{}" {
		t.Errorf("empty String = %q", got)
	}
	if NewGPUSet(-1).Len() != 0 {
		t.Error("NewGPUSet(-1)")
	}
}

// Property: a slower link never makes a collective faster, and adding load never helps.
func TestRingMonotoneInBandwidthAndLoad(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := A100()
		c := mustUniform(t, spec, 4)
		slow := spec
		slow.NICBandwidth /= rapid.Float64Range(1, 10).Draw(t, "nic slowdown")
		slow.IntraBandwidth /= rapid.Float64Range(1, 10).Draw(t, "intra slowdown")
		d := mustUniform(t, slow, 4)
		var gs []GPUID
		for _, g := range rapid.SliceOfNDistinct(rapid.IntRange(0, 31), 1, 32, rapid.ID[int]).Draw(t, "gpus") {
			gs = append(gs, GPUID(g))
		}
		bytes := rapid.Float64Range(0, 1e10).Draw(t, "bytes")
		fast, slowT := c.RingAllReduceTime(gs, bytes, nil), d.RingAllReduceTime(gs, bytes, nil)
		if slowT < fast {
			t.Fatalf("slower links gave a faster all-reduce: %v < %v", slowT, fast)
		}
		load := LinkLoad{}
		for _, l := range c.Links(gs) {
			load[l] = rapid.Float64Range(0, 4).Draw(t, "load")
		}
		load[Link{NICLink, rapid.IntRange(0, 3).Draw(t, "server")}] += 1
		if loaded := c.RingAllReduceTime(gs, bytes, load); loaded < fast {
			t.Fatalf("load made the all-reduce faster: %v < %v", loaded, fast)
		}
	})
}

func TestAllGPUs(t *testing.T) {
	for _, n := range []int{1, 2, 8, 16, 17} {
		spec := T4()
		spec.GPUs = 4
		c := mustUniform(t, spec, n)
		all := c.AllGPUs()
		if all.Len() != c.NumGPUs() || !all.Contains(GPUID(c.NumGPUs()-1)) || all.Contains(GPUID(c.NumGPUs())) {
			t.Errorf("%d servers: AllGPUs = %v", n, all)
		}
	}
}

func TestGPUSpecTypeAndIs(t *testing.T) {
	a := A100().GPU
	if a.Type() != "a100" || T4().GPU.Type() != "t4" {
		t.Errorf("types %q %q", a.Type(), T4().GPU.Type())
	}
	for _, name := range []string{"", "a100", "A100", "a100-sxm4-80gb", "A100-SXM4-80GB"} {
		if !a.Is(name) {
			t.Errorf("%q does not name %s", name, a.Model)
		}
	}
	for _, name := range []string{"a10", "t4", "A100-SXM4-40GB", "h100"} {
		if a.Is(name) {
			t.Errorf("%q names %s", name, a.Model)
		}
	}
}

func TestGPUSetEqualAndSetTo(t *testing.T) {
	a, b := NewGPUSet(10), NewGPUSet(300)
	a.Add(3)
	b.Add(3)
	if !a.Equal(b) || !b.Equal(a) {
		t.Fatalf("%v and %v: not equal", a, b)
	}
	b.Add(200)
	if a.Equal(b) || b.Equal(a) {
		t.Fatalf("%v and %v: equal", a, b)
	}
	var c GPUSet
	c.SetTo(b)
	if !c.Equal(b) {
		t.Fatalf("SetTo: %v, want %v", c, b)
	}
	b.Remove(200)
	if c.Equal(b) {
		t.Fatal("SetTo shares storage")
	}
}

// TestGPUOutOfRange: GPU of an id the cluster lacks is the zero spec, not a panic.
func TestGPUOutOfRange(t *testing.T) {
	c := mustUniform(t, A100(), 2)
	for _, g := range []GPUID{-1, 16, 99} {
		if got := c.GPU(g); got != (GPUSpec{}) {
			t.Errorf("GPU(%d) = %+v, want the zero spec", g, got)
		}
	}
	if got := c.GPU(15); got != A100().GPU {
		t.Errorf("GPU(15) = %+v", got)
	}
}
