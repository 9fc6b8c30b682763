package graph

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestOptionsUseGPUTypeConstants: without explicit constants a job gets those of the GPU type
// it is placed on (its slowest GPU's when the placement mixes types); a Calibration overrides
// them per type and adds factors per model; an unknown type gets the textbook constants.
func TestOptionsUseGPUTypeConstants(t *testing.T) {
	m := mustZoo(t, "bert-large")
	c, err := Compile(m, Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []topology.ServerSpec{topology.A800(), topology.A100(), topology.H100(), topology.T4()} {
		cl := mustUniform(t, spec, 2)
		got, err := c.IterationTime(cl, ids(0, spec.GPUs), Options{})
		if err != nil {
			t.Fatal(err)
		}
		eff, ok := HardwareConstants(spec.GPU.Model)
		if !ok {
			t.Fatalf("no shipped constants for %s", spec.GPU.Model)
		}
		want, _ := c.IterationTime(cl, ids(0, spec.GPUs), Options{Efficiency: eff})
		if got != want {
			t.Errorf("%s: default %v, its constants %v", spec.GPU.Model, got, want)
		}
		if def, _ := c.IterationTime(cl, ids(0, spec.GPUs), textbook); def == got {
			t.Errorf("%s: default options give the textbook constants", spec.GPU.Model)
		}
	}
	// An unknown GPU type: the textbook constants.
	odd := topology.A100()
	odd.GPU.Model = "MI300X"
	cl := mustUniform(t, odd, 2)
	got, _ := c.IterationTime(cl, ids(0, 8), Options{})
	want, _ := c.IterationTime(cl, ids(0, 8), textbook)
	if got != want {
		t.Errorf("unknown type: %v, textbook %v", got, want)
	}
	if _, ok := HardwareConstants("MI300X"); ok {
		t.Error("MI300X has shipped constants")
	}
	// A mixed placement uses the slowest GPU's type.
	mixed, err := topology.New("mixed", []topology.Server{{ID: "a", ServerSpec: topology.A800()}, {ID: "t", ServerSpec: topology.T4()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := c.Place(mixed, ids(0, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	if pl.GPUModel() != "T4-16GB" {
		t.Errorf("mixed placement uses %q", pl.GPUModel())
	}
	// A calibration overrides the type's constants and adds the model's factors.
	eff := DefaultEfficiency()
	eff.Compute = 0.25
	cal := &Calibration{Hardware: map[string]Efficiency{"a800": eff}, Models: map[string]ModelFactors{"bert-large": {Compute: 2, Overhead: 0.5}}}
	a800 := mustUniform(t, topology.A800(), 2)
	gotCal, err := c.IterationTime(a800, ids(0, 8), Options{Calibration: cal})
	if err != nil {
		t.Fatal(err)
	}
	wantCal, _ := c.IterationTime(a800, ids(0, 8), Options{Efficiency: eff, Factors: ModelFactors{Compute: 2, Overhead: 0.5}})
	if gotCal != wantCal || !near(gotCal.Overhead, 0.5, 1e-12) {
		t.Errorf("calibrated %v, want %v", gotCal, wantCal)
	}
	// Factors keyed by another name do not apply: a variant is another model.
	fp32, _ := m.WithDTypeBytes(4)
	c32, _ := Compile(fp32, c.Plan())
	b32, _ := c32.IterationTime(a800, ids(0, 8), Options{Calibration: cal})
	w32, _ := c32.IterationTime(a800, ids(0, 8), Options{Efficiency: eff})
	if b32 != w32 {
		t.Errorf("bert-large's factors applied to %s", fp32.Name())
	}
}

// TestZeroModelFactorsChangeNothing: the zero ModelFactors and all-ones factors with no
// overhead give the same time; each factor scales its part.
func TestModelFactors(t *testing.T) {
	m := tinyTransformer(t, 4)
	c, err := Compile(m, Plan{DP: 2, TP: 2, PP: 2, MicroBatches: 2, GlobalBatch: 8, ZeRO: 1})
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A800(), 2)
	placement := ids(0, 1, 2, 3, 8, 9, 10, 11)
	eff, _ := HardwareConstants("a800")
	zero, _ := c.IterationTime(cl, placement, Options{Efficiency: eff})
	ones, _ := c.IterationTime(cl, placement, Options{Efficiency: eff, Factors: ModelFactors{1, 1, 1, 0, 1}})
	if zero != ones {
		t.Fatalf("zero factors %v, ones %v", zero, ones)
	}
	two, _ := c.IterationTime(cl, placement, Options{Efficiency: eff, Factors: ModelFactors{Compute: 2, Comm: 3, Optimizer: 5, Overhead: 0.1}})
	if !near(two.Compute, 2*zero.Compute, 1e-9) || !near(two.TP, 3*zero.TP, 1e-9) || !near(two.DPComm, 3*zero.DPComm, 1e-9) ||
		!near(two.Optimizer, 5*zero.Optimizer, 1e-9) || !near(two.Overhead, zero.Overhead+0.1, 1e-12) {
		t.Errorf("factors: %v from %v", two, zero)
	}
	par, _ := c.IterationTime(cl, placement, Options{Efficiency: eff, Factors: ModelFactors{Compute: 2, Parallel: 1.5}})
	if !near(par.Compute, 3*zero.Compute, 1e-9) {
		t.Errorf("parallel factor: compute %v from %v", par.Compute, zero.Compute)
	}
	// A negative overhead lowers the hardware's, down to nothing.
	neg, _ := c.IterationTime(cl, placement, Options{Efficiency: eff, Factors: ModelFactors{Overhead: -10}})
	if neg.Overhead != 0 {
		t.Errorf("overhead %v", neg.Overhead)
	}
	for _, bad := range []ModelFactors{{Compute: -1}, {Comm: math.NaN()}, {Overhead: math.Inf(1)}, {Parallel: math.Inf(1)}} {
		if _, err := c.IterationTime(cl, placement, Options{Efficiency: eff, Factors: bad}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("factors %+v: %v", bad, err)
		}
	}
}

// TestNICReachByHand: on A800 servers (4 NICs, each shared by a pair of GPUs) a job with 4 GPUs
// on a server reaches 2 NICs, so its 4 data-parallel rings (one per tensor-parallel shard, one
// GPU per server each) share those 2: each gets half a NIC. With 8 GPUs per server the same
// rings reach all 4 NICs and get one each. A variant that lets the rings use every NIC of the
// server would not tell the two apart.
func TestNICReachByHand(t *testing.T) {
	m := tinyTransformer(t, 2)
	eff := Efficiency{Compute: 0.5, IntraComm: 1, InterComm: 0.5, Overlap: 0}
	a800 := topology.A800()
	cl := mustUniform(t, a800, 2)
	ring := func(dp int, bytes float64, bw float64) float64 {
		n := float64(dp)
		return 2*(n-1)/n*bytes/bw + 2*(n-1)*a800.NICLatency
	}
	// TP 4 x DP 2: replica d on server d (GPUs 0-3 and 8-11).
	c4, _ := Compile(m, Plan{DP: 2, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 2})
	b4, err := c4.IterationTime(cl, ids(0, 1, 2, 3, 8, 9, 10, 11), Options{Efficiency: eff})
	if err != nil {
		t.Fatal(err)
	}
	shard := m.ParamBytes() / 4
	if want := ring(2, shard, a800.NICBandwidth/2*0.5); !near(b4.DPComm, want, 1e-12) {
		t.Errorf("4 GPUs per server: DP %v, by hand (half a NIC per ring) %v", b4.DPComm, want)
	}
	// TP 4 x DP 4, two replicas per server: rings still have one GPU per server... per
	// server 8 GPUs reach 4 NICs, 4 rings with 2 GPUs there (one channel each): a NIC each.
	c8, _ := Compile(m, Plan{DP: 4, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 4})
	b8, err := c8.IterationTime(cl, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), Options{Efficiency: eff})
	if err != nil {
		t.Fatal(err)
	}
	if want := ring(4, shard, a800.NICBandwidth*0.5); !near(b8.DPComm, want, 1e-12) {
		t.Errorf("8 GPUs per server: DP %v, by hand (a NIC per ring) %v", b8.DPComm, want)
	}
	if b4.DPComm <= ring(2, shard, a800.NICBandwidth*0.5) {
		t.Error("the rings of a 4-GPU-per-server job use NICs its GPUs are not attached to")
	}
}

// TestOffloadByHand checks the ZeRO-Offload optimizer time against the equations: two servers,
// two workers each, 3 threads per worker.
func TestOffloadByHand(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "one", Layers: []Layer{{Name: "l", FLOPs: 1e9, ParamBytes: 8e9, ActivationBytes: 1, MemoryBytes: 1}}})
	p := Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 4, ZeRO: 2, Offload: true, CPUThreads: 3}
	c, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	cl := mustUniform(t, topology.A800(), 2)
	eff := Efficiency{Compute: 0.5, IntraComm: 0.8, InterComm: 0.8, Overlap: 0.5, CPUOptimizerPerParam: 4e-9, HostOptimizerPerParam: 1e-10, HostBandwidth: 10e9}
	b, err := c.IterationTime(cl, ids(0, 1, 8, 9), Options{Efficiency: eff})
	if err != nil {
		t.Fatal(err)
	}
	params := 8e9 / 2   // 2-byte values
	q := 2 * params / 4 // each server's two workers update a quarter each
	cpu := math.Max(q*4e-9/(2*3), q*1e-10)
	pcie := (2*params/4 + 8e9) / 10e9 // the shard's gradients out, the parameters back whole
	if !near(b.Optimizer, cpu+pcie, 1e-12) {
		t.Errorf("offload optimizer %v, by hand %v", b.Optimizer, cpu+pcie)
	}
	// Without offload the GPU updates its shard.
	p.Offload, p.CPUThreads = false, 0
	c2, _ := Compile(m, p)
	eff.OptimizerPerParam = 1e-11
	b2, _ := c2.IterationTime(cl, ids(0, 1, 8, 9), Options{Efficiency: eff})
	if !near(b2.Optimizer, params/4*1e-11, 1e-12) {
		t.Errorf("ZeRO-2 optimizer %v, by hand %v", b2.Optimizer, params/4*1e-11)
	}
	// Offload keeps the optimizer state in host memory.
	if mem := c.Memory(); mem.Optimizer != 0 || mem.Host <= 0 {
		t.Errorf("offload memory %+v", mem)
	}
}

// TestLayerOverheadByHand: each layer costs LayerOverhead per forward pass of a micro-batch,
// three times with the backward pass: small micro-batches run below the achieved peak.
func TestLayerOverheadByHand(t *testing.T) {
	m := mustModel(t, ModelSpec{Name: "two", Layers: []Layer{
		{Name: "a", FLOPs: 1e9, ParamBytes: 1, ActivationBytes: 1, MemoryBytes: 1},
		{Name: "b", FLOPs: 1e9, ParamBytes: 1, ActivationBytes: 1, MemoryBytes: 1}}})
	c, _ := Compile(m, Plan{DP: 1, TP: 1, PP: 1, MicroBatches: 4, GlobalBatch: 8})
	cl := mustUniform(t, topology.A800(), 1)
	eff := Efficiency{Compute: 0.5, IntraComm: 0.8, InterComm: 0.8, LayerOverhead: 1e-3}
	b, _ := c.IterationTime(cl, ids(0), Options{Efficiency: eff})
	want := 4 * 3 * (2*2e9/(312e12*0.5) + 2*1e-3)
	if !near(b.Compute, want, 1e-12) {
		t.Errorf("compute %v, by hand %v", b.Compute, want)
	}
}

// TestPlanZeroValue: the zero Plan (and any plan with degrees below one) maps every rank to
// stage 0 of a single worker instead of dividing by zero (a defect of the old code), and is
// rejected by Validate.
func TestPlanZeroValue(t *testing.T) {
	var p Plan
	for r := 0; r < 5; r++ {
		if s := p.StageOf(r); s != 0 {
			t.Errorf("Plan{}.StageOf(%d) = %d", r, s)
		}
		if d, s, tp := p.Coords(r); d != r || s != 0 || tp != 0 {
			t.Errorf("Plan{}.Coords(%d) = %d, %d, %d", r, d, s, tp)
		}
	}
	if p.Rank(3, 0, 0) != 3 {
		t.Errorf("Plan{}.Rank(3, 0, 0) = %d", p.Rank(3, 0, 0))
	}
	if err := p.Validate(tinyTransformer(t, 2)); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("Plan{} validates: %v", err)
	}
	if (Plan{TP: 4, PP: 2}).StageOf(13) != 1 {
		t.Error("StageOf of a set plan changed")
	}
}

