package topology

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// fastGenCluster draws a small heterogeneous cluster, with or without racks.
func fastGenCluster(t *rapid.T) *Cluster {
	n := rapid.IntRange(1, 6).Draw(t, "servers")
	perRack := rapid.IntRange(0, 3).Draw(t, "perRack")
	var racks []Rack
	servers := make([]Server, n)
	for i := range servers {
		spec := []ServerSpec{A100(), H100(), T4()}[rapid.IntRange(0, 2).Draw(t, "spec")]
		spec.GPUs = rapid.IntRange(1, 8).Draw(t, "gpus")
		spec.NICs = rapid.IntRange(1, 4).Draw(t, "nics")
		spec.NICBandwidth *= rapid.Float64Range(0.25, 2).Draw(t, "nicScale")
		servers[i] = Server{ID: fmt.Sprintf("s%d", i), ServerSpec: spec}
		if perRack > 0 {
			r := i / perRack
			if r == len(racks) {
				racks = append(racks, Rack{ID: fmt.Sprintf("r%d", r), Oversubscription: rapid.Float64Range(1, 4).Draw(t, "over")})
			}
			servers[i].Rack = racks[r].ID
		}
	}
	c, err := New("fast", servers, racks)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fastGenLoad(t *rapid.T, c *Cluster) LinkLoad {
	l := LinkLoad{}
	k := rapid.IntRange(0, 6).Draw(t, "loads")
	for i := 0; i < k; i++ {
		kind := LinkKind(rapid.IntRange(0, 2).Draw(t, "kind"))
		idx := rapid.IntRange(-1, c.NumServers()).Draw(t, "idx")
		v := rapid.SampledFrom([]float64{0, 1, 2.5, 7, -1, math.NaN()}).Draw(t, "v")
		l[Link{kind, idx}] = v
	}
	return l
}

func TestRingStatsMatchesRingOf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fastGenCluster(t)
		load := fastGenLoad(t, c)
		if rapid.Bool().Draw(t, "nilLoad") {
			load = nil
		}
		gpus := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) GPUID {
			return GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "g"))
		}), 0, 12).Draw(t, "gpus")
		want := c.RingOf(gpus, load)
		dense := c.FillDenseLoad(load, nil)
		got, _ := c.RingStatsOf(gpus, dense, nil)
		if got.GPUs != len(want.GPUs) || got.Servers != want.Servers ||
			got.Bandwidth() != want.Bandwidth || got.Latency() != want.Latency {
			t.Fatalf("RingStatsOf(%v) = %+v (bw %v lat %v), RingOf = %+v", gpus, got, got.Bandwidth(), got.Latency(), want)
		}
		// Already in ring order (the sort is skipped): same figures.
		if got3, _ := c.RingStatsOf(want.GPUs, dense, nil); got3 != got {
			t.Fatalf("RingStatsOf(ordered %v) = %+v, unordered %+v", want.GPUs, got3, got)
		}
		if load == nil {
			got2, _ := c.RingStatsOf(gpus, nil, nil)
			if got2 != got {
				t.Fatalf("nil *DenseLoad %+v != idle dense load %+v", got2, got)
			}
		}
		if len(gpus) >= 1 {
			// IntraStats matches a ring over two GPUs of one server.
			s := c.ServerOf(gpus[0])
			if first, n := c.GPUsOf(s); n >= 2 {
				want := c.RingOf([]GPUID{first, first + 1}, load)
				bw, lat := c.IntraStats(s, dense)
				if bw != want.Bandwidth || lat != want.Latency {
					t.Fatalf("IntraStats(%d) = %v, %v; RingOf = %v, %v", s, bw, lat, want.Bandwidth, want.Latency)
				}
			}
		}
		if len(gpus) >= 2 {
			a, b := gpus[0], gpus[1]
			bw, lat, inter := c.P2PStats(a, b, dense)
			const bytes = 1e6
			wantT := c.P2PTime(a, b, bytes, load)
			gotT := 0.0
			if a != b {
				gotT = lat + bytes/bw
			}
			if gotT != wantT {
				t.Fatalf("P2PStats(%d,%d): %v + 1e6/%v = %v, P2PTime = %v", a, b, lat, bw, gotT, wantT)
			}
			if inter != (c.ServerOf(a) != c.ServerOf(b)) {
				t.Fatalf("P2PStats(%d,%d) inter = %v", a, b, inter)
			}
		}
	})
}

// TestRingStatsCatchesWrongLoad shows the comparison above can fail: a ring across servers under
// NIC load differs from the idle ring.
func TestRingStatsCatchesWrongLoad(t *testing.T) {
	c, err := Uniform(A100(), 2)
	if err != nil {
		t.Fatal(err)
	}
	gpus := []GPUID{0, 8}
	loaded := c.FillDenseLoad(LinkLoad{{NICLink, 1}: 3}, nil)
	a, _ := c.RingStatsOf(gpus, loaded, nil)
	b, _ := c.RingStatsOf(gpus, nil, nil)
	if a.Bandwidth() == b.Bandwidth() {
		t.Fatal("NIC load did not change the ring bandwidth")
	}
	if want := c.RingOf(gpus, LinkLoad{{NICLink, 1}: 3}).Bandwidth; a.Bandwidth() != want {
		t.Fatalf("loaded bandwidth %v, RingOf %v", a.Bandwidth(), want)
	}
}

func TestRingStatsNoAllocs(t *testing.T) {
	c, err := UniformRacks(A100(), 16, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	gpus := make([]GPUID, 16)
	for i := range gpus {
		gpus[i] = GPUID(i * 8)
	}
	load := c.FillDenseLoad(LinkLoad{{NICLink, 3}: 1}, nil)
	buf := make([]GPUID, 0, 16)
	allocs := testing.AllocsPerRun(100, func() {
		var r RingStats
		r, buf = c.RingStatsOf(gpus, load, buf)
		_ = r
		_, _, _ = c.P2PStats(gpus[0], gpus[1], load)
	})
	if allocs != 0 {
		t.Fatalf("RingStatsOf allocates %v times per call", allocs)
	}
}

func BenchmarkRingStatsOf16(b *testing.B) {
	c, err := Uniform(A100(), 16)
	if err != nil {
		b.Fatal(err)
	}
	gpus := make([]GPUID, 16)
	for i := range gpus {
		gpus[i] = GPUID(i * 8)
	}
	buf := make([]GPUID, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		_, buf = c.RingStatsOf(gpus, nil, buf)
	}
}
