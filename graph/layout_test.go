package graph

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/placestr"
	"github.com/gpusched/gpusched/topology"
)

func TestRingLayoutText(t *testing.T) {
	for _, l := range []RingLayout{ServerGrouped, HalfDuplexPairs} {
		b, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back RingLayout
		if err := back.UnmarshalText(b); err != nil || back != l || string(b) != l.String() {
			t.Errorf("%v: %q -> %v, %v", l, b, back, err)
		}
	}
	if ServerGrouped.String() != "server-grouped" || HalfDuplexPairs.String() != "half-duplex-pairs" || RingLayout(7).String() != "ring-layout(7)" {
		t.Error("names")
	}
	var l RingLayout
	if err := l.UnmarshalText([]byte("rank-order")); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), `"rank-order"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := RingLayout(2).MarshalText(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("unknown value: %v", err)
	}
	// In JSON the default layout is left out and the other one is written by name.
	e := DefaultEfficiency()
	b, _ := json.Marshal(e)
	if strings.Contains(string(b), "ring_layout") {
		t.Errorf("default layout written: %s", b)
	}
	e.RingLayout = HalfDuplexPairs
	b, _ = json.Marshal(e)
	var back Efficiency
	if err := json.Unmarshal(b, &back); err != nil || back != e || !strings.Contains(string(b), `"ring_layout":"half-duplex-pairs"`) {
		t.Errorf("JSON %s -> %+v, %v", b, back, err)
	}
	if err := json.Unmarshal([]byte(`{"ring_layout":"ring"}`), &back); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad JSON layout: %v", err)
	}
	e.RingLayout = 9
	if err := e.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "ring_layout 9") {
		t.Errorf("Validate: %v", err)
	}
}

// TestHalfDuplexPairsByHand checks the data-parallel all-reduce time of pure-DP ResNet-50 on T4
// servers (one 50 Gb/s NIC, far slower than PCIe at these efficiencies) against the formula:
// 2(n-1)/n x B / (NIC x InterComm / share) + 2(n-1) x NIC latency, share 2 - PairDuplex for a
// ring over two servers under HalfDuplexPairs and 1 otherwise (PairDuplex ignored).
func TestHalfDuplexPairsByHand(t *testing.T) {
	m := mustZoo(t, "resnet50")
	cl := mustUniform(t, topology.T4(), 4)
	spec := topology.T4()
	for _, c := range []struct {
		placement string
		servers   int
	}{{"11", 2}, {"22", 2}, {"44", 2}, {"111", 3}, {"112", 3}, {"1111", 4}, {"4444", 4}} {
		gpus, err := placestr.GPUs(cl, c.placement, ErrInvalidPlacement)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(len(gpus))
		cc, err := Compile(m, Plan{DP: len(gpus), TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: len(gpus)})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			l      RingLayout
			duplex float64
		}{{ServerGrouped, 0}, {HalfDuplexPairs, 0}, {ServerGrouped, 0.3}, {HalfDuplexPairs, 0.3}, {HalfDuplexPairs, 1}} {
			l := v.l
			eff := Efficiency{Compute: 0.1, IntraComm: 0.8, InterComm: 0.1, Overlap: 0.8, RingLayout: l, PairDuplex: v.duplex}
			share := 1.0
			if l == HalfDuplexPairs && c.servers == 2 {
				share = 2 - v.duplex
			}
			want := 2*(n-1)/n*m.ParamBytes()/(spec.NICBandwidth*0.1/share) + 2*(n-1)*spec.NICLatency
			b, err := cc.IterationTime(cl, gpus, Options{Efficiency: eff})
			if err != nil {
				t.Fatal(err)
			}
			if !near(b.DPComm, want, 1e-12) {
				t.Errorf("%s under %v, pair duplex %v: DPComm %v, by hand %v", c.placement, l, v.duplex, b.DPComm, want)
			}
		}
	}
}

// TestSpreadingCatchesHalfDuplexPairs: the check of TestSpreadingNeverHelpsDP fails under
// HalfDuplexPairs, whose two-server rings are slower than three-server ones: moving one GPU of
// "22" to a third server ("211") halves the DP all-reduce time. Under ServerGrouped it does
// not change it (same GPUs, same NIC bottleneck).
func TestSpreadingCatchesHalfDuplexPairs(t *testing.T) {
	m := mustZoo(t, "resnet50")
	cl := mustUniform(t, topology.T4(), 3)
	c, err := Compile(m, Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 128})
	if err != nil {
		t.Fatal(err)
	}
	before, after := ids(0, 1, 4, 5), ids(0, 1, 4, 8)
	for _, l := range []RingLayout{ServerGrouped, HalfDuplexPairs} {
		o := Options{Efficiency: Efficiency{Compute: 0.3, IntraComm: 0.8, InterComm: 0.5, Overlap: 0.5, RingLayout: l}}
		b1, err1 := c.IterationTime(cl, before, o)
		b2, err2 := c.IterationTime(cl, after, o)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		spreadingHelped := b2.DPComm < b1.DPComm
		if spreadingHelped != (l == HalfDuplexPairs) {
			t.Errorf("%v: DPComm %v (22) -> %v (211)", l, b1.DPComm, b2.DPComm)
		}
		if l == HalfDuplexPairs && !near(b1.DPComm-2*3*topology.T4().NICLatency, 2*(b2.DPComm-2*3*topology.T4().NICLatency), 1e-12) {
			t.Errorf("half-duplex pair: bandwidth term %v, want twice %v", b1.DPComm, b2.DPComm)
		}
	}
}

// TestBucketStepLatencyByHand checks the per-bucket step latency of the data-parallel
// all-reduce against the formula, on pure-DP models of 1, 4 and 17 gradient buckets on T4
// servers: a ring over n GPUs on several servers takes ceil(B / GradientBucketBytes) x 2(n-1) x
// BucketStepLatency more than without it (ResNet-18 in fp32: 44.7 MiB, two buckets; ResNet-50
// in fp32: 97.5 MiB, four; BERT-base in fp32: 17), x 1.5 under ZeRO-3; a ring on one server
// takes none. A term paid once per all-reduce, per server or on one server fails here.
func TestBucketStepLatencyByHand(t *testing.T) {
	cl := mustUniform(t, topology.T4(), 4)
	const lat = 5e-4
	for _, c := range []struct {
		model     string
		buckets   float64
		placement string
		zero      int
	}{
		{"resnet18-cifar10", 2, "11", 0}, {"resnet18-cifar10", 2, "144", 0}, {"resnet50", 4, "4444", 0},
		{"resnet50", 4, "22", 3}, {"bert-base", 17, "1111", 0}, {"resnet50", 0, "4", 0}, {"ncf", 1, "112", 0},
	} {
		m, err := mustZoo(t, c.model).WithDTypeBytes(4)
		if err != nil {
			t.Fatal(err)
		}
		gpus, err := placestr.GPUs(cl, c.placement, ErrInvalidPlacement)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(len(gpus))
		cc, err := Compile(m, Plan{DP: len(gpus), TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: len(gpus), ZeRO: c.zero})
		if err != nil {
			t.Fatal(err)
		}
		eff := Efficiency{Compute: 0.1, IntraComm: 0.8, InterComm: 0.1, Overlap: 0.8, RingLayout: HalfDuplexPairs, PairDuplex: 0.5}
		without, err := cc.IterationTime(cl, gpus, Options{Efficiency: eff})
		if err != nil {
			t.Fatal(err)
		}
		eff.BucketStepLatency = lat
		with, err := cc.IterationTime(cl, gpus, Options{Efficiency: eff})
		if err != nil {
			t.Fatal(err)
		}
		if got := math.Ceil(m.ParamBytes() / GradientBucketBytes); c.buckets > 0 && got != c.buckets {
			t.Errorf("%s: %v buckets, want %v", c.model, got, c.buckets)
		}
		count := 1.0
		if c.zero == 3 {
			count = 1.5
		}
		want := c.buckets * count * 2 * (n - 1) * lat
		if !near(with.DPComm-without.DPComm, want, 1e-9) {
			t.Errorf("%s on %s: the buckets add %v s to DPComm, by hand %v", c.model, c.placement, with.DPComm-without.DPComm, want)
		}
	}
	if err := (Efficiency{Compute: 1, IntraComm: 1, InterComm: 1, BucketStepLatency: -1}).Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "bucket_step_latency") {
		t.Errorf("negative latency: %v", err)
	}
}