// TestPlanOffloadValidation: offload needs ZeRO; threads are bounded.
func TestPlanOffloadValidation(t *testing.T) {
	m := tinyTransformer(t, 2)
	base := Plan{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 2}
	for _, c := range []struct {
		mod  func(*Plan)
		want string
	}{
		{func(p *Plan) { p.Offload = true }, "offload needs zero"},
		{func(p *Plan) { p.ZeRO, p.CPUThreads = 1, -1 }, "cpu_threads -1"},
		{func(p *Plan) { p.ZeRO, p.Offload, p.CPUThreads = 2, true, 1<<20 }, "cpu_threads"},
	} {
		p := base
		c.mod(&p)
		if err := p.Validate(m); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", p, err, c.want)
		}
	}
	ok := base
	ok.ZeRO, ok.Offload, ok.CPUThreads = 2, true, 4
	if err := ok.Validate(m); err != nil {
		t.Error(err)
	}
	if s := ok.String(); !strings.Contains(s, "zero=2 offload threads=4") {
		t.Errorf("String %q", s)
	}
}

// TestTimeAll: the batch evaluation equals Placed.Time case by case, and validates once.
func TestTimeAll(t *testing.T) {
	m := tinyTransformer(t, 4)
	cl := mustUniform(t, topology.T4(), 2)
	var jobs []*Placed
	var fs []ModelFactors
	for i, p := range []Plan{{DP: 2, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 4}, {DP: 1, TP: 2, PP: 2, MicroBatches: 2, GlobalBatch: 4, ZeRO: 1}} {
		c, _ := Compile(m, p)
		pl, err := c.Place(cl, ids(0, 4, 1, 5)[:p.Workers()], nil)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, pl)
		fs = append(fs, ModelFactors{Compute: float64(i + 1)})
	}
	eff, _ := HardwareConstants("t4")
	out := make([]float64, len(jobs))
	if err := TimeAll(jobs, eff, fs, out); err != nil {
		t.Fatal(err)
	}
	for i, pl := range jobs {
		b, _ := pl.Time(eff, fs[i])
		if b.Total != out[i] {
			t.Errorf("job %d: TimeAll %v, Time %v", i, out[i], b.Total)
		}
	}
	if err := TimeAll(jobs, Efficiency{}, fs, out); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("zero constants: %v", err)
	}
	if err := TimeAll(jobs, eff, fs[:1], out); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("short factors: %v", err)
	}
}

