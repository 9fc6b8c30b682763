package gpusched

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/topology"
)

func TestModelCost(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("bert-large")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := graph.DefaultPlan(m, 8, topology.A100())
	if err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "bert", GPUs: 8, Model: m, Plan: plan}
	if err := j.Validate(c); err != nil {
		t.Fatal(err)
	}
	cost := DefaultCost()
	packed := []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}
	spread := []topology.GPUID{0, 8, 16, 24, 1, 9, 17, 25}
	p, err := cost.StepCost(j, c, packed, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cost.StepCost(j, c, spread, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.CrossServerBytes != 0 || !(s.CrossServerBytes > 0) {
		t.Errorf("cross-server bytes: packed %v, spread %v", p.CrossServerBytes, s.CrossServerBytes)
	}
	if !(s.Time > p.Time) {
		t.Errorf("spread step %v should be slower than packed %v", s.Time, p.Time)
	}
	// It is graph's figure.
	b, _ := graph.IterationTime(m, plan, c, packed, graph.Options{})
	if b.Total != p.Time {
		t.Errorf("StepCost %v, graph says %v", p.Time, b.Total)
	}
	// Jobs without a model fall back to StepTime.
	if sc, err := cost.StepCost(&Job{ID: "x", GPUs: 1, StepTime: 2}, c, packed[:1], nil); err != nil || sc.Time != 2 {
		t.Errorf("fallback: %v %v", sc, err)
	}
	cost.Forget(j)
	// A plan that does not match the GPU count is rejected by Validate.
	bad := *j
	bad.GPUs = 4
	if err := bad.Validate(c); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("plan/GPU mismatch: %v", err)
	}
	// Out of memory: GPT-3 13B in pure data parallel on 8 T4s.
	gpt, _ := graph.ZooModel("gpt3-13b")
	oom := &Job{ID: "oom", GPUs: 8, Model: gpt, Plan: graph.Plan{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 8}}
	t4, _ := topology.Uniform(topology.T4(), 2)
	if _, err := cost.StepCost(oom, t4, []topology.GPUID{0, 1, 2, 3, 4, 5, 6, 7}, nil); !errors.Is(err, graph.ErrOutOfMemory) {
		t.Errorf("out of memory: %v", err)
	}
}

func TestJobJSONWithModel(t *testing.T) {
	m, _ := graph.ZooModel("resnet50")
	plan, _ := graph.DefaultPlan(m, 4, topology.A100())
	j := Job{ID: "r", GPUs: 4, Arrival: 3, Model: m, Plan: plan, Features: Features{Family: "resnet50", User: "u1"}}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back Job
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Model == nil || back.Model.Name() != m.Name() || back.Plan.String() != plan.String() || back.Features.User != "u1" {
		t.Errorf("round trip: %s -> %+v", data, back)
	}
	// A job without a model writes neither model nor plan.
	data, _ = json.Marshal(Job{ID: "s", GPUs: 1, StepTime: 0.1})
	if s := string(data); s != `{"id":"s","arrival":0,"gpus":1,"step_time":0.1,"features":{}}` {
		t.Errorf("plain job JSON: %s", s)
	}
}