// TestCalibrationJSON: a calibration round-trips through its JSON form; malformed ones are
// rejected with the offending key named.
func TestCalibrationJSON(t *testing.T) {
	eff, _ := HardwareConstants("t4")
	c := &Calibration{Hardware: map[string]Efficiency{"t4": eff}, Models: map[string]ModelFactors{"resnet50@fp32": {Compute: 1.2, Overhead: 0.01}}, Source: "test"}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadCalibration(strings.NewReader(string(data)), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Hardware["t4"] != eff || back.Models["resnet50@fp32"] != c.Models["resnet50@fp32"] || back.Source != "test" {
		t.Errorf("round trip %s -> %+v", data, back)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"hardware": {"T4-16GB": {"compute": 0.5, "intra_comm": 0.8, "inter_comm": 0.8}}}`, `"T4-16GB" is not a GPU family`},
		{`{"hardware": {"t4": {"compute": 2, "intra_comm": 0.8, "inter_comm": 0.8}}}`, "compute 2"},
		{`{"models": {"x": {"compute": -1}}}`, `model "x"`},
		{`{"hardwares": {}}`, "unknown field"},
		{`{} {}`, "trailing data"},
		{`{"models": {"": {}}}`, "empty name"},
	} {
		if _, err := ReadCalibration(strings.NewReader(bad.in), "bad.json"); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), bad.want) || !strings.HasPrefix(err.Error(), "bad.json") {
			t.Errorf("%s: %v, want %q", bad.in, err, bad.want)
		}
	}
	var nilCal *Calibration
	if nilCal.Validate() != nil || nilCal.Factors("x") != (ModelFactors{}) {
		t.Error("nil calibration")
	}
	if e := nilCal.Constants("A800-SXM4-80GB"); e != a800Shipped(t) {
		t.Errorf("nil calibration constants %+v", e)
	}
}

func a800Shipped(t *testing.T) Efficiency {
	e, ok := HardwareConstants("a800")
	if !ok {
		t.Fatal("no a800 constants")
	}
	return e
}

// TestShippedHardware: every shipped entry is valid, families are distinct, and carried-over
// constants name their origin.
func TestShippedHardware(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range ShippedHardware() {
		if err := h.Efficiency.Validate(); err != nil {
			t.Errorf("%s: %v", h.Family, err)
		}
		if seen[h.Family] || GPUFamily(h.Family) != h.Family {
			t.Errorf("family %q", h.Family)
		}
		seen[h.Family] = true
		if h.Source == "" {
			t.Errorf("%s has no source", h.Family)
		}
	}
	for _, f := range []string{"a800", "a100", "h100", "t4"} {
		if !seen[f] {
			t.Errorf("no constants for %s", f)
		}
	}
	if GPUFamily("A800-SXM4-80GB") != "a800" || GPUFamily("T4") != "t4" || GPUFamily("h100 sxm") != "h100" || GPUFamily("") != "" {
		t.Error("GPUFamily")
	}
}

// TestModelVariants: precision and sequence-length variants are named apart, rebuilt exactly
// from their descriptions, and round-trip through JSON.
func TestModelVariants(t *testing.T) {
	base := mustZoo(t, "bert-base")
	fp32, err := base.WithDTypeBytes(4)
	if err != nil {
		t.Fatal(err)
	}
	if fp32.Name() != "bert-base@fp32" || fp32.DTypeBytes() != 4 || !near(fp32.ParamBytes(), 2*base.ParamBytes(), 1e-12) || fp32.Params() != base.Params() {
		t.Errorf("fp32 variant %v", fp32)
	}
	s384, err := fp32.WithSeqLen(384)
	if err != nil {
		t.Fatal(err)
	}
	if s384.Name() != "bert-base@seq384@fp32" || s384.FLOPs() >= fp32.FLOPs() {
		t.Errorf("seq variant %v", s384)
	}
	data, _ := json.Marshal(s384)
	if string(data) != `{"zoo":"bert-base","dtype_bytes":4,"seq_len":384}` {
		t.Errorf("JSON %s", data)
	}
	var back Model
	if err := json.Unmarshal(data, &back); err != nil || back.Name() != s384.Name() || back.FLOPs() != s384.FLOPs() || back.ParamBytes() != s384.ParamBytes() {
		t.Errorf("back %v, %v", back.Name(), err)
	}
	if same, _ := base.WithDTypeBytes(2); same != base {
		t.Error("WithDTypeBytes(2) of a 16-bit model rebuilt it")
	}
	// A CNN has no sequence length; its fp32 variant is rebuilt from its shapes.
	r := mustZoo(t, "resnet50")
	if _, err := r.WithSeqLen(10); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("resnet50 seq: %v", err)
	}
	r32, err := r.WithDTypeBytes(4)
	if err != nil || r32.Name() != "resnet50@fp32" || !near(r32.ParamBytes(), 2*r.ParamBytes(), 1e-12) {
		t.Errorf("resnet50 fp32: %v %v", r32, err)
	}
	// A model given by layers is scaled.
	spec := mustModel(t, ModelSpec{Name: "mine", Layers: []Layer{{Name: "l", FLOPs: 1, ParamBytes: 2, ActivationBytes: 4, MemoryBytes: 6}}})
	s4, err := spec.WithDTypeBytes(4)
	if err != nil || s4.Name() != "mine@fp32" || s4.Layer(0).MemoryBytes != 12 {
		t.Errorf("spec fp32: %+v %v", s4, err)
	}
	if _, err := spec.WithSeqLen(3); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("spec seq: %v", err)
	}
	for _, bad := range []float64{0, -2, math.Inf(1), math.NaN()} {
		if _, err := base.WithDTypeBytes(bad); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("dtype %v: %v", bad, err)
		}
	}
	for _, bad := range []string{`{"zoo":"bert-base","seq_len":-1}`, `{"zoo":"bert-base","name":"x"}`, `{"seq_len":3,"layers":[{"name":"a"}]}`, `{"zoo":"nope"}`} {
		var m Model
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