// TestModelCostZeroValue: the zero ModelCost is usable (it panicked on its nil cache) and is
// DefaultCost's model.
func TestModelCostZeroValue(t *testing.T) {
	c, err := topology.Uniform(topology.A800(), 2)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := graph.ZooModel("bert-large")
	j := &Job{ID: "b", GPUs: 8, Model: m, Plan: graph.Plan{DP: 8, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32}}
	gpus := []topology.GPUID{0, 1, 2, 3, 8, 9, 10, 11}
	var zero ModelCost
	got, err := zero.StepCost(j, c, gpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := DefaultCost().StepCost(j, c, gpus, nil)
	if got != want {
		t.Errorf("zero ModelCost %+v, DefaultCost %+v", got, want)
	}
	zero.Forget(j)
	var other ModelCost
	other.Forget(j) // forgetting on an unused one is fine too
}

// TestModelCostPerGPUType: DefaultCost times a job with the constants of the GPU type it is
// placed on; a calibration replaces them and adds the model's factors.
func TestModelCostPerGPUType(t *testing.T) {
	m, _ := graph.ZooModel("bert-large")
	plan := graph.Plan{DP: 4, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32}
	j := &Job{ID: "b", GPUs: 4, Model: m, Plan: plan}
	times := map[string]float64{}
	for _, spec := range []topology.ServerSpec{topology.A800(), topology.T4()} {
		c, _ := topology.Uniform(spec, 2)
		gpus := []topology.GPUID{0, 1, 2, 3}
		sc, err := DefaultCost().StepCost(j, c, gpus, nil)
		if err != nil {
			t.Fatal(err)
		}
		eff, ok := graph.HardwareConstants(spec.GPU.Model)
		if !ok {
			t.Fatalf("no constants for %s", spec.GPU.Model)
		}
		b, _ := graph.IterationTime(m, plan, c, gpus, graph.Options{Efficiency: eff})
		if sc.Time != b.Total {
			t.Errorf("%s: DefaultCost %v, its type's constants %v", spec.GPU.Model, sc.Time, b.Total)
		}
		text, _ := NewModelCost(graph.DefaultEfficiency()).StepCost(j, c, gpus, nil)
		if text.Time == sc.Time {
			t.Errorf("%s: DefaultCost uses the textbook constants", spec.GPU.Model)
		}
		times[spec.GPU.Model] = sc.Time
	}
	if times["T4-16GB"] <= times["A800-SXM4-80GB"] {
		t.Errorf("a T4 runs BERT-large faster than an A800: %v", times)
	}
	// A calibration's factors for the model apply.
	c, _ := topology.Uniform(topology.A800(), 1)
	base, _ := DefaultCost().StepCost(j, c, []topology.GPUID{0, 1, 2, 3}, nil)
	cal := &graph.Calibration{Models: map[string]graph.ModelFactors{"bert-large": {Overhead: 1}}}
	withCal, err := NewCalibratedCost(cal).StepCost(j, c, []topology.GPUID{0, 1, 2, 3}, nil)
	if err != nil || withCal.Time <= base.Time+0.99 {
		t.Errorf("calibrated %v (%v), shipped %v", withCal.Time, err, base.Time)
	}
	if nilCal, _ := NewCalibratedCost(nil).StepCost(j, c, []topology.GPUID{0, 1, 2, 3}, nil); nilCal != base {
		t.Errorf("nil calibration %v, default %v", nilCal, base)
	}
}

// TestModelCostKeysByJobID: the cache is keyed by JobID, so a host that hands a new *Job for
// the same job (a new view, a restarted scheduler) does not grow it, Forget with any *Job of
// that id drops it, and a job whose plan changed is compiled again.
func TestModelCostKeysByJobID(t *testing.T) {
	c, err := topology.Uniform(topology.A100(), 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(dp int) *Job {
		return &Job{ID: "a", GPUs: dp, Model: m, Plan: graph.Plan{DP: dp, TP: 1, PP: 1, MicroBatches: 1, GlobalBatch: 32 * dp}}
	}
	cost := DefaultCost()
	gpus := []topology.GPUID{0, 1, 2, 3}
	first, err := cost.StepCost(mk(4), c, gpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := cost.StepCost(mk(4), c, gpus, nil)
	if cost.cached() != 1 || again != first {
		t.Errorf("a second *Job of the same job: %d cached, cost %+v vs %+v", cost.cached(), again, first)
	}
	two, _ := cost.StepCost(mk(2), c, gpus[:2], nil)
	if two.Time == first.Time {
		t.Error("a changed plan was not compiled again")
	}
	cost.Forget(mk(2))
	if cost.cached() != 0 {
		t.Errorf("Forget with another *Job of the id left %d entries", cost.cached())
	}
}

// TestModelCostChecksEveryWorkersGPU: a placement whose first GPU has room but whose other
// GPUs do not is an out-of-memory error (the old check looked at the first GPU only).
func TestModelCostChecksEveryWorkersGPU(t *testing.T) {
	small := topology.A100()
	small.GPU.Model, small.GPU.MemoryBytes = "A100-SXM4-40GB", topology.GiB(40)
	c, err := topology.New("mixed", []topology.Server{{ID: "big", ServerSpec: topology.A100()}, {ID: "small", ServerSpec: small}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.ZooModel("llama-7b")
	if err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "l", GPUs: 4, Model: m, Plan: graph.Plan{DP: 1, TP: 4, PP: 1, MicroBatches: 1, GlobalBatch: 4}}
	comp, err := graph.Compile(m, j.Plan)
	if err != nil || comp.CheckMemory(small.GPU) == nil || comp.CheckMemory(topology.A100().GPU) != nil {
		t.Skip("the test needs a plan that fits 80 GB but not 40 GB")
	}
	if _, err := DefaultCost().StepCost(j, c, []topology.GPUID{0, 1, 8, 9}, nil); !errors.Is(err, graph.ErrOutOfMemory) {
		t.Errorf("workers 2 and 3 on 40 GB GPUs: %v, want out of memory", err)
	}
	if _, err := DefaultCost().StepCost(j, c, []topology.GPUID{0, 1, 2, 3}, nil); err != nil {
		t.Errorf("on 80 GB GPUs: %v", err)
	}
}
